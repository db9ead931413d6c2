"""Array ops: placeholders, identity, joining (ConcatV2, Pack) and `index_tensor`.

Each op type's shape function sits beside its constructor. Shape-valued
arguments (shape, perm, axis) become int32 or int64 Const inputs as in TF,
through `index_tensor`; the shape and fill families build on it.
"""
from __future__ import annotations

from typing import Optional

import numpy as np

from nbcluster.framework import dtypes
from nbcluster.framework.constant import convert_to_tensor, holds_tensor, register_list_packer
from nbcluster.framework.graph import get_default_graph, graph_of
from nbcluster.framework.op_registry import register_op
from nbcluster.framework.operation import Tensor
from nbcluster.framework.tensor_shape import TensorShape, as_shape, unknown_shape
from nbcluster.ops.shape_inference import (
    INDEX_TYPES,
    _contains_tensor,
    check_rank,
    constant_value,
    merge_shapes,
    per_dimension_rank,
    shape_error,
    tensor_list,
)


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


def _autopack(values, dtype, name: Optional[str], graph) -> Tensor:
    """TF's auto-packing: a (nested) list holding tensors as one tensor, a Pack per
    level ("packed", or the argument's name, then "0", "1", ... inside it); the
    Python values among them take the first tensor's dtype."""
    graph = graph or graph_of(values)
    inferred = _first_dtype(values, graph)
    if dtype is not None and dtypes.as_dtype(dtype) != inferred:
        raise ValueError(f"Tensor conversion requested dtype {dtypes.as_dtype(dtype).name} "
                         f"for a list holding tensors of dtype {inferred.name}: {values!r}")
    return _pack_levels(graph, values, inferred, name or "packed")


def _first_dtype(values, graph) -> dtypes.DType:
    for v in values:
        if isinstance(v, (list, tuple)):
            if holds_tensor(v):
                return _first_dtype(v, graph)
        elif holds_tensor(v):
            return convert_to_tensor(v, graph=graph).dtype
    raise AssertionError("no tensor in a list said to hold one")


def _pack_levels(graph, values, dtype: dtypes.DType, name: str) -> Tensor:
    with graph.name_scope(name) as scope:
        elems = []
        for i, v in enumerate(values):
            if isinstance(v, (list, tuple)) and holds_tensor(v):
                elems.append(_pack_levels(graph, v, dtype, str(i)))
            elif holds_tensor(v):
                elems.append(convert_to_tensor(v, graph=graph))
            else:
                elems.append(convert_to_tensor(v, dtype=dtype, name=str(i), graph=graph))
        kinds = [t.dtype for t in elems]
        if any(k != dtype for k in kinds):
            raise TypeError(f"Tensors in list passed to 'values' of 'Pack' Op have types "
                            f"[{', '.join(k.name for k in kinds)}] that don't all match.")
        attrs = {"N": len(elems), "T": dtype, "axis": 0}
        return graph.create_op("Pack", elems, attrs, name=scope).outputs[0]


register_list_packer(_autopack)


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


# -- tiling and splitting -------------------------------------------------------
@register_op("Tile")
def _tile_shape(op):
    x, multiples = op.inputs
    rank = per_dimension_rank(op)
    value = constant_value(multiples)
    if x.shape.rank is None or value is None:
        return [(x.dtype, unknown_shape(rank))]
    if any(int(v) < 0 for v in value):
        raise shape_error(op, f"Expected multiples to be non-negative, got {value.tolist()}")
    return [(x.dtype, TensorShape([None if d is None else d * int(k)
                                   for d, k in zip(x.shape, value)]))]


def tile(input, multiples, name: Optional[str] = None) -> Tensor:  # noqa: A002
    """`input` repeated multiples[i] times along each dimension i (op Tile).

    Raises: ValueError at build time when len(multiples) is not input's rank.

    Example:
      >>> tile(constant([[1, 2]]), [2, 3]).shape
      TensorShape([2, 6])
    """
    graph = graph_of(input, multiples)
    with graph.name_scope(name or "Tile") as scope:
        x = convert_to_tensor(input, name="input", graph=graph)
        m = index_tensor(multiples, "multiples", graph)
        attrs = {"T": x.dtype, "Tmultiples": m.dtype}
        return graph.create_op("Tile", [x, m], attrs, name=scope).outputs[0]


def _split_axis(op, x, axis_t) -> Optional[int]:
    value, rank = constant_value(axis_t), x.shape.rank
    if value is None or rank is None:
        return None
    a = int(value.reshape(-1)[0])
    if not -rank <= a < rank:
        raise shape_error(op, f"Dimension {a} must be in range [{-rank}, {rank})")
    return a % rank


@register_op("Split")
def _split_shape(op):
    axis_t, x = op.inputs
    n = op.get_attr("num_split")
    a = _split_axis(op, x, axis_t)
    if a is None:
        return [(x.dtype, unknown_shape(x.shape.rank))] * n
    dims = x.shape.dims
    if dims[a] is not None:
        if dims[a] % n:
            raise shape_error(op, f"Dimension size must be evenly divisible by {n} but is "
                                  f"{dims[a]}")
        dims[a] //= n
    return [(x.dtype, TensorShape(dims))] * n


@register_op("SplitV")
def _split_v_shape(op):
    x, sizes_t, axis_t = op.inputs
    n = op.get_attr("num_split")
    a, sizes = _split_axis(op, x, axis_t), constant_value(sizes_t)
    if a is None or sizes is None:
        return [(x.dtype, unknown_shape(x.shape.rank))] * n
    sizes = [int(s) for s in sizes]
    if len(sizes) != n:
        raise shape_error(op, f"size_splits has {len(sizes)} entries but num_split is {n}")
    if sizes.count(-1) > 1:
        raise shape_error(op, f"Only one dimension can have a value of -1, got {sizes}")
    total = x.shape[a]
    if -1 in sizes and total is not None:
        sizes[sizes.index(-1)] = total - (sum(sizes) + 1)
    if total is not None and (sum(sizes) != total or min(sizes, default=0) < 0):
        raise shape_error(op, f"The specified sizes of the splits {sizes} don't sum up to "
                              f"the size of the split dimension ({total})")
    out = []
    for s in sizes:
        dims = x.shape.dims
        dims[a] = None if s == -1 else s
        out.append((x.dtype, TensorShape(dims)))
    return out


def split(value, num_or_size_splits, axis=0, num=None, name: str = "split") -> list:
    """`value` cut along `axis` into equal parts (an int; op Split) or parts of the
    given sizes (a list or 1-D int Tensor, one entry may be -1; op SplitV).

    Args: num: the number of parts when size_splits is a Tensor of unknown length.
    Returns: a list of Tensors.
    Raises: ValueError when the axis length does not divide evenly, sizes do
      not add up, or the number of parts cannot be inferred.

    Example:
      >>> [t.shape for t in split(zeros([4, 6]), [1, -1], axis=1)]
      [TensorShape([4, 1]), TensorShape([4, 5])]
    """
    graph = graph_of(value, num_or_size_splits, axis)
    with graph.name_scope(name or "split") as scope:
        x = convert_to_tensor(value, name="value", graph=graph)
        if isinstance(num_or_size_splits, (int, np.integer)):
            axis_t = convert_to_tensor(axis, dtype=dtypes.int32, name="split_dim", graph=graph)
            attrs = {"T": x.dtype, "num_split": int(num_or_size_splits)}
            if attrs["num_split"] < 1:
                raise ValueError(f"num_split must be >= 1, got {attrs['num_split']}")
            return list(graph.create_op("Split", [axis_t, x], attrs, name=scope).outputs)
        sizes = index_tensor(num_or_size_splits, "size_splits", graph)
        if num is None:
            if sizes.shape.rank != 1 or sizes.shape[0] is None:
                raise ValueError(f"Cannot infer num from shape {sizes.shape}")
            num = sizes.shape[0]
        axis_t = convert_to_tensor(axis, dtype=dtypes.int32, name="split_dim", graph=graph)
        attrs = {"T": x.dtype, "num_split": int(num), "Tlen": sizes.dtype}
        return list(graph.create_op("SplitV", [x, sizes, axis_t], attrs,
                                    name=scope).outputs)
