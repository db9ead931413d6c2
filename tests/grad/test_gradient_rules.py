"""Every gradient rule against central finite differences in float64.

One table entry per op type and interesting attr combination. Each case is
built three ways: placeholders with full static shapes, with every dimension
None (so rules take their run-time shape paths: Shape, BroadcastGradientArgs,
...), and with unknown rank. The loss is sum(y * w) for a fixed random w, so
the upstream gradient is not all ones.
"""
import numpy as np
import pytest

import nbcluster as tf
from nbcluster.framework.tensor_shape import TensorShape

pytestmark = pytest.mark.timeout(120)

RNG = np.random.default_rng(7)


def u(*shape, low=-2.0, high=2.0):
    return RNG.uniform(low, high, size=shape)


def pos(*shape):
    return RNG.uniform(0.5, 2.0, size=shape)


def away_from_zero(*shape):
    return RNG.uniform(0.3, 2.0, size=shape) * RNG.choice([-1.0, 1.0], size=shape)


def probs(*shape):
    e = np.exp(RNG.normal(size=shape))
    return e / e.sum(-1, keepdims=True)


def second_order(fn):
    """d/dx sum(fn(x) * w0): the rule of the backward op fn's rule built."""
    def build(x):
        w0 = tf.constant(RNG.uniform(-1, 1, size=(2, 3)))
        return tf.gradients(tf.reduce_sum(fn(x) * w0), x)[0]
    return build


MASK = RNG.uniform(size=(2, 3)) > 0.5

CASES = {
    # math: binary, with broadcasting in every direction
    "AddV2": (lambda x, y: x + y, [u(3, 4), u(4)]),
    "AddV2-both-broadcast": (lambda x, y: tf.add(x, y), [u(3, 1), u(1, 4)]),
    "AddV2-scalar": (lambda x, y: x + y, [u(), u(2, 3)]),
    "Sub": (lambda x, y: x - y, [u(2, 3), u(3)]),
    "Mul": (lambda x, y: x * y, [u(2, 3), u(2, 1)]),
    "Mul-same-input": (lambda x: x * x, [u(2, 3)]),
    "RealDiv": (lambda x, y: x / y, [u(2, 3), away_from_zero(3)]),
    "Maximum": (lambda x, y: tf.maximum(x, y), [u(2, 3), u(3)]),
    "Minimum": (lambda x, y: tf.minimum(x, y), [u(2, 3), u(2, 1)]),
    "Pow": (lambda x, y: tf.pow(x, y), [pos(2, 3), u(3)]),
    "AddN": (lambda x, y, z: tf.add_n([x, y, z]), [u(2, 3), u(2, 3), u(2, 3)]),
    "SelectV2": (lambda x, y: tf.where_v2(tf.constant(MASK), x, y), [u(2, 3), u(3)]),
    # math: unary
    "Neg": (lambda x: -x, [u(2, 3)]),
    "Sign": (lambda x: tf.sign(x) * x, [away_from_zero(2, 3)]),
    "Square": (tf.square, [u(2, 3)]),
    "Sqrt": (tf.sqrt, [pos(2, 3)]),
    "Exp": (tf.exp, [u(2, 3)]),
    "Log": (tf.log, [pos(2, 3)]),
    "Log1p": (tf.log1p, [pos(2, 3)]),
    "Tanh": (tf.tanh, [u(2, 3)]),
    "Abs": (tf.abs, [away_from_zero(2, 3)]),
    "Reciprocal": (tf.math.reciprocal, [away_from_zero(2, 3)]),
    "SquaredDifference": (tf.squared_difference, [u(2, 3), u(3)]),
    "Rsqrt": (tf.rsqrt, [pos(2, 3)]),
    "L2Loss": (tf.nn.l2_loss, [u(2, 3)]),
    "Cast": (lambda x: tf.cast(tf.cast(x, tf.float32), tf.float64), [u(2, 3)]),
    # matmul
    "MatMul": (lambda a, b: tf.matmul(a, b), [u(2, 3), u(3, 4)]),
    "MatMul-ta": (lambda a, b: tf.matmul(a, b, transpose_a=True), [u(3, 2), u(3, 4)]),
    "MatMul-tb": (lambda a, b: tf.matmul(a, b, transpose_b=True), [u(2, 3), u(4, 3)]),
    "MatMul-ta-tb": (lambda a, b: tf.matmul(a, b, transpose_a=True, transpose_b=True),
                     [u(3, 2), u(4, 3)]),
    "BatchMatMulV2": (lambda a, b: tf.matmul(a, b), [u(2, 2, 3), u(2, 3, 4)]),
    "BatchMatMulV2-broadcast": (lambda a, b: tf.matmul(a, b), [u(2, 2, 3), u(3, 4)]),
    "BatchMatMulV2-adj": (lambda a, b: tf.matmul(a, b, adjoint_a=True, adjoint_b=True),
                          [u(2, 3, 2), u(1, 4, 3)]),
    # reductions
    "Sum-all": (lambda x: tf.reduce_sum(x), [u(2, 3, 4)]),
    "Sum-axis": (lambda x: tf.reduce_sum(x, 1), [u(2, 3, 4)]),
    "Sum-axes-keepdims": (lambda x: tf.reduce_sum(x, [0, -1], keepdims=True), [u(2, 3, 4)]),
    "Sum-tensor-axis": (lambda x: tf.reduce_sum(x, tf.placeholder_with_default(
        np.array([-1], np.int32), [None])), [u(2, 3)]),
    "Prod-axis": (lambda x: tf.reduce_prod(x, 1), [u(2, 3, 4)]),
    "Prod-all-keepdims": (lambda x: tf.reduce_prod(x, keepdims=True), [u(2, 3)]),
    # one zero in a row: only it gets the product of the rest; two: the row gets 0
    "Prod-zeros": (lambda x: tf.reduce_prod(x, -1),
                   [np.array([[0.0, 1.5, -2.0], [0.0, 3.0, 0.0], [1.0, 2.0, 0.5]])]),
    "Mean-all": (lambda x: tf.reduce_mean(x), [u(2, 3)]),
    "Mean-axis": (lambda x: tf.reduce_mean(x, -1), [u(2, 3, 4)]),
    "Max-axis": (lambda x: tf.reduce_max(x, 1), [u(2, 3, 4)]),
    "Max-keepdims": (lambda x: tf.reduce_max(x, [0, 2], keepdims=True), [u(2, 3, 4)]),
    "Min-all": (lambda x: tf.reduce_min(x), [u(2, 3)]),
    # array
    "Identity": (tf.identity, [u(2, 3)]),
    "Reshape": (lambda x: tf.reshape(x, [3, -1]), [u(2, 3, 2)]),
    "Transpose": (lambda x: tf.transpose(x, [1, 2, 0]), [u(2, 3, 4)]),
    "Transpose-default": (lambda x: tf.transpose(x), [u(2, 3)]),
    "ConcatV2": (lambda x, y, z: tf.concat([x, y, z], 1), [u(2, 1), u(2, 3), u(2, 2)]),
    "ConcatV2-negative-axis": (lambda x, y: tf.concat([x, y], -2), [u(1, 3), u(2, 3)]),
    "Pack": (lambda x, y: tf.stack([x, y], axis=1), [u(2, 3), u(2, 3)]),
    "ExpandDims": (lambda x: tf.expand_dims(x, 1), [u(2, 3)]),
    "Squeeze": (lambda x: tf.squeeze(x, [1]), [u(2, 1, 3)]),
    "Fill": (lambda v: tf.fill([2, 3], v), [u()]),
    "PlaceholderWithDefault": (lambda x: tf.placeholder_with_default(x, None), [u(2, 3)]),
    # slicing
    "Slice": (lambda x: tf.slice(x, [1, 0], [1, -1]), [u(3, 4)]),
    "Pad": (lambda x: tf.pad(x, [[1, 0], [0, 2]]), [u(2, 3)]),
    "Unpack": (lambda x: tf.unstack(x, num=3, axis=1)[0] * 2.0 + tf.unstack(x, 3, 1)[2],
               [u(2, 3)]),
    "BroadcastTo": (lambda x: tf.broadcast_to(x, [2, 3, 4]), [u(3, 1)]),
    "StridedSlice-index": (lambda x: x[1], [u(3, 4)]),
    "StridedSlice-range": (lambda x: x[:, 1:3], [u(2, 4)]),
    "StridedSlice-masks": (lambda x: x[None, ..., ::-2, -1], [u(2, 5, 3)]),
    "StridedSliceGrad": (second_order(lambda x: x[:, 1:] * x[:, 1:]), [u(2, 4)]),
    # nn
    "Relu": (tf.nn.relu, [away_from_zero(2, 3)]),
    "Sigmoid": (tf.nn.sigmoid, [u(2, 3)]),
    "Softmax": (tf.nn.softmax, [u(2, 3)]),
    "SoftmaxCrossEntropyWithLogits": (
        lambda labels, logits: tf.nn.softmax_cross_entropy_with_logits_v2(
            labels=labels, logits=logits), [probs(2, 3), u(2, 3)]),
    "SoftmaxCrossEntropyWithLogits-broadcast": (
        lambda labels, logits: tf.nn.softmax_cross_entropy_with_logits_v2(
            labels=labels, logits=logits), [probs(3), u(2, 3)]),
    "BiasAdd": (lambda x, b: tf.nn.bias_add(x, b), [u(2, 3), u(3)]),
    "BiasAdd-NCHW": (lambda x, b: tf.nn.bias_add(x, b, data_format="NCHW"), [u(2, 3, 2), u(3)]),
    # backward ops, through second derivatives
    "ReluGrad": (second_order(tf.nn.relu), [away_from_zero(2, 3)]),
    "SigmoidGrad": (second_order(tf.nn.sigmoid), [u(2, 3)]),
    "TanhGrad": (second_order(tf.tanh), [u(2, 3)]),
    "ReciprocalGrad": (second_order(tf.reciprocal), [away_from_zero(2, 3)]),
    "RsqrtGrad": (second_order(tf.rsqrt), [pos(2, 3)]),
    "SqrtGrad": (lambda y, dy: tf.get_default_graph().create_op(
        "SqrtGrad", [y, dy], {"T": y.dtype}).outputs[0], [pos(2, 3), u(2, 3)]),
    "Cumsum": (lambda x: tf.cumsum(x, 1), [u(2, 3)]),
    "DynamicPartition": (lambda x: tf.dynamic_partition(x, [1, 0, 1], 2)[1], [u(3, 2)]),
    "ReverseV2": (lambda x: tf.reverse(x, [1]), [u(2, 3)]),
    "DynamicStitch": (lambda x, y: tf.dynamic_stitch([[0, 2], [1]], [x, y]), [u(2, 3), u(1, 3)]),
    "Cumsum-exclusive-reverse": (lambda x: tf.cumsum(x, 0, exclusive=True, reverse=True),
                                 [u(3, 2)]),
    "Cumprod": (lambda x: tf.cumprod(x, 1), [away_from_zero(2, 3)]),
    "Cumprod-exclusive-reverse": (lambda x: tf.cumprod(x, -1, exclusive=True, reverse=True),
                                  [away_from_zero(2, 3)]),
    "SoftmaxGrad": (second_order(tf.nn.softmax), [u(2, 3)]),
    "BiasAddGrad": (lambda g: tf.get_default_graph().create_op(
        "BiasAddGrad", [g], {"T": g.dtype, "data_format": "NHWC"}).outputs[0] * [1.0, -2.0, 3.0],
        [u(2, 3)]),
}

# Cast goes through float32, so its differences are coarser.
TOLERANCE = {"Cast": (1e-2, 1e-4)}
MODES = ["static", "none_dims", "unknown_rank"]


def _placeholder(value: np.ndarray, mode: str):
    shape = {"static": list(value.shape), "none_dims": [None] * value.ndim,
             "unknown_rank": None}[mode]
    return tf.placeholder(tf.float64, shape)


def numeric_gradient(sess, loss, xs, values, index, eps):
    base = [v.copy() for v in values]
    grad = np.zeros_like(values[index])
    for pos_ in np.ndindex(*values[index].shape):
        results = []
        for sign in (1, -1):
            moved = [v.copy() for v in base]
            moved[index][pos_] += sign * eps
            results.append(sess.run(loss, dict(zip(xs, moved))))
        grad[pos_] = (results[0] - results[1]) / (2 * eps)
    return grad


def check_gradient(case: str, fn, values: list, mode: str, eps: float, tol: float) -> None:
    """`fn`'s symbolic gradients equal central finite differences at `values`."""
    with tf.Graph().as_default():
        xs = [_placeholder(v, mode) for v in values]
        y = fn(*xs)
        y_shape = np.shape(tf.Session().run(y, dict(zip(xs, values))))
        w = tf.constant(RNG.uniform(0.5, 1.5, size=y_shape))
        loss = tf.reduce_sum(y * w)
        grads = tf.gradients(loss, xs)
        assert all(g is not None for g in grads), grads
        # A gather's gradient is sparse; its dense form is what differences measure.
        grads = [tf.convert_to_tensor(g) if isinstance(g, tf.IndexedSlices) else g
                 for g in grads]
        for g, x in zip(grads, xs):
            assert g.dtype == tf.float64
            assert g.shape.is_compatible_with(x.shape)
        with tf.Session() as sess:
            symbolic = sess.run(grads, dict(zip(xs, values)))
            for i, value in enumerate(values):
                numeric = numeric_gradient(sess, loss, xs, values, i, eps)
                assert symbolic[i].shape == value.shape
                np.testing.assert_allclose(symbolic[i], numeric, rtol=tol, atol=tol,
                                           err_msg=f"{case} input {i} ({mode})")


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("case", sorted(CASES))
def test_gradient_matches_finite_differences(case, mode):
    fn, values = CASES[case]
    check_gradient(case, fn, values, mode, *TOLERANCE.get(case, (1e-6, 1e-6)))


def test_static_mode_needs_no_run_time_shape_ops():
    """With fully known shapes the broadcast reduction is planned at build time."""
    x = tf.placeholder(tf.float64, [3, 4])
    y = tf.placeholder(tf.float64, [4])
    tf.gradients(tf.reduce_sum(x * y), [x, y])
    types = {op.type for op in tf.get_default_graph().get_operations()}
    assert "BroadcastGradientArgs" not in types


def test_a_none_batch_dimension_the_bias_lacks_is_summed_without_run_time_shape_ops():
    # matmul(x, w) + b: b's gradient sums axis 0 whatever the batch (TF's
    # SmartBroadcastGradientArgs), so no Shape / BroadcastGradientArgs runs.
    x = tf.placeholder(tf.float64, [None, 4])
    b = tf.placeholder(tf.float64, [4])
    gx, gb = tf.gradients(tf.reduce_sum(x + b), [x, b])
    types = {op.type for op in tf.get_default_graph().get_operations()}
    assert "BroadcastGradientArgs" not in types
    assert gb.shape == TensorShape([4])
    with tf.Session() as sess:
        for batch in (1, 5):
            got_x, got_b = sess.run([gx, gb], {x: np.zeros((batch, 4)), b: np.zeros(4)})
            np.testing.assert_array_equal(got_b, np.full(4, batch))
            np.testing.assert_array_equal(got_x, np.ones((batch, 4)))


def test_none_dimensions_that_may_broadcast_use_broadcast_gradient_args():
    x = tf.placeholder(tf.float64, [None, 4])
    y = tf.placeholder(tf.float64, [None, 4])  # either None may be a broadcast 1
    (gx,) = tf.gradients(tf.reduce_sum(x * y), [x])
    types = {op.type for op in tf.get_default_graph().get_operations()}
    assert "BroadcastGradientArgs" in types
    with tf.Session() as sess:
        out = sess.run(gx, {x: np.zeros((1, 4)), y: np.full((3, 4), 2.0)})
        np.testing.assert_array_equal(out, np.full((1, 4), 6.0))
