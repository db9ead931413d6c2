"""Linear-algebra ops: MatMul and BatchMatMulV2 (tf.matmul, the `@` operator).

Rule: as in `ops/math.py`, dtypes and shapes are checked when the graph is
built; batch dimensions broadcast as numpy's matmul does.
"""
from __future__ import annotations

from nbcluster.framework import dtypes
from nbcluster.framework.graph import graph_of
from nbcluster.framework.op_registry import register_op
from nbcluster.framework.operation import Tensor, register_operator
from nbcluster.framework.tensor_shape import TensorShape, broadcast, unknown_shape
from nbcluster.ops.math import (
    COMPLEX,
    FLOATS,
    check_dtype,
    check_same_dtype,
    tensor_dtype,
    to_tensor,
)
from nbcluster.ops.shape_inference import shape_error

_MATMUL_TYPES = FLOATS + (dtypes.int32, dtypes.int64) + COMPLEX


def _inner_dims_equal(op, k1, k2) -> None:
    if k1 is not None and k2 is not None and k1 != k2:
        raise shape_error(op, f"Dimensions must be equal, but are {k1} and {k2}")


@register_op("MatMul")
def _matmul_shape(op):
    dtype = check_same_dtype(op, ("a", "b"))
    check_dtype(dtype, _MATMUL_TYPES, "a")
    dims = []
    for t, flag in zip(op.inputs, ("transpose_a", "transpose_b")):
        if t.shape.rank not in (None, 2):
            raise shape_error(op, f"Shape must be rank 2 but is rank {t.shape.rank}")
        rows, cols = (t.shape.dims if t.shape.rank == 2 else [None, None])
        dims.append((cols, rows) if op.get_attr(flag) else (rows, cols))
    (m, k1), (k2, n) = dims
    _inner_dims_equal(op, k1, k2)
    return [(dtype, TensorShape([m, n]))]


@register_op("BatchMatMulV2")
def _batch_matmul_shape(op):
    dtype = check_same_dtype(op)
    check_dtype(dtype, _MATMUL_TYPES)
    x, y = (t.shape for t in op.inputs)
    for s in (x, y):
        if s.rank is not None and s.rank < 2:
            raise shape_error(op, f"Shape must be at least rank 2 but is rank {s.rank}")
    if x.rank is None or y.rank is None:
        return [(dtype, unknown_shape())]
    m, k1 = x[-2:] if not op.get_attr("adj_x") else x[-1:-3:-1]
    k2, n = y[-2:] if not op.get_attr("adj_y") else y[-1:-3:-1]
    _inner_dims_equal(op, k1, k2)
    batch = broadcast(x[:-2], y[:-2], op.name)
    return [(dtype, TensorShape(batch.dims + [m, n]))]


def matmul(a, b, transpose_a=False, transpose_b=False, adjoint_a=False, adjoint_b=False,
           a_is_sparse=False, b_is_sparse=False, name=None) -> Tensor:
    """The matrix product of `a` and `b` (op MatMul; BatchMatMulV2 above rank 2).

    Args:
      a, b: Tensors of rank >= 2 and one dtype (float, int32/64 or complex); inputs
        of rank > 2 (or unknown rank) multiply batch-wise, batch dims broadcasting.
      transpose_a, transpose_b: multiply by the transpose. adjoint_a/_b: the
        conjugate transpose (the same for real dtypes).
      a_is_sparse, b_is_sparse: accepted for TF compatibility; hints only.
    Returns: a Tensor [..., M, N].
    Raises: ValueError on ranks below 2 or unequal inner dimensions; TypeError
      on mismatched dtypes.

    Example:
      >>> matmul(constant([[1., 2.]]), constant([[3.], [4.]])).shape
      TensorShape([1, 1])
    """
    if transpose_a and adjoint_a:
        raise ValueError("Only one of transpose_a and adjoint_a can be True.")
    if transpose_b and adjoint_b:
        raise ValueError("Only one of transpose_b and adjoint_b can be True.")
    graph = graph_of(a, b)
    dtype = tensor_dtype([a, b])
    with graph.as_default(), graph.name_scope(name or "MatMul") as scope:
        a, b = to_tensor(a, dtype, "a", graph), to_tensor(b, dtype, "b", graph)
        flip_a, flip_b = transpose_a or adjoint_a, transpose_b or adjoint_b
        if any(t.shape.rank is None or t.shape.rank > 2 for t in (a, b)):
            if (transpose_a or transpose_b) and a.dtype in COMPLEX:
                raise NotImplementedError("transpose of complex batch matmul: use adjoint_a/b")
            return graph.create_op("BatchMatMulV2", [a, b],
                                   {"T": a.dtype, "adj_x": flip_a, "adj_y": flip_b},
                                   name=scope).outputs[0]
        if (adjoint_a or adjoint_b) and a.dtype in COMPLEX:
            raise NotImplementedError("adjoint of a complex rank-2 matmul")
        return graph.create_op("MatMul", [a, b], {"T": a.dtype, "transpose_a": flip_a,
                                                  "transpose_b": flip_b},
                               name=scope).outputs[0]


# TF1 names the op an operator builds "matmul".
register_operator("__matmul__", lambda x, y: matmul(x, y, name="matmul"))
register_operator("__rmatmul__", lambda y, x: matmul(x, y, name="matmul"))
