"""Fill ops: Fill, ZerosLike, OnesLike and tf.zeros, ones, zeros_like, ones_like.

As in TF, a static shape under `_SMALL_CONSTANT` elements gives one Const; a
larger one, or one known only when run, gives a Fill.
"""
from __future__ import annotations

from typing import Optional

import numpy as np

from nbcluster.framework import dtypes
from nbcluster.framework.constant import constant, convert_to_tensor
from nbcluster.framework.graph import graph_of
from nbcluster.framework.op_registry import register_op
from nbcluster.framework.operation import Tensor
from nbcluster.framework.tensor_shape import as_shape
from nbcluster.ops.array import index_tensor
from nbcluster.ops.shape_inference import (
    _contains_tensor,
    _is_tensor_like,
    check_rank,
    shape_from_input,
)
from nbcluster.ops.shapes import reshape, shape

_SMALL_CONSTANT = 1000  # TF: zeros/ones with fewer elements become one Const


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
