"""Gradient rules of the math family (element-wise ops, Cast, AddN, SelectV2), and
`unbroadcast`, which every broadcasting rule uses.

Rule: a gradient has its input's dtype and shape. Broadcast dimensions are
summed away: from static shapes when they decide it (both fully known, or an
unknown dimension the other operand does not broadcast), else at run time
with Shape + BroadcastGradientArgs + Sum + Reshape, as TF builds it.
"""
from __future__ import annotations

from typing import Optional

from nbcluster.framework import dtypes
from nbcluster.framework.operation import Tensor
from nbcluster.grad.gradient_table import NotDifferentiable, register_gradient
from nbcluster.ops import math as m
from nbcluster.ops import shapes
from nbcluster.ops.fill import zeros_like
from nbcluster.ops.reduction import reduce_sum
from nbcluster.ops.slicing import broadcast_gradient_args, static_reduction_axes

_DIFFERENTIABLE = (dtypes.float16, dtypes.float32, dtypes.float64, dtypes.complex64,
                   dtypes.complex128)


def unbroadcast(grad: Tensor, x: Tensor, other: Optional[Tensor] = None) -> Tensor:
    """`grad` (of a broadcast result's shape) summed down to `x`'s shape.

    `other`, the operand `x` was broadcast against, lets the axes be found
    from static shapes with an unknown batch dimension too (TF's
    SmartBroadcastGradientArgs): `matmul(x, w) + b` then needs no run-time
    shape ops.
    """
    gs, xs = grad.shape, x.shape
    if gs.is_fully_defined() and xs.is_fully_defined():
        if gs.as_list() == xs.as_list():
            return grad
        axes, _ = static_reduction_axes(xs.as_list(), gs.as_list())
        summed = reduce_sum(grad, axes) if axes.size else grad
        return shapes.reshape(summed, xs.as_list())
    axes = _static_axes(x, other) if other is not None and gs.rank is not None else None
    if axes is not None:
        if not axes:
            return grad
        summed = reduce_sum(grad, axes)
        if axes == list(range(gs.rank - xs.rank)):  # only leading axes: x's shape already
            return summed
        return shapes.reshape(summed, xs.as_list() if xs.is_fully_defined()
                              else shapes.shape(x))
    x_shape = shapes.shape(x)
    axes, _ = broadcast_gradient_args(x_shape, shapes.shape(grad))
    return shapes.reshape(reduce_sum(grad, axes), x_shape)


def _static_axes(x: Tensor, other: Tensor) -> Optional[list]:
    """The axes of broadcast(x, other) that x's gradient sums, if the static shapes
    decide them (an unknown dimension is fine where `other` has none or a 1)."""
    xs, ys = x.shape, other.shape
    if xs.rank is None or ys.rank is None:
        return None
    rank = max(xs.rank, ys.rank)
    xd = [1] * (rank - xs.rank) + xs.as_list()
    yd = [1] * (rank - ys.rank) + ys.as_list()
    axes = list(range(rank - xs.rank))
    for i in range(rank - xs.rank, rank):
        a, c = xd[i], yd[i]
        if a is not None and a != 1:
            continue  # x's own extent: never summed
        if a is None:
            if c == 1:
                continue  # the result takes x's extent
            return None  # x may be a broadcast 1
        if c is None:
            return None  # a == 1: summed unless other's extent is 1 too
        if c != 1:
            axes.append(i)
    return axes


def _pair(op, gx: Tensor, gy: Tensor) -> list:
    x, y = op.inputs
    return [unbroadcast(gx, x, y), unbroadcast(gy, y, x)]


# -- binary element-wise ---------------------------------------------------------
@register_gradient("AddV2")
def _add_grad(op, grad):
    return _pair(op, grad, grad)


@register_gradient("Sub")
def _sub_grad(op, grad):
    return _pair(op, grad, m.negative(grad))


@register_gradient("Mul")
def _mul_grad(op, grad):
    x, y = op.inputs
    return _pair(op, m.multiply(grad, y), m.multiply(x, grad))


@register_gradient("SquaredDifference")
def _squared_difference_grad(op, grad):
    x, y = op.inputs
    twice = m.multiply(m.multiply(grad, 2.0), m.subtract(x, y))
    return _pair(op, twice, m.negative(twice))


@register_gradient("RealDiv")
def _realdiv_grad(op, grad):
    x, y = op.inputs
    return _pair(op, m.realdiv(grad, y), m.multiply(grad, m.realdiv(m.realdiv(m.negative(x),
                                                                              y), y)))


@register_gradient("DivNoNan")
def _div_no_nan_grad(op, grad):
    x, y = op.inputs
    return _pair(op, m.div_no_nan(grad, y),
                 m.multiply(grad, m.div_no_nan(m.div_no_nan(m.negative(x), y), y)))


@register_gradient("FloorDiv")
def _floordiv_grad(op, grad):  # piecewise constant: no gradient, as TF
    return [None, None]


@register_gradient("FloorMod")
def _floormod_grad(op, grad):  # x - floor(x / y) * y
    x, y = op.inputs
    return _pair(op, grad, m.multiply(grad, m.negative(m.floordiv(x, y))))


def _select_by(mask: Tensor, op, grad) -> list:
    zeros = zeros_like(grad)
    return _pair(op, m.where_v2(mask, grad, zeros), m.where_v2(mask, zeros, grad))


@register_gradient("Maximum")
def _maximum_grad(op, grad):  # ties send the gradient to x, as TF does
    return _select_by(m.greater_equal(*op.inputs), op, grad)


@register_gradient("Minimum")
def _minimum_grad(op, grad):
    return _select_by(m.less_equal(*op.inputs), op, grad)


@register_gradient("Pow")
def _pow_grad(op, grad):
    x, y = op.inputs
    z = op.outputs[0]
    gx = m.multiply(grad, m.multiply(y, m.pow(x, m.subtract(y, 1))))
    # d/dy x^y = x^y log x; defined as 0 where x <= 0, as TF does for real x.
    safe_log = m.where_v2(m.greater(x, 0), m.log(x), zeros_like(x))
    return _pair(op, gx, m.multiply(grad, m.multiply(z, safe_log)))


@register_gradient("SelectV2")
def _select_v2_grad(op, grad):
    cond, t, e = op.inputs
    zeros = zeros_like(grad)
    return [None, unbroadcast(m.where_v2(cond, grad, zeros), t),
            unbroadcast(m.where_v2(cond, zeros, grad), e)]


@register_gradient("AddN")
def _add_n_grad(op, grad):
    return [grad] * len(op.inputs)


# -- unary element-wise ----------------------------------------------------------
@register_gradient("Neg")
def _neg_grad(op, grad):
    return [m.negative(grad)]


@register_gradient("Sign")
def _sign_grad(op, grad):
    return [zeros_like(op.inputs[0])]


@register_gradient("Square")
def _square_grad(op, grad):
    x = op.inputs[0]
    return [m.multiply(grad, m.multiply(x, 2))]


@register_gradient("Sqrt")
def _sqrt_grad(op, grad):
    return [m.realdiv(m.multiply(grad, 0.5), op.outputs[0])]


@register_gradient("Exp")
def _exp_grad(op, grad):
    return [m.multiply(grad, op.outputs[0])]


@register_gradient("Log")
def _log_grad(op, grad):
    return [m.realdiv(grad, op.inputs[0])]


@register_gradient("Log1p")
def _log1p_grad(op, grad):
    return [m.realdiv(grad, m.add(op.inputs[0], 1.0))]


@register_gradient("Tanh")
def _tanh_grad(op, grad):
    y = op.outputs[0]
    return [op.graph.create_op("TanhGrad", [y, grad], {"T": y.dtype},
                               name="TanhGrad").outputs[0]]


@register_gradient("Reciprocal")
def _reciprocal_grad(op, grad):
    y = op.outputs[0]
    return [op.graph.create_op("ReciprocalGrad", [y, grad], {"T": y.dtype},
                               name="ReciprocalGrad").outputs[0]]


@register_gradient("Rsqrt")
def _rsqrt_grad(op, grad):
    y = op.outputs[0]
    return [op.graph.create_op("RsqrtGrad", [y, grad], {"T": y.dtype},
                               name="RsqrtGrad").outputs[0]]


@register_gradient("Abs")
def _abs_grad(op, grad):
    return [m.multiply(grad, m.sign(op.inputs[0]))]


@register_gradient("Cast")
def _cast_grad(op, grad):
    src = op.get_attr("SrcT")
    if src in _DIFFERENTIABLE and op.get_attr("DstT") in _DIFFERENTIABLE:
        return [m.cast(grad, src)]
    return [None]


for _type in ("Equal", "NotEqual", "Less", "LessEqual", "Greater", "GreaterEqual"):
    NotDifferentiable(_type)
