"""Reduction op constructors (tf.reduce_sum, reduce_prod, ..., tf.argmax, tf.argmin) and the
scans tf.cumsum, tf.math.cumprod, with their shape functions.

Rule: as in `ops/math.py`, dtypes and shapes are checked when the graph is
built; kernels trust them. A reduction over every axis of a tensor of unknown
rank reduces over `range(rank(x))` (`ops/ranges.py`, `ops/shapes.py`).
"""
from __future__ import annotations

import numpy as np

from nbcluster.framework import dtypes
from nbcluster.framework.constant import constant, convert_to_tensor
from nbcluster.framework.graph import graph_of
from nbcluster.framework.op_registry import register_op
from nbcluster.framework.operation import Tensor
from nbcluster.framework.tensor_shape import TensorShape, list_str, unknown_shape
from nbcluster.ops.array import index_tensor
from nbcluster.ops.math import INDEX, NUMERIC, REAL, cast, check_dtype, not_equal, to_tensor
from nbcluster.ops.ranges import range  # noqa: A004 - TF's name
from nbcluster.ops.shape_inference import constant_value, shape_error
from nbcluster.ops.shapes import rank


# -- reductions and arg-reductions ----------------------------------------------
def _reduced_shape(op, shape: TensorShape, axis: Tensor, keep: bool) -> TensorShape:
    value = constant_value(axis)
    if value is None or shape.rank is None:
        return unknown_shape(shape.rank if keep else None)
    rank = shape.rank
    axes = set()
    for a in np.asarray(value).reshape(-1).tolist():
        if not -rank <= a < rank:
            raise ValueError(f"Invalid reduction dimension {a} for input with {rank} "
                             f"dimensions. for '{op.name}' (op: '{op.type}') with input "
                             f"shapes: {list_str(shape)}, {list_str(axis.shape)} and with "
                             f"computed input tensors: input[1] = <{value}>.")
        axes.add(a % rank)
    if keep:
        return TensorShape([1 if i in axes else d for i, d in enumerate(shape)])
    return TensorShape([d for i, d in enumerate(shape) if i not in axes])


def _reduction_shape(allowed: tuple):
    def shape_fn(op):
        x, axis = op.inputs
        check_dtype(x.dtype, allowed, "input")
        check_dtype(axis.dtype, INDEX, "reduction_indices")
        return [(x.dtype, _reduced_shape(op, x.shape, axis, op.get_attr("keep_dims")))]
    return shape_fn


for _type, _allowed in {"Sum": NUMERIC, "Mean": NUMERIC, "Prod": NUMERIC, "Max": REAL,
                        "Min": REAL}.items():
    register_op(_type)(_reduction_shape(_allowed))


def _deprecated_alias(new_name: str, new, old_name: str, old):
    if new is not None and old is not None:
        raise ValueError(f"Cannot specify both '{new_name}' and '{old_name}'")
    return new if new is not None else old


def _all_axes(x: Tensor) -> Tensor:
    if x.shape.rank is not None:
        return constant(np.arange(x.shape.rank, dtype=np.int32), name="Const")
    return range(0, rank(x))  # unknown rank: reduce over range(rank(x))


def _reduce(op_type: str, x, axis, keepdims, name, reduction_indices, keep_dims) -> Tensor:
    axis = _deprecated_alias("axis", axis, "reduction_indices", reduction_indices)
    keep = bool(_deprecated_alias("keepdims", keepdims, "keep_dims", keep_dims))
    graph = graph_of(x, axis)
    with graph.as_default(), graph.name_scope(name or op_type) as scope:
        x = convert_to_tensor(x, name="input", graph=graph)
        axis = _all_axes(x) if axis is None else index_tensor(axis, "reduction_indices", graph)
        attrs = {"Tidx": axis.dtype, "keep_dims": keep}
        if op_type not in ("All", "Any"):  # their input is always bool: no attr T
            attrs["T"] = x.dtype
        return graph.create_op(op_type, [x, axis], attrs, name=scope).outputs[0]


def reduce_sum(input_tensor, axis=None, keepdims=None, name=None, reduction_indices=None,
               keep_dims=None) -> Tensor:
    """Sums `input_tensor` over `axis` (op Sum).

    Args:
      input_tensor: a numeric Tensor.
      axis: None (every axis), an int or a list of ints, negative counting from
        the end, or an int32/int64 Tensor. `reduction_indices`: TF1's old name.
      keepdims: keep reduced axes with length 1. `keep_dims`: TF1's old name.
    Returns: the reduced Tensor, of the input's dtype.
    Raises: ValueError for an axis outside [-rank, rank) or both spellings of
      an argument; TypeError for a non-numeric input.

    Example:
      >>> reduce_sum(constant([[1, 2], [3, 4]]), axis=-1, keepdims=True).shape
      TensorShape([2, 1])
    """
    return _reduce("Sum", input_tensor, axis, keepdims, name, reduction_indices, keep_dims)


def reduce_mean(input_tensor, axis=None, keepdims=None, name=None, reduction_indices=None,
                keep_dims=None) -> Tensor:
    """The mean over `axis` (op Mean); integer means truncate, as TF's do. See reduce_sum."""
    return _reduce("Mean", input_tensor, axis, keepdims, name, reduction_indices, keep_dims)


def reduce_prod(input_tensor, axis=None, keepdims=None, name=None, reduction_indices=None,
                keep_dims=None) -> Tensor:
    """The product over `axis` (op Prod); 1 over no elements. See reduce_sum.

    Example:
      >>> reduce_prod(constant([[1., 2.], [3., 4.]]), axis=0).shape
      TensorShape([2])
    """
    return _reduce("Prod", input_tensor, axis, keepdims, name, reduction_indices, keep_dims)


def reduce_max(input_tensor, axis=None, keepdims=None, name=None, reduction_indices=None,
               keep_dims=None) -> Tensor:
    """The maximum over `axis` (op Max); see reduce_sum."""
    return _reduce("Max", input_tensor, axis, keepdims, name, reduction_indices, keep_dims)


def reduce_min(input_tensor, axis=None, keepdims=None, name=None, reduction_indices=None,
               keep_dims=None) -> Tensor:
    """The minimum over `axis` (op Min); see reduce_sum."""
    return _reduce("Min", input_tensor, axis, keepdims, name, reduction_indices, keep_dims)


def _arg_shape(op):
    x, axis = op.inputs
    check_dtype(x.dtype, NUMERIC, "input")
    check_dtype(axis.dtype, INDEX, "dimension")
    check_dtype(op.get_attr("output_type"), INDEX, "output_type")
    value, rank = constant_value(axis), x.shape.rank
    if rank is None:
        return [(op.get_attr("output_type"), unknown_shape())]
    if value is None:
        return [(op.get_attr("output_type"), unknown_shape(max(rank - 1, 0)))]
    a = int(np.asarray(value).reshape(-1)[0])
    if not -rank <= a < rank:
        raise shape_error(op, f"Expected dimension in the range [{-rank}, {rank}), but got {a}")
    dims = x.shape.dims
    del dims[a % rank]
    return [(op.get_attr("output_type"), TensorShape(dims))]


register_op("ArgMax")(_arg_shape)
register_op("ArgMin")(_arg_shape)


def _arg_reduce(op_type, x, axis, name, dimension, output_type) -> Tensor:
    axis = _deprecated_alias("axis", axis, "dimension", dimension)
    axis = 0 if axis is None else axis  # TF1's default
    graph = graph_of(x, axis)
    with graph.as_default(), graph.name_scope(name or op_type) as scope:
        x = convert_to_tensor(x, name="input", graph=graph)
        axis = to_tensor(axis, dtypes.int32, "dimension", graph)
        attrs = {"T": x.dtype, "Tidx": axis.dtype, "output_type": dtypes.as_dtype(output_type)}
        return graph.create_op(op_type, [x, axis], attrs, name=scope).outputs[0]


def argmax(input, axis=None, name=None, dimension=None,  # noqa: A002 - TF's names
           output_type=dtypes.int64) -> Tensor:
    """The index of the largest value along `axis` (default 0), first on ties (op ArgMax).

    Example:
      >>> argmax(constant([[1, 9], [8, 2]]), axis=1).dtype
      tf.int64
    """
    return _arg_reduce("ArgMax", input, axis, name, dimension, output_type)


def argmin(input, axis=None, name=None, dimension=None,  # noqa: A002 - TF's names
           output_type=dtypes.int64) -> Tensor:
    """The index of the smallest value along `axis` (op ArgMin); see argmax."""
    return _arg_reduce("ArgMin", input, axis, name, dimension, output_type)


# -- logical reductions and count_nonzero -------------------------------------------
register_op("All")(_reduction_shape((dtypes.bool,)))
register_op("Any")(_reduction_shape((dtypes.bool,)))


def reduce_all(input_tensor, axis=None, keepdims=None, name=None, reduction_indices=None,
               keep_dims=None) -> Tensor:
    """Logical AND over `axis` of a bool Tensor (op All); True over no elements.

    Args: as reduce_sum's. Returns: a bool Tensor.
    Raises: TypeError for a non-bool input; ValueError for an axis out of range.

    Example:
      >>> reduce_all(constant([[True, False], [True, True]]), axis=1).shape
      TensorShape([2])
    """
    return _reduce("All", input_tensor, axis, keepdims, name, reduction_indices,
                        keep_dims)


def reduce_any(input_tensor, axis=None, keepdims=None, name=None, reduction_indices=None,
               keep_dims=None) -> Tensor:
    """Logical OR over `axis` of a bool Tensor (op Any); False over no elements."""
    return _reduce("Any", input_tensor, axis, keepdims, name, reduction_indices,
                        keep_dims)


def count_nonzero(input_tensor, axis=None, keepdims=None, dtype=dtypes.int64, name=None,
                  reduction_indices=None, keep_dims=None) -> Tensor:
    """The number of non-zero (or True) entries over `axis`, as `dtype` (default int64).

    Composed as TF builds it: NotEqual to zero, Cast to int64, Sum, Cast.

    Example:
      >>> count_nonzero(constant([[0, 1], [2, 3]]), axis=1).dtype
      tf.int64
    """
    graph = graph_of(input_tensor, axis)
    with graph.as_default(), graph.name_scope(name or "count_nonzero") as scope:
        x = convert_to_tensor(input_tensor, name="input", graph=graph)
        zero = constant(np.zeros([], x.dtype.as_numpy_dtype), name="zeros")
        hits = cast(not_equal(x, zero), dtypes.int64)
        total = reduce_sum(hits, axis=axis, keepdims=keepdims,
                           reduction_indices=reduction_indices, keep_dims=keep_dims)
        return cast(total, dtype, name=scope)


# -- scans ----------------------------------------------------------------------
def _scan_shape(op):
    x, axis = op.inputs
    check_dtype(x.dtype, NUMERIC, "x")
    check_dtype(axis.dtype, INDEX, "axis")
    if axis.shape.rank not in (None, 0):
        raise shape_error(op, f"axis must be a scalar, got shape {axis.shape}")
    return [(x.dtype, x.shape)]


register_op("Cumsum")(_scan_shape)
register_op("Cumprod")(_scan_shape)


def _scan(op_type: str, x, axis, exclusive: bool, reverse: bool, name) -> Tensor:
    graph = graph_of(x, axis)
    with graph.as_default(), graph.name_scope(name or op_type) as scope:
        t = convert_to_tensor(x, name="x", graph=graph)
        a = index_tensor(axis, "axis", graph)
        return graph.create_op(op_type, [t, a], {"T": t.dtype, "Tidx": a.dtype,
                                                 "exclusive": bool(exclusive),
                                                 "reverse": bool(reverse)},
                               name=scope).outputs[0]


def cumsum(x, axis=0, exclusive=False, reverse=False, name=None) -> Tensor:
    """Running sums of `x` along `axis` (op Cumsum): exclusive leaves each element out
    of its own sum, reverse runs from the end.

    >>> cumsum([1, 2, 3], exclusive=True)  # [0, 1, 3]
    """
    return _scan("Cumsum", x, axis, exclusive, reverse, name)


def cumprod(x, axis=0, exclusive=False, reverse=False, name=None) -> Tensor:
    """Running products of `x` along `axis` (op Cumprod; TF's gradient of reduce_prod
    builds two)."""
    return _scan("Cumprod", x, axis, exclusive, reverse, name)
