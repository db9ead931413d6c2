"""Steps over two CPU devices of each of two task processes, tensors crossing
devices and tasks both ways, run many times: none may hang.

The master splits a step by task, each worker its piece by device; the names
of the second split once collided with the first one's (the plan depended on
the process's string hash seed), dropping a _Send and leaving its Recv on the
other task waiting forever. Each round builds a graph under new names (new
hash orders), and every step has a deadline, so a hang fails the test.
"""
from __future__ import annotations

import numpy as np
import pytest

import nbcluster as tf

pytestmark = pytest.mark.timeout(240)

ROUNDS, STEPS = 10, 30  # 300 steps, over 10 plans
STEP_DEADLINE = tf.RunOptions(timeout_in_ms=15000)


def _crossing_graph(scope: str):
    """Ops on /job:a and /job:b, CPU:0 and CPU:1 of each; every op's tensor
    goes to another device, of its task and of the other one."""
    with tf.name_scope(scope):
        with tf.device("/job:a/task:0/device:CPU:0"):
            x = tf.placeholder(tf.float32, [4], name="x")
            a0 = x + 1.0
        with tf.device("/job:b/task:0/device:CPU:0"):
            b0 = a0 * 2.0
        with tf.device("/job:a/task:0/device:CPU:1"):
            a1 = a0 + b0
        with tf.device("/job:b/task:0/device:CPU:1"):
            b1 = a1 * b0 + a0
        with tf.device("/job:a/task:0/device:CPU:0"):
            out = b1 + a1
    return x, out


def _expected(x: np.ndarray) -> np.ndarray:
    a0 = x + 1
    b0 = a0 * 2
    a1 = a0 + b0
    return a1 * b0 + a0 + a1


def test_steps_across_two_devices_of_two_tasks_all_return(cluster_factory):
    cluster = cluster_factory({"a": 1, "b": 1}, tf.ConfigProto(device_count={"CPU": 2}))
    rng = np.random.default_rng(0)
    for r in range(ROUNDS):
        graph = tf.Graph()
        with graph.as_default():
            x, out = _crossing_graph(f"round{r}")
        with tf.Session(cluster.target("a", 0), graph=graph) as sess:
            for _ in range(STEPS):
                value = rng.standard_normal(4).astype(np.float32)
                got = sess.run(out, {x: value}, options=STEP_DEADLINE)
                np.testing.assert_allclose(got, _expected(value), rtol=1e-5)
