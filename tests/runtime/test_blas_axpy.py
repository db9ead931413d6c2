"""runtime/blas_axpy.py: y += alpha * x in y's own memory through numpy's BLAS, at one
BLAS thread, or False (y untouched) where BLAS cannot do it."""
from __future__ import annotations

import numpy as np
import pytest

import nbcluster as tf
from nbcluster.runtime import blas_axpy, blas_width, math_threads

pytestmark = pytest.mark.timeout(60)

N = blas_axpy.MIN_SIZE * 4


def _blas_threads() -> list:
    from threadpoolctl import threadpool_info
    return [p["num_threads"] for p in threadpool_info() if p["user_api"] == "blas"]


@pytest.fixture
def openblas():
    """numpy's own BLAS is OpenBLAS (its wheels bundle it), so `axpy` has a routine."""
    from threadpoolctl import threadpool_info
    if not any(p["internal_api"] == "openblas" for p in threadpool_info()):
        pytest.skip("numpy here is not built on OpenBLAS (pip's numpy wheels are)")


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_axpy_adds_alpha_x_into_y_s_own_array(openblas, dtype):
    rng = np.random.default_rng(1)
    x = rng.standard_normal((N // 64, 64)).astype(dtype)
    y = rng.standard_normal((N // 64, 64)).astype(dtype)
    want = y - dtype(0.25) * x
    memory = y.ctypes.data
    assert blas_axpy.axpy(dtype(-0.25), x, y)
    assert y.ctypes.data == memory and y.dtype == dtype
    tol = 1e-5 if dtype == np.float32 else 1e-12  # a fused multiply-add: an ulp apart
    np.testing.assert_allclose(y, want, rtol=tol, atol=tol)


def _refused(x, y) -> None:
    before = y.copy()
    assert not blas_axpy.axpy(-1.0, x, y)
    np.testing.assert_array_equal(y, before)


def test_what_blas_cannot_do_is_refused_and_left_untouched(openblas):
    x = np.ones(N, np.float32)
    _refused(x, np.ones(N, np.float64))  # dtypes differ
    _refused(x[: blas_axpy.MIN_SIZE - 1], np.ones(blas_axpy.MIN_SIZE - 1, np.float32))
    _refused(np.ones(N, np.int32), np.ones(N, np.int32))  # no integer axpy
    _refused(x, np.ones(N + 1, np.float32))  # shapes differ
    _refused(x, np.ones(2 * N, np.float32)[::2])  # y not contiguous
    frozen = np.ones(N, np.float32)
    frozen.flags.writeable = False
    assert not blas_axpy.axpy(-1.0, x, frozen)
    same = np.ones(N + 8, np.float32)
    _refused(same[8:], same[:N])  # x and y overlap


def test_a_call_runs_blas_at_one_thread_and_puts_the_pool_back(openblas, monkeypatch):
    from threadpoolctl import threadpool_limits
    monkeypatch.setattr(math_threads, "current_threads", lambda: 2)
    seen = []
    with threadpool_limits(2):
        blas_width.one_thread_call(lambda: seen.append(_blas_threads()))
        assert seen == [[1]]
        assert _blas_threads() == [2]


def test_sgd_on_a_large_variable_updates_it_through_blas(openblas, monkeypatch):
    calls = []
    real = blas_axpy.axpy

    def spied(*args):
        calls.append((args[2].shape, real(*args)))
        return calls[-1][1]

    monkeypatch.setattr(blas_axpy, "axpy", spied)
    rng = np.random.default_rng(2)
    start = rng.standard_normal((784, 256)).astype(np.float32)
    delta = rng.standard_normal((784, 256)).astype(np.float32)
    with tf.Graph().as_default():
        v = tf.Variable(start, name="w")
        step = tf.train.GradientDescentOptimizer(0.5).apply_gradients(
            [(tf.constant(delta), v)])
        with tf.Session() as s:
            s.run(v.initializer)
            s.run(step)
            s.run(step)
            np.testing.assert_allclose(s.run(v), start - 2 * 0.5 * delta, rtol=1e-5,
                                       atol=1e-6)
    assert calls == [((784, 256), True), ((784, 256), True)]


def test_a_routine_that_does_not_compute_axpy_is_not_used(openblas):
    blas_axpy.axpy(-1.0, np.ones(N, np.float32), np.ones(N, np.float32))  # loads the routines
    assert set(blas_axpy._routines) == {np.dtype(np.float32), np.dtype(np.float64)}
    for dtype, routine in blas_axpy._routines.items():
        assert blas_axpy._agrees(routine, dtype)
    assert not blas_axpy._agrees(lambda n, alpha, x, incx, y, incy: None, np.dtype(np.float32))
