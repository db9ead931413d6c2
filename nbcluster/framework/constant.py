"""Constants and the conversion of Python/numpy values into graph tensors.

Rule: the values themselves (a Python value as the ndarray TF makes of it) are
`values.py`'s, which graph serialization shares without building a graph.
"""
from __future__ import annotations

from typing import Optional

import numpy as np

from nbcluster.framework import dtypes
from nbcluster.framework.graph import get_default_graph, register_tensor_converter
from nbcluster.framework.op_registry import register_op
from nbcluster.framework.operation import Operation, Tensor
from nbcluster.framework.tensor_shape import TensorShape
from nbcluster.framework.values import to_numpy


@register_op("Const")
def _const_shape(op):
    value = op.get_attr("value")
    return [(op.get_attr("dtype"), TensorShape(value.shape))]


def constant(value, dtype=None, shape=None, name: str = "Const", graph=None) -> Tensor:
    """A tensor whose value is `value`, optionally cast to `dtype` and `shape`."""
    array = to_numpy(value, dtype)
    if shape is not None:
        shape = [int(d) for d in TensorShape(shape).as_list()]
        if array.size == 1 and int(np.prod(shape)) != 1:
            array = np.full(shape, array.reshape(()), dtype=array.dtype)
        elif array.size == int(np.prod(shape)):
            array = array.reshape(shape)
        else:
            raise TypeError(f"Expected Tensor's shape: {tuple(shape)}, but got "
                            f"{array.shape} for value {value!r}")
    dt = dtypes.as_dtype(array.dtype) if array.dtype != object else dtypes.string
    graph = graph or get_default_graph()
    op = graph.create_op("Const", [], {"value": array, "dtype": dt}, name=name)
    return op.outputs[0]


# How a (nested) list holding tensors becomes one tensor: ops/array.py sets it
# (a Pack op, TF's auto-packing), since the op family lives a layer above.
_list_packers: list = []


def register_list_packer(pack) -> None:
    """Sets `pack(values, dtype, name, graph) -> Tensor` for lists that hold tensors."""
    if _list_packers:
        raise KeyError("a list packer is already registered")
    _list_packers.append(pack)


def holds_tensor(value) -> bool:
    """Whether a (nested) list or tuple has a Tensor or Variable-like leaf."""
    if isinstance(value, (list, tuple)):
        return any(holds_tensor(v) for v in value)
    return isinstance(value, Tensor) or hasattr(value, "_as_graph_element") or \
        hasattr(value, "_as_tensor")


def convert_to_tensor(value, dtype=None, name: Optional[str] = None, graph=None) -> Tensor:
    """`value` as a Tensor: Tensors pass through (dtype checked), a (nested) list
    holding tensors is packed into one (op Pack), other values become Const."""
    if isinstance(value, (list, tuple)) and _list_packers and holds_tensor(value):
        return _list_packers[0](value, dtype, name, graph)
    unwrap = getattr(value, "_as_tensor", None) or getattr(value, "_as_graph_element", None)
    if unwrap is not None:
        value = unwrap()
    if isinstance(value, Tensor):
        if dtype is not None and dtypes.as_dtype(dtype) != value.dtype:
            raise ValueError(f"Tensor conversion requested dtype {dtypes.as_dtype(dtype).name}"
                             f" for Tensor with dtype {value.dtype.name}: {value!r}")
        return value
    if isinstance(value, Operation):
        raise TypeError(f"Can't convert Operation '{value.name}' to Tensor (target dtype="
                        f"{dtype}, name={name})")
    return constant(value, dtype=dtype, name=name or "Const", graph=graph)


register_tensor_converter(convert_to_tensor)
