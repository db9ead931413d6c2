"""Gradient rules of the array family: identity, placeholders, joining, tiling
and splitting.

Rule: sources (Placeholder, Const) are NotDifferentiable; Identity passes the
gradient through; joining ops send each input its own slice of the gradient.
"""
from __future__ import annotations

from nbcluster.grad.gradient_table import NotDifferentiable, register_gradient
from nbcluster.ops import array, ranges, reduction, slicing
from nbcluster.ops import shapes as shape_ops
from nbcluster.ops.fill import zeros_like
from nbcluster.ops.shape_inference import constant_value

for _type in ("Placeholder", "Const"):
    NotDifferentiable(_type)


@register_gradient("Identity")
def _identity_grad(op, grad):
    return [grad]


@register_gradient("PlaceholderWithDefault")
def _placeholder_with_default_grad(op, grad):
    return [grad]


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
    shapes = [shape_ops.shape(v) for v in values]
    offsets = slicing.concat_offset(axis_t, shapes)
    return [slicing.slice(grad, o, s) for o, s in zip(offsets, shapes)] + [None]


@register_gradient("Pack")
def _pack_grad(op, grad):
    return slicing.unstack(grad, num=op.get_attr("N"), axis=op.get_attr("axis"))


@register_gradient("Tile")
def _tile_grad(op, grad):
    # View grad as [m0, d0, m1, d1, ...] and sum over the repeat axes (the even ones).
    x, multiples = op.inputs
    x_shape = shape_ops.shape(x, out_type=multiples.dtype)
    interleaved = shape_ops.reshape(
        shape_ops.transpose(array.stack([multiples, x_shape])), [-1])
    axes = ranges.range(0, shape_ops.size(interleaved), 2)
    summed = reduction.reduce_sum(shape_ops.reshape(grad, interleaved), axes)
    return [shape_ops.reshape(summed, x_shape), None]


def _joined(op, grads, axis):
    filled = [zeros_like(out) if g is None else g for g, out in zip(grads, op.outputs)]
    return array.concat(filled, axis)


@register_gradient("Split")
def _split_grad(op, *grads):
    return [None, _joined(op, grads, op.inputs[0])]


@register_gradient("SplitV")
def _split_v_grad(op, *grads):
    return [_joined(op, grads, op.inputs[2]), None, None]
