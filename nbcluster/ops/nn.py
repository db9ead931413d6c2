"""Neural-net op constructors (tf.nn.relu, sigmoid, softmax, softmax cross-entropy,
bias_add and xw_plus_b).

Rule: as in `ops/math.py`, dtypes and shapes are checked when the graph is
built. A softmax over an axis other than the last is composed of math and
reduction ops (max, exp, sum, div), which TF instead gets by transposing.
"""
from __future__ import annotations

from typing import Optional

from nbcluster import errors
from nbcluster.framework import dtypes
from nbcluster.framework.constant import convert_to_tensor
from nbcluster.framework.graph import graph_of
from nbcluster.framework.op_registry import register_op, registered_ops
from nbcluster.framework.operation import Tensor
from nbcluster.framework.tensor_shape import TensorShape, broadcast, unknown_shape
from nbcluster.ops import array, reduction, shapes
from nbcluster.ops import math as math_ops
from nbcluster.ops.linalg import matmul
from nbcluster.ops.math import (
    FLOAT_COMPLEX,
    FLOATS,
    NUMERIC,
    REAL,
    apply_op,
    check_dtype,
    check_same_dtype,
    to_tensor,
)
from nbcluster.ops.shape_inference import INDEX_TYPES, check_rank, merge_shapes, shape_error


def _same_shape(allowed: tuple, param: str):
    def shape_fn(op):
        x = op.inputs[0]
        check_dtype(x.dtype, allowed, param)
        return [(x.dtype, x.shape)]
    return shape_fn


register_op("Relu")(_same_shape(REAL, "features"))
register_op("Sigmoid")(_same_shape(FLOAT_COMPLEX, "x"))


def _grad_shape(names: tuple, allowed: tuple):
    """The backward ops' shape function: both inputs share one dtype and shape."""
    def shape_fn(op):
        dtype = check_same_dtype(op, names)
        check_dtype(dtype, allowed, names[0])
        return [(dtype, merge_shapes(op, op.inputs[0].shape, op.inputs[1].shape))]
    return shape_fn


# Backward ops the gradient rules build (TF's op and argument names).
register_op("ReluGrad")(_grad_shape(("gradients", "features"), REAL))
register_op("SigmoidGrad")(_grad_shape(("y", "dy"), FLOAT_COMPLEX))
register_op("TanhGrad")(_grad_shape(("y", "dy"), FLOAT_COMPLEX))
register_op("ReciprocalGrad")(_grad_shape(("y", "dy"), FLOAT_COMPLEX))
register_op("SqrtGrad")(_grad_shape(("y", "dy"), FLOAT_COMPLEX))
register_op("RsqrtGrad")(_grad_shape(("y", "dy"), FLOAT_COMPLEX))


@register_op("Softmax")
def _softmax_shape(op):
    x = op.inputs[0]
    check_dtype(x.dtype, FLOATS, "logits")
    if x.shape.rank == 0:
        raise shape_error(op, "Shape must be at least rank 1 but is rank 0")
    return [(x.dtype, x.shape)]


register_op("LogSoftmax")(_softmax_shape)


@register_op("SoftmaxCrossEntropyWithLogits")
def _xent_shape(op):
    """Outputs: loss [batch...] and backprop [batch..., classes] (= softmax - labels).

    TF's op takes rank-2 inputs only; this one takes any rank >= 1, classes
    last, so the Python wrapper needs no reshapes around it.
    """
    dtype = check_same_dtype(op, ("features", "labels"))
    check_dtype(dtype, FLOATS, "features")
    features, labels = (t.shape for t in op.inputs)
    shape = broadcast(features, labels, op.name)
    if shape.rank is None:
        return [(dtype, unknown_shape()), (dtype, unknown_shape())]
    if shape.rank == 0:
        raise shape_error(op, "Shape must be at least rank 1 but is rank 0")
    return [(dtype, shape[:-1]), (dtype, shape)]


def relu(features, name=None) -> Tensor:
    """max(features, 0) element-wise (op Relu).

    Example:
      >>> relu(constant([-1., 2.])).shape
      TensorShape([2])
    """
    return apply_op("Relu", [features], ("features",), name).outputs[0]


def sigmoid(x, name=None) -> Tensor:
    """1 / (1 + exp(-x)) element-wise (op Sigmoid); exact for large |x|."""
    return apply_op("Sigmoid", [x], ("x",), name).outputs[0]


@register_op("L2Loss")
def _l2_loss_shape(op):
    check_dtype(op.inputs[0].dtype, FLOATS, "t")
    return [(op.inputs[0].dtype, TensorShape([]))]


def l2_loss(t, name=None) -> Tensor:
    """sum(t ** 2) / 2 as a scalar (op L2Loss; TF's tf.clip_by_global_norm uses it)."""
    return apply_op("L2Loss", [t], ("t",), name).outputs[0]


def _axis_arg(axis, dim) -> object:
    if axis is not None and dim is not None:
        raise ValueError("Cannot specify both 'axis' and 'dim'")
    axis = dim if axis is None else axis
    return -1 if axis is None else axis


def _is_last_axis(axis, x: Tensor) -> bool:
    """Whether `axis` (an int, or a Tensor) is statically x's last axis; checks its range."""
    if isinstance(axis, Tensor):
        return False
    if axis == -1:
        return True
    rank = x.shape.rank
    if rank is not None and not -rank <= axis < rank:
        raise errors.InvalidArgumentError(
            None, None, f"`dim` must be in the range [{-rank}, {rank}) where {rank} is the "
                        f"number of dimensions in the input. Received: dim={axis}")
    return rank is not None and axis == rank - 1


def softmax(logits, axis=None, name=None, dim=None) -> Tensor:
    """exp(logits) / sum(exp(logits), axis), computed stably (op Softmax).

    Args:
      logits: a float Tensor of rank >= 1.
      axis: the class axis, default -1. `dim`: TF1's old name for it.
      name: op name.
    Returns: a Tensor of logits' dtype and shape.
    Raises: InvalidArgumentError for an axis outside [-rank, rank); TypeError
      for a non-float dtype.

    Example:
      >>> softmax(constant([[1., 2., 3.]])).shape
      TensorShape([1, 3])
    """
    axis = _axis_arg(axis, dim)
    graph = graph_of(logits)
    with graph.as_default(), graph.name_scope(name or "Softmax") as scope:
        x = convert_to_tensor(logits, name="logits", graph=graph)
        if _is_last_axis(axis, x):
            return graph.create_op("Softmax", [x], {"T": x.dtype}, name=scope).outputs[0]
        check_dtype(x.dtype, FLOATS, "logits")
        e = math_ops.exp(x - reduction.reduce_max(x, axis, keepdims=True))
        return math_ops.realdiv(e, reduction.reduce_sum(e, axis, keepdims=True), name=scope)


def log_softmax(logits, axis=None, name=None, dim=None) -> Tensor:
    """logits - log(sum(exp(logits), axis)), computed stably (op LogSoftmax); see `softmax`."""
    axis = _axis_arg(axis, dim)
    graph = graph_of(logits)
    with graph.as_default(), graph.name_scope(name or "LogSoftmax") as scope:
        x = convert_to_tensor(logits, name="logits", graph=graph)
        if _is_last_axis(axis, x):
            return graph.create_op("LogSoftmax", [x], {"T": x.dtype}, name=scope).outputs[0]
        check_dtype(x.dtype, FLOATS, "logits")
        shifted = x - reduction.reduce_max(x, axis, keepdims=True)
        return math_ops.subtract(shifted, math_ops.log(reduction.reduce_sum(
            math_ops.exp(shifted), axis, keepdims=True)), name=scope)


def _xent_along(labels: Tensor, logits: Tensor, axis, name: Optional[str]) -> Tensor:
    # sum(labels * (logsumexp(logits) - logits)) along a non-last axis, stably.
    shifted = logits - reduction.reduce_max(logits, axis, keepdims=True)
    log_sum = math_ops.log(reduction.reduce_sum(math_ops.exp(shifted), axis, keepdims=True))
    return reduction.reduce_sum(labels * (log_sum - shifted), axis, name=name)


def softmax_cross_entropy_with_logits_v2(labels, logits, axis=None, name=None,
                                         dim=None) -> Tensor:
    """-sum(labels * log(softmax(logits)), axis): the loss per example, computed stably.

    Gradients flow into both logits and labels. The op
    (SoftmaxCrossEntropyWithLogits) also outputs backprop = softmax - labels,
    kept for the gradient; only the loss is returned.

    Args:
      labels: a probability distribution per example (Python values or any
        numeric Tensor; cast to logits' dtype).
      logits: float Tensor [..., classes]; float16 is computed in float32.
      axis: the class axis, default -1. `dim`: TF1's old name for it.
    Returns: a Tensor of logits' dtype and shape without `axis`.
    Raises: ValueError when the shapes do not broadcast.

    Example:
      >>> softmax_cross_entropy_with_logits_v2([[0., 1.]], constant([[2., 3.]])).shape
      TensorShape([1])
    """
    axis = _axis_arg(axis, dim)
    graph = graph_of(labels, logits)
    with graph.as_default(), graph.name_scope(
            name or "softmax_cross_entropy_with_logits") as scope:
        logits = convert_to_tensor(logits, name="logits", graph=graph)
        check_dtype(logits.dtype, FLOATS, "logits")
        half = logits.dtype == dtypes.float16
        precise = math_ops.cast(logits, dtypes.float32) if half else logits
        labels = math_ops.cast(to_tensor(labels, precise.dtype, "labels", graph), precise.dtype)
        out_name = None if half else scope
        if _is_last_axis(axis, precise):
            loss = graph.create_op("SoftmaxCrossEntropyWithLogits", [precise, labels],
                                   {"T": precise.dtype},
                                   name=out_name or "SoftmaxCrossEntropyWithLogits").outputs[0]
        else:
            loss = _xent_along(labels, precise, axis, out_name)
        return math_ops.cast(loss, dtypes.float16, name=scope) if half else loss


def softmax_cross_entropy_with_logits(_sentinel=None, labels=None, logits=None, dim=-1,
                                      name=None, axis=None) -> Tensor:
    """TF1's deprecated form of `softmax_cross_entropy_with_logits_v2`: keyword
    arguments only, and no gradient into labels (where StopGradient is registered)."""
    if _sentinel is not None or labels is None or logits is None:
        raise ValueError("Only call `softmax_cross_entropy_with_logits` with named "
                         "arguments (labels=..., logits=..., ...)")
    axis = dim if axis is None else axis
    graph = graph_of(labels, logits)
    with graph.as_default(), graph.name_scope(
            name or "softmax_cross_entropy_with_logits_sg") as scope:
        if "StopGradient" in registered_ops() and isinstance(labels, Tensor):
            labels = graph.create_op("StopGradient", [labels], {"T": labels.dtype},
                                     name="labels_stop_gradient").outputs[0]
        return softmax_cross_entropy_with_logits_v2(labels, logits, axis=axis, name=scope)


# -- sparse softmax cross-entropy ------------------------------------------------------
@register_op("SparseSoftmaxCrossEntropyWithLogits")
def _sparse_xent_shape(op):
    """Outputs: loss [batch] and backprop [batch, classes] (= softmax - one_hot(labels))."""
    features, labels = op.inputs
    check_dtype(features.dtype, FLOATS, "features")
    check_dtype(labels.dtype, INDEX_TYPES, "labels")
    for t, rank in ((features, 2), (labels, 1)):
        if t.shape.rank not in (None, rank):
            raise shape_error(op, f"Shape must be rank {rank} but is rank {t.shape.rank}")
    batch = merge_shapes(op, features.shape[:1] if features.shape.rank else unknown_shape(1),
                         labels.shape if labels.shape.rank else unknown_shape(1))
    classes = features.shape[1] if features.shape.rank else None
    return [(features.dtype, batch), (features.dtype, TensorShape(batch.dims + [classes]))]


def sparse_softmax_cross_entropy_with_logits(_sentinel=None, labels=None, logits=None,
                                             name=None) -> Tensor:
    """-log(softmax(logits)[label]) per example, computed stably.

    Args:
      labels: int32/int64 class indices of shape logits.shape[:-1], each in
        [0, classes). Keyword arguments only, as in TF.
      logits: a float Tensor [..., classes]; float16 is computed in float32.
    Returns: a Tensor of labels' shape and logits' dtype.
    Raises: ValueError for positional arguments or ranks that do not match;
      InvalidArgumentError at run time for a label out of range, naming it.

    Example:
      >>> sparse_softmax_cross_entropy_with_logits(
      ...     labels=[1], logits=constant([[2., 3.]])).shape
      TensorShape([1])
    """
    if _sentinel is not None or labels is None or logits is None:
        raise ValueError("Only call `sparse_softmax_cross_entropy_with_logits` with named "
                         "arguments (labels=..., logits=..., ...)")
    graph = graph_of(labels, logits)
    with graph.as_default(), graph.name_scope(
            name or "SparseSoftmaxCrossEntropyWithLogits") as scope:
        logits = convert_to_tensor(logits, name="logits", graph=graph)
        labels = convert_to_tensor(labels, name="labels", graph=graph)
        check_dtype(logits.dtype, FLOATS, "logits")
        half = logits.dtype == dtypes.float16
        precise = math_ops.cast(logits, dtypes.float32) if half else logits
        l_rank, x_rank = labels.shape.rank, precise.shape.rank
        if l_rank is not None and x_rank is not None:
            if l_rank != x_rank - 1:
                raise ValueError(f"Rank mismatch: Rank of labels (received {l_rank}) should "
                                 f"equal rank of logits minus 1 (received {x_rank}).")
            if not labels.shape.is_compatible_with(precise.shape[:-1]):
                raise ValueError(f"Shape mismatch: The shape of labels (received "
                                 f"{labels.shape}) should equal the shape of logits except "
                                 f"for the last dimension (received {precise.shape}).")
        out_name = None if half else scope
        if x_rank == 2:
            loss = _sparse_xent(graph, precise, labels, out_name)
        else:  # TF reshapes to [batch, classes] and back
            classes = shapes.shape(precise)[-1:]
            flat = shapes.reshape(precise, array.concat([[-1], classes], 0))
            loss = _sparse_xent(graph, flat, shapes.reshape(labels, [-1]), None)
            loss = shapes.reshape(loss, shapes.shape(labels), name=out_name)
        return math_ops.cast(loss, dtypes.float16, name=scope) if half else loss


def _sparse_xent(graph, logits: Tensor, labels: Tensor, name: Optional[str]) -> Tensor:
    attrs = {"T": logits.dtype, "Tlabels": labels.dtype}
    return graph.create_op("SparseSoftmaxCrossEntropyWithLogits", [logits, labels], attrs,
                           name=name or "SparseSoftmaxCrossEntropyWithLogits").outputs[0]


# -- bias_add, xw_plus_b -----------------------------------------------------------------
DATA_FORMATS = ("NHWC", "NCHW")


def data_format_of(op) -> str:
    """An op's data_format attr ("NHWC" when a GraphDef left it out, as TF's default)."""
    try:
        fmt = op.get_attr("data_format")
    except ValueError:
        return "NHWC"
    if fmt not in DATA_FORMATS:
        raise ValueError(f"Invalid data format {fmt!r} for '{op.name}' (op: '{op.type}'): "
                         f"expected one of {', '.join(DATA_FORMATS)}")
    return fmt


def _channel_axis(op, shape: TensorShape, fmt: str) -> Optional[int]:
    """The channel axis of `shape` (last for NHWC, 1 for NCHW); checks the rank."""
    least = 3 if fmt == "NCHW" else 2
    if shape.rank is None:
        return None
    if shape.rank < least:
        raise shape_error(op, f"Shape must be at least rank {least} but is rank {shape.rank}")
    return 1 if fmt == "NCHW" else shape.rank - 1


@register_op("BiasAdd")
def _bias_add_shape(op):
    value, bias = op.inputs
    dtype = check_same_dtype(op, ("value", "bias"))
    check_dtype(dtype, NUMERIC, "value")
    axis = _channel_axis(op, value.shape, data_format_of(op))
    check_rank(op, 1, 1)
    if axis is None:
        return [(dtype, unknown_shape())]
    dims = value.shape.dims
    channels = bias.shape[0] if bias.shape.rank == 1 else None
    if dims[axis] is not None and channels is not None and dims[axis] != channels:
        raise shape_error(op, f"Dimensions must be equal, but are {dims[axis]} and {channels}")
    dims[axis] = channels if dims[axis] is None else dims[axis]
    return [(dtype, TensorShape(dims))]


@register_op("BiasAddGrad")
def _bias_add_grad_shape(op):
    grad = op.inputs[0]
    check_dtype(grad.dtype, NUMERIC, "out_backprop")
    axis = _channel_axis(op, grad.shape, data_format_of(op))
    return [(grad.dtype, TensorShape([None if axis is None else grad.shape[axis]]))]


def _format_arg(data_format) -> str:
    """TF's reading of bias_add's data_format: None or N...C is NHWC, NC... is NCHW."""
    if data_format is None:
        return "NHWC"
    if isinstance(data_format, bytes):
        data_format = data_format.decode()
    if data_format.startswith("NC"):
        return "NCHW"
    if data_format.startswith("N") and data_format.endswith("C"):
        return "NHWC"
    raise ValueError(f"data_format must be of the form `N...C` or `NC...`, got "
                     f"{data_format!r}")


def bias_add(value, bias, data_format=None, name=None) -> Tensor:
    """value + bias along value's channel axis (op BiasAdd).

    Args:
      value: a numeric Tensor of rank >= 2 (>= 3 for NC... formats).
      bias: a vector, one entry per channel, of value's dtype.
      data_format: None or "N...C" (channels last, the default), or "NC..."
        (channels at axis 1).
    Returns: a Tensor of value's dtype and shape.
    Raises: ValueError for a malformed data_format, too low a rank or a bias of
      the wrong length; TypeError for mismatched dtypes.

    Example:
      >>> bias_add(constant([[1., 2.]]), constant([10., 20.])).shape
      TensorShape([1, 2])
    """
    fmt = _format_arg(data_format)
    graph = graph_of(value, bias)
    with graph.as_default(), graph.name_scope(name or "BiasAdd") as scope:
        value = convert_to_tensor(value, name="input", graph=graph)
        bias = to_tensor(bias, value.dtype, "bias", graph)
        return graph.create_op("BiasAdd", [value, bias], {"T": value.dtype, "data_format": fmt},
                               name=scope).outputs[0]


def xw_plus_b(x, weights, biases, name=None) -> Tensor:
    """matmul(x, weights) + biases (ops MatMul, BiasAdd), as tf.compat.v1.nn.xw_plus_b.

    Example:
      >>> xw_plus_b(constant([[1., 2.]]), constant([[1.], [1.]]), constant([0.5])).shape
      TensorShape([1, 1])
    """
    graph = graph_of(x, weights, biases)
    with graph.as_default(), graph.name_scope(name or "xw_plus_b") as scope:
        x = convert_to_tensor(x, name="x", graph=graph)
        weights = to_tensor(weights, x.dtype, "weights", graph)
        biases = to_tensor(biases, x.dtype, "biases", graph)
        return bias_add(matmul(x, weights), biases, name=scope)
