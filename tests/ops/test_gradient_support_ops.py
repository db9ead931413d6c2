"""The ops gradients are built from: AddN, Sign, SelectV2, StopGradient, and the
backward ops ReluGrad, SigmoidGrad and TanhGrad, against numpy."""
import numpy as np
import pytest
from op_checks import check, run, sample

import nbcluster as tf

pytestmark = pytest.mark.timeout(60)


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int32])
def test_add_n(dtype):
    values = [sample((2, 3), dtype) for _ in range(3)]
    t = tf.add_n([tf.constant(v) for v in values])
    assert t.op.type == "AddN" and t.op.get_attr("N") == 3
    check(run(t), values[0] + values[1] + values[2], dtype)


def test_add_n_edge_cases():
    x = tf.constant([1.0])
    assert tf.add_n([x]) is x
    with pytest.raises(ValueError, match="non-empty list"):
        tf.add_n([])
    with pytest.raises(ValueError, match="must be equal"):
        tf.add_n([tf.constant([1.0, 2.0]), tf.constant([1.0])])
    with pytest.raises(TypeError, match="does not match"):
        tf.add_n([tf.constant([1.0]), tf.constant([1], tf.int32)])
    p = tf.placeholder(tf.float32, [None])
    np.testing.assert_array_equal(run(tf.add_n([p, p, [1.0, 1.0]]), {p: [1.0, 2.0]}),
                                  [3.0, 5.0])


def test_sign():
    x = np.array([-2.5, 0.0, 3.0], np.float32)
    check(run(tf.sign(tf.constant(x))), np.sign(x), np.float32)
    check(run(tf.sign(tf.constant([-3, 0, 7]))), np.array([-1, 0, 1], np.int32), np.int32)


def test_select_v2_broadcasts():
    cond = np.array([True, False, True])
    x = sample((2, 3), np.float32)
    t = tf.where_v2(cond, tf.constant(x), 0.0)
    assert t.op.type == "SelectV2" and t.shape.as_list() == [2, 3]
    check(run(t), np.where(cond, x, 0.0).astype(np.float32), np.float32)
    with pytest.raises(TypeError, match="'condition'"):
        tf.where_v2(tf.constant([1.0]), x, x)


def test_stop_gradient_passes_its_value():
    x = sample((4,), np.float64)
    t = tf.stop_gradient(tf.constant(x))
    assert t.op.type == "StopGradient" and t.shape.as_list() == [4]
    check(run(t), x, np.float64)


def _backward(op_type, a, b):
    a, b = tf.constant(a), tf.constant(b)
    return tf.get_default_graph().create_op(op_type, [a, b], {"T": a.dtype}).outputs[0]


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_backward_activation_ops(dtype):
    g = sample((2, 3), dtype)
    x = sample((2, 3), dtype)
    y = (1 / (1 + np.exp(-x))).astype(dtype)
    check(run(_backward("ReluGrad", g, x)), np.where(x > 0, g, 0).astype(dtype), dtype)
    check(run(_backward("SigmoidGrad", y, g)), (g * y * (1 - y)).astype(dtype), dtype)
    t = np.tanh(x).astype(dtype)
    check(run(_backward("TanhGrad", t, g)), (g * (1 - t * t)).astype(dtype), dtype)
    with pytest.raises(ValueError, match="must be equal"):
        _backward("TanhGrad", t, g[:1, :2])
