"""Slicing ops against numpy through a real Session: Slice, Pad, Unpack, BroadcastTo,
InvertPermutation, BroadcastGradientArgs and ConcatOffset; static shapes, and
build- and run-time errors."""
import numpy as np
import pytest
from op_checks import run, sample

import nbcluster as tf
from nbcluster import errors
from nbcluster.ops import slicing

pytestmark = pytest.mark.timeout(60)


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int32])
def test_slice(dtype):
    x = sample((3, 4, 5), dtype)
    t = tf.slice(tf.constant(x), [1, 0, 2], [2, -1, 3])
    assert t.op.type == "Slice" and t.shape.as_list() == [2, 4, 3]
    np.testing.assert_array_equal(run(t), x[1:3, :, 2:5])


def test_slice_dynamic_begin_and_errors():
    x = tf.placeholder(tf.float32, [None, 4])
    begin = tf.placeholder(tf.int32, [2])
    t = tf.slice(x, begin, [1, 2])
    assert t.shape.as_list() == [1, 2]
    value = sample((3, 4), np.float32)
    np.testing.assert_array_equal(run(t, {x: value, begin: [2, 1]}), value[2:3, 1:3])
    with pytest.raises(errors.InvalidArgumentError, match=r"Expected size\[0\]"):
        run(t, {x: value, begin: [3, 0]})
    with pytest.raises(ValueError, match="Length of size must equal the rank of input"):
        tf.slice(tf.constant(value), [0], [1])
    with pytest.raises(TypeError, match="'begin' has DataType float32"):
        tf.slice(tf.constant(value), tf.constant([0.0, 0.0]), [1, 1])


def test_pad():
    x = sample((2, 3), np.float32)
    t = tf.pad(tf.constant(x), [[1, 0], [2, 1]])
    assert t.op.type == "Pad" and t.shape.as_list() == [3, 6]
    np.testing.assert_array_equal(run(t), np.pad(x, [[1, 0], [2, 1]]))
    with pytest.raises(ValueError, match="mode='CONSTANT'"):
        tf.pad(tf.constant(x), [[0, 0], [0, 0]], mode="REFLECT")
    p = tf.placeholder(tf.int32, [2, 2])
    with pytest.raises(errors.InvalidArgumentError, match="Paddings must be non-negative"):
        run(tf.pad(tf.constant(x), p), {p: [[0, -1], [0, 0]]})


def test_unstack():
    x = sample((2, 3, 4), np.float32)
    parts = tf.unstack(tf.constant(x), axis=1)
    assert len(parts) == 3 and all(p.shape.as_list() == [2, 4] for p in parts)
    for got, i in zip(run(parts), range(3)):
        np.testing.assert_array_equal(got, x[:, i])
    last = tf.unstack(tf.constant(x), axis=-1)
    np.testing.assert_array_equal(run(last[3]), x[..., 3])
    with pytest.raises(ValueError, match="Cannot infer argument `num`"):
        tf.unstack(tf.placeholder(tf.float32, [None, 2]))
    with pytest.raises(ValueError, match="Dimension must be 5 but is 3"):
        tf.unstack(tf.constant(x), num=5, axis=1)


def test_broadcast_to():
    x = sample((3, 1), np.int32)
    t = tf.broadcast_to(tf.constant(x), [2, 3, 4])
    assert t.shape.as_list() == [2, 3, 4]
    np.testing.assert_array_equal(run(t), np.broadcast_to(x, (2, 3, 4)))
    with pytest.raises(ValueError, match="Dimensions must be equal|Incompatible"):
        tf.broadcast_to(tf.constant(x), [2, 5])
    shape = tf.placeholder(tf.int32, [2])
    with pytest.raises(errors.InvalidArgumentError, match=r"Incompatible shapes: \[3,1\]"):
        run(tf.broadcast_to(tf.constant(x), shape), {shape: [4, 4]})
    # A shape of lower rank than the input is refused, even where only 1s are
    # in excess (a plain copy into the output would drop them).
    row = tf.constant(sample((1, 3), np.int32))
    one_d = tf.placeholder(tf.int32, [None])  # its length unknown until run
    with pytest.raises(errors.InvalidArgumentError, match=r"Incompatible shapes: \[1,3\]"):
        run(tf.broadcast_to(row, one_d), {one_d: [3]})


def test_invert_permutation():
    np.testing.assert_array_equal(run(tf.invert_permutation([2, 0, 1])), [1, 2, 0])
    p = tf.placeholder(tf.int32, [3])
    with pytest.raises(errors.InvalidArgumentError, match="not a permutation"):
        run(tf.invert_permutation(p), {p: [0, 0, 1]})


@pytest.mark.parametrize("s0,s1,r0,r1", [
    ([2, 3, 5], [1], [], [0, 1, 2]),
    ([3, 1], [1, 4], [1], [0]),
    ([5, 4], [4], [], [0]),
    ([], [2, 2], [0, 1], []),
    ([2, 3], [2, 3], [], []),
])
def test_broadcast_gradient_args(s0, s1, r0, r1):
    a = tf.placeholder(tf.int32, [None])
    b = tf.placeholder(tf.int32, [None])
    out = slicing.broadcast_gradient_args(a, b)
    got0, got1 = run(out, {a: np.array(s0, np.int32), b: np.array(s1, np.int32)})
    np.testing.assert_array_equal(got0, r0)
    np.testing.assert_array_equal(got1, r1)
    assert got0.dtype == np.int32


def test_broadcast_gradient_args_incompatible():
    out = slicing.broadcast_gradient_args(tf.placeholder(tf.int32, [None]), [3])
    with pytest.raises(errors.InvalidArgumentError, match=r"Incompatible shapes: \[2\] vs. "
                                                         r"\[3\]"):
        run(out, {out[0].op.inputs[0]: [2]})


def test_concat_offset():
    offsets = slicing.concat_offset(1, [[2, 3, 4], [2, 5, 4], [2, 1, 4]])
    got = run(offsets)
    np.testing.assert_array_equal(got, [[0, 0, 0], [0, 3, 0], [0, 8, 0]])
    bad = slicing.concat_offset(0, [[2, 3], [2, 4]])
    with pytest.raises(errors.InvalidArgumentError, match="should have shape compatible"):
        run(bad)


X24 = np.arange(24, dtype=np.float32).reshape(2, 3, 4)
KEYS = [1, -1, (slice(None), 1), (Ellipsis, 2), (slice(None), slice(1, 3)),
        (slice(None, None, -1),), (None, 0, slice(None, None, 2)), (1, Ellipsis, None),
        (slice(-2, None), -1, slice(3, 0, -2)), (slice(5, 9),)]


@pytest.mark.parametrize("key", KEYS, ids=str)
def test_getitem_matches_numpy(key):
    t = tf.constant(X24)[key]
    assert t.op.type == "StridedSlice"
    expected = X24[key]
    assert t.shape.as_list() == list(expected.shape)
    np.testing.assert_array_equal(run(t), expected)


def test_getitem_with_unknown_dims_and_tensor_indices():
    p = tf.placeholder(tf.float32, [None, 3, 4])
    i = tf.placeholder(tf.int32, [])
    assert p[0].shape.as_list() == [3, 4]
    assert p[:, 1].shape.as_list() == [None, 4]
    assert p[1:3].shape.as_list() == [None, 3, 4]
    assert tf.shape(p)[0].shape.as_list() == []
    got = run([p[i], p[:, i], tf.shape(p)[0]], {p: X24, i: 1})
    np.testing.assert_array_equal(got[0], X24[1])
    np.testing.assert_array_equal(got[1], X24[:, 1])
    assert got[2] == 2
    # tf.shape(x)[i] of a known dim is known when the graph is built
    assert tf.reshape(p, [-1, tf.shape(p)[2]]).shape.as_list() == [None, 4]


def test_getitem_errors():
    x = tf.constant(X24)
    with pytest.raises(ValueError, match="slice index 2 of dimension 0 out of bounds"):
        x[2]
    with pytest.raises(ValueError, match="Index out of range using input dim 3"):
        x[0, 0, 0, 0]
    with pytest.raises(ValueError, match="slice step cannot be zero"):
        x[::0]
    with pytest.raises(ValueError, match="Multiple ellipses"):
        x[..., ...]
    with pytest.raises(TypeError, match="are valid indices, got 1.5"):
        x[1.5]
    p = tf.placeholder(tf.float32, [None])
    with pytest.raises(errors.InvalidArgumentError, match="slice index 3 of dimension 0 out "
                                                          "of bounds"):
        run(p[3], {p: [1.0, 2.0]})


def test_strided_slice_grad_scatters_into_zeros():
    dy = tf.constant(np.ones((2, 2), np.float32))
    shape = tf.constant([2, 4])
    g = tf.get_default_graph().create_op(
        "StridedSliceGrad", [shape, tf.constant([0, 1]), tf.constant([0, 4]),
                             tf.constant([1, 2]), dy],
        {"T": tf.float32, "Index": tf.int32, "begin_mask": 1, "end_mask": 1,
         "ellipsis_mask": 0, "new_axis_mask": 0, "shrink_axis_mask": 0}).outputs[0]
    assert g.shape.as_list() == [2, 4]
    np.testing.assert_array_equal(run(g), [[0, 1, 0, 1], [0, 1, 0, 1]])
