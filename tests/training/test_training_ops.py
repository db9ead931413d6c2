"""The fused update ops (ApplyGradientDescent, ApplyMomentum, ApplyAdagrad, ApplyAdam)
against NumPy's arithmetic of TF's documented rules, and their build-time checks."""
import numpy as np
import pytest

import nbcluster as tf
from nbcluster import errors
from nbcluster.ops import training as training_ops

pytestmark = pytest.mark.timeout(60)

RNG = np.random.default_rng(7)
VAR = RNG.standard_normal((3, 4)).astype(np.float32)
GRAD = RNG.standard_normal((3, 4)).astype(np.float32)


def _run(fetch, init_vars):
    with tf.Session() as sess:
        sess.run(tf.variables_initializer(init_vars))
        out = sess.run(fetch)
        return out, sess.run(init_vars)


def test_apply_gradient_descent():
    var = tf.Variable(VAR)
    out, (after,) = _run(training_ops.apply_gradient_descent(var, 0.5, GRAD), [var])
    np.testing.assert_allclose(after, VAR - 0.5 * GRAD, rtol=1e-6)
    np.testing.assert_allclose(out, after)  # the output is the updated variable


@pytest.mark.parametrize("nesterov", [False, True])
def test_apply_momentum(nesterov):
    accum0 = RNG.standard_normal((3, 4)).astype(np.float32)
    var, accum = tf.Variable(VAR), tf.Variable(accum0)
    op = training_ops.apply_momentum(var, accum, 0.1, GRAD, 0.9, use_nesterov=nesterov)
    _, (v, a) = _run(op, [var, accum])
    want_a = 0.9 * accum0 + GRAD
    want_v = VAR - 0.1 * GRAD - 0.1 * 0.9 * want_a if nesterov else VAR - 0.1 * want_a
    np.testing.assert_allclose(a, want_a, rtol=1e-5)
    np.testing.assert_allclose(v, want_v, rtol=1e-5)


@pytest.mark.parametrize("update_slots", [True, False])
def test_apply_adagrad(update_slots):
    accum0 = np.full((3, 4), 0.1, np.float32)
    var, accum = tf.Variable(VAR), tf.Variable(accum0)
    op = training_ops.apply_adagrad(var, accum, 0.2, GRAD, update_slots=update_slots)
    _, (v, a) = _run(op, [var, accum])
    want_a = accum0 + GRAD ** 2 if update_slots else accum0
    np.testing.assert_allclose(a, want_a, rtol=1e-6)
    np.testing.assert_allclose(v, VAR - 0.2 * GRAD / np.sqrt(want_a), rtol=1e-5)


@pytest.mark.parametrize("nesterov", [False, True])
def test_apply_adam(nesterov):
    m0 = RNG.standard_normal((3, 4)).astype(np.float32)
    v0 = RNG.random((3, 4)).astype(np.float32)
    var, m, v = tf.Variable(VAR), tf.Variable(m0), tf.Variable(v0)
    b1p, b2p, lr, b1, b2, eps = 0.9 ** 3, 0.999 ** 3, 0.01, 0.9, 0.999, 1e-7
    op = training_ops.apply_adam(var, m, v, b1p, b2p, lr, b1, b2, eps, GRAD,
                                 use_nesterov=nesterov)
    _, (got_var, got_m, got_v) = _run(op, [var, m, v])
    want_m = b1 * m0 + (1 - b1) * GRAD
    want_v = b2 * v0 + (1 - b2) * GRAD ** 2
    alpha = lr * np.sqrt(1 - b2p) / (1 - b1p)
    step = b1 * want_m + (1 - b1) * GRAD if nesterov else want_m
    np.testing.assert_allclose(got_m, want_m, rtol=1e-5)
    np.testing.assert_allclose(got_v, want_v, rtol=1e-5)
    np.testing.assert_allclose(got_var, VAR - alpha * step / (np.sqrt(want_v) + eps),
                               rtol=1e-5)


def test_float64_and_tf_attrs():
    var = tf.Variable(VAR.astype(np.float64))
    op = training_ops.apply_gradient_descent(var, 0.5, GRAD.astype(np.float64),
                                             use_locking=True, name="sgd")
    assert op.op.type == "ApplyGradientDescent" and op.op.name == "sgd"
    assert op.op.get_attr("use_locking") is True and op.op.get_attr("T") == tf.float64
    assert [t.op.name for t in op.op.inputs[:1]] == [var.op.name]  # the ref, not a read
    _, (after,) = _run(op, [var])
    assert after.dtype == np.float64
    np.testing.assert_allclose(after, VAR.astype(np.float64) - 0.5 * GRAD, rtol=1e-12)


def test_update_replaces_the_array_a_fetch_holds():
    var = tf.Variable(VAR)
    read = tf.identity(var)
    op = training_ops.apply_gradient_descent(var, 1.0, GRAD)
    with tf.Session() as sess:
        sess.run(var.initializer)
        before = sess.run(read)
        sess.run(op)
        np.testing.assert_array_equal(before, VAR)
        np.testing.assert_allclose(sess.run(read), VAR - GRAD, rtol=1e-6)


def test_update_is_colocated_with_its_variable():
    with tf.device("/job:ps/task:1"):
        var = tf.Variable(VAR)
    with tf.device("/job:worker/task:0"):
        op = training_ops.apply_gradient_descent(var, 0.5, GRAD)
    assert op.op.device == "/job:ps/task:1"
    assert op.op.get_attr("_class") == [f"loc:@{var.op.name}"]


def test_build_time_errors():
    var = tf.Variable(VAR)
    with pytest.raises(ValueError, match="grad|delta"):
        training_ops.apply_gradient_descent(var, 0.5, np.ones((4, 3), np.float32))
    with pytest.raises(ValueError, match="alpha.*scalar"):
        training_ops.apply_gradient_descent(var, [0.5, 0.5], GRAD)
    with pytest.raises(TypeError, match="delta"):
        training_ops.apply_gradient_descent(var, 0.5, tf.constant(GRAD.astype(np.float64)))
    with pytest.raises(TypeError, match="must be a tf.Variable"):
        training_ops.apply_gradient_descent(0.0, 0.5, GRAD)
    int_var = tf.Variable(np.zeros(2, np.int32))
    with pytest.raises(TypeError, match="int32"):
        training_ops.apply_gradient_descent(int_var, 1, np.ones(2, np.int32))


def test_run_time_shape_mismatch_is_invalid_argument():
    var = tf.Variable(VAR, validate_shape=False)
    grad = tf.placeholder(tf.float32)
    op = training_ops.apply_gradient_descent(var, 0.5, grad)
    with tf.Session() as sess:
        sess.run(var.initializer)
        with pytest.raises(errors.InvalidArgumentError,
                           match=r"var and delta do not have the same shape\[3,4\] \[2\]"):
            sess.run(op, {grad: np.ones(2, np.float32)})
        np.testing.assert_array_equal(sess.run(var), VAR)  # nothing written


def test_use_locking_serializes_concurrent_updates():
    import threading
    var = tf.Variable(np.zeros(1000, np.float32))
    op = training_ops.apply_gradient_descent(var, 1.0, np.ones(1000, np.float32),
                                             use_locking=True).op
    with tf.Session() as sess:
        sess.run(var.initializer)
        threads = [threading.Thread(target=lambda: [sess.run(op) for _ in range(50)])
                   for _ in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        np.testing.assert_array_equal(sess.run(var), np.full(1000, -200.0))


@pytest.mark.parametrize("use_locking", [False, True])
def test_apply_gradient_descent_of_another_shape_fails_as_tf_and_keeps_the_variable(use_locking):
    # The unlocked in-place path checks the shape on the array itself; both
    # paths give TF's error, name the node, and leave the variable as it was.
    var = tf.Variable(VAR)
    delta = tf.placeholder(tf.float32)
    op = training_ops.apply_gradient_descent(var, 0.5, delta, use_locking=use_locking,
                                             name="sgd")
    with tf.Session() as sess:
        sess.run(var.initializer)
        with pytest.raises(errors.InvalidArgumentError, match=r"var and delta do not have "
                                                              r"the same shape\[3,4\] \[4,3\]") as e:
            sess.run(op, {delta: np.ones((4, 3), np.float32)})
        assert e.value.node_name == "sgd"
        np.testing.assert_array_equal(sess.run(var), VAR)
        sess.run(op, {delta: GRAD})  # the kernel still updates after the failure
        np.testing.assert_allclose(sess.run(var), VAR - 0.5 * GRAD, rtol=1e-6)
