"""Slicing kernels: StridedSlice(+Grad), Slice, Pad, Unpack, BroadcastTo,
InvertPermutation, and the gradient shape helpers BroadcastGradientArgs and
ConcatOffset.

Rule: as in `kernels/array.py`, inputs are never written; index inputs are
read on the host, and shape-valued outputs are built on the host, then moved
to the device as the Shape kernel does.
"""
from __future__ import annotations

import numpy as np

from nbcluster.kernels.array import host_ints, invalid, module_for, shape_str
from nbcluster.ops.slicing import MASKS, static_reduction_axes, strided_entries
from nbcluster.runtime.kernel_table import register_kernel

DEVICES = ("CPU", "GPU")


@register_kernel("Slice", *DEVICES)
def _slice(node, device):
    def compute(ctx, x, begin, size):
        begin = host_ints(device, begin, node, "begin")
        size = host_ints(device, size, node, "size")
        if len(begin) != x.ndim or len(size) != x.ndim:
            raise invalid(f"Expected begin and size arguments to be 1-D tensors of size "
                          f"{x.ndim}, but got shapes [{len(begin)}] and [{len(size)}] "
                          f"instead.", node)
        index = []
        for i, (b, s, d) in enumerate(zip(begin, size, x.shape)):
            s = d - b if s == -1 else s
            if b < 0 or s < 0 or b + s > d:
                raise invalid(f"Expected size[{i}] in [0, {d - b}], but got {s} (begin "
                              f"{b}, dim {d})", node)
            index.append(slice(b, b + s))
        return (x[tuple(index)],)
    return compute


@register_kernel("Pad", *DEVICES)
def _pad(node, device):
    def compute(ctx, x, paddings):
        flat = host_ints(device, paddings.reshape(-1), node, "paddings")
        if len(flat) != 2 * x.ndim:
            raise invalid(f"The first dimension of paddings must be the rank of inputs "
                          f"{x.ndim}, got paddings of {len(flat) // 2} rows", node)
        pairs = [(flat[2 * i], flat[2 * i + 1]) for i in range(x.ndim)]
        if any(v < 0 for pair in pairs for v in pair):
            raise invalid(f"Paddings must be non-negative: {pairs}", node)
        xp = module_for(device, x)
        out = xp.zeros([d + lo + hi for d, (lo, hi) in zip(x.shape, pairs)], dtype=x.dtype)
        out[tuple(slice(lo, lo + d) for d, (lo, _) in zip(x.shape, pairs))] = x
        return (out,)
    return compute


@register_kernel("Unpack", *DEVICES)
def _unpack(node, device):
    num, axis = int(node.attrs["num"]), int(node.attrs.get("axis", 0))

    def compute(ctx, x):
        if not -x.ndim <= axis < x.ndim:
            raise invalid(f"axis = {axis} not in [{-x.ndim}, {x.ndim})", node)
        a = axis % x.ndim
        if x.shape[a] != num:
            raise invalid(f"Input shape axis {a} must equal {num}, got shape "
                          f"{shape_str(x.shape)}", node)
        lead = (slice(None),) * a
        return tuple(x[lead + (i,)] for i in range(num))
    return compute


@register_kernel("BroadcastTo", *DEVICES)
def _broadcast_to(node, device):
    def compute(ctx, x, shape):
        dims = host_ints(device, shape, node, "shape")
        xp = module_for(device, x)
        try:
            # A copy into a new array: np.broadcast_to's Python costs more (copyto also
            # drops leading 1s of a higher-rank input, which BroadcastTo refuses).
            if xp is np and x.ndim <= len(dims):
                out = np.empty(dims, dtype=x.dtype)
                np.copyto(out, x)
                return (out,)
            return (xp.array(xp.broadcast_to(x, dims)),)
        except ValueError:
            raise invalid(f"Incompatible shapes: {shape_str(x.shape)} vs. "
                          f"{shape_str(dims)}", node) from None
    return compute


@register_kernel("InvertPermutation", *DEVICES)
def _invert_permutation(node, device):
    def compute(ctx, x):
        perm = host_ints(device, x, node, "invert_permutation expects a 1D vector; x")
        if sorted(perm) != list(range(len(perm))):
            raise invalid(f"{shape_str(perm)} is not a permutation of [0, {len(perm)})", node)
        out = np.empty(len(perm), dtype=np.asarray(device.to_numpy(x)).dtype)
        out[perm] = np.arange(len(perm))
        return (device.from_numpy(out),)
    return compute


@register_kernel("BroadcastGradientArgs", *DEVICES)
def _broadcast_gradient_args(node, device):
    dtype = np.dtype(node.attrs["T"].as_numpy_dtype)
    # The last shapes and their result, in one slot (steps repeat their shapes);
    # read-only, since every step gets the same arrays.
    last: list = [((), ())]

    def compute(ctx, s0, s1):
        a, b = host_ints(device, s0, node, "s0"), host_ints(device, s1, node, "s1")
        key, out = last[0]
        if key == (a, b):
            return out
        try:
            r0, r1 = static_reduction_axes(a, b)
        except ValueError:
            raise invalid(f"Incompatible shapes: {shape_str(a)} vs. {shape_str(b)}",
                          node) from None
        out = device.from_numpy(r0.astype(dtype)), device.from_numpy(r1.astype(dtype))
        for array in out:
            if isinstance(array, np.ndarray):
                array.flags.writeable = False
        last[0] = ((a, b), out)
        return out
    return compute


@register_kernel("ConcatOffset", *DEVICES)
def _concat_offset(node, device):
    def compute(ctx, axis, *shapes):
        (a,) = host_ints(device, axis, node, "concat_dim", vector=False)
        dims = [host_ints(device, s, node, f"shape {i}") for i, s in enumerate(shapes)]
        rank = len(dims[0])
        if not -rank <= a < rank:
            raise invalid(f"Concat dim is out of range: {a} vs. {rank}", node)
        a %= rank
        offsets, start = [], 0
        for i, d in enumerate(dims):
            if len(d) != rank or any(x != y for j, (x, y) in enumerate(zip(d, dims[0]))
                                     if j != a):
                raise invalid(f"input {i} should have shape compatible with "
                              f"{shape_str(dims[0])} except on dim {a}, got {shape_str(d)}",
                              node)
            offset = np.zeros(rank, dtype=np.asarray(device.to_numpy(shapes[i])).dtype)
            offset[a] = start
            start += d[a]
            offsets.append(device.from_numpy(offset))
        return tuple(offsets)
    return compute


def _numpy_index(device, node, x_rank: int, begin, end, strides) -> tuple:
    spec = [host_ints(device, v, node, what) for v, what in
            ((begin, "begin"), (end, "end"), (strides, "strides"))]
    if not len(spec[0]) == len(spec[1]) == len(spec[2]):
        raise invalid(f"Expected begin, end, and strides to be 1D equal size tensors, but "
                      f"got shapes [{len(spec[0])}], [{len(spec[1])}], and "
                      f"[{len(spec[2])}] instead.", node)
    masks = {name: int(node.attrs.get(name, 0)) for name in MASKS}
    try:
        entries = strided_entries(*spec, masks, x_rank)
    except ValueError as e:
        raise invalid(str(e), node) from None
    index = []
    for kind, _, value in entries:
        index.append({"new": None, "full": slice(None)}.get(kind, value))
    return entries, tuple(index)


def _check_bounds(entries, shape, node) -> None:
    for kind, axis, value in entries:
        if kind == "index" and not -shape[axis] <= value < shape[axis]:
            raise invalid(f"slice index {value} of dimension {axis} out of bounds.", node)


@register_kernel("StridedSlice", *DEVICES)
def _strided_slice(node, device):
    def compute(ctx, x, begin, end, strides):
        entries, index = _numpy_index(device, node, x.ndim, begin, end, strides)
        _check_bounds(entries, x.shape, node)
        return (x[index],)
    return compute


@register_kernel("StridedSliceGrad", *DEVICES)
def _strided_slice_grad(node, device):
    def compute(ctx, shape, begin, end, strides, dy):
        dims = host_ints(device, shape, node, "shape")
        entries, index = _numpy_index(device, node, len(dims), begin, end, strides)
        _check_bounds(entries, dims, node)
        xp = module_for(device, dy)
        out = xp.zeros(dims, dtype=dy.dtype)
        view = out[index]
        if view.shape != tuple(dy.shape) and view.size != dy.size:
            raise invalid(f"dy has shape {shape_str(dy.shape)}, the slice of "
                          f"{shape_str(dims)} has {shape_str(view.shape)}", node)
        out[index] = dy.reshape(view.shape)
        return (out,)
    return compute
