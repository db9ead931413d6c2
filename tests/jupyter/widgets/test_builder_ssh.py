"""Jupyter tier: ClusterBuilder's SSH launcher against a real sshd on 127.0.0.1 (`sshd`)."""
from __future__ import annotations

import sys

import numpy as np
import pytest
from IPython.utils.capture import capture_output

import nbcluster as tf
from nbcluster.jupyter.widgets import ClusterBuilder
from nbcluster.launch.process import _PACKAGE_ROOT

from process_checks import kill_pids, wait_gone

pytestmark = pytest.mark.timeout(180)


def test_ssh_builder_launches_and_its_cell_starts_the_same_cluster(sshd, ip):
    builder = ClusterBuilder(name="remote")
    builder.set_launcher("ssh", key=sshd["key"], port=sshd["port"], python=sys.executable,
                         options=[o for o in sshd["options"] if o != "-o"],
                         env={"PYTHONPATH": _PACKAGE_ROOT})
    builder.remove_job("ps")
    builder.remove_job("worker")
    builder.add_job("ps", hosts=sshd["host"])
    builder.add_job("worker", hosts=sshd["host"])
    assert builder.cell.startswith(f"%%tfserver cluster remote --ssh --key {sshd['key']} "
                                   f"--ssh-port {sshd['port']} --python {sys.executable} -o ")
    pids = []
    try:
        cluster = builder.launch()
        statuses = cluster.status()
        pids = [s.pid for s in statuses]
        assert [(s.job, s.index, s.state) for s in statuses] == [("ps", 0, "up"),
                                                                ("worker", 0, "up")]
        assert "(ssh, 2 tasks)" in repr(cluster)
        with tf.Graph().as_default():
            with tf.device("/job:worker/task:0"):
                y = tf.constant([1.0, 2.0]) * 2.0
            with tf.Session(cluster.target("worker", 0)) as sess:
                np.testing.assert_allclose(sess.run(y), [2.0, 4.0])

        line, body = builder.cell.split("\n", 1)
        with capture_output() as cap:
            ip.run_cell_magic("tfserver", line[len("%%tfserver "):], body)
        assert not cap.stderr, cap.stderr
        twin = ip.user_ns["remote"]
        twin_pids = [s.pid for s in twin.status()]
        pids += twin_pids
        assert [(s.job, s.index, s.state) for s in twin.status()] == [("ps", 0, "up"),
                                                                     ("worker", 0, "up")]
        ip.run_line_magic("tfserver", "stop remote")
        assert wait_gone(twin_pids, 10.0) == []

        builder.stop()
        assert wait_gone(pids, 10.0) == []
    finally:
        builder.close()
        kill_pids(pids)
