"""tf.range: the Range op's constructor and shape function.

Rule: as in `ops/math.py`, dtypes and shapes are checked when the graph is
built; kernels trust them. Its own module because both `ops/shapes.py`
(a transpose of unknown rank) and `ops/reduction.py` (a reduction over every
axis of unknown rank) build ranges, and reduction also needs shapes' `rank`.
"""
from __future__ import annotations

import builtins
from typing import Optional

import numpy as np

from nbcluster.framework import dtypes
from nbcluster.framework.graph import graph_of
from nbcluster.framework.op_registry import register_op
from nbcluster.framework.operation import Tensor, as_tensor_or_op
from nbcluster.framework.tensor_shape import TensorShape
from nbcluster.framework.values import to_numpy
from nbcluster.ops.math import RANGE, cast, check_dtype, to_tensor
from nbcluster.ops.shape_inference import constant_value, shape_error


def range_error(start, limit, delta) -> Optional[str]:
    """TF's complaint about a (start, limit, delta), or None if they make a range."""
    if delta == 0:
        return "Requires delta != 0"
    if delta > 0 and start > limit:
        return f"Requires start <= limit when delta > 0: {start}/{limit}"
    if delta < 0 and start < limit:
        return f"Requires start >= limit when delta < 0: {start}/{limit}"
    return None


@register_op("Range")
def _range_shape(op):
    dtype = op.get_attr("Tidx")
    check_dtype(dtype, RANGE, "Tidx")
    for t in op.inputs:
        if t.dtype != dtype:
            raise TypeError(f"Range '{op.name}': input {t.name} is {t.dtype.name}, not "
                            f"{dtype.name}")
        if t.shape.rank not in (None, 0):
            raise shape_error(op, f"Shape must be rank 0 but is rank {t.shape.rank}")
    values = [constant_value(t) for t in op.inputs]
    if any(v is None for v in values):
        return [(dtype, TensorShape([None]))]
    start, limit, delta = (v.item() for v in values)
    message = range_error(start, limit, delta)
    if message:
        raise shape_error(op, message)
    if isinstance(start + limit + delta, int):
        size = (builtins.abs(limit - start) + builtins.abs(delta) - 1) // builtins.abs(delta)
    else:
        size = int(np.ceil((limit - start) / delta))
    return [(dtype, TensorShape([size]))]


_RANGE_ORDER = (dtypes.int32, dtypes.int64, dtypes.float32, dtypes.float64)


def range(start, limit=None, delta=1, dtype=None, name="range") -> Tensor:  # noqa: A001
    """The 1-D tensor [start, start + delta, ...) up to `limit` (op Range).

    `range(n)` counts from 0. Without `dtype`, the widest of the arguments'
    dtypes (int32 < int64 < float32 < float64) is used, as in TF.

    Example:
      >>> range(1, 7, 2).shape
      TensorShape([3])
    """
    if limit is None:
        start, limit = 0, start
    values = (start, limit, delta)
    if dtype is None:  # TF: the widest argument dtype
        kinds = [as_tensor_or_op(v).dtype if isinstance(as_tensor_or_op(v), Tensor)
                 else dtypes.as_dtype(to_numpy(v).dtype) for v in values]
        dtype = _RANGE_ORDER[max(_RANGE_ORDER.index(k) if k in _RANGE_ORDER else 0
                                 for k in kinds)]
    dtype = dtypes.as_dtype(dtype)
    graph = graph_of(*values)
    with graph.as_default(), graph.name_scope(name or "range") as scope:
        args = [cast(to_tensor(v, dtype, n, graph), dtype)
                for v, n in zip(values, ("start", "limit", "delta"))]
        return graph.create_op("Range", args, {"Tidx": dtype},
                               name=scope).outputs[0]
