"""Jupyter tier: %%tfserver cluster NAME --slurm against the real one-node Slurm (`slurm` fixture)."""
from __future__ import annotations

import numpy as np
import pytest

import nbcluster as tf

from process_checks import wait_gone
from slurm_local import squeue_ids
from tfserver_cells import cell as _cell
from tfserver_cells import line as _line
from tfserver_cells import one_error as _one_error

pytestmark = pytest.mark.timeout(180)


@pytest.mark.parametrize("line, body, word", [
    ("cluster c --partition debug", "worker: 1", "--partition needs --slurm"),
    ("cluster c --no-wait", "worker: 1", "--no-wait needs --slurm"),
    ("cluster c --slurm --ssh h", "worker: 1", "not both"),
    ("cluster c --slurm", "worker: [h:1]", "task counts"),
    ("cluster c --slurm --key k", "worker: 1", "need --ssh"),
    ("cluster c --slurm --time soon", "worker: 1", "time must be"),
])
def test_slurm_options_are_checked_before_anything_starts(ip, line, body, word):
    _, err, _ = _cell(ip, line, body)
    assert word in _one_error(err)
    assert "c" not in ip.user_ns


def test_slurm_cluster_cell(ip, slurm):
    _, err, outputs = _cell(ip, "cluster hpc --slurm --time 10 --timeout 120",
                            "ps: 1\nworker: 2\n")
    assert not err, err
    hpc = ip.user_ns["hpc"]
    pids = [s.pid for s in hpc.status()]
    try:
        assert "--time=10" in hpc.job_script()
        assert f"(slurm, 3 tasks, Slurm job {hpc.job_id} RUNNING)" in repr(hpc) and outputs
        with tf.Graph().as_default():
            with tf.device("/job:ps/task:0"):
                w = tf.Variable(np.arange(4, dtype=np.float32).reshape(2, 2))
            with tf.device("/job:worker/task:1"):
                y = tf.matmul(tf.ones([1, 2]), w)
            with tf.Session(hpc.target("worker", 0)) as sess:
                sess.run(tf.global_variables_initializer())
                np.testing.assert_allclose(sess.run(y), [[2.0, 4.0]])
        assert "slurm" in _line(ip, "list")[0]
        assert "restarted at" in _line(ip, "restart hpc worker:0")[0]
        assert _line(ip, "stop hpc")[0].strip() == "stopped hpc"
        assert squeue_ids("-j", hpc.job_id) == []
        assert wait_gone(pids, 10) == []
    finally:
        hpc.stop()


def test_slurm_request_that_can_never_run_is_one_line(ip, slurm):
    _, err, _ = _cell(ip, "cluster huge --slurm --cpus-per-task 64 --timeout 120", "worker: 1")
    assert "PartitionConfig" in _one_error(err)
    assert "huge" not in ip.user_ns
