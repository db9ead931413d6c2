"""Gradient rules of the array family: identity, reshaping, joining, filling, shapes.

Rule: shape-only ops (Shape, Size, Rank, ZerosLike, ...) and sources
(Placeholder, Const) are NotDifferentiable; rearranging ops send the
gradient back through the inverse rearrangement.
"""
from __future__ import annotations

import numpy as np

from nbcluster.grad.registry import NotDifferentiable, register_gradient
from nbcluster.ops import array
from nbcluster.ops import slicing
from nbcluster.ops.reduction import reduce_sum
from nbcluster.ops.shape_inference import constant_value

for _type in ("Placeholder", "Const", "Shape", "Size", "Rank", "ZerosLike", "OnesLike"):
    NotDifferentiable(_type)


@register_gradient("Identity")
def _identity_grad(op, grad):
    return [grad]


@register_gradient("PlaceholderWithDefault")
def _placeholder_with_default_grad(op, grad):
    return [grad]


def _as_input_shape(op, grad):
    """`grad` reshaped to the shape of op's first input (static when known)."""
    x = op.inputs[0]
    return array.reshape(grad, array.shape(x))


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
    return [array.transpose(grad, inverse), None]


@register_gradient("ConcatV2")
def _concat_grad(op, grad):
    values, axis_t = op.inputs[:-1], op.inputs[-1]
    axis = constant_value(axis_t)
    rank = grad.shape.rank
    sizes = None
    if axis is not None and rank is not None:
        a = int(axis) % rank
        sizes = [v.shape[a] if v.shape.rank is not None else None for v in values]
    if sizes is not None and all(s is not None for s in sizes):
        # Every piece's extent along the axis is known: constant begins/sizes.
        grads, start = [], 0
        for s in sizes:
            begin = [0] * rank
            begin[a] = start
            size = [-1] * rank
            size[a] = s
            grads.append(slicing.slice(grad, begin, size))
            start += s
        return grads + [None]
    shapes = [array.shape(v) for v in values]
    offsets = slicing.concat_offset(axis_t, shapes)
    return [slicing.slice(grad, o, s) for o, s in zip(offsets, shapes)] + [None]


@register_gradient("Pack")
def _pack_grad(op, grad):
    return slicing.unstack(grad, num=op.get_attr("N"), axis=op.get_attr("axis"))


@register_gradient("Fill")
def _fill_grad(op, grad):
    return [None, reduce_sum(grad)]
