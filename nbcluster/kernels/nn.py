"""Neural-net kernels on numpy (CPU) and cupy (GPU): Relu, Sigmoid, Softmax, cross-entropy
(dense and sparse), L2Loss, BiasAdd and its gradient.

Rule: every kernel is numerically stable over the whole float range (no
overflow in exp) and never writes to its inputs.
"""
from __future__ import annotations

import numpy as np

from nbcluster.kernels.array import invalid, shape_str
from nbcluster.kernels.math import DEVICES
from nbcluster.runtime.kernel_table import register_kernel


def _dtype(node) -> np.dtype:
    return np.dtype(node.attrs["T"].as_numpy_dtype)


@register_kernel("Relu", *DEVICES)
def _relu(node, device):
    xp, dtype = device.xp, _dtype(node)
    zeros = [xp.zeros((), dtype=dtype)]  # the last input shape's: this node's next is alike

    def compute(ctx, x):
        zero = zeros[0]
        if zero.shape != x.shape:
            # numpy's maximum against a scalar skips its vector loop: 5x slower
            # than against an array of zeros (13 µs against 2.5 on 128x256 float32).
            zero = zeros[0] = xp.zeros(x.shape, dtype=dtype)
            if xp is np:
                zero.flags.writeable = False
        return (xp.asarray(xp.maximum(x, zero), dtype=dtype),)

    return compute


@register_kernel("Sigmoid", *DEVICES)
def _sigmoid(node, device):
    xp, dtype = device.xp, _dtype(node)

    def compute(ctx, x):
        if dtype.kind == "c":
            return (xp.asarray(1 / (1 + xp.exp(-x)), dtype=dtype),)
        e = xp.exp(-xp.abs(x))  # in (0, 1]: never overflows
        positive = 1 / (1 + e)
        return (xp.asarray(xp.where(x >= 0, positive, e * positive), dtype=dtype),)

    return compute


def _log_softmax(xp, x):
    shifted = x - xp.max(x, axis=-1, keepdims=True)
    return shifted - xp.log(xp.sum(xp.exp(shifted), axis=-1, keepdims=True))


@register_kernel("Softmax", *DEVICES)
def _softmax(node, device):
    xp, dtype = device.xp, _dtype(node)
    work = np.float32 if dtype == np.float16 else dtype

    def compute(ctx, x):
        x = x.astype(work, copy=False)
        e = xp.exp(x - xp.max(x, axis=-1, keepdims=True))
        return (xp.asarray(e / xp.sum(e, axis=-1, keepdims=True), dtype=dtype),)

    return compute


@register_kernel("LogSoftmax", *DEVICES)
def _log_softmax_kernel(node, device):
    xp, dtype = device.xp, _dtype(node)
    work = np.float32 if dtype == np.float16 else dtype

    def compute(ctx, x):
        return (xp.asarray(_log_softmax(xp, x.astype(work, copy=False)), dtype=dtype),)

    return compute


@register_kernel("SoftmaxCrossEntropyWithLogits", *DEVICES)
def _softmax_xent(node, device):
    xp, dtype = device.xp, _dtype(node)

    # numpy's ufuncs reduce directly (np.max and np.sum wrap them in Python).
    peak = np.maximum.reduce if xp is np else xp.max
    add = np.add.reduce if xp is np else xp.sum

    def compute(ctx, features, labels):
        # One exp: the softmax is e / sum(e), its log the shift less log(sum(e)).
        shifted = features - peak(features, axis=-1, keepdims=True)
        e = xp.exp(shifted)
        total = add(e, axis=-1, keepdims=True)
        log_probs = shifted - xp.log(total)
        loss = -add(labels * log_probs, axis=-1)
        backprop = e / total - labels
        return xp.asarray(loss, dtype=dtype), xp.asarray(backprop, dtype=dtype)

    return compute


# -- backward ops ----------------------------------------------------------------------
@register_kernel("L2Loss", *DEVICES)
def _l2_loss(node, device):
    xp, dtype = device.xp, _dtype(node)

    def compute(ctx, t):  # accumulated in float32 at least, as the reductions do
        total = xp.sum(xp.square(t, dtype=xp.promote_types(t.dtype, np.float32)))
        return (xp.asarray(total / 2, dtype=dtype),)

    return compute


@register_kernel("ReluGrad", *DEVICES)
def _relu_grad(node, device):
    xp, dtype = device.xp, _dtype(node)

    def compute(ctx, gradients, features):
        # A product, as TF's kernel: inf or nan where features <= 0 gives nan,
        # and it costs a twentieth of xp.where on a 128x256 float32.
        return (xp.multiply(gradients, features > 0, dtype=dtype),)

    return compute


@register_kernel("SigmoidGrad", *DEVICES)
def _sigmoid_grad(node, device):
    xp, dtype = device.xp, _dtype(node)

    def compute(ctx, y, dy):  # d sigmoid = y (1 - y)
        return (xp.asarray(dy * y * (1 - y), dtype=dtype),)

    return compute


@register_kernel("TanhGrad", *DEVICES)
def _tanh_grad(node, device):
    xp, dtype = device.xp, _dtype(node)

    def compute(ctx, y, dy):  # d tanh = 1 - y^2
        return (xp.asarray(dy * (1 - y * y), dtype=dtype),)

    return compute


@register_kernel("ReciprocalGrad", *DEVICES)
def _reciprocal_grad(node, device):
    xp, dtype = device.xp, _dtype(node)

    def compute(ctx, y, dy):  # d (1/x) = -y^2
        return (xp.asarray(-dy * y * y, dtype=dtype),)

    return compute


@register_kernel("SqrtGrad", *DEVICES)
def _sqrt_grad(node, device):
    xp, dtype = device.xp, _dtype(node)

    def compute(ctx, y, dy):  # d sqrt = 1 / (2 y)
        return (xp.asarray(dy * 0.5 / y, dtype=dtype),)

    return compute


@register_kernel("RsqrtGrad", *DEVICES)
def _rsqrt_grad(node, device):
    xp, dtype = device.xp, _dtype(node)

    def compute(ctx, y, dy):  # d x^(-1/2) = -y^3 / 2
        return (xp.asarray(dy * -0.5 * y * y * y, dtype=dtype),)

    return compute


@register_kernel("SparseSoftmaxCrossEntropyWithLogits", *DEVICES)
def _sparse_softmax_xent(node, device):
    xp, dtype = device.xp, _dtype(node)

    def compute(ctx, features, labels):
        classes = features.shape[1]
        if features.shape[0] != labels.shape[0]:
            raise invalid(f"logits and labels must have the same first dimension, got "
                          f"logits shape {shape_str(features.shape)} and labels shape "
                          f"{shape_str(labels.shape)}", node)
        bad = (labels < 0) | (labels >= classes)
        if bool(bad.any()):
            host = np.asarray(device.to_numpy(labels)).reshape(-1)
            first = int(host[np.argmax(np.asarray(device.to_numpy(bad)))])
            raise invalid(f"Received a label value of {first} which is outside the valid "
                          f"range of [0, {classes}).  Label values: "
                          f"{' '.join(str(int(v)) for v in host)}", node)
        log_probs = _log_softmax(xp, features)
        rows = xp.arange(labels.shape[0])
        loss = -log_probs[rows, labels]
        backprop = xp.exp(log_probs)
        backprop[rows, labels] -= 1
        return xp.asarray(loss, dtype=dtype), xp.asarray(backprop, dtype=dtype)

    return compute


# -- bias ------------------------------------------------------------------------------
def _channel_axis(node, rank: int) -> int:
    return 1 if node.attrs.get("data_format", "NHWC") == "NCHW" else rank - 1


@register_kernel("BiasAdd", *DEVICES)
def _bias_add(node, device):
    xp = device.xp

    def compute(ctx, value, bias):
        least = 3 if node.attrs.get("data_format", "NHWC") == "NCHW" else 2
        if value.ndim < least:
            raise invalid(f"Input tensor must be at least {least}D: "
                          f"{shape_str(value.shape)}", node)
        axis = _channel_axis(node, value.ndim)
        if bias.ndim != 1:
            raise invalid(f"Biases must be 1D: {shape_str(bias.shape)}", node)
        if bias.shape[0] != value.shape[axis]:
            raise invalid(f"Must provide as many biases as the channel dimension of the "
                          f"input tensor: {shape_str(bias.shape)} vs. "
                          f"{shape_str(value.shape)}", node)
        if axis != value.ndim - 1:
            bias = bias.reshape((-1,) + (1,) * (value.ndim - axis - 1))
        return (xp.add(value, bias),)

    return compute


@register_kernel("BiasAddGrad", *DEVICES)
def _bias_add_grad(node, device):
    xp = device.xp

    def compute(ctx, grad):
        least = 3 if node.attrs.get("data_format", "NHWC") == "NCHW" else 2
        if grad.ndim < least:
            raise invalid(f"Input tensor must be at least {least}D: "
                          f"{shape_str(grad.shape)}", node)
        axis = _channel_axis(node, grad.ndim)
        others = tuple(i for i in range(grad.ndim) if i != axis)
        return (xp.asarray(grad.sum(axis=others, dtype=grad.dtype)),)

    return compute
