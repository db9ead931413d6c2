"""Steps over two CPU devices of each of two task processes, tensors crossing
devices and tasks both ways, run many times: none may hang.

The master splits a step by task, each worker its piece by device; the names
of the second split once collided with the first one's (the plan depended on
the process's string hash seed), dropping a _Send and leaving its Recv on the
other task waiting forever. And a device's waiter once sat reading a peer's
stream while the tensor it needed first landed from a device beside it.
Each round builds a graph under new names (new hash orders), and every step
has a deadline, so a hang fails the test.
"""
from __future__ import annotations

import numpy as np
import pytest

import nbcluster as tf

pytestmark = pytest.mark.timeout(240)

A0, A1 = "/job:a/task:0/device:CPU:0", "/job:a/task:0/device:CPU:1"
B0, B1 = "/job:b/task:0/device:CPU:0", "/job:b/task:0/device:CPU:1"

ROUNDS, STEPS = 10, 30  # 300 steps, over 10 plans
STEP_DEADLINE = tf.RunOptions(timeout_in_ms=15000)


def _crossing_graph(scope: str):
    """Ops on /job:a and /job:b, CPU:0 and CPU:1 of each; every op's tensor
    goes to another device, of its task and of the other one."""
    with tf.name_scope(scope):
        with tf.device(A0):
            x = tf.placeholder(tf.float32, [4], name="x")
            a0 = x + 1.0
        with tf.device(B0):
            b0 = a0 * 2.0
        with tf.device(A1):
            a1 = a0 + b0
        with tf.device(B1):
            b1 = a1 * b0 + a0
        with tf.device(A0):
            out = b1 + a1
    return x, out


def _late_local_graph(x):
    """A1 waits for p, which A0 makes slowly (a chain of matmuls), and for r0
    and r1 from task b, which streams both: r0 at once, r1 only once A1 sent
    it u, made from p. Reading that stream, A1 sees nothing else land: once
    it has r0 it must not sit reading again while p lands beside it."""
    with tf.device(B0):
        r0 = tf.ones([4]) * 2.0
    with tf.device(A0):
        m = tf.reshape(tf.tile(x, [128 * 32]), [128, 128]) * 0.01
        for _ in range(10):
            m = tf.tanh(tf.matmul(m, m))
        p = x + tf.reduce_sum(m) * 0.0
    with tf.device(A1):
        v = r0 + 1.0
        u = p + 1.0
    with tf.device(B1):
        r1 = u * 3.0
    with tf.device(A1):
        w = r1 + p + v
    with tf.device(A0):
        return w + x


def _expected(x: np.ndarray) -> tuple:
    a0 = x + 1
    b0 = a0 * 2
    a1 = a0 + b0
    return a1 * b0 + a0 + a1, (x + 1) * 3 + x + 3 + x


def test_steps_across_two_devices_of_two_tasks_all_return(cluster_factory):
    cluster = cluster_factory({"a": 1, "b": 1}, tf.ConfigProto(device_count={"CPU": 2}))
    rng = np.random.default_rng(0)
    for r in range(ROUNDS):
        graph = tf.Graph()
        with graph.as_default():
            x, out = _crossing_graph(f"round{r}")
            late = _late_local_graph(x)
        with tf.Session(cluster.target("a", 0), graph=graph) as sess:
            for _ in range(STEPS):
                value = rng.standard_normal(4).astype(np.float32)
                got = sess.run([out, late], {x: value}, options=STEP_DEADLINE)
                np.testing.assert_allclose(got, _expected(value), rtol=1e-5)
