"""`y += alpha * x` in place, in one pass, through the BLAS numpy loaded (its
saxpy or daxpy), for the SGD update of a variable no one else holds.

Why: numpy has no fused multiply-add into an array, so `var -= lr * delta`
takes two passes and a scratch array (multiply into it, subtract it): for the
784x256 float32 weights of the benchmark MLP 70 µs on one thread against 40 for
saxpy, and inside a step, where the scratch's 800 KB push the step's other
arrays out of the core's cache, 115-130 µs.

Only OpenBLAS is used (numpy's wheels bundle it), found once per process
through threadpoolctl, which knows the symbols' affixes (`scipy_cblas_saxpy64_`
in numpy 2's wheels); `openblas_get_config` says whether its integers are 64
bits. A first call on a small array must match numpy's two passes, else the
process keeps numpy's. Where none of this holds `axpy` returns False and the
caller runs numpy's passes. Results differ from those at most in rounding (one
fused multiply-add against a product and a difference), as between two BLAS
thread counts.

A call runs at one BLAS thread (`blas_width`'s narrowing): OpenBLAS splits an
axpy this size over its pool, and a pool call on a loaded host waits for a
thread that is not scheduled (`blas_pool_gate`).
"""
from __future__ import annotations

import ctypes
import threading

import numpy as np

from nbcluster.runtime import blas_width

# Below this many elements numpy's two passes, in cache, cost no more than the call
# (float32, one thread: 7 against 9 µs at 32K elements, 13 against 11 at 64K).
MIN_SIZE = 1 << 16

_lock = threading.Lock()
_routines = None  # dtype -> the BLAS routine, once looked up ({} when there is none)


def axpy(alpha, x: np.ndarray, y: np.ndarray) -> bool:
    """y += alpha * x in y's own memory, when BLAS can; whether it did.

    `x` and `y`: same shape, same dtype (float32 or float64), C-contiguous,
    not overlapping; `y` writable. Anything else returns False untouched.
    """
    if y.size < MIN_SIZE or x.dtype != y.dtype or x.shape != y.shape or \
            not (x.flags.c_contiguous and y.flags.c_contiguous and y.flags.writeable):
        return False
    routine = (_routines if _routines is not None else _load()).get(y.dtype)
    if routine is None or np.may_share_memory(x, y):
        return False
    blas_width.one_thread_call(routine, y.size, float(alpha), x.ctypes.data, 1,
                               y.ctypes.data, 1)
    return True


def _load() -> dict:
    global _routines
    with _lock:
        if _routines is None:
            found = _find()
            _routines = {dtype: fn for dtype, fn in found.items() if _agrees(fn, dtype)}
        return _routines


def _find() -> dict:
    try:
        from threadpoolctl import ThreadpoolController
    except ImportError:
        return {}
    libs = ThreadpoolController().select(internal_api="openblas").lib_controllers
    symbol = getattr(libs[0], "_get_symbol", None) if libs else None  # any OpenBLAS will do
    config = symbol("openblas_get_config") if symbol is not None else None
    if config is None:
        return {}
    config.restype = ctypes.c_char_p
    integer = ctypes.c_int64 if b"USE64BITINT" in (config() or b"") else ctypes.c_int
    out = {}
    for dtype, name, real in ((np.dtype(np.float32), "cblas_saxpy", ctypes.c_float),
                              (np.dtype(np.float64), "cblas_daxpy", ctypes.c_double)):
        fn = symbol(name)
        if fn is not None:
            fn.restype = None
            fn.argtypes = [integer, real, ctypes.c_void_p, integer, ctypes.c_void_p, integer]
            out[dtype] = fn
    return out


def _agrees(fn, dtype) -> bool:
    """Whether `fn` computes y += alpha * x on a test array as numpy does."""
    rng = np.random.default_rng(0)
    x = rng.standard_normal(MIN_SIZE + 3).astype(dtype)
    y = rng.standard_normal(MIN_SIZE + 3).astype(dtype)
    want = y - dtype.type(0.5) * x
    fn(y.size, -0.5, x.ctypes.data, 1, y.ctypes.data, 1)
    # values near 1: one fused multiply-add differs from numpy's two roundings by an ulp
    tol = 1e-5 if dtype == np.float32 else 1e-12
    return bool(np.allclose(y, want, rtol=tol, atol=tol))
