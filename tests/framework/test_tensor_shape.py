"""TensorShape: partial shapes, compatibility and merging, as tf.TensorShape."""
import pytest

import nbcluster as tf
from nbcluster.framework.tensor_shape import broadcast, scalar, unknown_shape

pytestmark = pytest.mark.timeout(60)


def test_known_partial_and_unknown():
    s = tf.TensorShape([2, None, 3])
    assert s.rank == s.ndims == 3 and len(s) == 3
    assert s.as_list() == [2, None, 3] and s[0] == 2 and s[1] is None
    assert s[1:] == tf.TensorShape([None, 3])
    assert not s.is_fully_defined() and s.num_elements() is None
    assert tf.TensorShape([2, 3]).num_elements() == 6
    assert scalar().rank == 0 and scalar().num_elements() == 1
    u = tf.TensorShape(None)
    assert u.rank is None and u.dims is None and unknown_shape() == u
    assert unknown_shape(2).as_list() == [None, None]
    with pytest.raises(ValueError):
        u.as_list()


def test_compatibility_and_merge():
    a = tf.TensorShape([None, 3])
    assert a.is_compatible_with([5, 3]) and a.is_compatible_with(tf.TensorShape(None))
    assert not a.is_compatible_with([5, 4]) and not a.is_compatible_with([3])
    assert a.merge_with([5, None]).as_list() == [5, 3]
    assert tf.TensorShape(None).merge_with(a) == a
    with pytest.raises(ValueError):
        a.merge_with([5, 4])
    with pytest.raises(ValueError):
        a.assert_is_compatible_with([1, 2, 3])


def test_equality_and_str():
    assert tf.TensorShape([1, 2]) == [1, 2] and tf.TensorShape([1, 2]) != [2, 1]
    assert tf.TensorShape([-1, 2]).as_list() == [None, 2]
    assert str(tf.TensorShape([None, 3])) == "(None, 3)"
    assert str(tf.TensorShape([3])) == "(3,)"
    assert str(tf.TensorShape(None)) == "<unknown>"


def test_bad_dims():
    with pytest.raises(TypeError):
        tf.TensorShape(["a"])
    with pytest.raises(ValueError):
        tf.TensorShape([-2])


def test_broadcast():
    assert broadcast(tf.TensorShape([2, 1]), tf.TensorShape([3])).as_list() == [2, 3]
    assert broadcast(tf.TensorShape([None, 1]), tf.TensorShape([4])).as_list() == [None, 4]
    assert broadcast(tf.TensorShape(None), tf.TensorShape([4])).rank is None
    with pytest.raises(ValueError, match="Dimensions must be equal"):
        broadcast(tf.TensorShape([2]), tf.TensorShape([3]))


def test_static_shapes_of_built_tensors():
    with tf.Graph().as_default():
        p = tf.placeholder(tf.float32, [None, 4])
        assert p.shape.as_list() == [None, 4]
        assert tf.placeholder(tf.float32).shape.rank is None
        assert tf.constant([[1, 2, 3]]).shape == tf.TensorShape([1, 3])
