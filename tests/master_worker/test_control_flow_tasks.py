"""Control flow across task processes: a cond whose branch runs on another
task, a while_loop whose body runs on another task than its condition, and a
gradient through both (each task `python -m nbcluster.server`, real gRPC)."""
from __future__ import annotations

import numpy as np
import pytest

import nbcluster as tf

pytestmark = pytest.mark.timeout(120)

W0, W1 = "/job:worker/task:0", "/job:worker/task:1"
TRACE = tf.RunOptions(trace_level=tf.RunOptions.FULL_TRACE)
TWO_WORKERS = {"worker": 2}


def _devices_of(metadata, name: str) -> set:
    return {d.device for d in metadata.step_stats.dev_stats for n in d.node_stats
            if n.node_name == name}


@pytest.mark.parametrize("local_cluster", [TWO_WORKERS], indirect=True)
def test_cond_branch_on_another_task_runs_only_when_taken(local_cluster):
    with tf.Graph().as_default():
        with tf.device(W0):
            x = tf.placeholder(tf.float32, [])
            hits = tf.Variable(0.0)

        def remote_branch():
            with tf.device(W1):
                with tf.control_dependencies([tf.assign_add(hits, 1.0)]):
                    return tf.multiply(x, 2.0, name="remote_mul")
        with tf.device(W0):
            y = tf.cond(x > 0, remote_branch, lambda: x - 1.0)
        with tf.Session(local_cluster.target("worker", 0)) as sess:
            sess.run(tf.global_variables_initializer())
            meta = tf.RunMetadata()
            assert sess.run(y, {x: 3.0}, options=TRACE, run_metadata=meta) == 6.0
            assert _devices_of(meta, "cond/remote_mul") == {
                "/job:worker/replica:0/task:1/device:CPU:0"}
            assert [sess.run(y, {x: v}) for v in (-3.0, 4.0, -1.0)] == [-4.0, 8.0, -2.0]
            assert sess.run(hits) == 2.0


@pytest.mark.parametrize("local_cluster", [TWO_WORKERS], indirect=True)
def test_while_loop_body_on_another_task_than_its_condition(local_cluster):
    with tf.Graph().as_default():
        with tf.device(W0):
            n = tf.placeholder(tf.int32, [])
            w = tf.constant(np.array([0.5, 1.5], np.float32))

            def body(i, a):
                with tf.device(W1):
                    a = tf.add(a * w, 1.0, name="remote_step")
                return i + 1, a
            i, acc = tf.while_loop(lambda i, a: i < n, body, [0, tf.ones([2])],
                                   parallel_iterations=4)
        with tf.Session(local_cluster.target("worker", 0)) as sess:
            meta = tf.RunMetadata()
            got = sess.run([i, acc], {n: 6}, options=TRACE, run_metadata=meta)
            assert _devices_of(meta, "while/remote_step") == {
                "/job:worker/replica:0/task:1/device:CPU:0"}
            assert _devices_of(meta, "while/LoopCond") == {"/job:worker/replica:0/task:0/device:CPU:0"}
            for steps in (6, 0, 1, 3):
                expect = np.ones(2, np.float32)
                for _ in range(steps):
                    expect = expect * np.array([0.5, 1.5], np.float32) + 1.0
                got = sess.run([i, acc], {n: steps})
                assert got[0] == steps
                np.testing.assert_allclose(got[1], expect, rtol=1e-6)


@pytest.mark.parametrize("local_cluster", [TWO_WORKERS], indirect=True)
def test_nested_loops_and_gradients_across_tasks_match_one_process(local_cluster):
    def build(w0=W0, w1=W1):
        with tf.device(w0):
            x = tf.placeholder(tf.float64, [2])

            def outer(i, a):
                def inner(j, b):
                    with tf.device(w1):
                        b = tf.tanh(b) * 1.1
                    return j + 1, b
                _, a = tf.while_loop(lambda j, b: j < i, inner, [0, a])
                with tf.device(w1):
                    a = tf.cond(tf.equal(i % 2, 0), lambda: a * 2.0, lambda: a - 0.5)
                return i + 1, a
            _, y = tf.while_loop(lambda i, a: i < 4, outer, [0, x])
            loss = tf.reduce_sum(y * y)
            (grad,) = tf.gradients(loss, [x])
        return x, loss, grad
    value = np.array([0.3, -0.7])
    with tf.Graph().as_default():
        x, loss, grad = build(None, None)  # one process, one device
        with tf.Session() as sess:
            expect = sess.run([loss, grad], {x: value})
    with tf.Graph().as_default():
        x, loss, grad = build()
        with tf.Session(local_cluster.target("worker", 0)) as sess:
            for _ in range(3):
                got = sess.run([loss, grad], {x: value})
                np.testing.assert_allclose(got[0], expect[0], rtol=1e-12)
                np.testing.assert_allclose(got[1], expect[1], rtol=1e-12)


def test_a_loop_over_two_devices_of_two_tasks(cluster_factory):
    """The master splits the loop by task, each worker its piece by device:
    skeleton loops at both levels, driven by the one LoopCond on a's CPU:0."""
    cluster = cluster_factory({"a": 1, "b": 1}, tf.ConfigProto(device_count={"CPU": 2}))
    a0, a1 = "/job:a/task:0/device:CPU:0", "/job:a/task:0/device:CPU:1"
    b0, b1 = "/job:b/task:0/device:CPU:0", "/job:b/task:0/device:CPU:1"
    with tf.Graph().as_default():
        with tf.device(a0):
            n = tf.placeholder(tf.int32, [])

            def body(i, x, y):
                with tf.device(b0):
                    x2 = x * 0.5 + y
                with tf.device(a1):
                    y2 = tf.cond(x2 > 3.0, lambda: y - 1.0, lambda: y + 2.0)
                with tf.device(b1):
                    x3 = x2 + y2 * 0.25
                return i + 1, x3, y2
            out = tf.while_loop(lambda i, x, y: i < n, body, [0, tf.constant(1.0),
                                                              tf.constant(0.5)])
        with tf.Session(cluster.target("a", 0)) as sess:
            for steps in (7, 0, 3):
                x, y = np.float32(1.0), np.float32(0.5)
                for _ in range(steps):
                    x2 = x * np.float32(0.5) + y
                    y = y - 1 if x2 > 3.0 else y + 2
                    x = x2 + y * np.float32(0.25)
                got = sess.run(out, {n: steps}, options=tf.RunOptions(timeout_in_ms=30000))
                assert got[0] == steps
                np.testing.assert_allclose(got[1:], [x, y], rtol=1e-6)
