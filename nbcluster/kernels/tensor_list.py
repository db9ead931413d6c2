"""Kernels of the TensorList ops: lists as immutable values, so a list a loop pushed onto is
never changed under a reader of its earlier version.

Rule: every op returns a new `TensorList` (TF's value semantics; TF reuses the
buffer only where no one else holds it, which copying tuples of references
makes moot: elements are shared, never copied). An unset element (Reserve)
reads as zeros where the element shape is fully known, as TF's.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

import numpy as np

from nbcluster import errors
from nbcluster.framework import dtypes
from nbcluster.runtime.kernel_table import register_kernel


@dataclass(frozen=True)
class TensorList:
    """A TensorList value: elements (None where unset), their dtype and shape (None: unknown
    rank; a dim None: unknown)."""

    items: tuple
    element_dtype: dtypes.DType
    element_shape: Optional[tuple]

    def zeros_like(self) -> "TensorList":
        return TensorList(tuple(None if i is None else np.zeros_like(i) for i in self.items),
                          self.element_dtype, self.element_shape)


def _shape(value) -> Optional[tuple]:
    """An element_shape input as a shape: -1 (a scalar) is unknown rank, a -1 dim unknown."""
    value = np.asarray(value)
    if value.ndim == 0:
        return None
    return tuple(None if int(d) < 0 else int(d) for d in value.reshape(-1))


def _list(node, value) -> TensorList:
    if not isinstance(value, TensorList):
        raise errors.InvalidArgumentError(
            None, None, f"Input handle is not a list (got {type(value).__name__})",
            node_name=node.name)
    return value


def _element_dtype(node) -> dtypes.DType:
    return dtypes.as_dtype(node.attrs["element_dtype"])


def _checked(node, lst: TensorList, tensor):
    tensor = np.asarray(tensor)
    if np.dtype(tensor.dtype) != np.dtype(lst.element_dtype.as_numpy_dtype):
        raise errors.InvalidArgumentError(
            None, None, f"Invalid data types; list elements {lst.element_dtype.name} but "
                        f"tried to append {dtypes.as_dtype(tensor.dtype).name}",
            node_name=node.name)
    shape = lst.element_shape
    if shape is not None and (len(shape) != tensor.ndim or any(
            d is not None and d != t for d, t in zip(shape, tensor.shape))):
        raise errors.InvalidArgumentError(
            None, None, f"Tried to add an element of shape {list(tensor.shape)} to a list of "
                        f"elements of shape {[-1 if d is None else d for d in shape]}",
            node_name=node.name)
    return tensor


def _read(node, lst: TensorList, item, shape: Optional[tuple]):
    if item is not None:
        return item
    shape = shape if shape is not None else lst.element_shape
    if shape is None or None in shape:
        raise errors.InvalidArgumentError(
            None, None, "Trying to read an uninitialized tensor with a not fully defined "
                        "element shape", node_name=node.name)
    return np.zeros(shape, lst.element_dtype.as_numpy_dtype)


def _index(node, lst: TensorList, index, verb: str) -> int:
    i = int(index)
    if not 0 <= i < len(lst.items):
        raise errors.InvalidArgumentError(
            None, None, f"Trying to {verb} element {i} in a list with {len(lst.items)} "
                        f"elements.", node_name=node.name)
    return i


@register_kernel("EmptyTensorList", "CPU")
def _empty(node, device):
    dtype = _element_dtype(node)
    return lambda ctx, element_shape, max_num_elements: (
        TensorList((), dtype, _shape(element_shape)),)


@register_kernel("TensorListReserve", "CPU")
def _reserve(node, device):
    dtype = _element_dtype(node)
    return lambda ctx, element_shape, num_elements: (
        TensorList((None,) * int(num_elements), dtype, _shape(element_shape)),)


@register_kernel("TensorListFromTensor", "CPU")
def _from_tensor(node, device):
    dtype = _element_dtype(node)

    def from_tensor(ctx, tensor, element_shape):
        tensor = np.asarray(tensor)
        if tensor.ndim == 0:
            raise errors.InvalidArgumentError(
                None, None, "Tensor must be at least a vector, but saw shape: []",
                node_name=node.name)
        return (TensorList(tuple(tensor[i] for i in range(tensor.shape[0])), dtype,
                           tuple(tensor.shape[1:])),)
    return from_tensor


@register_kernel("TensorListPushBack", "CPU")
def _push_back(node, device):
    def push_back(ctx, handle, tensor):
        lst = _list(node, handle)
        return (TensorList(lst.items + (_checked(node, lst, tensor),), lst.element_dtype,
                           lst.element_shape),)
    return push_back


@register_kernel("TensorListPopBack", "CPU")
def _pop_back(node, device):
    def pop_back(ctx, handle, element_shape):
        lst = _list(node, handle)
        if not lst.items:
            raise errors.InvalidArgumentError(None, None, "Trying to pop from an empty list.",
                                              node_name=node.name)
        last = _read(node, lst, lst.items[-1], _shape(element_shape))
        return (TensorList(lst.items[:-1], lst.element_dtype, lst.element_shape), last)
    return pop_back


@register_kernel("TensorListSetItem", "CPU")
def _set_item(node, device):
    def set_item(ctx, handle, index, item):
        lst = _list(node, handle)
        i = _index(node, lst, index, "modify")
        items = lst.items[:i] + (_checked(node, lst, item),) + lst.items[i + 1:]
        return (TensorList(items, lst.element_dtype, lst.element_shape),)
    return set_item


@register_kernel("TensorListGetItem", "CPU")
def _get_item(node, device):
    def get_item(ctx, handle, index, element_shape):
        lst = _list(node, handle)
        i = _index(node, lst, index, "access")
        return (_read(node, lst, lst.items[i], _shape(element_shape)),)
    return get_item


@register_kernel("TensorListStack", "CPU")
def _stack(node, device):
    def stack(ctx, handle, element_shape):
        lst = _list(node, handle)
        shape = _shape(element_shape)
        items = [_read(node, lst, item, shape) for item in lst.items]
        if items:
            return (np.stack(items),)
        known = shape if shape is not None else lst.element_shape
        if known is None or None in known:
            raise errors.InvalidArgumentError(
                None, None, "Tried to stack elements of an empty list with a not fully "
                            "defined element shape", node_name=node.name)
        return (np.zeros((0,) + tuple(known), lst.element_dtype.as_numpy_dtype),)
    return stack


@register_kernel("TensorListLength", "CPU")
def _length(node, device):
    return lambda ctx, handle: (np.int32(len(_list(node, handle).items)),)


@register_kernel("TensorListElementShape", "CPU")
def _element_shape(node, device):
    out = dtypes.as_dtype(node.attrs["shape_type"]).as_numpy_dtype

    def element_shape(ctx, handle):
        shape = _list(node, handle).element_shape
        if shape is None:
            return (np.array(-1, out),)
        return (np.array([-1 if d is None else d for d in shape], out),)
    return element_shape
