"""tf.data's sources: from_tensors, from_tensor_slices, range, from_generator; element specs."""
import collections

import numpy as np
import pytest
from data_checks import elements

import nbcluster as tf

pytestmark = pytest.mark.timeout(60)


def test_from_tensor_slices_gives_the_rows_of_every_leaf():
    x = np.arange(12, dtype=np.float32).reshape(4, 3)
    y = np.array([b"a", b"b", b"c", b"d"], dtype=object)
    ds = tf.data.Dataset.from_tensor_slices({"x": x, "y": (y, np.arange(4))})
    assert ds._variant.op.type == "TensorSliceDataset" and ds._variant.dtype == tf.variant
    assert ds.output_types == {"x": tf.float32, "y": (tf.string, tf.int64)}
    assert ds.output_shapes["x"].as_list() == [3]
    got = elements(ds)
    assert len(got) == 4
    for i, e in enumerate(got):
        np.testing.assert_array_equal(e["x"], x[i])
        assert e["y"][0] == y[i] and e["y"][1] == i


def test_a_python_list_is_one_component_as_in_tf():
    ds = tf.data.Dataset.from_tensor_slices([[1, 2], [3, 4], [5, 6]])
    assert ds.output_types == tf.int32 and ds.output_shapes.as_list() == [2]
    np.testing.assert_array_equal(np.stack(elements(ds)), [[1, 2], [3, 4], [5, 6]])


def test_from_tensor_slices_refuses_rows_that_differ_at_build_time():
    with pytest.raises(ValueError, match="Dimensions 3 and 2"):
        tf.data.Dataset.from_tensor_slices((np.zeros(3), np.zeros(2)))
    with pytest.raises(ValueError, match="rank >= 1"):
        tf.data.Dataset.from_tensor_slices(np.float32(1.0))


def test_from_tensor_slices_of_a_fed_placeholder_checks_rows_when_it_runs():
    a = tf.placeholder(tf.float32, [None])
    b = tf.placeholder(tf.float32, [None])
    it = tf.data.Dataset.from_tensor_slices((a, b)).make_initializable_iterator()
    with tf.Session() as sess:
        with pytest.raises(tf.errors.InvalidArgumentError, match="0th dimension"):
            sess.run(it.initializer, {a: np.zeros(3), b: np.zeros(2)})


def test_from_tensors_is_one_element():
    Point = collections.namedtuple("Point", "x y")
    ds = tf.data.Dataset.from_tensors(Point(np.ones((2, 2), np.float32), 7))
    assert ds._variant.op.type == "TensorDataset"
    (got,) = elements(ds)
    assert isinstance(got, Point) and got.y == 7
    np.testing.assert_array_equal(got.x, np.ones((2, 2)))


@pytest.mark.parametrize("args", [(5,), (2, 7), (10, 0, -3), (3, 3)])
def test_range_matches_python_range(args):
    ds = tf.data.Dataset.range(*args)
    assert ds._variant.op.type == "RangeDataset" and ds.output_types == tf.int64
    assert [int(v) for v in elements(ds)] == list(range(*args))


def test_range_with_step_zero_is_invalid_argument():
    with tf.Session() as sess, pytest.raises(tf.errors.InvalidArgumentError, match="non-zero"):
        sess.run(tf.data.Dataset.range(0, 5, 0).make_initializable_iterator().initializer)


def test_from_generator_converts_what_it_yields():
    def gen(n):
        for i in range(n):
            yield i, [float(i)] * i

    ds = tf.data.Dataset.from_generator(gen, (tf.int64, tf.float32), ((), (None,)), args=(4,))
    assert ds._variant.op.type == "GeneratorDataset"
    got = elements(ds)
    assert [int(a) for a, _ in got] == [0, 1, 2, 3]
    for i, (_, b) in enumerate(got):
        assert b.dtype == np.float32 and b.tolist() == [float(i)] * i


def test_from_generator_output_signature_and_a_fresh_pass_per_iterator():
    ds = tf.data.Dataset.from_generator(
        lambda: iter([[1, 2], [3, 4]]),
        output_signature=tf.TensorSpec(shape=[2], dtype=tf.int32)).repeat(2)
    assert [v.tolist() for v in elements(ds)] == [[1, 2], [3, 4]] * 2


def test_from_generator_element_of_the_wrong_type_or_shape_fails_when_read():
    bad_type = tf.data.Dataset.from_generator(lambda: iter(["x"]), tf.int64)
    with pytest.raises(tf.errors.InvalidArgumentError, match="expected type was int64"):
        elements(bad_type)
    bad_shape = tf.data.Dataset.from_generator(lambda: iter([[1, 2, 3]]), tf.int64, [2])
    with pytest.raises(tf.errors.InvalidArgumentError, match="shape"):
        elements(bad_shape)


def test_from_generator_needs_types():
    with pytest.raises(TypeError, match="output_types"):
        tf.data.Dataset.from_generator(lambda: iter([1]))
    with pytest.raises(TypeError, match="callable"):
        tf.data.Dataset.from_generator([1, 2], tf.int64)


def test_element_spec_and_the_compat_getters():
    ds = tf.data.Dataset.from_tensor_slices((np.zeros((3, 2), np.float32), np.arange(3)))
    spec = ds.element_spec
    assert spec[0] == tf.TensorSpec([2], tf.float32) and spec[1] == tf.TensorSpec([], tf.int64)
    assert tf.compat.v1.data.get_output_types(ds) == (tf.float32, tf.int64)
    assert tf.compat.v1.data.get_output_shapes(ds)[0].as_list() == [2]
    assert tf.compat.v1.data.get_output_classes(ds) == (tf.Tensor, tf.Tensor)
    with pytest.raises(RuntimeError, match="make_one_shot_iterator"):
        iter(ds)
