"""Gradient rules of the shape family: Shape, ShapeN, Size and Rank are NotDifferentiable;
Reshape, ExpandDims, Squeeze, Transpose and ReverseV2 send the gradient back
through the inverse rearrangement.
"""
from __future__ import annotations

import numpy as np

from nbcluster.grad.gradient_table import NotDifferentiable, register_gradient
from nbcluster.ops import shapes, slicing
from nbcluster.ops.shape_inference import constant_value

for _type in ("Shape", "ShapeN", "Size", "Rank"):
    NotDifferentiable(_type)


def _as_input_shape(op, grad):
    """`grad` reshaped to the shape of op's first input (static when known)."""
    x = op.inputs[0]
    return shapes.reshape(grad, shapes.shape(x))


@register_gradient("Reshape")
def _reshape_grad(op, grad):
    return [_as_input_shape(op, grad), None]


@register_gradient("ExpandDims")
def _expand_dims_grad(op, grad):
    return [_as_input_shape(op, grad), None]


@register_gradient("Squeeze")
def _squeeze_grad(op, grad):
    return [_as_input_shape(op, grad)]


@register_gradient("Transpose")
def _transpose_grad(op, grad):
    perm = constant_value(op.inputs[1])
    if perm is not None:
        inverse = np.argsort(np.asarray(perm).reshape(-1)).astype(perm.dtype)
    else:
        inverse = slicing.invert_permutation(op.inputs[1])
    return [shapes.transpose(grad, inverse), None]


@register_gradient("ReverseV2")
def _reverse_grad(op, grad):
    return [shapes.reverse(grad, op.inputs[1]), None]
