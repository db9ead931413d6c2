"""DynamicPartition and DynamicStitch: values against numpy, static shapes, errors,
and each undoing the other (TF's embedding_lookup over shards builds both)."""
import numpy as np
import pytest

import nbcluster as tf
from nbcluster import errors

pytestmark = pytest.mark.timeout(60)


@pytest.mark.parametrize("dtype", [np.float32, np.int64, np.bool_])
def test_partition_keeps_order_within_each_part(dtype):
    data = (np.arange(12).reshape(4, 3) % 2).astype(dtype) if dtype == np.bool_ else \
        np.arange(12).reshape(4, 3).astype(dtype)
    parts = tf.dynamic_partition(tf.constant(data), [2, 0, 2, 2], 3)
    assert [p.shape.as_list() for p in parts] == [[None, 3]] * 3
    assert parts[0].op.type == "DynamicPartition" and parts[0].dtype == tf.as_dtype(dtype)
    with tf.Session() as sess:
        got = sess.run(parts)
    np.testing.assert_array_equal(got[0], data[[1]])
    assert got[1].shape == (0, 3)
    np.testing.assert_array_equal(got[2], data[[0, 2, 3]])


def test_partition_by_a_matrix_of_partitions():
    data = np.arange(12.0).reshape(2, 2, 3)
    parts = tf.dynamic_partition(data, [[1, 0], [0, 1]], 2)
    with tf.Session() as sess:
        got = sess.run(parts)
    np.testing.assert_array_equal(got[0], data[[0, 1], [1, 0]])
    np.testing.assert_array_equal(got[1], data[[0, 1], [0, 1]])


def test_stitch_later_data_win_and_static_rows():
    merged = tf.dynamic_stitch([[0, 3], [[1], [3]]], [[[1.0, 1.0], [2.0, 2.0]],
                                                      [[[5.0, 5.0]], [[7.0, 7.0]]]])
    assert merged.op.type == "DynamicStitch" and merged.shape.as_list() == [4, 2]
    with tf.Session() as sess:
        got = sess.run(merged)
    np.testing.assert_array_equal(got, [[1, 1], [5, 5], [0, 0], [7, 7]])
    fed = tf.placeholder(tf.int32, [None])
    assert tf.dynamic_stitch([fed], [tf.ones([3, 2])]).shape.as_list() == [None, 2]


def test_stitch_undoes_partition_and_gradients_flow_back():
    x = tf.placeholder(tf.float64, [5, 2])
    p = tf.constant([1, 0, 1, 1, 0])
    parts = tf.dynamic_partition(x, p, 2)
    positions = tf.dynamic_partition(tf.range(5), p, 2)
    back = tf.dynamic_stitch(positions, parts)
    loss = tf.reduce_sum(parts[1] * parts[1]) + tf.reduce_sum(back * 3.0)
    (g,) = tf.gradients(loss, [x])
    value = np.arange(10.0).reshape(5, 2)
    with tf.Session() as sess:
        got_back, got_g = sess.run([back, g], {x: value})
    np.testing.assert_array_equal(got_back, value)
    expected = np.full_like(value, 3.0)
    expected[[0, 2, 3]] += 2 * value[[0, 2, 3]]
    np.testing.assert_array_equal(got_g, expected)


def test_errors_name_the_bad_value_or_shape():
    parts = tf.placeholder(tf.int32, [None])
    out = tf.dynamic_partition(tf.constant([1.0, 2.0, 3.0]), parts, 2)
    with tf.Session() as sess:
        with pytest.raises(errors.InvalidArgumentError, match=r"partitions\[1\] = 2 is not in "
                                                              r"\[0, 2\)"):
            sess.run(out, {parts: [0, 2, 1]})
        with pytest.raises(errors.InvalidArgumentError, match=r"data.shape = \[3\] does not "
                                                              r"start with partitions.shape"):
            sess.run(out, {parts: [0, 1]})
    with pytest.raises(ValueError, match="not a prefix of the data shape"):
        tf.dynamic_partition(tf.ones([3, 2]), [[0, 1]], 2)
    idx = tf.placeholder(tf.int32, [None])
    stitched = tf.dynamic_stitch([idx], [tf.constant([1.0, 2.0])])
    with tf.Session() as sess, pytest.raises(errors.InvalidArgumentError,
                                             match=r"indices\[0\]\[1\] = -1"):
        sess.run(stitched, {idx: [0, -1]})
    # rows of different widths never stitch, even where their sizes would reshape
    first, second = tf.placeholder(tf.float32, None), tf.placeholder(tf.float32, None)
    uneven = tf.dynamic_stitch([tf.constant([0]), tf.constant([1])], [first, second])
    with tf.Session() as sess, pytest.raises(errors.InvalidArgumentError,
                                             match=r"Need data\[0\]\.shape\[1:\] = "
                                                   r"data\[1\]\.shape\[1:\]"):
        sess.run(uneven, {first: np.ones((1, 3, 2)), second: np.ones((1, 6))})
    with pytest.raises(TypeError, match="int64 not in list of allowed values"):
        tf.dynamic_partition([1.0], tf.constant([0], tf.int64), 1)


def test_parallel_dynamic_stitch_is_dynamic_stitch_with_its_gradient():
    # TF's embedding_lookup over several shards builds ParallelDynamicStitch
    x = tf.placeholder(tf.float64, [2, 2])
    g = tf.get_default_graph()
    merged = g.create_op("ParallelDynamicStitch", [tf.constant([2, 0]), tf.constant([1]), x,
                                                   tf.constant([[5.0, 6.0]], tf.float64)],
                         {"N": 2, "T": tf.float64}).outputs[0]
    assert merged.shape.as_list() == [3, 2]
    (grad,) = tf.gradients(tf.reduce_sum(merged * merged), [x])
    value = np.array([[1.0, 2.0], [3.0, 4.0]])
    with tf.Session() as sess:
        got, got_grad = sess.run([merged, grad], {x: value})
    np.testing.assert_array_equal(got, [[3, 4], [5, 6], [1, 2]])
    np.testing.assert_array_equal(got_grad, 2 * value)
