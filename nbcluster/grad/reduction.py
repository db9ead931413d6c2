"""Gradient rules of the reduction family: Sum, Mean, Prod, Max, Min, Cumsum, Cumprod
(ArgMax, ArgMin and Range are NotDifferentiable, as are the bool reductions All and Any).

Rule: the incoming gradient is first given back the reduced axes as size-1
dimensions (statically when the axes and the input rank are known, else
with a mask computed at run time), then broadcast to the input's shape.
"""
from __future__ import annotations

from nbcluster.framework import dtypes
from nbcluster.framework.operation import Tensor
from nbcluster.grad.gradient_table import NotDifferentiable, register_gradient
from nbcluster.ops import math as m
from nbcluster.ops import ranges, reduction, shapes
from nbcluster.ops.fill import ones_like
from nbcluster.ops.shape_inference import constant_value
from nbcluster.ops.slicing import broadcast_to

for _type in ("ArgMax", "ArgMin", "Range"):
    NotDifferentiable(_type)
for _type in ("All", "Any"):  # bool in, bool out
    NotDifferentiable(_type)


def _kept(op, value: Tensor) -> Tensor:
    """`value`, of the reduction's output shape, with reduced axes back as size 1."""
    if op.get_attr("keep_dims"):
        return value
    x, axes_t = op.inputs
    axes, rank = constant_value(axes_t), x.shape.rank
    if axes is not None and rank is not None:
        for a in sorted({int(a) % rank for a in axes.reshape(-1)}):
            value = shapes.expand_dims(value, a)
        return value
    return shapes.reshape(value, _kept_shape_at_run_time(x, axes_t))


def _kept_shape_at_run_time(x: Tensor, axes: Tensor) -> Tensor:
    # shape(x) with a 1 wherever an axis (or axis - rank) names the position.
    x_shape = shapes.shape(x)
    rank = shapes.rank(x)
    positions = shapes.expand_dims(ranges.range(0, rank), 1)
    wanted = shapes.reshape(m.cast(axes, dtypes.int32), [1, -1])
    hits = m.add(m.cast(m.equal(positions, wanted), dtypes.int32),
                 m.cast(m.equal(m.subtract(positions, rank), wanted), dtypes.int32))
    reduced = m.greater(reduction.reduce_sum(hits, 1), 0)
    return m.where_v2(reduced, ones_like(x_shape), x_shape)


def _spread(op, grad: Tensor) -> Tensor:
    x = op.inputs[0]
    kept = _kept(op, grad)
    if kept.shape.is_fully_defined() and x.shape.is_fully_defined() \
            and kept.shape.as_list() == x.shape.as_list():
        return kept
    return broadcast_to(kept, shapes.shape(x))


@register_gradient("Sum")
def _sum_grad(op, grad):
    return [_spread(op, grad), None]


@register_gradient("Mean")
def _mean_grad(op, grad):
    x, y = op.inputs[0], op.outputs[0]
    if x.shape.is_fully_defined() and y.shape.is_fully_defined():
        count = max(x.shape.num_elements(), 1) // max(y.shape.num_elements(), 1)
        return [m.realdiv(_spread(op, grad), float(max(count, 1))), None]
    count = m.realdiv(m.cast(shapes.size(x), x.dtype),
                      m.cast(m.maximum(shapes.size(y), 1), x.dtype))
    return [m.realdiv(_spread(op, grad), count), None]


def _extreme_grad(op, grad):
    # The gradient is shared equally among the elements that attain the extreme.
    x, y = op.inputs[0], op.outputs[0]
    hits = m.cast(m.equal(x, _kept(op, y)), x.dtype)
    count = reduction.reduce_sum(hits, op.inputs[1], keepdims=True)
    return [m.multiply(m.realdiv(hits, count), _kept(op, grad)), None]


register_gradient("Max")(_extreme_grad)
register_gradient("Min")(_extreme_grad)


@register_gradient("Prod")
def _prod_grad(op, grad):
    # d prod / d x_i is the product of the other elements. Dividing the product by
    # x_i fails at zeros, so count the zeros of each reduced group: with none it
    # is prod / x_i, with one only the zero gets the product of the rest, with
    # more every element gets 0 (TF reaches the same values with cumprods).
    x, axes = op.inputs
    zero = ones_like(x)
    zero = m.subtract(zero, zero)
    is_zero = m.equal(x, zero)
    safe = m.where_v2(is_zero, ones_like(x), x)
    rest = reduction.reduce_prod(safe, axes, keepdims=True)
    zeros = reduction.reduce_sum(m.cast(is_zero, dtypes.int32), axes, keepdims=True)
    of_nonzero = m.where_v2(m.equal(zeros, 0), m.realdiv(rest, safe), m.multiply(rest, zero))
    of_zero = m.where_v2(m.equal(zeros, 1), rest, m.multiply(rest, zero))
    return [m.multiply(m.where_v2(is_zero, of_zero, of_nonzero), _kept(op, grad)), None]


@register_gradient("Cumsum")
def _cumsum_grad(op, grad):
    # each x_i reaches every later (earlier, reversed) sum: the scan run the other way
    return [reduction.cumsum(grad, op.inputs[1], exclusive=op.get_attr("exclusive"),
                             reverse=not op.get_attr("reverse")), None]


@register_gradient("Cumprod")
def _cumprod_grad(op, grad):
    # d y_j / d x_i = y_j / x_i for the x_i in y_j; x_i = 0 gives nan or inf, as in TF
    x, axis = op.inputs
    exclusive, reverse = op.get_attr("exclusive"), op.get_attr("reverse")
    back = reduction.cumsum(m.multiply(op.outputs[0], grad), axis, exclusive=exclusive,
                            reverse=not reverse)
    return [m.realdiv(back, x), None]
