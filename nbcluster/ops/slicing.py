"""Slicing and rearranging ops (tensor[...], tf.slice, tf.pad, tf.unstack,
tf.broadcast_to, ...), and the shape helpers gradients build
(BroadcastGradientArgs, ConcatOffset).

Rule: as in `ops/array.py`, shape-valued arguments are int32/int64 tensors;
an output shape is inferred as far as those values are known at build time.
"""
from __future__ import annotations

import builtins
from typing import Optional

import numpy as np

from nbcluster.framework import dtypes
from nbcluster.framework.constant import convert_to_tensor
from nbcluster.framework.graph import graph_of
from nbcluster.framework.op_registry import register_op
from nbcluster.framework.operation import Tensor, register_operator
from nbcluster.framework.tensor_shape import TensorShape, broadcast, unknown_shape
from nbcluster.ops.array import index_tensor
from nbcluster.ops.shape_inference import (
    INDEX_TYPES,
    check_rank,
    constant_value,
    shape_error,
    shape_from_input,
)


def _check_index_dtype(op, index: int, param: str) -> None:
    dtype = op.inputs[index].dtype
    if dtype not in INDEX_TYPES:
        raise TypeError(f"Value passed to parameter '{param}' has DataType {dtype.name} not "
                        f"in list of allowed values: int32, int64")


def _build(op_type: str, inputs: list, attrs: dict, name: str, graph, outputs=False):
    with graph.as_default(), graph.name_scope(name) as scope:
        op = graph.create_op(op_type, inputs, attrs, name=scope)
    return list(op.outputs) if outputs else op.outputs[0]


# -- slice and pad ------------------------------------------------------------------
@register_op("Slice")
def _slice_shape(op):
    x = op.inputs[0]
    for i, param in ((1, "begin"), (2, "size")):
        check_rank(op, i, 1)
        _check_index_dtype(op, i, param)
    begin, size = constant_value(op.inputs[1]), constant_value(op.inputs[2])
    length = op.inputs[2].shape[0] if op.inputs[2].shape.rank == 1 else None
    rank = x.shape.rank if x.shape.rank is not None else length
    if x.shape.rank is not None and length is not None and x.shape.rank != length:
        raise shape_error(op, f"Length of size must equal the rank of input: {length} vs "
                              f"{x.shape.rank}")
    if size is None or rank is None:
        return [(x.dtype, unknown_shape(rank))]
    dims = []
    for i, s in enumerate(int(v) for v in size):
        if s >= 0:
            dims.append(s)
        elif begin is not None and x.shape.rank is not None and x.shape[i] is not None:
            dims.append(x.shape[i] - int(begin[i]))
        else:
            dims.append(None)
    return [(x.dtype, TensorShape(dims))]


def slice(input_, begin, size, name: Optional[str] = None) -> Tensor:  # noqa: A001
    """The block of `input_` starting at `begin` with extent `size` (-1: to the end).

    Raises: ValueError at build time when size's length is not input's rank.

    Example:
      >>> slice(constant([[1, 2, 3], [4, 5, 6]]), [0, 1], [2, -1]).shape
      TensorShape([2, 2])
    """
    graph = graph_of(input_, begin, size)
    x = convert_to_tensor(input_, name="input", graph=graph)
    begin_t = index_tensor(begin, "begin", graph)
    size_t = index_tensor(size, "size", graph)
    return _build("Slice", [x, begin_t, size_t], {"T": x.dtype, "Index": begin_t.dtype},
                  name or "Slice", graph)


@register_op("Pad")
def _pad_shape(op):
    x, paddings = op.inputs
    _check_index_dtype(op, 1, "paddings")
    check_rank(op, 1, 2)
    value = constant_value(paddings)
    rank = x.shape.rank
    if rank is None and paddings.shape.rank == 2:
        rank = paddings.shape[0]
    if value is None or x.shape.rank is None:
        return [(x.dtype, unknown_shape(rank))]
    if value.shape != (x.shape.rank, 2):
        raise shape_error(op, f"paddings must be a matrix of shape [{x.shape.rank}, 2], got "
                              f"{list(value.shape)}")
    dims = [None if d is None else d + int(lo) + int(hi)
            for d, (lo, hi) in zip(x.shape, value)]
    return [(x.dtype, TensorShape(dims))]


def pad(tensor, paddings, mode: str = "CONSTANT", name: Optional[str] = None,
        constant_values=0) -> Tensor:
    """`tensor` with zeros added before and after each dimension (op Pad).

    Args: paddings: an int [rank, 2] of (before, after) counts. mode: only
      "CONSTANT" with constant_values 0 is supported.
    Raises: ValueError for another mode or fill value.
    """
    if mode.upper() != "CONSTANT" or constant_values != 0:
        raise ValueError(f"pad supports mode='CONSTANT' with constant_values=0, not "
                         f"mode={mode!r}, constant_values={constant_values!r}")
    graph = graph_of(tensor, paddings)
    x = convert_to_tensor(tensor, name="input", graph=graph)
    paddings_t = index_tensor(paddings, "paddings", graph)
    return _build("Pad", [x, paddings_t], {"T": x.dtype, "Tpaddings": paddings_t.dtype},
                  name or "Pad", graph)


# -- unstack, broadcast_to, invert_permutation ----------------------------------------
@register_op("Unpack")
def _unpack_shape(op):
    x, num, axis = op.inputs[0], op.get_attr("num"), op.get_attr("axis")
    if x.shape.rank is None:
        return [(x.dtype, unknown_shape())] * num
    rank = x.shape.rank
    if not -rank <= axis < rank:
        raise shape_error(op, f"Dimension must be in range [{-rank}, {rank}), got {axis}")
    dims = x.shape.dims
    if dims[axis % rank] is not None and dims[axis % rank] != num:
        raise shape_error(op, f"Dimension must be {num} but is {dims[axis % rank]}")
    del dims[axis % rank]
    return [(x.dtype, TensorShape(dims))] * num


def unstack(value, num: Optional[int] = None, axis: int = 0, name: str = "unstack") -> list:
    """The slices of `value` along `axis`, as a list of tensors (op Unpack).

    Raises: ValueError when `num` is not given and the axis length is unknown.
    """
    graph = graph_of(value)
    x = convert_to_tensor(value, name="value", graph=graph)
    if num is None:
        rank = x.shape.rank
        if rank is None or not -rank <= axis < rank or x.shape[axis] is None:
            raise ValueError(f"Cannot infer argument `num` from shape {x.shape}")
        num = x.shape[axis]
    return _build("Unpack", [x], {"T": x.dtype, "num": int(num), "axis": int(axis)},
                  name or "unstack", graph, outputs=True)


@register_op("BroadcastTo")
def _broadcast_to_shape(op):
    x = op.inputs[0]
    _check_index_dtype(op, 1, "shape")
    target = shape_from_input(op, 1)
    if target.rank is not None and x.shape.rank is not None:
        if x.shape.rank > target.rank:
            raise shape_error(op, f"Rank of input ({x.shape.rank}) must be no greater than "
                                  f"rank of output shape ({target.rank})")
        broadcast(x.shape, target, op.name)  # raises for shapes that cannot broadcast
    return [(x.dtype, target)]


def broadcast_to(input, shape, name: Optional[str] = None) -> Tensor:  # noqa: A002
    """`input` repeated along size-1 (or missing leading) dims up to `shape`."""
    graph = graph_of(input, shape)
    x = convert_to_tensor(input, name="input", graph=graph)
    shape_t = index_tensor(shape, "shape", graph)
    return _build("BroadcastTo", [x, shape_t], {"T": x.dtype, "Tidx": shape_t.dtype},
                  name or "BroadcastTo", graph)


@register_op("InvertPermutation")
def _invert_permutation_shape(op):
    _check_index_dtype(op, 0, "x")
    check_rank(op, 0, 1)
    return [(op.inputs[0].dtype, op.inputs[0].shape)]


def invert_permutation(x, name: Optional[str] = None) -> Tensor:
    """y with y[x[i]] = i: the inverse of a permutation vector."""
    graph = graph_of(x)
    x = index_tensor(x, "x", graph)
    return _build("InvertPermutation", [x], {"T": x.dtype}, name or "InvertPermutation",
                  graph)


# -- shape helpers for gradients ------------------------------------------------------
@register_op("BroadcastGradientArgs")
def _broadcast_gradient_args_shape(op):
    for i, param in ((0, "s0"), (1, "s1")):
        check_rank(op, i, 1)
        _check_index_dtype(op, i, param)
    return [(op.inputs[0].dtype, TensorShape([None]))] * 2


def broadcast_gradient_args(s0, s1, name: Optional[str] = None) -> list:
    """The axes to sum a broadcast result's gradient over, for each of two input shapes."""
    graph = graph_of(s0, s1)
    s0_t, s1_t = index_tensor(s0, "s0", graph), index_tensor(s1, "s1", graph)
    return _build("BroadcastGradientArgs", [s0_t, s1_t], {"T": s0_t.dtype},
                  name or "BroadcastGradientArgs", graph, outputs=True)


@register_op("ConcatOffset")
def _concat_offset_shape(op):
    check_rank(op, 0, 0)
    shapes = op.inputs[1:]
    for i, t in enumerate(shapes):
        check_rank(op, i + 1, 1)
        if t.dtype != shapes[0].dtype:
            raise TypeError(f"ConcatOffset '{op.name}': shape {i} is {t.dtype.name}, not "
                            f"{shapes[0].dtype.name}")
    return [(t.dtype, t.shape) for t in shapes]


def concat_offset(axis, shapes: list, name: Optional[str] = None) -> list:
    """Where each of `shapes` starts in their concatenation along `axis`."""
    graph = graph_of(axis, shapes)
    axis_t = convert_to_tensor(axis, dtype=dtypes.int32, name="concat_dim", graph=graph)
    shape_ts = [index_tensor(s, f"shape_{i}", graph) for i, s in enumerate(shapes)]
    return _build("ConcatOffset", [axis_t] + shape_ts,
                  {"N": len(shape_ts), "shape_type": shape_ts[0].dtype},
                  name or "ConcatOffset", graph, outputs=True)


def static_reduction_axes(s0, s1) -> tuple:
    """BroadcastGradientArgs on fully known shapes, computed now (lists of ints)."""
    s0, s1 = [int(d) for d in s0], [int(d) for d in s1]
    rank = max(len(s0), len(s1))
    p0, p1 = [1] * (rank - len(s0)) + s0, [1] * (rank - len(s1)) + s1
    r0, r1 = [], []
    for i, (a, b) in enumerate(zip(p0, p1)):
        if a != b and a != 1 and b != 1:
            raise ValueError(f"Incompatible shapes: {s0} vs. {s1}")
        out = b if a == 1 else a
        if i < rank - len(s0) or (a == 1 and out != 1):
            r0.append(i)
        if i < rank - len(s1) or (b == 1 and out != 1):
            r1.append(i)
    return np.array(r0, np.int32), np.array(r1, np.int32)


# -- strided slice (tensor[...]) -------------------------------------------------------
MASKS = ("begin_mask", "end_mask", "ellipsis_mask", "new_axis_mask", "shrink_axis_mask")


def strided_entries(begin, end, strides, masks: dict, rank: int) -> list:
    """How a StridedSlice spec reads a rank-`rank` input: one (kind, axis, value) per
    output-producing entry; kind is "new", "full", "index" (shrinks) or "slice".

    Raises: ValueError for a zero stride, two ellipses or too many indices.
    """
    bits = [lambda i, name=name: bool((masks.get(name, 0) >> i) & 1) for name in MASKS]
    begin_bit, end_bit, ellipsis_bit, new_bit, shrink_bit = bits
    n = len(begin)
    if sum(ellipsis_bit(i) for i in range(n)) > 1:
        raise ValueError("Multiple ellipses in slice spec not allowed")
    explicit = sum(1 for i in range(n) if not ellipsis_bit(i) and not new_bit(i))
    if explicit > rank:
        raise ValueError(f"Index out of range using input dim {rank}; input has only "
                         f"{rank} dims")
    out, axis = [], 0
    for i in range(n):
        if ellipsis_bit(i):
            for _ in range(rank - explicit):
                out.append(("full", axis, None))
                axis += 1
        elif new_bit(i):
            out.append(("new", None, None))
        elif shrink_bit(i):
            out.append(("index", axis, int(begin[i])))
            axis += 1
        else:
            if int(strides[i]) == 0:
                raise ValueError(f"strides[{i}] must be non-zero")
            out.append(("slice", axis, builtins.slice(None if begin_bit(i) else int(begin[i]),
                                                     None if end_bit(i) else int(end[i]),
                                                     int(strides[i]))))
            axis += 1
    out += [("full", a, None) for a in range(axis, rank)]
    return out


def _strided_slice_dims(op, x_shape, entries: list) -> list:
    dims = []
    for kind, axis, value in entries:
        d = x_shape[axis] if axis is not None else None
        if kind == "new":
            dims.append(1)
        elif kind == "full":
            dims.append(d)
        elif kind == "slice":
            dims.append(None if d is None else len(range(*value.indices(d))))
        elif d is not None and not -d <= value < d:
            raise shape_error(op, f"slice index {value} of dimension {axis} out of bounds.")
    return dims


@register_op("StridedSlice")
def _strided_slice_shape(op):
    x = op.inputs[0]
    for i, param in ((1, "begin"), (2, "end"), (3, "strides")):
        check_rank(op, i, 1)
        _check_index_dtype(op, i, param)
    spec = [constant_value(t) for t in op.inputs[1:]]
    if x.shape.rank is None or any(v is None for v in spec):
        return [(x.dtype, unknown_shape())]
    masks = {name: op.get_attr(name) for name in MASKS}
    try:
        entries = strided_entries(*spec, masks, x.shape.rank)
    except ValueError as e:
        raise shape_error(op, str(e)) from None
    return [(x.dtype, TensorShape(_strided_slice_dims(op, x.shape, entries)))]


@register_op("StridedSliceGrad")
def _strided_slice_grad_shape(op):
    shape_t, dy = op.inputs[0], op.inputs[4]
    return [(dy.dtype, shape_from_input(op, 0) if shape_t.shape.rank == 1
             else unknown_shape())]


def strided_slice(input_, begin, end, strides=None, begin_mask=0, end_mask=0,
                  ellipsis_mask=0, new_axis_mask=0, shrink_axis_mask=0,
                  name: Optional[str] = None) -> Tensor:
    """The strided slice of `input_` that `tensor[...]` builds (op StridedSlice).

    Bit i of a mask applies to entry i of begin/end/strides: begin_mask and
    end_mask ignore that bound, ellipsis_mask stands for all remaining dims,
    new_axis_mask inserts a size-1 dim, shrink_axis_mask takes index begin[i]
    and drops the dim.
    """
    graph = graph_of(input_, begin, end, strides)
    x = convert_to_tensor(input_, name="input", graph=graph)
    begin_t = index_tensor(begin, "begin", graph)
    end_t = index_tensor(end, "end", graph)
    strides_t = index_tensor(strides if strides is not None else [1] * len(begin),
                             "strides", graph)
    attrs = {"T": x.dtype, "Index": begin_t.dtype, "begin_mask": begin_mask,
             "end_mask": end_mask, "ellipsis_mask": ellipsis_mask,
             "new_axis_mask": new_axis_mask, "shrink_axis_mask": shrink_axis_mask}
    return _build("StridedSlice", [x, begin_t, end_t, strides_t], attrs,
                  name or "strided_slice", graph)


def _getitem(tensor, key) -> Tensor:
    """tensor[key]: ints, slices, Ellipsis, None (newaxis) and scalar int Tensors."""
    key = key if isinstance(key, tuple) else (key,)
    begin, end, strides, masks = [], [], [], dict.fromkeys(MASKS, 0)
    for i, k in enumerate(key):
        bit = 1 << i
        if isinstance(k, builtins.slice):  # this module defines tf.slice
            if k.step is not None and not isinstance(k.step, Tensor) and k.step == 0:
                raise ValueError("slice step cannot be zero")
            for bound, mask in ((k.start, "begin_mask"), (k.stop, "end_mask")):
                if bound is None:
                    masks[mask] |= bit
            begin.append(0 if k.start is None else k.start)
            end.append(0 if k.stop is None else k.stop)
            strides.append(1 if k.step is None else k.step)
        elif k is Ellipsis or k is None:
            masks["ellipsis_mask" if k is Ellipsis else "new_axis_mask"] |= bit
            begin.append(0), end.append(0), strides.append(1)
        elif isinstance(k, (int, np.integer)) and not isinstance(k, bool) or (
                isinstance(k, Tensor) and k.dtype in INDEX_TYPES and k.shape.rank == 0):
            masks["shrink_axis_mask"] |= bit
            begin.append(k), end.append(0), strides.append(1)
        else:
            raise TypeError(f"Only integers, slices (`:`), ellipsis (`...`), tf.newaxis "
                            f"(`None`) and scalar tf.int32/tf.int64 tensors are valid "
                            f"indices, got {k!r}")
    return strided_slice(tensor, begin, end, strides, name="strided_slice", **masks)


register_operator("__getitem__", _getitem)
