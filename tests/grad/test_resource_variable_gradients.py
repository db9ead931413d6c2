"""Gradients of resource variables: through ReadVariableOp (dense, to the handle)
and ResourceGather (an IndexedSlices of the gathered rows, as the ref gather's),
checked against central finite differences in float64."""
import numpy as np
import pytest

import nbcluster as tf

pytestmark = pytest.mark.timeout(60)

RNG = np.random.default_rng(11)
TABLE = RNG.uniform(-1.0, 1.0, size=(5, 3))
W = RNG.uniform(-1.0, 1.0, size=(3, 2))
IDS = np.array([[3, 0], [3, 4]], np.int32)  # a repeated row, indices of rank 2


def _loss(table, w):
    """Reads table through a gather and whole, w whole twice; a smooth scalar."""
    rows = table.sparse_read(IDS) if hasattr(table, "sparse_read") else tf.gather(table, IDS)
    hidden = tf.tanh(tf.reshape(rows, [4, 3]) @ w)
    return tf.reduce_sum(hidden * hidden) + tf.reduce_sum(tf.exp(table)) + \
        tf.reduce_sum(w * w)


def _numeric(sess, loss, var, value, eps=1e-6):
    grad = np.zeros_like(value)
    for index in np.ndindex(value.shape):
        for sign in (1, -1):
            bumped = value.copy()
            bumped[index] += sign * eps
            var.load(bumped, sess)
            grad[index] += sign * sess.run(loss) / (2 * eps)
        var.load(value, sess)
    return grad


def test_gradients_through_reads_and_gathers_match_finite_differences():
    table = tf.Variable(TABLE, name="table", use_resource=True)
    w = tf.Variable(W, name="w", use_resource=True)
    loss = _loss(table, w)
    d_table, d_w = tf.gradients(loss, [table, w])
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        got_table, got_w = sess.run([tf.convert_to_tensor(d_table), d_w])
        np.testing.assert_allclose(got_table, _numeric(sess, loss, table, TABLE), atol=1e-6)
        np.testing.assert_allclose(got_w, _numeric(sess, loss, w, W), atol=1e-6)


def test_a_gather_alone_gives_sparse_rows_like_the_ref_gather():
    values = {}
    for use_resource in (False, True):
        with tf.Graph().as_default():
            table = tf.Variable(TABLE, name="table", use_resource=use_resource)
            rows = table.sparse_read(IDS) if use_resource else tf.gather(table, IDS)
            (grad,) = tf.gradients(tf.reduce_sum(rows * 3.0), [table])
            assert isinstance(grad, tf.IndexedSlices)
            if use_resource:
                assert grad.dense_shape.op.type == "VariableShape"
            with tf.Session() as sess:
                sess.run(table.initializer)
                values[use_resource] = sess.run([grad.values, grad.indices, grad.dense_shape])
    for ref, res in zip(values[False], values[True]):
        np.testing.assert_array_equal(ref, res)
    np.testing.assert_array_equal(values[True][1], IDS.reshape(-1))
    np.testing.assert_array_equal(values[True][0], np.full((4, 3), 3.0))


def test_the_gradient_of_a_read_goes_to_the_handle():
    v = tf.Variable(np.float64(2.0), use_resource=True)
    (g,) = tf.gradients(v * v * v, [v])
    (none,) = tf.gradients(tf.constant(1.0, tf.float64) * 2.0, [v])
    assert none is None
    with tf.Session() as sess:
        sess.run(v.initializer)
        assert sess.run(g) == pytest.approx(12.0)


def _control_flow_model(use_resource: bool):
    w = tf.Variable(np.array([0.5, -1.5]), name="w", use_resource=use_resource)
    take = tf.placeholder(tf.bool, [])
    branch = tf.cond(take, lambda: tf.reduce_sum(w * w * 3.0), lambda: tf.reduce_sum(w))

    def body(i, acc):
        return i + 1, acc + tf.reduce_sum(tf.exp(w * 0.5))
    _, looped = tf.while_loop(lambda i, a: i < 3, body,
                              [tf.constant(0), tf.constant(0.0, tf.float64)])
    (grad,) = tf.gradients(branch + looped, [w])
    return w, take, grad


def test_reads_inside_cond_and_while_loop_differentiate_like_ref_variables():
    got = {}
    for use_resource in (False, True):
        with tf.Graph().as_default():
            w, take, grad = _control_flow_model(use_resource)
            assert grad is not None
            with tf.Session() as sess:
                sess.run(w.initializer)
                got[use_resource] = [sess.run(grad, {take: t}) for t in (True, False)]
    w0 = np.array([0.5, -1.5])
    looped = 3 * 0.5 * np.exp(w0 * 0.5)
    np.testing.assert_allclose(got[True][0], 6.0 * w0 + looped)
    np.testing.assert_allclose(got[True][1], 1.0 + looped)
    for ref, res in zip(got[False], got[True]):
        np.testing.assert_allclose(res, ref)
