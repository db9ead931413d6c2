"""Array ops: placeholders, identity, reshaping, joining, filling and shapes.

Each op type's shape function sits beside its constructor. Shape-valued
arguments become int32 Const inputs as in TF; an output shape is inferred as
far as the shape input's value is known when the graph is built
(`constant_value_as_shape`), and is partial otherwise.
"""
from __future__ import annotations

from typing import Optional

import numpy as np

from nbcluster.framework import dtypes
from nbcluster.framework.constant import constant, convert_to_tensor
from nbcluster.framework.graph import get_default_graph, graph_of
from nbcluster.framework.op_registry import register_op
from nbcluster.framework.operation import Tensor
from nbcluster.framework.tensor_shape import (TensorShape, as_shape, list_str, scalar,
                                              unknown_shape)

_SMALL_CONSTANT = 1000  # TF: zeros/ones with fewer elements become one Const
from nbcluster.ops.shape_inference import (INDEX_TYPES, _contains_tensor, _is_tensor_like,
                                           check_rank, constant_value, merge_shapes,
                                           shape_error, shape_from_input, tensor_list)


@register_op("Placeholder")
def _placeholder_shape(op):
    return [(op.get_attr("dtype"), as_shape(op.get_attr("shape")))]


@register_op("PlaceholderWithDefault")
def _placeholder_with_default_shape(op):
    shape = as_shape(op.get_attr("shape"))
    # The output may be less specific than the default, never incompatible.
    merge_shapes(op, op.inputs[0].shape, shape)
    return [(op.get_attr("dtype"), shape)]


@register_op("Identity")
def _identity_shape(op):
    return [(op.inputs[0].dtype, op.inputs[0].shape)]


def placeholder(dtype, shape=None, name: Optional[str] = None) -> Tensor:
    """A tensor that must be fed when run.

    Args:
      dtype: element type. shape: a (partial) shape; None means unknown rank.
    Returns: the Placeholder's output. Running it unfed raises
      InvalidArgumentError ("You must feed a value for placeholder tensor ...").

    Example:
      >>> x = placeholder(dtypes.float32, [None, 3], name="x")
      >>> x.shape
      TensorShape([None, 3])
    """
    attrs = {"dtype": dtypes.as_dtype(dtype), "shape": TensorShape(shape)}
    return get_default_graph().create_op("Placeholder", [], attrs,
                                         name=name or "Placeholder").outputs[0]


def placeholder_with_default(input, shape, name: Optional[str] = None) -> Tensor:  # noqa: A002
    """`input` unless a value is fed; the static shape is `shape` (may be looser)."""
    graph = graph_of(input)
    with graph.name_scope(name or "PlaceholderWithDefault") as scope:
        value = convert_to_tensor(input, name="input", graph=graph)
        attrs = {"dtype": value.dtype, "shape": TensorShape(shape)}
        return graph.create_op("PlaceholderWithDefault", [value], attrs, name=scope).outputs[0]


def identity(input, name: Optional[str] = None) -> Tensor:  # noqa: A002
    """A tensor with the same value (and dtype, shape) as `input`."""
    graph = graph_of(input)
    with graph.name_scope(name or "Identity") as scope:
        value = convert_to_tensor(input, name="input", graph=graph)
        return graph.create_op("Identity", [value], {"T": value.dtype}, name=scope).outputs[0]


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
    check_rank(op, 1, 1)
    rank = x.shape.rank
    length = perm_t.shape[0] if perm_t.shape.rank == 1 else None
    if rank is not None and length is not None and rank != length:
        raise shape_error(op, f"Dimension must be {rank} but is {length}")
    perm = constant_value(perm_t)
    if perm is None or rank is None:
        return [(x.dtype, unknown_shape(rank if rank is not None else length))]
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


def _reversed_range(graph, x: Tensor) -> Tensor:
    # Unknown rank: perm = (rank - 1) - range(rank), as TF builds it. reduction
    # imports this module, so it is imported here, at call time.
    from nbcluster.ops import math as math_ops
    from nbcluster.ops import reduction

    r = rank(x)
    return math_ops.subtract(math_ops.subtract(r, 1), reduction.range(0, r, 1))


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


# -- joining ------------------------------------------------------------------
@register_op("ConcatV2")
def _concat_shape(op):
    values = op.inputs[:-1]
    check_rank(op, len(values), 0)
    ranks = [v.shape.rank for v in values if v.shape.rank is not None]
    rank = ranks[0] if ranks else None
    for r in ranks:
        if r != rank:
            raise shape_error(op, f"Shape must be rank {rank} but is rank {r}")
    if rank is None:
        return [(values[0].dtype, unknown_shape())]
    if rank == 0:
        raise shape_error(op, "Can't concatenate scalars (use tf.stack instead)")
    axis = constant_value(op.inputs[-1])
    if axis is None:
        return [(values[0].dtype, unknown_shape(rank))]
    axis = int(axis)
    if not -rank <= axis < rank:
        raise shape_error(op, f"ConcatOp : Expected concatenating dimensions in the range "
                              f"[{-rank}, {rank}), but got {axis}")
    axis %= rank
    merged, total = unknown_shape(rank), 0
    for v in values:
        if v.shape.rank is None:
            total = None
            continue
        # Compare every dimension but the one being concatenated.
        merged = merge_shapes(op, merged, TensorShape(v.shape.dims[:axis] + [None]
                                                      + v.shape.dims[axis + 1:]))
        size = v.shape[axis]
        total = None if total is None or size is None else total + size
    dims = merged.dims
    dims[axis] = total
    return [(values[0].dtype, TensorShape(dims))]


@register_op("Pack")
def _pack_shape(op):
    merged = unknown_shape()
    for i, t in enumerate(op.inputs):
        merged = merge_shapes(op, merged, t.shape,
                              f"\n\tFrom merging shape {i} with other shapes")
    dtype = op.inputs[0].dtype
    if merged.rank is None:
        return [(dtype, unknown_shape())]
    axis, limit = op.get_attr("axis"), merged.rank + 1
    if not -limit <= axis < limit:
        raise shape_error(op, f"Invalid axis: {axis}; must be in [{-limit},{limit})")
    dims = merged.dims
    dims.insert(axis % limit, len(op.inputs))
    return [(dtype, TensorShape(dims))]


def concat(values, axis, name: str = "concat") -> Tensor:
    """`values` joined along `axis` (negative counts from the end).

    Raises: ValueError at build time for differing ranks or dimensions;
      TypeError when the dtypes differ.

    Example:
      >>> concat([constant([[1, 2]]), constant([[3, 4]])], 0).shape
      TensorShape([2, 2])
    """
    if not isinstance(values, (list, tuple)):
        values = [values]
    graph = graph_of(values, axis)
    if len(values) == 1:  # TF's degenerate case: an Identity
        with graph.name_scope(name or "concat") as scope:
            axis_t = index_tensor(axis, "concat_dim", graph)
            if axis_t.shape.rank not in (None, 0):
                raise ValueError(f"Shape {axis_t.shape} must have rank 0")
            return identity(values[0], name=scope)
    with graph.name_scope(name or "concat") as scope:
        tensors = tensor_list(values, "values", graph, "ConcatV2")
        axis_t = index_tensor(axis, "axis", graph)
        attrs = {"N": len(tensors), "T": tensors[0].dtype, "Tidx": axis_t.dtype}
        return graph.create_op("ConcatV2", tensors + [axis_t], attrs, name=scope).outputs[0]


def stack(values, axis: int = 0, name: str = "stack") -> Tensor:
    """Packs the same-shaped `values` into one tensor with a new dimension `axis`.

    Python values with no tensor among them become one Const, as in TF.
    """
    graph = graph_of(values)
    if axis == 0 and not _contains_tensor(values):
        return convert_to_tensor(values, name=name, graph=graph)
    return _pack(graph, list(values), axis, name or "stack")


def _pack(graph, values: list, axis: int, name: str) -> Tensor:
    with graph.name_scope(name) as scope:
        tensors = tensor_list(values, "values", graph, "Pack")
        rank = tensors[0].shape.rank
        if rank is not None and not -(rank + 1) <= axis < rank + 1:
            raise ValueError(f"axis = {axis} not in [{-(rank + 1)}, {rank + 1})")
        attrs = {"N": len(tensors), "T": tensors[0].dtype, "axis": int(axis)}
        return graph.create_op("Pack", tensors, attrs, name=scope).outputs[0]


def index_tensor(value, name: str, graph) -> Tensor:
    """A shape/axis/perm argument as an int32 or int64 tensor (TF's Tshape, Tidx...).

    Lists holding tensors are stacked (TF's auto-packing); [] is an empty int32.
    """
    if isinstance(value, TensorShape):
        if not value.is_fully_defined():
            raise ValueError(f"Cannot convert a partially known TensorShape to a Tensor: "
                             f"{value}")
        value = value.as_list()
    if isinstance(value, (list, tuple)) and not value:
        value = np.zeros([0], np.int32)
    elif isinstance(value, (list, tuple)) and _contains_tensor(value):
        value = _pack(graph, list(value), 0, name)
    tensor = convert_to_tensor(value, name=name, graph=graph)
    if tensor.dtype not in INDEX_TYPES:
        raise TypeError(f"Value passed to parameter '{name}' has DataType "
                        f"{tensor.dtype.name} not in list of allowed values: int32, int64")
    return tensor


# -- filling ------------------------------------------------------------------
@register_op("Fill")
def _fill_shape(op):
    check_rank(op, 1, 0)
    return [(op.inputs[1].dtype, shape_from_input(op, 0))]


@register_op("ZerosLike")
def _zeros_like_shape(op):
    return [(op.inputs[0].dtype, op.inputs[0].shape)]


register_op("OnesLike")(_zeros_like_shape)


def fill(dims, value, name: Optional[str] = None) -> Tensor:
    """A tensor of shape `dims` with every element `value` (a scalar)."""
    graph = graph_of(dims, value)
    with graph.name_scope(name or "Fill") as scope:
        dims_t = index_tensor(dims, "dims", graph)
        value_t = convert_to_tensor(value, name="value", graph=graph)
        attrs = {"T": value_t.dtype, "index_type": dims_t.dtype}
        return graph.create_op("Fill", [dims_t, value_t], attrs, name=scope).outputs[0]


def zeros(shape, dtype=dtypes.float32, name: Optional[str] = None) -> Tensor:
    """A tensor of zeros ("" for strings, False for bools).

    A static shape under 1000 elements gives a Const, as TF does; otherwise a Fill.
    """
    dtype = dtypes.as_dtype(dtype)
    zero = False if dtype == dtypes.bool else b"" if dtype == dtypes.string else 0
    return _filled(shape, dtype, zero, name or "zeros")


def ones(shape, dtype=dtypes.float32, name: Optional[str] = None) -> Tensor:
    """A tensor of ones (True for bools); a Const or a Fill as `zeros`."""
    dtype = dtypes.as_dtype(dtype)
    return _filled(shape, dtype, True if dtype == dtypes.bool else 1, name or "ones")


def _filled(shape, dtype: dtypes.DType, value, name: str) -> Tensor:
    graph = graph_of(shape)
    with graph.name_scope(name) as scope:
        if not _is_tensor_like(shape):
            dims = _static_dims(shape)
            if dims is not None and int(np.prod(dims)) < _SMALL_CONSTANT:
                array = np.full(dims, value, dtype=dtype.as_numpy_dtype)
                return constant(array, dtype=dtype, name=scope, graph=graph)
            if dims is not None:
                big = any(d >= 2 ** 31 for d in dims)
                shape = np.array(dims, np.int64 if big else np.int32)
            shape = index_tensor(shape, "shape_as_tensor", graph)
        else:
            shape = index_tensor(shape, "shape", graph)
        if shape.shape.rank in (None, 0):
            shape = reshape(shape, [-1])
        return fill(shape, constant(value, dtype=dtype, graph=graph), name=scope)


def _static_dims(shape) -> Optional[list]:
    if _contains_tensor(shape):
        return None
    dims = as_shape(shape).as_list() if not np.isscalar(shape) else [shape]
    if any(d is None for d in dims):
        raise ValueError(f"Cannot convert a partially known TensorShape to a Tensor: "
                         f"{as_shape(shape)}")
    return [int(d) for d in dims]


def zeros_like(tensor, dtype=None, name: Optional[str] = None, optimize: bool = True) -> Tensor:
    """Zeros with `tensor`'s shape (and dtype unless `dtype` is given)."""
    graph = graph_of(tensor)
    with graph.name_scope(name or "zeros_like") as scope:
        x = convert_to_tensor(tensor, name="tensor", graph=graph)
        out_dtype = dtypes.as_dtype(dtype) if dtype is not None else x.dtype
        if optimize and x.shape.is_fully_defined():
            return zeros(x.shape.as_list(), dtype=out_dtype, name=scope)
        if out_dtype != x.dtype:
            return zeros(shape(x, optimize=optimize), dtype=out_dtype, name=scope)
        return graph.create_op("ZerosLike", [x], {"T": x.dtype}, name=scope).outputs[0]


def ones_like(tensor, dtype=None, name: Optional[str] = None, optimize: bool = True) -> Tensor:
    """Ones with `tensor`'s shape (and dtype unless `dtype` is given); a Fill as in TF1."""
    graph = graph_of(tensor)
    with graph.name_scope(name or "ones_like") as scope:
        x = convert_to_tensor(tensor, name="tensor", graph=graph)
        out_dtype = dtypes.as_dtype(dtype) if dtype is not None else x.dtype
        out = ones(shape(x, optimize=optimize), dtype=out_dtype, name=scope)
        out.set_shape(x.shape)
        return out


# -- shapes ---------------------------------------------------------------------
@register_op("Shape")
def _shape_shape(op):
    return [(op.get_attr("out_type"), TensorShape([op.inputs[0].shape.rank]))]


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
