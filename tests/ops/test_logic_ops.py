"""Logical and float-class ops against numpy through a real Session: LogicalAnd,
LogicalOr, LogicalNot, logical_xor (composite), IsNan, IsInf, IsFinite; static
shapes, broadcasting, dtype errors, and that none of them is differentiable."""
import numpy as np
import pytest
from op_checks import run, sample_any

import nbcluster as tf
from nbcluster.grad import gradient_table

pytestmark = pytest.mark.timeout(60)

A = sample_any((2, 3), np.bool_)
B = sample_any((3,), np.float32) > 0


@pytest.mark.parametrize("fn, op_type, ref", [
    (tf.logical_and, "LogicalAnd", np.logical_and),
    (tf.logical_or, "LogicalOr", np.logical_or),
])
def test_binary_logical_ops_broadcast(fn, op_type, ref):
    t = fn(tf.constant(A), tf.constant(B))
    assert t.op.type == op_type and t.dtype == tf.bool and t.shape.as_list() == [2, 3]
    np.testing.assert_array_equal(run(t), ref(A, B))
    np.testing.assert_array_equal(run(fn(A, True)), ref(A, True))


def test_logical_not_and_xor():
    t = tf.logical_not(tf.constant(A))
    assert t.op.type == "LogicalNot" and t.shape.as_list() == [2, 3]
    np.testing.assert_array_equal(run(t), ~A)
    x = tf.logical_xor(tf.constant(A), tf.constant(B))
    assert x.op.type == "LogicalAnd" and x.op.name == "LogicalXor"
    np.testing.assert_array_equal(run(x), np.logical_xor(A, B))
    assert tf.math.logical_xor is tf.logical_xor


def test_logical_ops_unknown_and_empty_shapes():
    p = tf.placeholder(tf.bool, None)
    q = tf.placeholder(tf.bool, [None])
    t = tf.logical_or(p, q)
    assert t.shape.rank is None
    got = run(t, {p: np.zeros((0, 1), bool), q: np.zeros(0, bool)})
    assert got.shape == (0, 0) and got.dtype == np.bool_


def test_logical_ops_reject_non_bool_and_mismatched_shapes():
    with pytest.raises(TypeError, match="'x' has DataType float32 not in list of allowed "
                                        "values: bool"):
        tf.logical_not(tf.constant([1.0]))
    with pytest.raises(TypeError, match="'y' has DataType int32"):
        tf.logical_and(tf.constant([True]), tf.constant([1]))
    with pytest.raises(ValueError, match="Dimensions must be equal|Incompatible"):
        tf.logical_and(tf.constant(A), tf.constant([True, False]))


VALUES = np.array([[0.0, np.nan, np.inf], [-np.inf, -1.5, 3.0]])


@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64])
@pytest.mark.parametrize("fn, op_type, ref", [
    (tf.is_nan, "IsNan", np.isnan), (tf.is_inf, "IsInf", np.isinf),
    (tf.is_finite, "IsFinite", np.isfinite)])
def test_float_class_ops(dtype, fn, op_type, ref):
    x = VALUES.astype(dtype)
    t = fn(tf.constant(x))
    assert t.op.type == op_type and t.dtype == tf.bool and t.shape.as_list() == [2, 3]
    got = run(t)
    assert got.dtype == np.bool_
    np.testing.assert_array_equal(got, ref(x))
    assert getattr(tf.math, fn.__name__) is fn


def test_float_class_ops_reject_ints_and_keep_unknown_shapes():
    with pytest.raises(TypeError, match="'x' has DataType int32"):
        tf.is_nan(tf.constant([1]))
    p = tf.placeholder(tf.float32, [None, 2])
    assert tf.is_finite(p).shape.as_list() == [None, 2]
    assert run(tf.is_inf(p), {p: np.zeros((0, 2), np.float32)}).shape == (0, 2)


@pytest.mark.parametrize("op_type", ["LogicalAnd", "LogicalOr", "LogicalNot", "IsNan",
                                     "IsInf", "IsFinite"])
def test_not_differentiable(op_type):
    assert gradient_table.is_declared(op_type) and gradient_table.get_gradient_rule(op_type) is None


def test_bool_operators_are_the_logical_ops():
    a = tf.constant([True, True, False, False])
    b = tf.constant([True, False, True, False])
    with tf.Session() as sess:
        got = sess.run({"and": a & b, "or": a | b, "xor": a ^ b, "not": ~a,
                        "rand": [True, False, True, False] & a})
    assert got["and"].tolist() == [True, False, False, False]
    assert got["or"].tolist() == [True, True, True, False]
    assert got["xor"].tolist() == [False, True, True, False]
    assert got["not"].tolist() == [False, False, True, True]
    assert got["rand"].tolist() == [True, False, False, False]
    assert (a & b).op.type == "LogicalAnd" and (~a).op.type == "LogicalNot"
