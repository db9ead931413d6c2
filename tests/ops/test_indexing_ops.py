"""Indexing and selection ops against numpy through a real Session: GatherV2,
UnsortedSegmentSum, OneHot, Select (TF1's where), Where and boolean_mask; static
shapes, and build- and run-time errors that name the bad value."""
import numpy as np
import pytest
from op_checks import ARRAY_DTYPES, run, sample_any

import nbcluster as tf
from nbcluster import errors

pytestmark = pytest.mark.timeout(60)


# -- gather ------------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", ARRAY_DTYPES)
def test_gather_axis0_matches_numpy(dtype):
    x = sample_any((5, 3), dtype)
    idx = np.array([[4, 0], [2, 2]], np.int64)
    t = tf.gather(tf.constant(x), idx)
    assert t.op.type == "GatherV2" and t.shape.as_list() == [2, 2, 3]
    assert t.dtype == tf.as_dtype(dtype)
    np.testing.assert_array_equal(run(t), np.take(x, idx, axis=0))


@pytest.mark.parametrize("axis", [1, -1, 2])
def test_gather_other_axes(axis):
    x = sample_any((2, 3, 4), np.float32)
    idx = np.array([0, 2, 1, 0], np.int32)[: x.shape[axis]]
    t = tf.gather(tf.constant(x), idx, axis=axis)
    expected = np.take(x, idx, axis=axis)
    assert t.shape.as_list() == list(expected.shape)
    np.testing.assert_array_equal(run(t), expected)


def test_gather_unknown_shapes_and_empty_indices():
    p = tf.placeholder(tf.float64, None)
    i = tf.placeholder(tf.int32, [None])
    t = tf.gather(p, i)
    assert t.shape.rank is None
    x = sample_any((4, 2), np.float64)
    np.testing.assert_array_equal(run(t, {p: x, i: [3, 1]}), x[[3, 1]])
    empty = run(t, {p: x, i: np.zeros([0], np.int32)})
    assert empty.shape == (0, 2)
    q = tf.placeholder(tf.float32, [None, 3])
    assert tf.gather(q, tf.placeholder(tf.int64, [2, None]), axis=1).shape.as_list() == \
        [None, 2, None]


def test_gather_errors_name_the_bad_index():
    x = tf.constant(np.zeros((5, 2), np.float32))
    i = tf.placeholder(tf.int32, [None])
    with pytest.raises(errors.InvalidArgumentError, match=r"indices\[3\] = 7 is not in \[0, 5\)"):
        run(tf.gather(x, i), {i: [0, 1, 2, 7]})
    j = tf.placeholder(tf.int64, [2, 2])
    with pytest.raises(errors.InvalidArgumentError, match=r"indices\[1,0\] = -1 is not in"):
        run(tf.gather(x, j), {j: [[0, 1], [-1, 0]]})
    with pytest.raises(ValueError, match=r"Expected axis in the range \[-2, 2\), but got 2"):
        tf.gather(x, [0], axis=2)
    with pytest.raises(NotImplementedError, match="batch_dims=0"):
        tf.gather(x, [0], batch_dims=1)
    with pytest.raises(TypeError, match="'indices' has DataType float32"):
        tf.gather(x, tf.constant([0.0]))


# -- unsorted_segment_sum ------------------------------------------------------------------
@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int32, np.int64])
def test_unsorted_segment_sum_matches_numpy(dtype):
    data = sample_any((6, 3), dtype)
    ids = np.array([2, 0, 2, -1, 1, 0], np.int32)
    t = tf.unsorted_segment_sum(tf.constant(data), ids, 4)
    assert tf.math.unsorted_segment_sum is tf.unsorted_segment_sum
    assert t.op.type == "UnsortedSegmentSum" and t.shape.as_list() == [4, 3]
    expected = np.zeros((4, 3), dtype)
    for row, i in zip(data, ids):
        if i >= 0:  # negative ids are dropped
            expected[i] += row
    np.testing.assert_allclose(run(t), expected, rtol=1e-6)


def test_unsorted_segment_sum_multi_dim_ids_and_errors():
    data = sample_any((2, 3, 2), np.float64)
    ids = tf.placeholder(tf.int64, [2, None])
    t = tf.unsorted_segment_sum(data, ids, 3)
    assert t.shape.as_list() == [3, 2]
    got = run(t, {ids: [[0, 1, 0], [2, 2, 2]]})
    np.testing.assert_allclose(got[2], data[1].sum(0))
    np.testing.assert_allclose(got[0], data[0, 0] + data[0, 2])
    with pytest.raises(errors.InvalidArgumentError,
                       match=r"segment_ids\[1,2\] = 3 is out of range \[0, 3\)"):
        run(t, {ids: [[0, 0, 0], [1, 1, 3]]})
    with pytest.raises(errors.InvalidArgumentError, match="does not start with"):
        run(t, {ids: [[0, 0], [1, 1]]})
    with pytest.raises(ValueError, match="Dimension 1 in both shapes must be equal"):
        tf.unsorted_segment_sum(data, [[0, 0], [1, 1]], 3)


# -- one_hot ----------------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", [np.float32, np.int32, np.bool_])
def test_one_hot_values_and_dtypes(dtype):
    on, off = (True, False) if dtype == np.bool_ else (dtype(5), dtype(-1))
    t = tf.one_hot([0, 3, 1, -1], 3, on_value=on, off_value=off, dtype=dtype)
    assert t.op.type == "OneHot" and t.shape.as_list() == [4, 3]
    expected = np.full((4, 3), off, dtype)
    expected[0, 0] = expected[2, 1] = on  # 3 and -1 are out of range: all off
    np.testing.assert_array_equal(run(t), expected)


def test_one_hot_axis_default_dtype_and_errors():
    idx = np.array([[0, 2], [1, 1]], np.int64)
    t = tf.one_hot(idx, 4, axis=1)
    assert t.dtype == tf.float32 and t.shape.as_list() == [2, 4, 2]
    np.testing.assert_array_equal(run(t), np.moveaxis(np.eye(4, dtype=np.float32)[idx], -1, 1))
    d = tf.placeholder(tf.int32, [])
    u = tf.one_hot(tf.placeholder(tf.int32, None), d)
    assert u.shape.rank is None
    with pytest.raises(errors.InvalidArgumentError, match="depth must be non-negative, got: -2"):
        run(tf.one_hot([0], d), {d: -2})
    with pytest.raises(TypeError, match="does not match"):
        tf.one_hot([0], 2, on_value=tf.constant(1.0), dtype=tf.int32)
    with pytest.raises(ValueError, match="Expected axis to be -1 or between"):
        tf.one_hot([0], 2, axis=3)
    assert run(tf.one_hot(np.zeros([0], np.int32), 3)).shape == (0, 3)
    ints = tf.one_hot([1], 2, on_value=5)  # the dtype follows on_value's, as in TF
    assert ints.dtype == tf.int32
    np.testing.assert_array_equal(run(ints), [[0, 5]])
    with pytest.raises(TypeError, match="dtype int32 of off_value does not match dtype "
                                        "parameter float32"):
        tf.one_hot([0], 2, off_value=tf.constant(0), dtype=tf.float32)


# -- where (Select and Where) and boolean_mask ---------------------------------------------
def test_where_with_x_and_y_is_select():
    cond = np.array([[True, False, True], [False, False, True]])
    x, y = sample_any((2, 3), np.float32), sample_any((2, 3), np.float32) + 1
    t = tf.where(cond, x, y)
    assert t.op.type == "Select" and t.shape.as_list() == [2, 3]
    np.testing.assert_array_equal(run(t), np.where(cond, x, y))
    rows = tf.where([True, False], x, y)  # TF1: a vector picks whole rows
    np.testing.assert_array_equal(run(rows), np.stack([x[0], y[1]]))
    np.testing.assert_array_equal(run(tf.where(False, x, y)), y)


def test_select_errors():
    x = np.zeros((2, 3), np.float32)
    with pytest.raises(ValueError, match="Dimension 1 in both shapes must be equal"):
        tf.where([[True, False]] * 2, x, np.zeros((2, 2), np.float32))
    with pytest.raises(ValueError, match="Dimension 0 in both shapes must be equal"):
        tf.where([True, False, True], x, x)
    with pytest.raises(ValueError, match="both be non-None or both be None"):
        tf.where([True], [1.0])
    c = tf.placeholder(tf.bool, None)
    with pytest.raises(errors.InvalidArgumentError,
                       match=r"Number of batches of 'then' must match size of 'cond', but "
                             r"saw: 2 vs. 3"):
        run(tf.where(c, x, x), {c: [True, False, True]})
    with pytest.raises(TypeError, match="'condition' has DataType float32"):
        tf.where(tf.constant([1.0, 0.0]), [1.0, 2.0], [3.0, 4.0])


@pytest.mark.parametrize("dtype", [np.bool_, np.float32, np.int32])
def test_where_coordinates(dtype):
    x = (sample_any((3, 4), np.float32) > 0).astype(dtype)
    t = tf.where(tf.constant(x))
    assert t.op.type == "Where" and t.dtype == tf.int64 and t.shape.as_list() == [None, 2]
    got = run(t)
    assert got.dtype == np.int64
    np.testing.assert_array_equal(got, np.argwhere(x))
    assert run(tf.where(np.zeros((0, 2), bool))).shape == (0, 2)


@pytest.mark.parametrize("axis", [None, 1, -2])
def test_boolean_mask_matches_numpy(axis):
    x = sample_any((2, 3, 4), np.float32)
    a = 0 if axis is None else axis % 3
    mask = sample_any(x.shape[a:a + 2], np.bool_)
    t = tf.boolean_mask(tf.constant(x), mask, axis=axis)
    expected = x[mask] if a == 0 else x[:, mask]
    assert t.shape.rank == expected.ndim
    types = {op.type for op in tf.get_default_graph().get_operations()}
    assert {"Reshape", "Where", "Squeeze", "GatherV2"} <= types
    np.testing.assert_array_equal(run(t), expected)


def test_boolean_mask_unknown_shapes_and_errors():
    x = tf.placeholder(tf.int32, [None, 2])
    m = tf.placeholder(tf.bool, [None])
    t = tf.boolean_mask(x, m)
    assert t.shape.as_list() == [None, 2]
    value = np.arange(6, dtype=np.int32).reshape(3, 2)
    np.testing.assert_array_equal(run(t, {x: value, m: [False, True, True]}), value[1:])
    assert run(t, {x: value, m: [False] * 3}).shape == (0, 2)
    with pytest.raises(ValueError, match="Number of mask dimensions must be specified"):
        tf.boolean_mask(x, tf.placeholder(tf.bool, None))
    with pytest.raises(ValueError, match="known rank for a negative axis"):
        tf.boolean_mask(tf.placeholder(tf.float32, None), [True], axis=-1)
    with pytest.raises(ValueError, match="mask cannot be scalar"):
        tf.boolean_mask(x, True)
    with pytest.raises(ValueError, match=r"Shapes \[2\] and \[3\] are incompatible"):
        tf.boolean_mask(np.zeros((3, 2)), [True, False, True], axis=1)


@pytest.mark.parametrize("dtype, out_idx", [(tf.int32, tf.int32), (tf.float32, tf.int64),
                                            (tf.string, tf.int32)])
def test_unique_keeps_first_appearance_order(dtype, out_idx):
    raw = [7, 3, 7, 1, 3, 3, 9]
    x = tf.constant([str(v).encode() for v in raw] if dtype == tf.string else raw, dtype)
    y, idx = tf.unique(x, out_idx=out_idx)
    assert y.shape.as_list() == [None] and idx.shape.as_list() == [7]
    assert idx.dtype == out_idx and y.op.type == "Unique"
    with tf.Session() as sess:
        values, positions = sess.run([y, idx])
        back = sess.run(tf.gather(y, idx))
    expected = [7, 3, 1, 9]
    assert [int(v) for v in values] == expected
    assert positions.tolist() == [0, 1, 0, 2, 1, 1, 3] and positions.dtype == out_idx.as_numpy_dtype
    assert [int(v) for v in back] == raw
    with tf.Session() as sess:
        empty_y, empty_idx = sess.run(tf.unique(tf.constant([], tf.int32)))
    assert empty_y.size == 0 and empty_idx.size == 0


@pytest.mark.parametrize("dtype, out_idx", [(tf.int32, tf.int32), (tf.int64, tf.int64),
                                            (tf.float32, tf.int32)])
def test_setdiff1d_keeps_x_order_and_positions(dtype, out_idx):
    # TF's gradient of reduce_prod builds ListDiff; TF-serialized GraphDefs carry it
    x = tf.placeholder(dtype, [None])
    out, idx = tf.setdiff1d(x, tf.constant([4, 1], dtype), index_dtype=out_idx)
    assert out.op.type == "ListDiff" and out.dtype == dtype and idx.dtype == out_idx
    assert out.shape.as_list() == [None] and idx.shape.as_list() == [None]
    with tf.Session() as sess:
        values, positions = sess.run([out, idx], {x: [4, 3, 1, 5, 3, 4]})
        empty, _ = sess.run([out, idx], {x: [1, 4]})
    assert values.tolist() == [3, 5, 3] and positions.tolist() == [1, 3, 4]
    assert positions.dtype == out_idx.as_numpy_dtype and empty.size == 0
    assert tf.gradients(tf.reduce_sum(tf.cast(out, tf.float32)), [x]) == [None]


def test_setdiff1d_refuses_a_matrix_naming_its_shape():
    with pytest.raises(ValueError, match=r"y should be a 1D vector, got shape \(2, 1\)"):
        tf.setdiff1d(tf.constant([1, 2]), tf.constant([[1], [2]]))
    x = tf.placeholder(tf.int32)
    out, _ = tf.setdiff1d(x, [1])
    with tf.Session() as sess, pytest.raises(errors.InvalidArgumentError, match=r"\[2,2\]"):
        sess.run(out, {x: [[1, 2], [3, 4]]})


def test_unique_refuses_a_matrix_naming_its_shape():
    with pytest.raises(ValueError, match=r"unique expects a 1D vector, got shape \(2, 2\)"):
        tf.unique(tf.constant([[1, 2], [3, 4]]))
