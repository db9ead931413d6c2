"""Reduction kernels on numpy (CPU) and cupy (GPU): Sum, Mean, Prod, Max, Min, ArgMax,
ArgMin, Range, and the scans Cumsum, Cumprod.

Rule: as in `kernels/math.py`, a kernel never writes to its inputs, and every
output has the dtype the op's shape function promised (attr T, output_type or Tidx).
"""
from __future__ import annotations

import numpy as np

from nbcluster import errors
from nbcluster.kernels.math import DEVICES
from nbcluster.runtime.kernel_table import register_kernel


# -- reductions -------------------------------------------------------------------
def _axes(axis, ndim: int) -> tuple:
    values = axis.tolist()
    out = set()
    for a in (values if isinstance(values, list) else [values]):
        if not -ndim <= a < ndim:
            raise errors.InvalidArgumentError(
                None, None, f"Invalid reduction dimension ({a} for input with {ndim} "
                            f"dimension(s)")
        out.add(a % ndim)
    return tuple(sorted(out))


def _reduced_shape(shape: tuple, axes: tuple, keep: bool) -> tuple:
    if keep:
        return tuple(1 if i in axes else d for i, d in enumerate(shape))
    return tuple(d for i, d in enumerate(shape) if i not in axes)


def _accumulator(dtype):
    return np.float32 if dtype == np.float16 else dtype


def _sum(xp, x, axes, keep):
    if xp is np:  # the ufunc itself: np.sum's Python wrapper cost more than a small sum
        return np.add.reduce(x, axis=axes, keepdims=keep, dtype=_accumulator(x.dtype))
    return xp.sum(x, axis=axes, keepdims=keep, dtype=_accumulator(x.dtype))


def _mean(xp, x, axes, keep):
    count = int(np.prod([x.shape[a] for a in axes]))
    if x.dtype.kind in "iu":  # TF divides integers in C: truncating toward zero
        total = xp.sum(x, axis=axes, keepdims=keep, dtype=x.dtype)
        if count == 0:
            return total
        q = xp.abs(total) // count
        return xp.where(total < 0, -q, q)
    return xp.sum(x, axis=axes, keepdims=keep, dtype=_accumulator(x.dtype)) / count


def _prod(xp, x, axes, keep):
    return xp.prod(x, axis=axes, keepdims=keep, dtype=_accumulator(x.dtype))


def _extreme(name: str, float_identity: float, int_identity: str):
    def reduce(xp, x, axes, keep):
        if x.size == 0 and axes:  # TF: the reduction's identity (-inf for max, ...)
            if x.dtype.kind == "f":
                identity = float_identity
            else:
                identity = getattr(np.iinfo(x.dtype), int_identity)
            return xp.full(_reduced_shape(x.shape, axes, keep), identity, dtype=x.dtype)
        return getattr(xp, name)(x, axis=axes, keepdims=keep)
    return reduce


def _reduction(op_type: str, reduce) -> None:
    @register_kernel(op_type, *DEVICES)
    def factory(node, device):
        xp = device.xp
        keep = bool(node.attrs.get("keep_dims", False))
        dtype = np.dtype(node.attrs["T"].as_numpy_dtype)

        def compute(ctx, x, axis):
            return (xp.asarray(reduce(xp, x, _axes(axis, x.ndim), keep), dtype=dtype),)

        return compute


_reduction("Sum", _sum)
_reduction("Mean", _mean)
_reduction("Prod", _prod)
_reduction("Max", _extreme("max", -np.inf, "min"))
_reduction("Min", _extreme("min", np.inf, "max"))


def _arg_reduction(op_type: str, fn_name: str) -> None:
    @register_kernel(op_type, *DEVICES)
    def factory(node, device):
        xp = device.xp
        fn = getattr(xp, fn_name)
        out = np.dtype(node.attrs["output_type"].as_numpy_dtype)

        def compute(ctx, x, axis):
            a = int(np.asarray(axis.tolist()).reshape(-1)[0])
            if not -x.ndim <= a < x.ndim:
                raise errors.InvalidArgumentError(
                    None, None, f"Expected dimension in the range [{-x.ndim}, {x.ndim}), "
                                f"but got {a}")
            if x.shape[a] == 0:
                raise errors.InvalidArgumentError(
                    None, None, f"Reduction axis {a} is empty in shape {list(x.shape)}")
            return (xp.asarray(fn(x, axis=a), dtype=out),)

        return compute


_arg_reduction("ArgMax", "argmax")
_arg_reduction("ArgMin", "argmin")


def _range_error(start, limit, delta):
    if delta == 0:
        return "Requires delta != 0"
    if (delta > 0 and start > limit) or (delta < 0 and start < limit):
        relation = "<=" if delta > 0 else ">="
        return f"Requires start {relation} limit when delta {'>' if delta > 0 else '<'} 0: " \
               f"{start}/{limit}"
    return None


@register_kernel("Range", *DEVICES)
def _range(node, device):
    xp = device.xp
    dtype = np.dtype(node.attrs["Tidx"].as_numpy_dtype)

    def compute(ctx, start, limit, delta):
        start, limit, delta = (v.item() for v in (start, limit, delta))
        message = _range_error(start, limit, delta)
        if message:
            raise errors.InvalidArgumentError(None, None, message)
        return (xp.arange(start, limit, delta, dtype=dtype),)

    return compute


# -- logical reductions -----------------------------------------------------------------
def _logical_reduction(op_type: str, fn_name: str) -> None:
    # All and Any carry no attr T: the output is always bool.
    @register_kernel(op_type, *DEVICES)
    def factory(node, device):
        xp = device.xp
        fn = getattr(xp, fn_name)
        keep = bool(node.attrs.get("keep_dims", False))

        def compute(ctx, x, axis):
            return (xp.asarray(fn(x, axis=_axes(axis, x.ndim), keepdims=keep),
                               dtype=np.bool_),)

        return compute


_logical_reduction("All", "all")
_logical_reduction("Any", "any")


# -- scans ------------------------------------------------------------------------
def _scan(op_type: str, fn_name: str, identity: int) -> None:
    @register_kernel(op_type, *DEVICES)
    def factory(node, device):
        xp = device.xp
        fn = getattr(xp, fn_name)
        exclusive, reverse = bool(node.attrs["exclusive"]), bool(node.attrs["reverse"])

        def compute(ctx, x, axis):
            a = int(axis)
            if not -x.ndim <= a < max(x.ndim, 1):
                raise errors.InvalidArgumentError(
                    None, None, f"{op_type} axis must be in [{-x.ndim}, {x.ndim}), got {a}",
                    node_name=node.name)
            if x.ndim == 0:
                return (x.copy() if not exclusive else xp.full_like(x, identity),)
            a %= x.ndim
            if reverse:
                x = xp.flip(x, a)
            out = fn(x, axis=a, dtype=x.dtype)
            if exclusive:  # each element's own term left out: shift by one
                head = xp.full_like(xp.take(out, [0], axis=a), identity)
                out = xp.concatenate([head, xp.take(out, xp.arange(x.shape[a] - 1), axis=a)],
                                     axis=a)
            return (xp.flip(out, a) if reverse else out,)

        return compute


_scan("Cumsum", "cumsum", 0)
_scan("Cumprod", "cumprod", 1)
