"""tf.nn.sigmoid_cross_entropy_with_logits / weighted_cross_entropy_with_logits against NumPy."""
import numpy as np
import pytest

import nbcluster as tf

X = np.array([[-30.0, -1.0, 0.0, 2.0, 40.0], [0.5, -0.25, 3.0, -3.0, 1e-3]])
Z = np.array([[1.0, 0.0, 1.0, 0.3, 0.0], [0.0, 1.0, 0.5, 1.0, 1.0]])


def softplus(v):
    return np.logaddexp(0.0, v)  # log(1 + exp(v)), stable at any size


def run(*fetches):
    with tf.Session() as sess:
        return sess.run(list(fetches))


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_sigmoid_loss_and_its_gradient(dtype):
    with tf.Graph().as_default():
        logits = tf.constant(X.astype(dtype))
        loss = tf.nn.sigmoid_cross_entropy_with_logits(labels=Z, logits=logits)
        grad, = tf.gradients(tf.reduce_sum(loss), [logits])
        value, g = run(loss, grad)
    assert loss.dtype == tf.as_dtype(dtype) and value.shape == X.shape
    np.testing.assert_allclose(value, Z * softplus(-X) + (1 - Z) * softplus(X), rtol=1e-5)
    np.testing.assert_allclose(g, 1 / (1 + np.exp(-X)) - Z, rtol=1e-5, atol=1e-7)


def test_weighted_loss_weighs_the_positives():
    with tf.Graph().as_default():
        loss = tf.nn.weighted_cross_entropy_with_logits(labels=Z, logits=X, pos_weight=3.0)
        value, = run(loss)
    np.testing.assert_allclose(value, 3.0 * Z * softplus(-X) + (1 - Z) * softplus(X),
                               rtol=1e-6)


def test_shapes_must_match_and_arguments_be_named():
    with tf.Graph().as_default():
        with pytest.raises(ValueError, match=r"same shape.*\(2, 5\).*\(5,\)"):
            tf.nn.sigmoid_cross_entropy_with_logits(labels=Z[0], logits=X)
        with pytest.raises(ValueError, match="named arguments"):
            tf.nn.sigmoid_cross_entropy_with_logits(Z, X)
