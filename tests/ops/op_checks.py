"""Helpers the op tests share: run a graph, sample inputs, compare to numpy."""
import numpy as np

import nbcluster as tf

RNG = np.random.default_rng(0)


def run(fetches, feed=None):
    with tf.Session() as sess:
        return sess.run(fetches, feed)


def sample(shape, dtype, low=-5, high=5):
    if np.dtype(dtype).kind in "iu":
        return RNG.integers(max(low, np.iinfo(dtype).min), high, size=shape).astype(dtype)
    return RNG.uniform(low, high, size=shape).astype(dtype)


def check(actual, expected, dtype):
    assert actual.dtype == np.dtype(dtype)
    assert actual.shape == np.shape(expected)
    tol = {np.float16: 2e-3, np.float32: 1e-5, np.float64: 1e-12}.get(np.dtype(dtype).type, 0)
    np.testing.assert_allclose(actual, expected, rtol=tol, atol=tol)
