"""`Cluster.local(..., server="tensorflow")`: real `tf.distribute.Server`
tasks started, watched and stopped by nbcluster's launcher, and the
notebook's dashboard on them (from what TensorFlow's GetStatus reports)."""
from __future__ import annotations

import numpy as np
import pytest
from tensorflow_processes import requires_tensorflow

import nbcluster as tf
from nbcluster.jupyter.widgets import ClusterDashboard, PlacementView, Timeline
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


def test_placement_view_and_timeline_draw_a_step_that_ran_on_tensorflow_tasks():
    """From what TF's master sends back: its partition graphs and step stats."""
    with Cluster.local(ps=1, worker=1, server="tensorflow", timeout=120) as cluster:
        with tf.Graph().as_default() as graph:
            with tf.device("/job:ps/task:0"):
                v = tf.Variable(np.ones((16, 16), np.float32), name="v")
            with tf.device("/job:worker/task:0"):
                total = tf.reduce_sum(tf.matmul(v, v), name="total")
            with tf.Session(cluster.target("worker", 0)) as sess:
                sess.run(v.initializer)
                meta, bare = tf.RunMetadata(), tf.RunMetadata()
                assert sess.run(total, options=tf.RunOptions(
                    trace_level=tf.RunOptions.FULL_TRACE, output_partition_graphs=True),
                    run_metadata=meta) == 16 * 16 * 16
                sess.run(total, options=tf.RunOptions(trace_level=tf.RunOptions.FULL_TRACE),
                         run_metadata=bare)
    ps, worker = ("/job:ps/replica:0/task:0/device:CPU:0",
                  "/job:worker/replica:0/task:0/device:CPU:0")
    timeline = Timeline(meta)
    assert {ps, worker} <= {op["device"] for op in timeline.ops}
    # TF's RecvTensor stats as arrows: v's value from the ps to the worker's MatMul,
    # found through the partition graphs and, without them, through the edge's name
    for traced in (timeline, Timeline(bare)):
        arrows = [(t["src_device"], t["dst_device"], t["tensor"], t["bytes"])
                  for t in traced.transfers]
        assert arrows == [(ps, worker, "v/read:0", 16 * 16 * 4)]
        (drawn,) = traced._data["transfers"]
        ops = traced._data["ops"]
        assert (ops[drawn["send"]]["name"], ops[drawn["send"]]["op"]) == ("v/read", "Identity")
        assert ops[drawn["recv"]]["op"] == "RecvTensor" and ops[drawn["recv"]]["kind"] == "wait"
    placement = PlacementView(graph=graph, run_metadata=meta)
    where = {node["name"]: node["device"] for node in placement.nodes}
    assert where["v"] == ps and where["total"] == worker
