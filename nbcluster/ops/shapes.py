"""Shape ops: reading a tensor's shape (Shape, Size, Rank) and rearranging it
(Reshape, Transpose, ExpandDims, Squeeze, ReverseV2).

Each op type's shape function sits beside its constructor. Shape-valued
arguments become int32 Const inputs (`array.index_tensor`); an output shape is
inferred as far as the shape input's value is known when the graph is built
(`constant_value_as_shape`), and is partial otherwise.
"""
from __future__ import annotations

from typing import Optional

import numpy as np

from nbcluster.framework import dtypes
from nbcluster.framework.constant import constant, convert_to_tensor
from nbcluster.framework.graph import graph_of
from nbcluster.framework.op_registry import register_op
from nbcluster.framework.operation import Tensor
from nbcluster.framework.tensor_shape import TensorShape, list_str, scalar, unknown_shape
from nbcluster.ops import math as math_ops
from nbcluster.ops import ranges
from nbcluster.ops.array import index_tensor
from nbcluster.ops.shape_inference import (
    constant_value,
    per_dimension_rank,
    shape_error,
    shape_from_input,
)


# -- reshaping ----------------------------------------------------------------
@register_op("Reshape")
def _reshape_shape(op):
    x = op.inputs[0]
    target = shape_from_input(op, 1)
    if target.rank is None:
        return [(x.dtype, target)]
    dims = target.dims
    unknown = [i for i, d in enumerate(dims) if d is None]
    known = int(np.prod([d for d in dims if d is not None], dtype=np.int64))
    total = x.shape.num_elements()
    if total is not None and (not unknown and known != total or
                              len(unknown) == 1 and known and total % known):
        raise shape_error(op, f"Cannot reshape a tensor with {total} elements to shape "
                              f"{list_str(target)} ({known} elements)")
    if total is not None and len(unknown) == 1 and known:
        dims[unknown[0]] = total // known
    return [(x.dtype, TensorShape(dims))]


@register_op("Transpose")
def _transpose_shape(op):
    x, perm_t = op.inputs
    known = per_dimension_rank(op)
    perm = constant_value(perm_t)
    rank = x.shape.rank
    if perm is None or rank is None:
        return [(x.dtype, unknown_shape(known))]
    perm = [int(p) for p in perm]
    for p in perm:
        if not 0 <= p < rank:
            raise shape_error(op, f"perm dim {p} is out of range of input rank {rank}")
    if sorted(perm) != list(range(rank)):
        raise shape_error(op, f"perm {perm} is not a permutation of [0, {rank})")
    return [(x.dtype, TensorShape([x.shape[p] for p in perm]))]


@register_op("ExpandDims")
def _expand_dims_shape(op):
    x, dim_t = op.inputs
    dim = constant_value(dim_t)
    if dim is not None and dim.size != 1:
        raise shape_error(op, f"'dim' input must be a tensor with a single value, got "
                              f"{dim.size} values")
    rank = x.shape.rank
    if rank is None:
        return [(x.dtype, unknown_shape())]
    if dim is None:
        return [(x.dtype, unknown_shape(rank + 1))]
    d = int(dim.reshape(-1)[0])
    if d < -1 - rank or d > rank:
        raise shape_error(op, f"Tried to expand dim index {d} for tensor with {rank} "
                              f"dimensions.")
    dims = x.shape.dims
    dims.insert(d + rank + 1 if d < 0 else d, 1)
    return [(x.dtype, TensorShape(dims))]


@register_op("Squeeze")
def _squeeze_shape(op):
    x = op.inputs[0]
    axes = [int(a) for a in op.get_attr("squeeze_dims")]
    rank = x.shape.rank
    if rank is None:
        return [(x.dtype, unknown_shape())]
    for a in axes:
        if not -rank <= a < rank:
            raise shape_error(op, f"Tried to squeeze dim index {a} for tensor with {rank} "
                                  f"dimensions.")
    wanted = {a % rank for a in axes}
    dims = []
    for i, d in enumerate(x.shape):
        if wanted and i in wanted:
            if d is not None and d != 1:
                raise shape_error(op, f"Can not squeeze dim[{i}], expected a dimension of "
                                      f"1, got {d}")
            continue
        if not wanted and d is None:  # it may or may not be 1
            return [(x.dtype, unknown_shape())]
        if wanted or d != 1:
            dims.append(d)
    return [(x.dtype, TensorShape(dims))]


def reshape(tensor, shape, name: Optional[str] = None) -> Tensor:
    """`tensor`'s elements in a new shape; one entry of `shape` may be -1 (inferred).

    Raises: ValueError at build time when the element counts are known to differ.

    Example:
      >>> reshape(constant([[1, 2, 3], [4, 5, 6]]), [-1]).shape
      TensorShape([6])
    """
    graph = graph_of(tensor, shape)
    with graph.name_scope(name or "Reshape") as scope:
        x = convert_to_tensor(tensor, name="tensor", graph=graph)
        shape = index_tensor(shape, "shape", graph)
        attrs = {"T": x.dtype, "Tshape": shape.dtype}
        return graph.create_op("Reshape", [x, shape], attrs, name=scope).outputs[0]


def transpose(a, perm=None, name: str = "transpose", conjugate: bool = False) -> Tensor:
    """`a` with its dimensions permuted by `perm` (default: reversed)."""
    graph = graph_of(a, perm)
    with graph.name_scope(name or "transpose") as scope:
        x = convert_to_tensor(a, name="a", graph=graph)
        if conjugate and x.dtype in (dtypes.complex64, dtypes.complex128):
            raise NotImplementedError("transpose(conjugate=True) of complex tensors")
        if perm is None and x.shape.rank is not None:
            perm = np.arange(x.shape.rank - 1, -1, -1, dtype=np.int32)
        elif perm is None:
            perm = _reversed_range(graph, x)
        perm = index_tensor(perm, "perm", graph)
        attrs = {"T": x.dtype, "Tperm": perm.dtype}
        return graph.create_op("Transpose", [x, perm], attrs, name=scope).outputs[0]


@register_op("ReverseV2")
def _reverse_shape(op):
    x, axis_t = op.inputs
    axes = constant_value(axis_t)
    rank = x.shape.rank
    if axes is not None and rank is not None:
        seen = set()
        for a in np.asarray(axes).reshape(-1).tolist():
            if not -rank <= a < rank:
                raise shape_error(op, f"'axis'[{len(seen)}] = {a} is out of valid range "
                                      f"[{-rank}, {rank - 1}]")
            if a % rank in seen:
                raise shape_error(op, f"axis {a} specified more than once")
            seen.add(a % rank)
    return [(x.dtype, x.shape)]


def reverse(tensor, axis, name: Optional[str] = None) -> Tensor:
    """`tensor` with the order of its entries along each of `axis` reversed (op ReverseV2)."""
    graph = graph_of(tensor, axis)
    with graph.name_scope(name or "ReverseV2") as scope:
        x = convert_to_tensor(tensor, name="tensor", graph=graph)
        axes = index_tensor(axis, "axis", graph)
        return graph.create_op("ReverseV2", [x, axes], {"T": x.dtype, "Tidx": axes.dtype},
                               name=scope).outputs[0]


def _reversed_range(graph, x: Tensor) -> Tensor:
    # Unknown rank: perm = (rank - 1) - range(rank), as TF builds it.
    r = rank(x)
    return math_ops.subtract(math_ops.subtract(r, 1), ranges.range(0, r, 1))


def expand_dims(input, axis=None, name: Optional[str] = None, dim=None) -> Tensor:  # noqa: A002
    """`input` with a size-1 dimension inserted at `axis` (-1 appends)."""
    if axis is not None and dim is not None:
        raise ValueError("Cannot specify both 'axis' and 'dim'")
    axis = dim if axis is None else axis
    if axis is None:
        raise ValueError("Must specify an axis argument to tf.expand_dims()")
    graph = graph_of(input, axis)
    with graph.name_scope(name or "ExpandDims") as scope:
        x = convert_to_tensor(input, name="input", graph=graph)
        dim_t = index_tensor(axis, "dim", graph)
        attrs = {"T": x.dtype, "Tdim": dim_t.dtype}
        return graph.create_op("ExpandDims", [x, dim_t], attrs, name=scope).outputs[0]


def squeeze(input, axis=None, name: Optional[str] = None,  # noqa: A002
            squeeze_dims=None) -> Tensor:
    """`input` without size-1 dimensions (only those in `axis` when given)."""
    if axis is not None and squeeze_dims is not None:
        raise ValueError("Cannot specify both 'axis' and 'squeeze_dims'")
    axis = squeeze_dims if axis is None else axis
    axis = [] if axis is None else [int(axis)] if np.isscalar(axis) else [int(a) for a in axis]
    graph = graph_of(input)
    with graph.name_scope(name or "Squeeze") as scope:
        x = convert_to_tensor(input, name="input", graph=graph)
        attrs = {"T": x.dtype, "squeeze_dims": axis}
        return graph.create_op("Squeeze", [x], attrs, name=scope).outputs[0]


# -- shapes ---------------------------------------------------------------------
@register_op("Shape")
def _shape_shape(op):
    return [(op.get_attr("out_type"), TensorShape([op.inputs[0].shape.rank]))]


@register_op("ShapeN")
def _shape_n_shape(op):
    # TF's gradients of ConcatV2 ask the shapes of all the pieces at once
    out_type = op.get_attr("out_type")
    return [(out_type, TensorShape([x.shape.rank])) for x in op.inputs]


def shape_n(input, out_type=dtypes.int32, name: Optional[str] = None) -> list:  # noqa: A002
    """The shapes of the tensors of the list `input`, one 1-D tensor each (op ShapeN)."""
    graph = graph_of(*input)
    with graph.name_scope(name or "ShapeN") as scope:
        xs = [convert_to_tensor(x, graph=graph) for x in input]
        return list(graph.create_op("ShapeN", xs, {"N": len(xs), "T": xs[0].dtype,
                                                   "out_type": dtypes.as_dtype(out_type)},
                                    name=scope).outputs)


@register_op("Size")
def _size_shape(op):
    return [(op.get_attr("out_type"), scalar())]


@register_op("Rank")
def _rank_shape(op):
    return [(dtypes.int32, scalar())]


def _shape_like(op_type: str, input, name, default: str, out_type, static):  # noqa: A002
    graph = graph_of(input)
    with graph.name_scope(name or default) as scope:
        x = convert_to_tensor(input, graph=graph)
        value = static(x.shape) if static is not None else None
        if value is not None:
            return constant(value, dtype=out_type, name=scope, graph=graph)
        attrs = {"T": x.dtype}
        if op_type != "Rank":
            attrs["out_type"] = dtypes.as_dtype(out_type)
        return graph.create_op(op_type, [x], attrs, name=scope).outputs[0]


def shape(input, name: Optional[str] = None, out_type=dtypes.int32,  # noqa: A002
          optimize: bool = True) -> Tensor:
    """The shape of `input` as a 1-D tensor; a Const when fully known, as in TF."""
    static = (lambda s: s.as_list() if s.is_fully_defined() else None) if optimize else None
    return _shape_like("Shape", input, name, "Shape", out_type, static)


def size(input, name: Optional[str] = None, out_type=dtypes.int32,  # noqa: A002
         optimize: bool = True) -> Tensor:
    """The number of elements of `input` as a scalar."""
    return _shape_like("Size", input, name, "Size", out_type,
                       _static_size if optimize else None)


def _static_size(s: TensorShape) -> Optional[int]:
    if s.is_fully_defined():
        return s.num_elements()
    return 0 if s.rank and 0 in s.dims else None


def rank(input, name: Optional[str] = None) -> Tensor:  # noqa: A002
    """The number of dimensions of `input` as an int32 scalar."""
    return _shape_like("Rank", input, name, "Rank", dtypes.int32, lambda s: s.rank)
