"""`Cluster.local(..., server="tensorflow")`: real `tf.distribute.Server`
tasks started, watched and stopped by nbcluster's launcher, and the
notebook's dashboard on them (from what TensorFlow's GetStatus reports)."""
from __future__ import annotations

import numpy as np
import pytest
from tensorflow_processes import requires_tensorflow

import nbcluster as tf
from nbcluster.jupyter.widgets import ClusterDashboard
from nbcluster.launch import Cluster

from process_checks import wait_gone

pytestmark = [requires_tensorflow, pytest.mark.timeout(300)]


def test_tensorflow_tasks_start_train_show_in_the_dashboard_and_stop():
    cluster = Cluster.local(ps=1, worker=1, server="tensorflow", timeout=120)
    try:
        statuses = {(s.job, s.index): s for s in cluster.status()}
        assert {k: s.state for k, s in statuses.items()} == {("ps", 0): "up",
                                                             ("worker", 0): "up"}
        assert statuses[("ps", 0)].devices == ("/job:ps/replica:0/task:0/device:CPU:0",)
        with tf.Graph().as_default():
            with tf.device("/job:ps/task:0"):
                v = tf.Variable([1.0, 2.0], name="v")
            with tf.device("/job:worker/task:0"):
                step = v.assign_add(v * 0.5)
            with tf.Session(cluster.target("worker", 0)) as sess:
                sess.run(v.initializer)
                for _ in range(3):
                    got = sess.run(step)
        np.testing.assert_allclose(got, np.array([1.0, 2.0]) * 1.5 ** 3)
        dashboard = ClusterDashboard(cluster, interval=0.2)
        try:
            rows = {(r.job, r.index): r for r in dashboard.model.rows}
            assert {k: r.state for k, r in rows.items()} == {("ps", 0): "up",
                                                             ("worker", 0): "up"}
        finally:
            dashboard.close()
        pids = [s.pid for s in statuses.values()]
    finally:
        cluster.stop()
    assert wait_gone(pids) == []


def test_an_unknown_server_kind_is_refused_before_anything_starts():
    with pytest.raises(ValueError, match="'tf1'"):
        Cluster.local(ps=0, worker=1, server="tf1")
