"""compute_gradients / minimize end to end: gradients from nbcluster.grad, updates
checked against NumPy, the MLP example learning the synthetic data locally."""
import numpy as np
import pytest

import nbcluster as tf
from nbcluster.examples.mlp import build_mlp
from nbcluster.examples.synthetic import Batches, mnist_like

pytestmark = pytest.mark.timeout(120)

RNG = np.random.default_rng(11)
X = RNG.standard_normal((8, 3)).astype(np.float32)
Y = RNG.standard_normal((8, 1)).astype(np.float32)
W0 = RNG.standard_normal((3, 1)).astype(np.float32)


def _linear_regression():
    w = tf.Variable(W0, name="w")
    b = tf.Variable(np.zeros(1, np.float32), name="b")
    loss = tf.reduce_mean(tf.square(tf.matmul(tf.constant(X), w) + b - Y))
    return w, b, loss


def test_minimize_matches_numpy_gradient_descent():
    w, b, loss = _linear_regression()
    step = tf.train.get_or_create_global_step()
    train_op = tf.train.GradientDescentOptimizer(0.1).minimize(loss, global_step=step)
    want_w, want_b = W0.astype(np.float64), np.zeros(1)
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        for _ in range(5):
            sess.run(train_op)
            err = X @ want_w + want_b - Y
            want_w, want_b = (want_w - 0.1 * 2 * X.T @ err / len(X),
                              want_b - 0.1 * 2 * err.mean(axis=0))
        got_w, got_b, got_step = sess.run([w, b, step])
    np.testing.assert_allclose(got_w, want_w, rtol=1e-4, atol=1e-6)
    np.testing.assert_allclose(got_b, want_b, rtol=1e-4, atol=1e-6)
    assert got_step == 5


@pytest.mark.parametrize("gate", [tf.train.Optimizer.GATE_NONE, tf.train.Optimizer.GATE_OP,
                                  tf.train.Optimizer.GATE_GRAPH])
def test_compute_gradients_pairs(gate):
    w, b, loss = _linear_regression()
    unused = tf.Variable(1.0, name="unused")
    pairs = tf.train.AdamOptimizer().compute_gradients(loss, gate_gradients=gate)
    assert [v for _, v in pairs] == [w, b, unused]
    assert pairs[2][0] is None
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        g_w, g_b = sess.run([pairs[0][0], pairs[1][0]])
    err = X @ W0 - Y
    np.testing.assert_allclose(g_w, 2 * X.T @ err / len(X), rtol=1e-4, atol=1e-6)
    np.testing.assert_allclose(g_b, 2 * err.mean(axis=0), rtol=1e-4, atol=1e-6)


def test_minimize_var_list_limits_updates():
    w, b, loss = _linear_regression()
    train_op = tf.train.MomentumOptimizer(0.1, 0.5).minimize(loss, var_list=[b])
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        sess.run(train_op)
        np.testing.assert_array_equal(sess.run(w), W0)
        assert sess.run(b)[0] != 0.0


def test_minimize_errors():
    w, b, loss = _linear_regression()
    opt = tf.train.GradientDescentOptimizer(0.1)
    unrelated = tf.Variable(2.0, name="unrelated")
    with pytest.raises(ValueError, match="No gradients provided for any variable"):
        opt.minimize(loss, var_list=[unrelated])
    with pytest.raises(ValueError, match="No variables to optimize"):
        opt.minimize(loss, var_list=[])
    with pytest.raises(ValueError, match="Invalid type.*int32"):
        opt.minimize(tf.constant(3))
    with pytest.raises(ValueError, match="gate_gradients must be one of"):
        opt.compute_gradients(loss, gate_gradients=7)
    with pytest.raises(TypeError, match="Variable must be a tf.Variable"):
        opt.compute_gradients(loss, var_list=[tf.constant(1.0)])


@pytest.mark.parametrize("make", [lambda: tf.train.GradientDescentOptimizer(0.2),
                                  lambda: tf.train.MomentumOptimizer(0.05, 0.9,
                                                                     use_nesterov=True),
                                  lambda: tf.train.AdagradOptimizer(0.1),
                                  lambda: tf.train.AdamOptimizer(0.002)],
                         ids=["sgd", "nesterov", "adagrad", "adam"])
def test_mlp_learns_synthetic_data(make):
    x, y = mnist_like(2048, seed=1)
    test_x, test_y = mnist_like(512, seed=2)
    model = build_mlp(make(), global_step=tf.train.get_or_create_global_step())
    batches = Batches(x, y, 128, seed=0)
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        first = sess.run(model.loss, {model.x: test_x, model.labels: test_y})
        for _ in range(60):
            bx, by = batches.next()
            sess.run(model.train_op, {model.x: bx, model.labels: by})
        loss, acc = sess.run([model.loss, model.accuracy],
                             {model.x: test_x, model.labels: test_y})
        assert sess.run(model.global_step) == 60
    assert first > 2.0 and loss < 0.2 and acc > 0.95, (first, loss, acc)
