"""Indexing kernels on numpy (CPU) and cupy (GPU): GatherV2, UnsortedSegmentSum,
Unique, ListDiff, OneHot, TF1's Select, Where, and the helpers the scatter kernels
share (bounds checks, scatter-add).

Rule: every index is checked before it is used, and an out-of-range one is an
InvalidArgumentError that names its position and value, worded as TF's
("indices[3] = 7 is not in [0, 5)"); kernels never write to their inputs.
"""
from __future__ import annotations

from typing import Optional

import numpy as np

from nbcluster.kernels.array import host_ints, invalid, module_for, shape_str
from nbcluster.kernels.math import DEVICES
from nbcluster.runtime.kernel_table import register_kernel


def first_out_of_range(device, xp, index, limit: int, drop_negative: bool = False
                       ) -> Optional[tuple]:
    """(position, value) of the first entry of `index` outside [0, limit), else None.

    With drop_negative, negative entries count as in range (they are skipped).
    """
    bad = index >= limit if drop_negative else (index < 0) | (index >= limit)
    if not bool(bad.any()):
        return None
    host = np.asarray(device.to_numpy(bad))
    position = tuple(int(i) for i in np.argwhere(host)[0])
    value = int(np.asarray(device.to_numpy(index))[position])
    return position, value


def position_str(name: str, position: tuple) -> str:
    """TF's way to name an entry: indices[1,2] (just the name for a scalar)."""
    return f"{name}[{','.join(str(p) for p in position)}]" if position else name


def scatter_add(xp, target, index, values) -> None:
    """target[index] += values, with repeated indices adding up (unbuffered)."""
    if xp is np:
        np.add.at(target, index, values)
    else:  # cupy's equivalent of np.add.at lives in cupyx
        import cupyx
        cupyx.scatter_add(target, index, values)


# -- gather -----------------------------------------------------------------------------
@register_kernel("GatherV2", *DEVICES)
def _gather(node, device):
    def compute(ctx, params, indices, axis):
        (a,) = host_ints(device, axis, node, "axis", vector=False)
        if not -params.ndim <= a < params.ndim:
            raise invalid(f"Expected axis in the range [{-params.ndim}, {params.ndim}), but "
                          f"got {a}", node)
        a %= params.ndim
        xp = module_for(device, params)
        limit = params.shape[a]
        bad = first_out_of_range(device, device.xp, indices, limit)
        if bad is not None:
            raise invalid(f"{position_str('indices', bad[0])} = {bad[1]} is not in "
                          f"[0, {limit})", node)
        return (xp.take(params, indices, axis=a),)
    return compute


# -- unsorted segment sum ------------------------------------------------------------------
@register_kernel("UnsortedSegmentSum", *DEVICES)
def _unsorted_segment_sum(node, device):
    xp = device.xp

    def compute(ctx, data, segment_ids, num_segments):
        (num,) = host_ints(device, num_segments, node, "num_segments", vector=False)
        if num < 0:
            raise invalid(f"num_segments must be non-negative, got {num}", node)
        if tuple(data.shape[:segment_ids.ndim]) != tuple(segment_ids.shape):
            raise invalid(f"data.shape = {shape_str(data.shape)} does not start with "
                          f"segment_ids.shape = {shape_str(segment_ids.shape)}", node)
        bad = first_out_of_range(device, xp, segment_ids, num, drop_negative=True)
        if bad is not None:
            raise invalid(f"{position_str('segment_ids', bad[0])} = {bad[1]} is out of "
                          f"range [0, {num})", node)
        inner = tuple(data.shape[segment_ids.ndim:])
        ids = segment_ids.reshape(-1)
        rows = data.reshape((ids.size,) + inner)
        keep = ids >= 0  # TF drops the slices of negative ids
        out = xp.zeros((num,) + inner, dtype=data.dtype)
        scatter_add(xp, out, ids[keep], rows[keep])
        return (out,)
    return compute


# -- one_hot --------------------------------------------------------------------------------
@register_kernel("OneHot", *DEVICES)
def _one_hot(node, device):
    xp = device.xp
    axis = int(node.attrs.get("axis", -1))
    dtype = np.dtype(node.attrs["T"].as_numpy_dtype)

    def compute(ctx, indices, depth, on_value, off_value):
        (d,) = host_ints(device, depth, node, "depth", vector=False)
        if d < 0:
            raise invalid(f"depth must be non-negative, got: {d}", node)
        for value, what in ((on_value, "on_value"), (off_value, "off_value")):
            if value.ndim != 0:
                raise invalid(f"{what} must be a scalar, but got: {shape_str(value.shape)}",
                              node)
        if not -1 <= axis <= indices.ndim:
            raise invalid(f"Expected axis to be -1 or between [0, {indices.ndim}).  But "
                          f"received: {axis}", node)
        # Indices outside [0, depth) match no position, so their rows are all off_value.
        hits = indices[..., None].astype(np.int64) == xp.arange(d, dtype=np.int64)
        out = xp.where(hits, on_value, off_value).astype(dtype, copy=False)
        if axis != -1:
            out = xp.moveaxis(out, -1, axis)
        return (xp.ascontiguousarray(out),)
    return compute


# -- select and where ----------------------------------------------------------------------
@register_kernel("Select", *DEVICES)
def _select(node, device):
    def compute(ctx, cond, t, e):
        xp = module_for(device, t, e)
        if t.shape != e.shape:
            raise invalid(f"'then' and 'else' must have the same size.  but received: "
                          f"{shape_str(t.shape)} vs. {shape_str(e.shape)}", node)
        if cond.ndim == 1 and t.ndim > 1:
            if cond.shape[0] != t.shape[0]:
                raise invalid(f"Number of batches of 'then' must match size of 'cond', but "
                              f"saw: {t.shape[0]} vs. {cond.shape[0]}", node)
            cond = cond.reshape((cond.shape[0],) + (1,) * (t.ndim - 1))
        elif cond.ndim != 0 and cond.shape != t.shape:
            raise invalid(f"'cond' and 'then' must have the same size.  but received: "
                          f"{shape_str(cond.shape)} vs. {shape_str(t.shape)}", node)
        if xp is np and t.dtype == object:
            cond = np.asarray(device.to_numpy(cond))
        return (xp.where(cond, t, e),)
    return compute


@register_kernel("Where", *DEVICES)
def _where(node, device):
    xp = device.xp

    def compute(ctx, x):
        return (xp.argwhere(x).astype(np.int64, copy=False),)
    return compute


@register_kernel("Unique", *DEVICES)
def _unique(node, device):
    xp = device.xp
    out_idx = node.attrs["out_idx"].as_numpy_dtype

    def compute(ctx, x):
        # xp.unique sorts; TF keeps the order of first appearance
        values, first, inverse = xp.unique(x, return_index=True, return_inverse=True)
        order = xp.argsort(first)
        position = xp.empty_like(order)
        position[order] = xp.arange(order.size)
        return values[order], position[inverse.reshape(-1)].astype(out_idx, copy=False)
    return compute


@register_kernel("ListDiff", *DEVICES)
def _list_diff(node, device):
    xp = device.xp
    out_idx = node.attrs["out_idx"].as_numpy_dtype

    def compute(ctx, x, y):
        if x.ndim != 1 or y.ndim != 1:
            raise invalid(f"x and y should be 1D vectors, got shapes {shape_str(x.shape)} "
                          f"and {shape_str(y.shape)}", node)
        keep = xp.nonzero(~xp.isin(x, y))[0]
        return x[keep], keep.astype(out_idx, copy=False)
    return compute
