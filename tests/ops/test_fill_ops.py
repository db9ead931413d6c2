"""Fill ops against numpy: tf.zeros, ones, fill, zeros_like, ones_like (Const or Fill)."""
import numpy as np
import pytest
from op_checks import ARRAY_DTYPES, run, sample_any

import nbcluster as tf

pytestmark = pytest.mark.timeout(60)


# -- zeros, ones, fill, *_like ---------------------------------------------------------
@pytest.mark.parametrize("dtype", ARRAY_DTYPES + [object])
@pytest.mark.parametrize("shape", [[], [3], [2, 3], [0, 2]])
def test_zeros_ones_small_are_consts(dtype, shape):
    tf_dtype = tf.string if dtype == object else tf.as_dtype(dtype)
    z = tf.zeros(shape, tf_dtype)
    assert z.op.type == "Const" and z.op.name == "zeros"
    assert z.shape.as_list() == shape and z.dtype == tf_dtype
    expected = np.full(shape, b"", dtype=object) if dtype == object else np.zeros(shape, dtype)
    np.testing.assert_array_equal(run(z), expected)
    if dtype != object:
        o = tf.ones(shape, tf_dtype)
        assert o.op.type == "Const"
        np.testing.assert_array_equal(run(o), np.ones(shape, dtype))


def test_zeros_ones_large_or_dynamic_are_fills():
    big = tf.ones([100, 20], tf.int64)
    assert big.op.type == "Fill" and big.op.name == "ones" and big.shape.as_list() == [100, 20]
    np.testing.assert_array_equal(run(big), np.ones((100, 20), np.int64))
    dims = tf.placeholder(tf.int32, [2])
    z = tf.zeros(dims, tf.float16)
    assert z.op.type == "Fill" and z.shape.as_list() == [None, None] and z.dtype == tf.float16
    np.testing.assert_array_equal(run(z, {dims: [2, 5]}), np.zeros((2, 5), np.float16))
    x = tf.placeholder(tf.float32, [None, 4])
    zs = tf.zeros(tf.shape(x))
    assert zs.shape.as_list() == [None, 4]
    assert run(zs, {x: np.ones((3, 4))}).shape == (3, 4)


@pytest.mark.parametrize("dtype", ARRAY_DTYPES + [object])
def test_fill(dtype):
    value = sample_any((), dtype)
    out = tf.fill([2, 3], tf.constant(value))
    assert out.op.type == "Fill" and out.shape.as_list() == [2, 3] and out.op.get_attr("T") \
        == out.dtype
    np.testing.assert_array_equal(run(out), np.full((2, 3), value, dtype=value.dtype))


def test_fill_errors():
    with pytest.raises(ValueError, match=r"Shape must be rank 0 but is rank 1 for 'Fill' "
                                         r"\(op: 'Fill'\) with input shapes: \[2\], \[2\]"):
        tf.fill([2, 3], [1.0, 2.0])
    dims = tf.placeholder(tf.int32, [None])
    with pytest.raises(tf.errors.InvalidArgumentError, match="must be >= 0"):
        run(tf.fill(dims, 1.0), {dims: [2, -3]})


@pytest.mark.parametrize("dtype", ARRAY_DTYPES)
def test_zeros_like_ones_like(dtype):
    value = sample_any((2, 3), dtype)
    c = tf.constant(value)
    z, o = tf.zeros_like(c), tf.ones_like(c)
    assert z.op.type == "Const" and z.dtype == c.dtype and o.shape.as_list() == [2, 3]
    x = tf.placeholder(c.dtype, [None, 3])
    zx, ox = tf.zeros_like(x), tf.ones_like(x)
    assert zx.op.type == "ZerosLike" and zx.shape.as_list() == [None, 3]
    assert ox.op.type == "Fill" and ox.shape.as_list() == [None, 3]
    outs = run([z, o, zx, ox], {x: value})
    for out, expected in zip(outs, [np.zeros_like(value), np.ones_like(value)] * 2):
        assert out.dtype == expected.dtype
        np.testing.assert_array_equal(out, expected)


def test_like_ops_with_other_dtype_and_strings():
    x = tf.placeholder(tf.int32, [None])
    z = tf.zeros_like(x, dtype=tf.float32)
    assert z.dtype == tf.float32 and z.op.type == "Fill"
    np.testing.assert_array_equal(run(z, {x: [1, 2]}), np.zeros(2, np.float32))
    s = tf.placeholder(tf.string, [None])
    np.testing.assert_array_equal(run(tf.zeros_like(s), {s: [b"a", b"b"]}), [b"", b""])
