"""Indexing ops: tf.gather (GatherV2), tf.one_hot, TF1's tf.where (Select, Where),
tf.boolean_mask, tf.math.unsorted_segment_sum, tf.unique and tf.compat.v1.setdiff1d
(ListDiff), with their shape functions.

Rule: index inputs are int32/int64 and are bounds-checked by the kernels at
run time (their values are rarely known when the graph is built); shapes and
dtypes are checked here, when the graph is built. TF1's Select does not
broadcast as SelectV2 does: x and y share one shape, and the condition is a
scalar, of that shape, or a vector along x's first dimension. boolean_mask is
composed as TF builds it (Reshape, Where, Squeeze, GatherV2).
"""
from __future__ import annotations

from typing import Optional

from nbcluster.framework import dtypes
from nbcluster.framework.constant import convert_to_tensor
from nbcluster.framework.graph import graph_of
from nbcluster.framework.op_registry import register_op
from nbcluster.framework.operation import Tensor
from nbcluster.framework.tensor_shape import TensorShape, list_str, unknown_shape
from nbcluster.ops import array, shapes, slicing
from nbcluster.ops.math import (
    INDEX,
    NUMERIC,
    check_dtype,
    check_same_dtype,
    tensor_dtype,
    to_tensor,
)
from nbcluster.ops.shape_inference import constant_value, merge_shapes, shape_error


def _axis_value(op, index: int, rank: Optional[int]) -> Optional[int]:
    """Input `index`, a scalar axis, as a non-negative int if known now (range-checked)."""
    value = constant_value(op.inputs[index])
    if value is None or rank is None:
        return None
    a = int(value.reshape(-1)[0])
    if not -rank <= a < rank:
        raise shape_error(op, f"Expected axis in the range [{-rank}, {rank}), but got {a}")
    return a % rank


# -- gather -------------------------------------------------------------------------
@register_op("GatherV2")
def _gather_shape(op):
    params, indices, axis_t = op.inputs
    check_dtype(indices.dtype, INDEX, "indices")
    check_dtype(axis_t.dtype, INDEX, "axis")
    if op.get_attr("batch_dims") != 0:
        raise NotImplementedError(f"GatherV2 '{op.name}': only batch_dims=0 is supported, "
                                  f"got {op.get_attr('batch_dims')}")
    axis = _axis_value(op, 2, params.shape.rank)
    if axis is None or indices.shape.rank is None:
        return [(params.dtype, unknown_shape())]
    dims = params.shape.dims
    return [(params.dtype, TensorShape(dims[:axis] + indices.shape.dims + dims[axis + 1:]))]


def gather(params, indices, validate_indices=None, name=None, axis=None,
           batch_dims: int = 0):
    """The slices of `params` along `axis` (default 0) picked by `indices` (op GatherV2).

    Args:
      params: a Tensor of rank >= 1. indices: an int32/int64 Tensor of any shape,
        each entry in [0, params.shape[axis]). validate_indices: ignored, as in TF.
      axis: an int or scalar int Tensor. batch_dims: only 0 is supported.
    Returns: a Tensor of shape params.shape[:axis] + indices.shape + params.shape[axis+1:].
    Raises: NotImplementedError for batch_dims != 0; ValueError for an axis out
      of range; InvalidArgumentError at run time for an index out of range,
      naming it ("indices[3] = 7 is not in [0, 5)").

    Example:
      >>> gather(constant([[1, 2], [3, 4], [5, 6]]), [2, 0]).shape
      TensorShape([2, 2])
    """
    if batch_dims != 0:
        raise NotImplementedError(f"gather supports batch_dims=0 only, got {batch_dims}")
    if getattr(params, "_is_resource", False) and axis in (None, 0):
        return params.sparse_read(indices, name=name)  # as TF: a ResourceGather
    graph = graph_of(params, indices, axis)
    with graph.as_default(), graph.name_scope(name or "GatherV2") as scope:
        p = convert_to_tensor(params, name="params", graph=graph)
        idx = convert_to_tensor(indices, name="indices", graph=graph)
        axis_t = to_tensor(0 if axis is None else axis, dtypes.int32, "axis", graph)
        attrs = {"Tparams": p.dtype, "Tindices": idx.dtype, "Taxis": axis_t.dtype,
                 "batch_dims": 0}
        return graph.create_op("GatherV2", [p, idx, axis_t], attrs, name=scope).outputs[0]


# -- unsorted segment sum --------------------------------------------------------------
@register_op("UnsortedSegmentSum")
def _segment_sum_shape(op):
    data, ids, num = op.inputs
    check_dtype(data.dtype, NUMERIC, "data")
    check_dtype(ids.dtype, INDEX, "segment_ids")
    check_dtype(num.dtype, INDEX, "num_segments")
    if num.shape.rank not in (None, 0):
        raise shape_error(op, f"Shape must be rank 0 but is rank {num.shape.rank}")
    if data.shape.rank is None or ids.shape.rank is None:
        return [(data.dtype, unknown_shape())]
    if ids.shape.rank > data.shape.rank:
        raise shape_error(op, "Shape must be at least rank "
                              f"{ids.shape.rank} but is rank {data.shape.rank}")
    merge_shapes(op, TensorShape(data.shape.dims[:ids.shape.rank]), ids.shape)
    value = constant_value(num)
    first = None if value is None else int(value)
    return [(data.dtype, TensorShape([first] + data.shape.dims[ids.shape.rank:]))]


def unsorted_segment_sum(data, segment_ids, num_segments, name=None):
    """Sums the slices of `data` into `num_segments` rows by `segment_ids`.

    output[i, ...] = sum of data[j..., ...] over j with segment_ids[j...] == i;
    a negative id drops its slice, as in TF.

    Args: data: a numeric Tensor. segment_ids: int32/int64, a prefix of data's
      shape. num_segments: a scalar int.
    Returns: a Tensor [num_segments] + data.shape[rank(segment_ids):].
    Raises: InvalidArgumentError at run time for an id >= num_segments.
    """
    graph = graph_of(data, segment_ids, num_segments)
    with graph.as_default(), graph.name_scope(name or "UnsortedSegmentSum") as scope:
        d = convert_to_tensor(data, name="data", graph=graph)
        ids = convert_to_tensor(segment_ids, name="segment_ids", graph=graph)
        num = to_tensor(num_segments, dtypes.int32, "num_segments", graph)
        attrs = {"T": d.dtype, "Tindices": ids.dtype, "Tnumsegments": num.dtype}
        return graph.create_op("UnsortedSegmentSum", [d, ids, num], attrs,
                               name=scope).outputs[0]


# -- unique -----------------------------------------------------------------------------
@register_op("Unique")
def _unique_shape(op):
    x = op.inputs[0]
    if x.shape.rank not in (None, 1):
        raise shape_error(op, f"unique expects a 1D vector, got shape {x.shape}")
    return [(x.dtype, TensorShape([None])), (op.get_attr("out_idx"), x.shape if
                                            x.shape.rank == 1 else TensorShape([None]))]


def unique(x, out_idx=dtypes.int32, name=None) -> tuple:
    """(y, idx): the distinct values of the 1-D `x` in order of first appearance, and
    for each element of x its position in y (op Unique), so x == gather(y, idx).

    Raises: ValueError for x of rank other than 1; TypeError for out_idx not int32/int64.
    """
    out_idx = dtypes.as_dtype(out_idx)
    check_dtype(out_idx, INDEX, "out_idx")
    graph = graph_of(x)
    with graph.as_default(), graph.name_scope(name or "Unique") as scope:
        t = convert_to_tensor(x, name="x", graph=graph)
        outputs = graph.create_op("Unique", [t], {"T": t.dtype, "out_idx": out_idx},
                                  name=scope).outputs
    return outputs[0], outputs[1]


@register_op("ListDiff")
def _list_diff_shape(op):
    for name, t in zip(("x", "y"), op.inputs):
        if t.shape.rank not in (None, 1):
            raise shape_error(op, f"{name} should be a 1D vector, got shape {t.shape}")
    check_same_dtype(op, ("x", "y"))
    return [(op.inputs[0].dtype, TensorShape([None])),
            (op.get_attr("out_idx"), TensorShape([None]))]


def setdiff1d(x, y, index_dtype=dtypes.int32, name=None) -> tuple:
    """(out, idx): the values of the 1-D `x` not in `y`, in x's order, and their
    positions in x (op ListDiff; TF's gradient of reduce_prod builds one).
    """
    index_dtype = dtypes.as_dtype(index_dtype)
    check_dtype(index_dtype, INDEX, "out_idx")
    graph = graph_of(x, y)
    with graph.as_default(), graph.name_scope(name or "ListDiff") as scope:
        tx = convert_to_tensor(x, name="x", graph=graph)
        ty = convert_to_tensor(y, name="y", graph=graph, dtype=tx.dtype)
        outputs = graph.create_op("ListDiff", [tx, ty], {"T": tx.dtype, "out_idx": index_dtype},
                                  name=scope).outputs
    return outputs[0], outputs[1]


# -- one_hot ----------------------------------------------------------------------------
@register_op("OneHot")
def _one_hot_shape(op):
    indices, depth, on, off = op.inputs
    check_dtype(indices.dtype, (dtypes.uint8, dtypes.int32, dtypes.int64), "indices")
    if on.dtype != off.dtype:
        raise TypeError(f"OneHot '{op.name}': on_value is {on.dtype.name} but off_value is "
                        f"{off.dtype.name}")
    axis = op.get_attr("axis")
    if axis < -1:
        raise shape_error(op, f"axis must be >= -1, got {axis}")
    value = constant_value(depth)
    d = None if value is None else int(value)
    if d is not None and d < 0:
        raise shape_error(op, f"depth must be non-negative, got: {d}")
    if indices.shape.rank is None:
        return [(on.dtype, unknown_shape())]
    dims = indices.shape.dims
    if axis > len(dims):
        raise shape_error(op, f"Expected axis to be -1 or between [0, {len(dims)}).  But "
                              f"received: {axis}")
    dims.insert(len(dims) if axis == -1 else axis, d)
    return [(on.dtype, TensorShape(dims))]


def one_hot(indices, depth, on_value=None, off_value=None, axis=None, dtype=None, name=None):
    """A one-hot encoding of `indices`: on_value where the new axis equals the index.

    Args:
      indices: uint8/int32/int64; entries outside [0, depth) give all off_value.
      depth: a scalar int, the length of the new axis.
      on_value, off_value: scalars (default 1 and 0) of the output dtype.
      axis: where the new axis goes (default -1, last). dtype: the output dtype;
        default: on/off_value's, else float32.
    Returns: a Tensor of rank(indices) + 1.
    Raises: TypeError when on/off_value and dtype disagree.

    Example:
      >>> one_hot([0, 2], 3).shape
      TensorShape([2, 3])
    """
    graph = graph_of(indices, depth, on_value, off_value)
    with graph.as_default(), graph.name_scope(name or "one_hot") as scope:
        idx = convert_to_tensor(indices, name="indices", graph=graph)
        given = [v for v in (on_value, off_value) if v is not None]
        out = dtypes.as_dtype(dtype) if dtype is not None else None
        if out is None and given:  # as TF: the dtype on_value or off_value converts to
            out = tensor_dtype(given) or convert_to_tensor(given[0], graph=graph).dtype
        out = out or dtypes.float32
        on = to_tensor(1 if on_value is None else on_value, out, "on_value", graph)
        off = to_tensor(0 if off_value is None else off_value, out, "off_value", graph)
        for t, what in ((on, "on_value"), (off, "off_value")):
            if t.dtype != out:
                raise TypeError(f"dtype {t.dtype.name} of {what} does not match dtype "
                                f"parameter {out.name}")
        depth_t = to_tensor(depth, dtypes.int32, "depth", graph)
        attrs = {"T": on.dtype, "TI": idx.dtype, "axis": -1 if axis is None else int(axis)}
        return graph.create_op("OneHot", [idx, depth_t, on, off], attrs,
                               name=scope).outputs[0]


# -- where (Select, Where) and boolean_mask ----------------------------------------------
@register_op("Select")
def _select_shape(op):
    cond, t, e = op.inputs
    check_dtype(cond.dtype, (dtypes.bool,), "condition")
    if t.dtype != e.dtype:
        raise TypeError(f"Input 'e' of 'Select' Op has type {e.dtype.name} that does not "
                        f"match type {t.dtype.name} of argument 't'.")
    shape = merge_shapes(op, t.shape, e.shape)
    c_rank, rank = cond.shape.rank, shape.rank
    if c_rank is None or c_rank == 0 or rank is None:
        return [(t.dtype, shape)]
    if c_rank == 1 and rank > 1:  # a vector picks whole rows of x or y
        first = merge_shapes(op, TensorShape(cond.shape.dims), TensorShape(shape.dims[:1]))
        return [(t.dtype, TensorShape(first.dims + shape.dims[1:]))]
    return [(t.dtype, merge_shapes(op, cond.shape, shape))]


@register_op("Where")
def _where_shape(op):
    x = op.inputs[0]
    check_dtype(x.dtype, NUMERIC + (dtypes.bool,), "input")
    return [(dtypes.int64, TensorShape([None, x.shape.rank]))]


def where(condition, x=None, y=None, name=None) -> Tensor:
    """TF1's tf.where: elements of x or y by `condition` (op Select), or, with
    neither x nor y, the coordinates of the true entries of `condition` (op Where).

    Args:
      condition: a bool Tensor. With x and y: a scalar, of x's shape, or a
        vector as long as x's first dimension (then it picks whole rows).
      x, y: Tensors of one dtype and shape, or both None.
    Returns: with x and y, a Tensor of their shape; without, an int64 Tensor
      [num_true, rank(condition)] in row-major order.
    Raises: ValueError when only one of x and y is given or shapes mismatch;
      TypeError when condition is not bool or x and y differ in dtype.

    Example:
      >>> where(constant([[True, False], [False, True]])).shape
      TensorShape([None, 2])
    """
    if (x is None) != (y is None):
        raise ValueError("x and y must both be non-None or both be None.")
    graph = graph_of(condition, x, y)
    if x is None:
        with graph.as_default(), graph.name_scope(name or "Where") as scope:
            cond = convert_to_tensor(condition, name="input", graph=graph)
            return graph.create_op("Where", [cond], {"T": cond.dtype}, name=scope).outputs[0]
    dtype = tensor_dtype([x, y])
    with graph.as_default(), graph.name_scope(name or "Select") as scope:
        cond = to_tensor(condition, dtypes.bool, "condition", graph)
        t, e = to_tensor(x, dtype, "t", graph), to_tensor(y, dtype, "e", graph)
        return graph.create_op("Select", [cond, t, e], {"T": t.dtype}, name=scope).outputs[0]


def boolean_mask(tensor, mask, name: str = "boolean_mask", axis=None) -> Tensor:
    """The entries of `tensor` where `mask` is True, over mask's dimensions.

    Args:
      tensor: a Tensor of rank >= axis + rank(mask).
      mask: a bool Tensor of known rank >= 1, whose shape matches
        tensor.shape[axis:axis + rank(mask)].
      axis: the first dimension of tensor the mask covers (default 0; negative
        counts from the end, for a tensor of known rank).
    Returns: a Tensor of rank rank(tensor) - rank(mask) + 1: those dimensions
      collapse into one of length num_true.
    Raises: ValueError for a mask of unknown rank, a scalar mask, or shapes
      that do not match.

    Example:
      >>> boolean_mask(constant([[1, 2], [3, 4]]), [True, False]).shape
      TensorShape([None, 2])
    """
    graph = graph_of(tensor, mask)
    with graph.as_default(), graph.name_scope(name or "boolean_mask") as scope:
        x = convert_to_tensor(tensor, name="tensor", graph=graph)
        m = convert_to_tensor(mask, name="mask", graph=graph)
        n = m.shape.rank
        if n is None:
            raise ValueError("Number of mask dimensions must be specified, even if some "
                             "dimensions are None.  E.g. shape=[None] is ok, but shape=None "
                             "is not.")
        if n == 0:
            raise ValueError("mask cannot be scalar.")
        a = 0 if axis is None else int(axis)
        if a < 0 and x.shape.rank is None:
            raise ValueError(f"boolean_mask needs a tensor of known rank for a negative "
                             f"axis ({a})")
        if a < 0:
            a += x.shape.rank
        if x.shape.rank is not None:
            covered = TensorShape(x.shape.dims[a:a + n])
            if covered.rank != n or not covered.is_compatible_with(m.shape):
                raise ValueError(f"Shapes {list_str(covered)} and {list_str(m.shape)} are "
                                 f"incompatible (boolean_mask of {list_str(x.shape)} at axis "
                                 f"{a})")
        x_shape = shapes.shape(x)
        # The mask's element count is the product of the dims it covers.
        lead = shapes.reshape(shapes.size(m), [1])
        new_shape = array.concat([slicing.slice(x_shape, [0], [a]), lead,
                                  slicing.slice(x_shape, [a + n], [-1])], 0)
        flat = shapes.reshape(x, new_shape)
        if x.shape.rank is not None:
            known = TensorShape(x.shape.dims[a:a + n]).merge_with(m.shape).num_elements()
            flat.set_shape(TensorShape(x.shape.dims[:a] + [known] + x.shape.dims[a + n:]))
        hits = shapes.squeeze(where(shapes.reshape(m, [-1])), axis=[1])
        return gather(flat, hits, axis=a, name=scope)

