"""Gradient rules of the slicing family: StridedSlice(+Grad), Slice, Pad, Unpack,
BroadcastTo (the shape helpers BroadcastGradientArgs, ConcatOffset and
InvertPermutation are NotDifferentiable).

Rule: a slice's gradient is the incoming gradient scattered into zeros of
the input's shape (Pad, StridedSliceGrad); a pad's is the slice that drops
the padding.
"""
from __future__ import annotations

from nbcluster.grad.gradient_table import NotDifferentiable, register_gradient
from nbcluster.grad.math import unbroadcast
from nbcluster.ops import array, shapes, slicing
from nbcluster.ops import math as m
from nbcluster.ops.fill import zeros_like

for _type in ("BroadcastGradientArgs", "ConcatOffset", "InvertPermutation"):
    NotDifferentiable(_type)


@register_gradient("Slice")
def _slice_grad(op, grad):
    x, begin, _ = op.inputs
    after = m.subtract(m.subtract(shapes.shape(x, out_type=begin.dtype), begin),
                       shapes.shape(op.outputs[0], out_type=begin.dtype))
    paddings = array.stack([begin, after], axis=1)
    return [slicing.pad(grad, paddings), None, None]


@register_gradient("Pad")
def _pad_grad(op, grad):
    x, paddings = op.inputs
    before = shapes.reshape(slicing.slice(paddings, [0, 0], [-1, 1]), [-1])
    return [slicing.slice(grad, before, shapes.shape(x, out_type=paddings.dtype)), None]


@register_gradient("Unpack")
def _unpack_grad(op, *grads):
    filled = [zeros_like(out) if g is None else g for g, out in zip(grads, op.outputs)]
    return [array.stack(filled, axis=op.get_attr("axis"))]


@register_gradient("BroadcastTo")
def _broadcast_to_grad(op, grad):
    return [unbroadcast(grad, op.inputs[0]), None]


def _masks(op) -> dict:
    return {name: op.get_attr(name) for name in slicing.MASKS}


@register_gradient("StridedSlice")
def _strided_slice_grad(op, grad):
    x, begin, end, strides = op.inputs
    attrs = {"T": grad.dtype, "Index": begin.dtype, **_masks(op)}
    dx = op.graph.create_op("StridedSliceGrad",
                            [shapes.shape(x, out_type=begin.dtype), begin, end, strides, grad],
                            attrs, name="StridedSliceGrad").outputs[0]
    return [dx, None, None, None]


@register_gradient("StridedSliceGrad")
def _strided_slice_grad_grad(op, grad):
    _, begin, end, strides, _ = op.inputs
    return [None, None, None, None,
            slicing.strided_slice(grad, begin, end, strides, **_masks(op))]
