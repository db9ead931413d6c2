"""Helpers the op tests share: run a graph, sample inputs, compare to numpy, run a blocking
step in a thread."""
import threading

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


# The array, shape and fill families move values of every dtype, bool and string too.
ARRAY_DTYPES = [np.float16, np.float32, np.float64, np.int32, np.int64, np.bool_]


def sample_any(shape, dtype):
    """The same values on every call for (shape, dtype); bools, and bytes for object."""
    rng = np.random.default_rng(0)
    if dtype == np.bool_:
        return rng.random(shape) > 0.5
    if dtype == object:
        return np.array([str(v).encode() for v in rng.integers(0, 99, int(np.prod(shape)))],
                        dtype=object).reshape(shape)
    return (rng.standard_normal(shape) * 10).astype(dtype)


def in_thread(fn):
    """Runs `fn` in a daemon thread: (thread, box); box gets "value" or "error"."""
    box = {}

    def body():
        try:
            box["value"] = fn()
        except Exception as e:  # noqa: BLE001 - handed back to the test
            box["error"] = e

    thread = threading.Thread(target=body, daemon=True)
    thread.start()
    return thread, box
