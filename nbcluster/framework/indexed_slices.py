"""tf.IndexedSlices: a sparse slice of rows of a dense tensor (a gather's gradient).

Rule: an IndexedSlices is three ordinary tensors (values, indices, dense_shape)
and nothing else, so it crosses the wire as two small tensors; converting it
to a dense Tensor builds one UnsortedSegmentSum (repeated indices add up),
once per IndexedSlices. This module sits at L0: it builds that op by its type
name, since the op constructors live above it.
"""
from __future__ import annotations

import collections
import logging
from typing import Optional

import numpy as np

from nbcluster.framework import dtypes
from nbcluster.framework.operation import Tensor, as_tensor_or_op
from nbcluster.framework.tensor_shape import TensorShape

_log = logging.getLogger(__name__)

# TF warns when densifying an IndexedSlices this large: the dense copy may not fit.
LARGE_DENSE_ELEMENTS = 100_000_000

IndexedSlicesValue = collections.namedtuple("IndexedSlicesValue",
                                            ["values", "indices", "dense_shape"])
IndexedSlicesValue.__doc__ = ("The fetched value of an IndexedSlices: numpy arrays "
                              "`values`, `indices` and `dense_shape` (None if it had none).")


class IndexedSlices:
    """Rows `values[i]` of a dense tensor at row `indices[i]`; all other rows are zero.

    Args:
      values: a Tensor [N] + dense_shape[1:].
      indices: an int32/int64 Tensor [N]: the row of each slice (may repeat:
        repeated rows add up).
      dense_shape: None or an int Tensor [rank]: the shape of the dense tensor.
    Raises:
      TypeError: values or indices is not a Tensor, indices is not int32/int64,
        or dense_shape is neither None nor an int Tensor.
    Example:
      >>> s = IndexedSlices(constant([[1., 2.]]), constant([3]), constant([5, 2]))
      >>> dense = convert_to_tensor(s)    # [5, 2], row 3 is [1, 2]
    """

    def __init__(self, values, indices, dense_shape=None) -> None:
        values, indices = as_tensor_or_op(values), as_tensor_or_op(indices)
        if not isinstance(values, Tensor):
            raise TypeError(f"IndexedSlices values must be a Tensor, got {values!r}")
        if not isinstance(indices, Tensor) or indices.dtype not in (dtypes.int32,
                                                                    dtypes.int64):
            raise TypeError(f"IndexedSlices indices must be an int32 or int64 Tensor, got "
                            f"{indices!r}")
        if dense_shape is not None:
            dense_shape = as_tensor_or_op(dense_shape)
            if not isinstance(dense_shape, Tensor) or dense_shape.dtype not in (
                    dtypes.int32, dtypes.int64):
                raise TypeError(f"IndexedSlices dense_shape must be None or an int32/int64 "
                                f"Tensor, got {dense_shape!r}")
        self._values, self._indices, self._dense_shape = values, indices, dense_shape
        self._dense: Optional[Tensor] = None

    values = property(lambda self: self._values)
    indices = property(lambda self: self._indices)
    dense_shape = property(lambda self: self._dense_shape)
    name = property(lambda self: self._values.name)
    dtype = property(lambda self: self._values.dtype)
    device = property(lambda self: self._values.device)
    op = property(lambda self: self._values.op)
    graph = property(lambda self: self._values.graph)

    @property
    def shape(self) -> TensorShape:
        """The dense tensor's static shape, as far as it is known when built."""
        inner = self._values.shape.dims[1:] if self._values.shape.rank is not None else None
        known = _static_shape(self._dense_shape)
        if known is not None:
            return TensorShape(known)
        if inner is None:
            return TensorShape(None)
        return TensorShape([None] + list(inner))

    def get_shape(self) -> TensorShape:
        return self.shape

    def __repr__(self) -> str:
        shape = "" if self._dense_shape is None else f", dense_shape={self._dense_shape.name}"
        return (f"IndexedSlices(indices={self._indices.name}, values={self._values.name}"
                f"{shape})")

    def __neg__(self) -> "IndexedSlices":
        graph = self.graph
        with graph.as_default():
            negated = graph.create_op("Neg", [self._values], {"T": self.dtype},
                                      name="Neg").outputs[0]
        return IndexedSlices(negated, self._indices, self._dense_shape)

    def _as_tensor(self) -> Tensor:
        """The dense Tensor (what convert_to_tensor gives), built once."""
        if self._dense is None:
            self._dense = _densify(self)
        return self._dense


def _densify(slices: IndexedSlices) -> Tensor:
    if slices.dense_shape is None:
        raise ValueError(f"Tensor conversion requested for IndexedSlices without "
                         f"dense_shape: {slices!r}")
    graph, shape = slices.graph, slices.dense_shape
    _warn_if_large(slices)
    with graph.as_default(), graph.name_scope("IndexedSlicesToDense"):
        int32 = dtypes.int32
        zero = graph.create_op("Const", [], {"value": np.array(0, np.int32), "dtype": int32},
                               name="zero").outputs[0]
        rows = graph.create_op("GatherV2", [shape, zero, zero],
                               {"Tparams": shape.dtype, "Tindices": int32, "Taxis": int32,
                                "batch_dims": 0}, name="rows").outputs[0]
        attrs = {"T": slices.dtype, "Tindices": slices.indices.dtype,
                 "Tnumsegments": shape.dtype}
        return graph.create_op("UnsortedSegmentSum", [slices.values, slices.indices, rows],
                               attrs, name="UnsortedSegmentSum").outputs[0]


def _static_shape(dense_shape: Optional[Tensor]) -> Optional[list]:
    """dense_shape's value when the graph already tells it (a Const, or the Shape
    of a fully defined tensor), else None."""
    if dense_shape is None:
        return None
    op = dense_shape.op
    if op.type == "Const":
        return [int(d) for d in op.get_attr("value")]
    if op.type == "Shape":
        shape = op.inputs[0].shape
        if shape.rank is not None:
            return shape.as_list()
    return None


def _warn_if_large(slices: IndexedSlices) -> None:
    shape = _static_shape(slices.dense_shape)
    if shape is None or None in shape:
        return
    elements = int(np.prod(shape, dtype=np.int64))
    if elements > LARGE_DENSE_ELEMENTS:
        _log.warning("Converting sparse IndexedSlices to a dense Tensor with %d elements. "
                     "This may consume a large amount of memory.", elements)
