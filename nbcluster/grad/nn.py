"""Gradient rules of the nn family: Relu, Sigmoid, Softmax, softmax cross-entropy
(dense and sparse), L2Loss, BiasAdd, and the backward ops ReluGrad, SigmoidGrad,
TanhGrad, ReciprocalGrad, SqrtGrad, RsqrtGrad and BiasAddGrad themselves.

Rule: where the forward op already computed what the gradient needs (the
activation's output, the cross-entropy's backprop output), the rule uses it
instead of recomputing.
"""
from __future__ import annotations

from nbcluster.framework.operation import Tensor
from nbcluster.grad.gradient_table import register_gradient
from nbcluster.grad.math import unbroadcast
from nbcluster.ops import math as m
from nbcluster.ops import reduction
from nbcluster.ops.fill import zeros_like
from nbcluster.ops.nn import data_format_of
from nbcluster.ops.shapes import expand_dims


def _backward(op_type: str, a: Tensor, b: Tensor) -> Tensor:
    return a.graph.create_op(op_type, [a, b], {"T": a.dtype}, name=op_type).outputs[0]


@register_gradient("Relu")
def _relu_grad(op, grad):
    return [_backward("ReluGrad", grad, op.outputs[0])]


@register_gradient("Sigmoid")
def _sigmoid_grad(op, grad):
    return [_backward("SigmoidGrad", op.outputs[0], grad)]


@register_gradient("L2Loss")
def _l2_loss_grad(op, grad):
    return [m.multiply(op.inputs[0], grad)]


@register_gradient("ReluGrad")
def _relu_grad_grad(op, grad):
    features = op.inputs[1]  # piecewise linear: zero second derivative, as TF says
    return [_backward("ReluGrad", grad, features), zeros_like(features)]


@register_gradient("SigmoidGrad")
def _sigmoid_grad_grad(op, grad):
    y, dy = op.inputs  # out = dy * y * (1 - y)
    gy = m.multiply(m.multiply(grad, dy), m.subtract(1.0, m.multiply(y, 2.0)))
    return [gy, _backward("SigmoidGrad", y, grad)]


@register_gradient("TanhGrad")
def _tanh_grad_grad(op, grad):
    y, dy = op.inputs  # out = dy * (1 - y^2)
    gy = m.multiply(m.multiply(grad, dy), m.multiply(y, -2.0))
    return [gy, _backward("TanhGrad", y, grad)]


@register_gradient("ReciprocalGrad")
def _reciprocal_grad_grad(op, grad):
    y, dy = op.inputs  # out = -dy * y^2
    gy = m.multiply(m.multiply(grad, dy), m.multiply(y, -2.0))
    return [gy, _backward("ReciprocalGrad", y, grad)]


@register_gradient("SqrtGrad")
def _sqrt_grad_grad(op, grad):
    y, dy = op.inputs  # out = dy / (2 y)
    per_y = m.realdiv(grad, y)
    return [m.negative(m.multiply(per_y, op.outputs[0])), m.multiply(per_y, 0.5)]


@register_gradient("RsqrtGrad")
def _rsqrt_grad_grad(op, grad):
    y, dy = op.inputs  # out = -dy * y^3 / 2
    gy = m.multiply(m.multiply(grad, dy), m.multiply(m.multiply(y, y), -1.5))
    return [gy, _backward("RsqrtGrad", y, grad)]


def _softmax_backward(softmax: Tensor, grad: Tensor) -> Tensor:
    inner = reduction.reduce_sum(m.multiply(grad, softmax), -1, keepdims=True)
    return m.multiply(m.subtract(grad, inner), softmax)


@register_gradient("Softmax")
def _softmax_grad(op, grad):
    return [_softmax_backward(op.outputs[0], grad)]


@register_gradient("LogSoftmax")
def _log_softmax_grad(op, grad):  # grad - softmax * sum(grad)
    return [m.subtract(grad, m.multiply(m.exp(op.outputs[0]),
                                        reduction.reduce_sum(grad, -1, keepdims=True)))]


def _log_softmax(logits: Tensor) -> Tensor:
    shifted = m.subtract(logits, reduction.reduce_max(logits, -1, keepdims=True))
    return m.subtract(shifted, m.log(reduction.reduce_sum(m.exp(shifted), -1,
                                                          keepdims=True)))


@register_gradient("SoftmaxCrossEntropyWithLogits")
def _xent_grad(op, grad_loss, grad_backprop):
    logits, labels = op.inputs
    backprop = op.outputs[1]  # softmax(logits) - labels, from the forward pass
    g_logits = g_labels = None
    if grad_loss is not None:
        g = expand_dims(grad_loss, -1)
        g_logits = m.multiply(g, backprop)
        g_labels = m.multiply(m.negative(g), _log_softmax(logits))
    if grad_backprop is not None:  # someone differentiates the backprop output too
        extra = _softmax_backward(m.add(backprop, labels), grad_backprop)
        g_logits = extra if g_logits is None else m.add(g_logits, extra)
        minus = m.negative(grad_backprop)
        g_labels = minus if g_labels is None else m.add(g_labels, minus)
    return [unbroadcast(g_logits, logits), unbroadcast(g_labels, labels)]


@register_gradient("SparseSoftmaxCrossEntropyWithLogits")
def _sparse_xent_grad(op, grad_loss, grad_backprop):
    logits = op.inputs[0]
    backprop = op.outputs[1]  # softmax(logits) - one_hot(labels), from the forward pass
    g_logits = None
    if grad_loss is not None:
        g_logits = m.multiply(expand_dims(grad_loss, -1), backprop)
    if grad_backprop is not None:  # backprop = softmax - const: softmax's own rule
        softmax = m.exp(_log_softmax(logits))
        extra = _softmax_backward(softmax, grad_backprop)
        g_logits = extra if g_logits is None else m.add(g_logits, extra)
    return [g_logits, None]


@register_gradient("BiasAdd")
def _bias_add_grad(op, grad):
    attrs = {"T": grad.dtype, "data_format": data_format_of(op)}
    return [grad, grad.graph.create_op("BiasAddGrad", [grad], attrs,
                                       name="BiasAddGrad").outputs[0]]


@register_gradient("BiasAddGrad")
def _bias_add_grad_grad(op, grad):
    # BiasAddGrad sums over every axis but the channels': its gradient spreads
    # grad back along them, which is BiasAdd onto zeros.
    out_backprop = op.inputs[0]
    attrs = {"T": grad.dtype, "data_format": data_format_of(op)}
    return [out_backprop.graph.create_op("BiasAdd", [zeros_like(out_backprop), grad], attrs,
                                         name="BiasAddGradGrad").outputs[0]]
