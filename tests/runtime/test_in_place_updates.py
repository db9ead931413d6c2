"""A variable's update writes into its array only while nothing else holds it: a
fetch, a Send to a peer, a view or a step's input always keeps its snapshot."""
from __future__ import annotations

import numpy as np
import pytest

import nbcluster as tf
from nbcluster.runtime.resources import VariableResource

pytestmark = pytest.mark.timeout(120)


def _resource(value) -> VariableResource:
    res = VariableResource("v", None, None)
    res.write(np.array(value, np.float32))
    return res


def test_sole_array_is_the_array_only_while_nothing_else_holds_it():
    res = _resource([1.0, 2.0, 3.0])
    with res.sole_array() as array:
        assert array is not None and array.flags.writeable
        array += 1
    assert not res.read().flags.writeable
    np.testing.assert_array_equal(res.read(), [2.0, 3.0, 4.0])
    held = res.read()
    with res.sole_array() as array:
        assert array is None  # `held` is someone else's
    view = held[1:]
    del held
    with res.sole_array() as array:
        assert array is None  # so is a view of it
    del view
    with res.sole_array() as array:
        assert array is not None


def _sgd(lr: float = 0.5):
    v = tf.Variable(np.array([1.0, 2.0, 3.0], np.float32), name="v")
    g = tf.constant(np.array([1.0, 1.0, 1.0], np.float32))
    return v, tf.train.GradientDescentOptimizer(lr).apply_gradients([(g, v)])


def test_updates_without_other_holders_keep_the_array_and_give_the_right_values():
    v, train = _sgd()
    with tf.Session() as sess:
        sess.run(v.initializer)
        for _ in range(3):
            sess.run(train)
        np.testing.assert_allclose(sess.run(v), [-0.5, 0.5, 1.5])


def test_a_value_read_in_the_same_step_keeps_its_snapshot_locally():
    v, _ = _sgd()
    read = tf.identity(v)
    g = tf.constant(np.array([1.0, 1.0, 1.0], np.float32))
    with tf.control_dependencies([read]):
        train = tf.train.GradientDescentOptimizer(0.5).apply_gradients([(g, v)])
    with tf.Session() as sess:
        sess.run(v.initializer)
        before, _ = sess.run([read, train])  # the fetch is held while the update runs
        np.testing.assert_array_equal(before, [1.0, 2.0, 3.0])
        np.testing.assert_array_equal(sess.run(v), [0.5, 1.5, 2.5])


def test_a_fetch_of_the_array_is_never_changed_by_later_updates():
    v, train = _sgd()
    with tf.Session() as sess:
        sess.run(v.initializer)
        first = sess.run(v)
        sess.run(train)
        np.testing.assert_array_equal(first, [1.0, 2.0, 3.0])


def test_a_peer_reading_the_ps_variable_in_the_updating_step_gets_the_old_value(
        cluster_factory):
    # The ps sends v's array to the worker and to the client in the step that
    # updates it (after the reads, by control dependencies): the arrays in
    # flight must keep the values they had when read.
    cluster = cluster_factory({"ps": 1, "worker": 1})
    with tf.Graph().as_default():
        with tf.device("/job:ps/task:0"):
            v = tf.Variable(np.arange(300_000, dtype=np.float32), name="v")
            on_ps = tf.identity(v)
        with tf.device("/job:worker/task:0"):
            on_worker = tf.reduce_sum(tf.identity(v))
        g = tf.ones([300_000], tf.float32)
        with tf.device("/job:ps/task:0"), tf.control_dependencies([on_ps, on_worker]):
            train = tf.train.GradientDescentOptimizer(1.0).apply_gradients([(g, v)])
        with tf.Session(cluster.target("worker", 0)) as sess:
            sess.run(v.initializer)
            start = np.arange(300_000, dtype=np.float32)
            for step in range(3):
                got, total, _ = sess.run([on_ps, on_worker, train])
                np.testing.assert_array_equal(got, start - step)
                assert total == pytest.approx(float(np.sum(start - step, dtype=np.float64)),
                                              rel=1e-6)
            np.testing.assert_array_equal(sess.run(v), start - 3)
