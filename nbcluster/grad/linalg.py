"""Gradient rules of the linalg family: MatMul and BatchMatMulV2.

Rule: as in `grad/math.py`, a gradient has its input's dtype and shape; batch
dimensions an input was broadcast along are summed away.
"""
from __future__ import annotations

from nbcluster.framework import dtypes
from nbcluster.framework.operation import Tensor
from nbcluster.grad.gradient_table import register_gradient
from nbcluster.ops import math as m
from nbcluster.ops import shapes
from nbcluster.ops.linalg import matmul
from nbcluster.ops.reduction import reduce_sum
from nbcluster.ops.slicing import broadcast_gradient_args, static_reduction_axes


def _mm(a, b, ta=False, tb=False) -> Tensor:
    return matmul(a, b, transpose_a=ta, transpose_b=tb)


@register_gradient("MatMul")
def _matmul_grad(op, grad):
    a, b = op.inputs
    ta, tb = op.get_attr("transpose_a"), op.get_attr("transpose_b")
    if not ta and not tb:
        return [_mm(grad, b, tb=True), _mm(a, grad, ta=True)]
    if not ta and tb:
        return [_mm(grad, b), _mm(grad, a, ta=True)]
    if ta and not tb:
        return [_mm(b, grad, tb=True), _mm(a, grad)]
    return [_mm(b, grad, ta=True, tb=True), _mm(grad, a, ta=True, tb=True)]


def _bmm(a: Tensor, b: Tensor, adj_a: bool = False, adj_b: bool = False) -> Tensor:
    # Always BatchMatMulV2: matmul would pick MatMul when both ranks are 2.
    return a.graph.create_op("BatchMatMulV2", [a, b],
                             {"T": a.dtype, "adj_x": adj_a, "adj_y": adj_b},
                             name="BatchMatMulV2").outputs[0]


@register_gradient("BatchMatMulV2")
def _batch_matmul_grad(op, grad):
    x, y = op.inputs
    if x.dtype in (dtypes.complex64, dtypes.complex128):
        raise NotImplementedError(f"gradient of complex BatchMatMulV2 '{op.name}'")
    ax, ay = op.get_attr("adj_x"), op.get_attr("adj_y")
    if not ax and not ay:
        gx, gy = _bmm(grad, y, adj_b=True), _bmm(x, grad, adj_a=True)
    elif not ax and ay:
        gx, gy = _bmm(grad, y), _bmm(grad, x, adj_a=True)
    elif ax and not ay:
        gx, gy = _bmm(y, grad, adj_b=True), _bmm(x, grad)
    else:
        gx, gy = _bmm(y, grad, adj_a=True, adj_b=True), _bmm(grad, x, adj_a=True, adj_b=True)
    return [_sum_batch(gx, x), _sum_batch(gy, y)]


def _sum_batch(grad: Tensor, x: Tensor) -> Tensor:
    """Sums the batch dimensions `x` was broadcast along (the last two stay)."""
    gs, xs = grad.shape, x.shape
    if gs.is_fully_defined() and xs.is_fully_defined():
        if gs.as_list() == xs.as_list():
            return grad
        axes, _ = static_reduction_axes(xs.as_list()[:-2], gs.as_list()[:-2])
        summed = reduce_sum(grad, axes) if axes.size else grad
        return shapes.reshape(summed, xs.as_list())
    from nbcluster.ops.slicing import slice as slice_

    x_shape, g_shape = shapes.shape(x), shapes.shape(grad)
    x_batch = slice_(x_shape, [0], [m.subtract(shapes.size(x_shape), 2)])
    g_batch = slice_(g_shape, [0], [m.subtract(shapes.size(g_shape), 2)])
    axes, _ = broadcast_gradient_args(x_batch, g_batch)
    return shapes.reshape(reduce_sum(grad, axes), x_shape)
