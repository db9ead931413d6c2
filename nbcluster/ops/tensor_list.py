"""TensorList ops, by TensorFlow's names: the list values TF2's control flow keeps tensors in.

Rule: a list is a DT_VARIANT scalar (a value of its task: it never crosses
the wire, so every op reading one takes it as a ref input and runs with it), holding element tensors of one dtype. TF2's while loops
accumulate a loop's intermediates in lists for their gradients
(TensorListPushBack forward, TensorListPopBack backward); `tf.TensorArray`
in TF2 writes them too. These come from imported TF2 graphs. Kernels:
kernels/tensor_list.py.
"""
from __future__ import annotations

from nbcluster.framework import dtypes
from nbcluster.framework.op_registry import register_op
from nbcluster.framework.tensor_shape import TensorShape, scalar, unknown_shape


def _list() -> tuple:
    return (dtypes.variant, scalar())


def _element(op) -> tuple:
    shape = op._attrs.get("element_shape")
    return (dtypes.as_dtype(op.get_attr("element_dtype")),
            TensorShape(shape) if isinstance(shape, TensorShape) else unknown_shape())


@register_op("EmptyTensorList")
def _empty(op) -> list:
    return [_list()]


@register_op("TensorListReserve")
def _reserve(op) -> list:
    return [_list()]


@register_op("TensorListFromTensor")
def _from_tensor(op) -> list:
    return [_list()]


@register_op("TensorListPushBack", ref_inputs=(0,))
def _push_back(op) -> list:
    return [_list()]


@register_op("TensorListPopBack", ref_inputs=(0,))
def _pop_back(op) -> list:
    return [_list(), _element(op)]


@register_op("TensorListSetItem", ref_inputs=(0,))
def _set_item(op) -> list:
    return [_list()]


@register_op("TensorListGetItem", ref_inputs=(0,))
def _get_item(op) -> list:
    return [_element(op)]


@register_op("TensorListStack", ref_inputs=(0,))
def _stack(op) -> list:
    return [(dtypes.as_dtype(op.get_attr("element_dtype")), unknown_shape())]


@register_op("TensorListLength", ref_inputs=(0,))
def _length(op) -> list:
    return [(dtypes.int32, scalar())]


@register_op("TensorListElementShape", ref_inputs=(0,))
def _element_shape(op) -> list:
    return [(dtypes.as_dtype(op.get_attr("shape_type")), unknown_shape(1))]
