"""Logical and float-class ops: tf.logical_and/or/not/xor (LogicalAnd, LogicalOr,
LogicalNot) and tf.is_nan/is_inf/is_finite (IsNan, IsInf, IsFinite).

Rule: as in `ops/math.py`, dtypes and shapes are checked when the graph is
built; logical ops take bool only and broadcast like the arithmetic ones;
logical_xor is composed of the others, as TF builds it.
"""
from __future__ import annotations

from typing import Optional

from nbcluster.framework import dtypes
from nbcluster.framework.graph import graph_of
from nbcluster.framework.op_registry import register_op
from nbcluster.framework.operation import Tensor, register_operator
from nbcluster.framework.tensor_shape import broadcast
from nbcluster.ops.math import FLOATS, apply_op, check_dtype, to_tensor

_BOOL = (dtypes.bool,)


def _logical_binary_shape(op):
    for t, param in zip(op.inputs, ("x", "y")):
        check_dtype(t.dtype, _BOOL, param)
    return [(dtypes.bool, broadcast(op.inputs[0].shape, op.inputs[1].shape, op.name))]


def _logical_not_shape(op):
    check_dtype(op.inputs[0].dtype, _BOOL, "x")
    return [(dtypes.bool, op.inputs[0].shape)]


def _float_class_shape(op):
    check_dtype(op.inputs[0].dtype, FLOATS, "x")
    return [(dtypes.bool, op.inputs[0].shape)]


register_op("LogicalAnd")(_logical_binary_shape)
register_op("LogicalOr")(_logical_binary_shape)
register_op("LogicalNot")(_logical_not_shape)
for _type in ("IsNan", "IsInf", "IsFinite"):
    register_op(_type)(_float_class_shape)


def _logical(op_type: str, values: list, names: tuple, name: Optional[str]) -> Tensor:
    graph = graph_of(*values)
    with graph.as_default(), graph.name_scope(name or op_type) as scope:
        inputs = [to_tensor(v, dtypes.bool, n, graph) for v, n in zip(values, names)]
        return graph.create_op(op_type, inputs, {}, name=scope).outputs[0]


def logical_and(x, y, name=None) -> Tensor:
    """x AND y element-wise, with broadcasting (op LogicalAnd).

    Args: x, y: bool Tensors (or Python bools). name: op name.
    Returns: a bool Tensor of the broadcast shape.
    Raises: TypeError for a non-bool input; ValueError when the shapes do not
      broadcast.

    Example:
      >>> logical_and(constant([True, False]), True).shape
      TensorShape([2])
    """
    return _logical("LogicalAnd", [x, y], ("x", "y"), name)


def logical_or(x, y, name=None) -> Tensor:
    """x OR y element-wise, with broadcasting (op LogicalOr); see logical_and."""
    return _logical("LogicalOr", [x, y], ("x", "y"), name)


def logical_not(x, name=None) -> Tensor:
    """NOT x element-wise (op LogicalNot). Raises: TypeError for a non-bool x."""
    return _logical("LogicalNot", [x], ("x",), name)


def logical_xor(x, y, name: str = "LogicalXor") -> Tensor:
    """x XOR y element-wise: (x OR y) AND NOT (x AND y), the ops TF composes it of.

    Raises: TypeError for non-bool inputs; ValueError when shapes do not broadcast.
    """
    return logical_and(logical_or(x, y), logical_not(logical_and(x, y)), name=name)


def is_nan(x, name=None) -> Tensor:
    """Whether each element of the float Tensor `x` is NaN (op IsNan).

    Returns: a bool Tensor of x's shape. Raises: TypeError for a non-float x.

    Example:
      >>> is_nan(constant([1.0, float("nan")])).dtype
      tf.bool
    """
    return apply_op("IsNan", [x], ("x",), name).outputs[0]


def is_inf(x, name=None) -> Tensor:
    """Whether each element of `x` is +inf or -inf (op IsInf); see is_nan."""
    return apply_op("IsInf", [x], ("x",), name).outputs[0]


def is_finite(x, name=None) -> Tensor:
    """Whether each element of `x` is neither inf nor NaN (op IsFinite); see is_nan."""
    return apply_op("IsFinite", [x], ("x",), name).outputs[0]


# TF1's bool operators: & | ^ on bool Tensors are the logical ops, ~ is logical_not
for _name, _fn in (("and", logical_and), ("or", logical_or), ("xor", logical_xor)):
    register_operator(f"__{_name}__", _fn)
    register_operator(f"__r{_name}__", lambda y, x, _fn=_fn: _fn(x, y))
register_operator("__invert__", logical_not)
