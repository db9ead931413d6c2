"""Constants and the conversion of Python/numpy values into graph tensors."""
from __future__ import annotations

from typing import Optional

import numpy as np

from nbcluster.framework import dtypes
from nbcluster.framework.op_registry import register_op
from nbcluster.framework.operation import Operation, Tensor
from nbcluster.framework.tensor_shape import TensorShape


@register_op("Const")
def _const_shape(op):
    value = op.get_attr("value")
    return [(op.get_attr("dtype"), TensorShape(value.shape))]


def to_numpy(value, dtype: Optional[dtypes.DType] = None) -> np.ndarray:
    """A Python/numpy value as the ndarray TF would make of it (float -> float32)."""
    if dtype is not None:
        dtype = dtypes.as_dtype(dtype)
        if dtype == dtypes.string:
            return _string_array(value)
        array = np.asarray(value)
        if array.dtype.kind in "OSU":
            raise TypeError(f"Expected {dtype.name}, got {value!r} of type "
                            f"'{type(value).__name__}' instead.")
        if isinstance(value, np.ndarray) and array.dtype != dtype.as_numpy_dtype \
                and not _fits(array, dtype):
            raise TypeError(f"Cannot convert array of dtype {array.dtype} to "
                            f"{dtype.name}: {value!r}")
        converted = array.astype(dtype.as_numpy_dtype, copy=False)
        if array.dtype.kind == "f" and dtype.is_integer and not np.array_equal(converted, array):
            raise TypeError(f"Expected {dtype.name}, got {value!r} of type "
                            f"'{type(value).__name__}' instead.")
        return converted
    array = np.asarray(value)
    if array.dtype.kind in "OSU":
        return _string_array(value)
    if isinstance(value, np.ndarray) or isinstance(value, np.generic):
        return array
    if array.dtype == np.float64:
        return array.astype(np.float32)
    if array.dtype == np.int64 and array.size and \
            np.abs(array).max() < 2 ** 31:
        return array.astype(np.int32)
    if array.dtype == np.int64 and not array.size:
        return array.astype(np.int32)
    return array


def _fits(array: np.ndarray, dtype: dtypes.DType) -> bool:
    # numpy scalars and float->float are allowed to narrow, as TF does for literals
    return array.ndim == 0 or (array.dtype.kind == "f" and dtype.is_floating)


def _string_array(value) -> np.ndarray:
    array = np.asarray(value, dtype=object)
    flat = [v.encode("utf-8") if isinstance(v, str) else v for v in array.reshape(-1)]
    for v in flat:
        if not isinstance(v, bytes):
            raise TypeError(f"Expected string, got {v!r} of type '{type(v).__name__}'")
    out = np.empty(len(flat), dtype=object)
    out[:] = flat
    return out.reshape(array.shape)


def constant(value, dtype=None, shape=None, name: str = "Const", graph=None) -> Tensor:
    """A tensor whose value is `value`, optionally cast to `dtype` and `shape`."""
    from nbcluster.framework.graph import get_default_graph

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
