"""tf.IndexedSlices: its parts, its dense form against numpy, and fetching it."""
import logging

import numpy as np
import pytest

import nbcluster as tf

pytestmark = pytest.mark.timeout(30)


@pytest.fixture(autouse=True)
def fresh_graph():
    with tf.Graph().as_default() as graph:
        yield graph


def _dense_numpy(values, indices, rows):
    out = np.zeros((rows,) + values.shape[1:], values.dtype)
    np.add.at(out, indices, values)
    return out


@pytest.mark.parametrize("index_dtype", [np.int32, np.int64])
def test_dense_form_sums_repeated_rows_like_numpy(index_dtype):
    values = np.arange(12, dtype=np.float32).reshape(4, 3)
    indices = np.array([4, 0, 4, 2], index_dtype)
    s = tf.IndexedSlices(tf.constant(values), tf.constant(indices),
                         tf.constant(np.array([6, 3], index_dtype)))
    dense = tf.convert_to_tensor(s)
    assert dense.op.type == "UnsortedSegmentSum" and dense.dtype == tf.float32
    assert tf.convert_to_tensor(s) is dense  # built once
    got = tf.Session().run(dense)
    np.testing.assert_array_equal(got, _dense_numpy(values, indices, 6))


def test_parts_and_properties():
    values = tf.constant(np.ones((2, 5), np.float64), name="vals")
    s = tf.IndexedSlices(values, tf.constant([1, 3]), tf.constant([4, 5]))
    assert s.values is values and s.indices.dtype == tf.int32
    assert s.name == "vals:0" and s.dtype == tf.float64 and s.op is values.op
    assert s.graph is values.graph and s.device == values.device
    assert s.shape.as_list() == [4, 5]
    assert "IndexedSlices(" in repr(s)


def test_shape_without_a_static_dense_shape_keeps_the_row_shape():
    rows = tf.placeholder(tf.int32, [2])
    s = tf.IndexedSlices(tf.zeros([3, 7]), tf.constant([0, 1, 2]), rows)
    assert s.shape.as_list() == [None, 7]
    assert tf.IndexedSlices(tf.zeros([3, 7]), tf.constant([0, 1, 2])).dense_shape is None


def test_fetch_gives_an_indexed_slices_value():
    s = tf.IndexedSlices(tf.constant([[1.0, 2.0]]), tf.constant([3]), tf.constant([5, 2]))
    got = tf.Session().run({"s": s, "rest": [s.values]})
    assert isinstance(got["s"], tf.IndexedSlicesValue)
    np.testing.assert_array_equal(got["s"].values, [[1.0, 2.0]])
    np.testing.assert_array_equal(got["s"].indices, [3])
    np.testing.assert_array_equal(got["s"].dense_shape, [5, 2])
    np.testing.assert_array_equal(got["rest"][0], [[1.0, 2.0]])


def test_fetch_without_dense_shape_gives_none_for_it():
    s = tf.IndexedSlices(tf.constant([7.0]), tf.constant([0]))
    values, indices, shape = tf.Session().run(s)
    assert shape is None and values.tolist() == [7.0] and indices.tolist() == [0]


def test_negation_stays_sparse():
    s = -tf.IndexedSlices(tf.constant([1.0, -2.0]), tf.constant([1, 0]), tf.constant([2]))
    assert isinstance(s, tf.IndexedSlices)
    np.testing.assert_array_equal(tf.Session().run(tf.convert_to_tensor(s)), [2.0, -1.0])


def test_bad_parts_raise_type_errors_naming_them():
    values = tf.constant([1.0])
    with pytest.raises(TypeError, match="indices must be an int32 or int64"):
        tf.IndexedSlices(values, tf.constant([0.0]))
    with pytest.raises(TypeError, match="values must be a Tensor"):
        tf.IndexedSlices([1.0], tf.constant([0]))
    with pytest.raises(TypeError, match="dense_shape"):
        tf.IndexedSlices(values, tf.constant([0]), tf.constant([1.0]))


def test_densifying_without_dense_shape_is_a_value_error():
    s = tf.IndexedSlices(tf.constant([1.0]), tf.constant([0]))
    with pytest.raises(ValueError, match="without dense_shape"):
        tf.convert_to_tensor(s)


def test_a_huge_dense_form_logs_a_warning(caplog):
    s = tf.IndexedSlices(tf.zeros([1, 20000]), tf.constant([0]),
                         tf.constant([20000, 20000]))
    with caplog.at_level(logging.WARNING):
        tf.convert_to_tensor(s)  # only built, never run
    assert "400000000 elements" in caplog.text
    caplog.clear()
    with caplog.at_level(logging.WARNING):
        tf.convert_to_tensor(tf.IndexedSlices(tf.zeros([1, 2]), tf.constant([0]),
                                              tf.constant([3, 2])))
    assert caplog.text == ""
