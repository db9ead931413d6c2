"""Math kernels on numpy (CPU) and cupy (GPU): element-wise ops, Cast, AddN, SelectV2.

Rule: a kernel never writes to its inputs, and every output has the dtype the
op's shape function promised (attr T, DstT or output_type). numpy warns on
overflow, 0/0 and log(0) and TF does not: the executors run every kernel
with numpy's warnings off (once per run, not per kernel: that cost 7% of a step).
"""
from __future__ import annotations

import numpy as np

from nbcluster import errors
from nbcluster.runtime.kernel_table import register_kernel

DEVICES = ("CPU", "GPU")


def _elementwise(op_type: str, ufunc: str, out_dtype=None) -> None:
    """Registers `op_type` as xp.<ufunc> of its inputs, cast to attr T (or `out_dtype`)."""

    @register_kernel(op_type, *DEVICES)
    def factory(node, device):
        xp = device.xp
        fn = getattr(xp, ufunc)
        dtype = np.dtype(out_dtype or node.attrs["T"].as_numpy_dtype)

        def compute(ctx, *inputs):
            return (xp.asarray(fn(*inputs), dtype=dtype),)

        return compute


_UNARY = {"Neg": "negative", "Sign": "sign", "Square": "square", "Sqrt": "sqrt", "Exp": "exp",
          "Log": "log", "Log1p": "log1p", "Tanh": "tanh", "Abs": "abs", "Reciprocal": "reciprocal"}
_BINARY = {"AddV2": "add", "Sub": "subtract", "Mul": "multiply", "RealDiv": "true_divide",
           "Maximum": "maximum", "Minimum": "minimum"}
_COMPARE = {"Equal": "equal", "NotEqual": "not_equal", "Less": "less",
            "LessEqual": "less_equal", "Greater": "greater", "GreaterEqual": "greater_equal"}
for _type, _ufunc in {**_UNARY, **_BINARY}.items():
    _elementwise(_type, _ufunc)
for _type, _ufunc in _COMPARE.items():
    _elementwise(_type, _ufunc, np.bool_)


def _floor_kernel(op_type: str, ufunc: str):
    @register_kernel(op_type, *DEVICES)
    def kernel(node, device):
        xp = device.xp
        integer = np.dtype(node.attrs["T"].as_numpy_dtype).kind in "iu"

        def compute(ctx, x, y):
            if integer and not bool(xp.all(y)):
                raise errors.InvalidArgumentError(None, None, "Integer division by zero")
            return (getattr(xp, ufunc)(x, y),)
        return compute
    return kernel


@register_kernel("DivNoNan", *DEVICES)
def _div_no_nan(node, device):
    xp = device.xp

    def compute(ctx, x, y):
        zero = y == 0
        return (xp.where(zero, xp.zeros((), x.dtype), x / xp.where(zero, xp.ones((), y.dtype),
                                                                    y)).astype(x.dtype,
                                                                               copy=False),)
    return compute


_floor_kernel("FloorDiv", "floor_divide")
_floor_kernel("FloorMod", "mod")  # numpy's mod takes the divisor's sign, as TF's FloorMod


@register_kernel("Rsqrt", *DEVICES)
def _rsqrt(node, device):
    xp = device.xp

    def compute(ctx, x):
        return (xp.reciprocal(xp.sqrt(x)),)

    return compute


@register_kernel("SquaredDifference", *DEVICES)
def _squared_difference(node, device):
    xp = device.xp

    def compute(ctx, x, y):
        d = x - y
        return (d * xp.conj(d) if d.dtype.kind == "c" else d * d,)

    return compute


@register_kernel("Pow", *DEVICES)
def _pow(node, device):
    xp = device.xp
    dtype = np.dtype(node.attrs["T"].as_numpy_dtype)

    def compute(ctx, x, y):
        if dtype.kind in "iu" and bool((y < 0).any()):
            raise errors.InvalidArgumentError(
                None, None, "Integers to negative integer powers are not allowed")
        return (xp.asarray(xp.power(x, y), dtype=dtype),)

    return compute


@register_kernel("Cast", *DEVICES)
def _cast(node, device):
    dst = np.dtype(node.attrs["DstT"].as_numpy_dtype)

    def compute(ctx, x):
        if x.dtype.kind == "c" and dst.kind != "c":
            x = x.real  # TF drops the imaginary part
        return (x.astype(dst, copy=False),)

    return compute


@register_kernel("AddN", *DEVICES)
def _add_n(node, device):
    xp = device.xp

    def compute(ctx, first, *rest):
        total = xp.array(first, copy=True)  # a fresh buffer: inputs stay untouched
        for value in rest:
            total += value
        return (total,)

    return compute


@register_kernel("SelectV2", *DEVICES)
def _select_v2(node, device):
    xp = device.xp
    return lambda ctx, cond, t, e: (xp.where(cond, t, e),)
