"""Shape kernels: Reshape, Transpose, ExpandDims, Squeeze, ReverseV2, and Shape, Size, Rank.

Rule: as in `kernels/array.py`, a kernel never writes to its inputs; shape-like
inputs (shape, perm, dim) are read on the host.
"""
from __future__ import annotations

import math

import numpy as np

from nbcluster.framework import dtypes
from nbcluster.kernels.array import host_ints, invalid, module_for, shape_str
from nbcluster.runtime.kernel_table import register_kernel


# -- reshaping ------------------------------------------------------------------
@register_kernel("Reshape", "CPU", "GPU")
def _reshape(node, device):
    def compute(ctx, x, shape):
        dims = host_ints(device, shape, node, "sizes input")
        return (x.reshape(_resolve(dims, int(x.size), node)),)
    return compute


def _resolve(dims: list, total: int, node) -> list:
    unknown = [i for i, d in enumerate(dims) if d == -1]
    if len(unknown) > 1:
        raise invalid(f"Only one input size may be -1, not both {unknown[0]} and "
                      f"{unknown[1]}", node)
    for i, d in enumerate(dims):
        if d < -1:
            raise invalid(f"Size {i} must be non-negative, not {d}", node)
    known = math.prod(d for d in dims if d != -1)  # np.prod of a list cost more than a Reshape
    if unknown:
        if known == 0 or total % known:
            if known == 0 and total == 0:
                raise invalid("Reshape cannot infer the missing input size for an empty "
                              "tensor unless all specified input sizes are non-zero", node)
            raise invalid(f"Input to reshape is a tensor with {total} values, but the "
                          f"requested shape requires a multiple of {known}", node)
        dims = list(dims)
        dims[unknown[0]] = total // known
    elif known != total:
        raise invalid(f"Input to reshape is a tensor with {total} values, but the requested "
                      f"shape has {known}", node)
    return dims


@register_kernel("Transpose", "CPU", "GPU")
def _transpose(node, device):
    def compute(ctx, x, perm):
        perm = host_ints(device, perm, node, "perm")
        if len(perm) != x.ndim:
            raise invalid(f"transpose expects a vector of size {x.ndim}. But input(1) is a "
                          f"vector of size {len(perm)}", node)
        for p in perm:
            if not 0 <= p < x.ndim:
                raise invalid(f"perm dim {p} is out of range of input rank {x.ndim}", node)
        if sorted(perm) != list(range(x.ndim)):
            raise invalid(f"perm {shape_str(perm)} is not a permutation of [0, {x.ndim})", node)
        xp = module_for(device, x)
        return (xp.ascontiguousarray(xp.transpose(x, perm)),)
    return compute


@register_kernel("ReverseV2", "CPU", "GPU")
def _reverse(node, device):
    def compute(ctx, x, axis):
        axes = host_ints(device, axis, node, "axis")
        seen = set()
        for a in axes:
            if not -x.ndim <= a < x.ndim:
                raise invalid(f"'axis'[{len(seen)}] = {a} is out of valid range "
                              f"[{-x.ndim}, {x.ndim - 1}]", node)
            if a % x.ndim in seen:
                raise invalid(f"axis {a} specified more than once", node)
            seen.add(a % x.ndim)
        xp = module_for(device, x)
        return (xp.ascontiguousarray(xp.flip(x, tuple(seen))) if seen else x,)
    return compute


@register_kernel("ExpandDims", "CPU", "GPU")
def _expand_dims(node, device):
    def compute(ctx, x, dim):
        (d,) = host_ints(device, dim, node, "'dim' input", vector=False)
        if d < -1 - x.ndim or d > x.ndim:
            raise invalid(f"Tried to expand dim index {d} for tensor with {x.ndim} "
                          f"dimensions.", node)
        d = d + x.ndim + 1 if d < 0 else d
        return (x.reshape(x.shape[:d] + (1,) + x.shape[d:]),)
    return compute


@register_kernel("Squeeze", "CPU", "GPU")
def _squeeze(node, device):
    axes = [int(a) for a in node.attrs.get("squeeze_dims", [])]

    def compute(ctx, x):
        for a in axes:
            if not -x.ndim <= a < x.ndim:
                raise invalid(f"Tried to squeeze dim index {a} for tensor with {x.ndim} "
                              f"dimensions.", node)
        wanted = {a % x.ndim for a in axes}
        for i in wanted:
            if x.shape[i] != 1:
                raise invalid(f"Can not squeeze dim[{i}], expected a dimension of 1, got "
                              f"{x.shape[i]}", node)
        keep = [d for i, d in enumerate(x.shape)
                if (i not in wanted if wanted else d != 1)]
        return (x.reshape(keep),)
    return compute


# -- shapes -----------------------------------------------------------------------
def _shape_kernel(measure):
    def factory(node, device):
        out_type = dtypes.as_dtype(node.attrs.get("out_type", dtypes.int32)).as_numpy_dtype

        def compute(ctx, x):
            return (device.from_numpy(np.array(measure(x), dtype=out_type)),)
        return compute
    return factory


register_kernel("Shape", "CPU", "GPU")(_shape_kernel(lambda x: x.shape))
register_kernel("Size", "CPU", "GPU")(_shape_kernel(lambda x: x.size))
register_kernel("Rank", "CPU", "GPU")(_shape_kernel(lambda x: x.ndim))


@register_kernel("ShapeN", "CPU", "GPU")
def _shape_n(node, device):
    out_type = node.attrs["out_type"].as_numpy_dtype

    def compute(ctx, *xs):
        return tuple(device.from_numpy(np.array(x.shape, dtype=out_type)) for x in xs)
    return compute
