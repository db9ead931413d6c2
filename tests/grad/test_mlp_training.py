"""End to end: a 2-layer MLP with softmax cross-entropy, trained by hand with
`assign_sub(lr * grad)` for 50 steps in one Session; the loss must fall."""
import numpy as np
import pytest

import nbcluster as tf

pytestmark = pytest.mark.timeout(120)


def _data(rng, n=64):
    x = rng.normal(size=(n, 4)).astype(np.float32)
    classes = (x[:, 0] + x[:, 1] > 0).astype(int) + (x[:, 2] > 0.5).astype(int)
    return x, np.eye(3, dtype=np.float32)[classes]


def _train(use_tape: bool) -> list:
    rng = np.random.default_rng(11)
    x_val, y_val = _data(rng)
    with tf.Graph().as_default():
        x = tf.placeholder(tf.float32, [None, 4], name="x")
        labels = tf.placeholder(tf.float32, [None, 3], name="labels")
        w0 = tf.Variable(rng.normal(scale=0.5, size=(4, 16)).astype(np.float32), name="w0")
        b0 = tf.Variable(np.zeros(16, np.float32), name="b0")
        w1 = tf.Variable(rng.normal(scale=0.5, size=(16, 3)).astype(np.float32), name="w1")
        b1 = tf.Variable(np.zeros(3, np.float32), name="b1")
        params = [w0, b0, w1, b1]
        with tf.GradientTape() as tape:
            hidden = tf.nn.relu(tf.matmul(x, w0) + b0)
            logits = tf.matmul(hidden, w1) + b1
            loss = tf.reduce_mean(tf.nn.softmax_cross_entropy_with_logits_v2(
                labels=labels, logits=logits))
        grads = tape.gradient(loss, params) if use_tape else tf.gradients(loss, params)
        for g, p in zip(grads, params):
            assert g is not None and g.shape.as_list() == p.shape.as_list()
        train = tf.group(*[p.assign_sub(0.5 * g) for p, g in zip(params, grads)])
        losses = []
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            feed = {x: x_val, labels: y_val}
            for _ in range(50):
                losses.append(float(sess.run(loss, feed)))
                sess.run(train, feed)
            losses.append(float(sess.run(loss, feed)))
    return losses


@pytest.mark.parametrize("use_tape", [False, True], ids=["tf.gradients", "GradientTape"])
def test_mlp_loss_falls_over_50_steps(use_tape):
    losses = _train(use_tape)
    assert all(np.isfinite(losses))
    assert losses[-1] < 0.5 * losses[0], losses[::10]
    # Mostly downhill: a fixed small learning rate on full batches.
    assert sum(b <= a for a, b in zip(losses, losses[1:])) >= 45


def test_both_ways_build_the_same_numbers():
    np.testing.assert_allclose(_train(False), _train(True), rtol=1e-6)
