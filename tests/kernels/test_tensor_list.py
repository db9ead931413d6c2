"""TensorList kernels: the lists TF2's while loops keep their intermediates in, as values."""
from __future__ import annotations

import numpy as np
import pytest

import nbcluster as tf
from nbcluster import errors


def _op(op_type: str, inputs: list, attrs: dict, outputs: int = 1):
    op = tf.get_default_graph().create_op(op_type, inputs, attrs)
    return op.outputs if outputs > 1 else op.outputs[0]


def _empty(shape=(2,)):
    return _op("EmptyTensorList", [tf.constant(np.array(shape, np.int32)), tf.constant(-1)],
               {"element_dtype": tf.float32, "shape_type": tf.int32})


def _push(handle, value):
    return _op("TensorListPushBack", [handle, tf.constant(np.asarray(value, np.float32))],
               {"element_dtype": tf.float32})


def _pop(handle, shape=(2,)):
    return _op("TensorListPopBack", [handle, tf.constant(np.array(shape, np.int32))],
               {"element_dtype": tf.float32}, outputs=2)


def _stack(handle, shape=(2,)):
    return _op("TensorListStack", [handle, tf.constant(np.array(shape, np.int32))],
               {"element_dtype": tf.float32})


def test_pushed_elements_pop_back_last_first_and_stack_in_order():
    with tf.Graph().as_default(), tf.Session() as sess:
        lst = _push(_push(_empty(), [1, 2]), [3, 4])
        rest, last = _pop(lst)
        length = _op("TensorListLength", [lst], {})
        stacked, last, rest_len, n = sess.run(
            [_stack(lst), last, _op("TensorListLength", [rest], {}), length])
    np.testing.assert_array_equal(stacked, [[1, 2], [3, 4]])
    np.testing.assert_array_equal(last, [3, 4])
    assert (rest_len, n) == (1, 2)


def test_a_push_leaves_the_list_it_pushed_onto_unchanged():
    with tf.Graph().as_default(), tf.Session() as sess:
        one = _push(_empty(), [1, 2])
        two = _push(one, [3, 4])
        a, b = sess.run([_stack(one), _stack(two)])
    assert a.shape == (1, 2) and b.shape == (2, 2)


def test_popping_an_empty_list_is_an_invalid_argument():
    with tf.Graph().as_default(), tf.Session() as sess:
        _, value = _pop(_empty())
        with pytest.raises(errors.InvalidArgumentError, match="pop from an empty list"):
            sess.run(value)


def test_a_pushed_element_of_the_wrong_shape_or_dtype_is_refused():
    with tf.Graph().as_default(), tf.Session() as sess:
        with pytest.raises(errors.InvalidArgumentError, match=r"shape \[3\]"):
            sess.run(_stack(_push(_empty(), [1, 2, 3])))
        wrong = _op("TensorListPushBack", [_empty(), tf.constant(np.int32([1, 2]))],
                    {"element_dtype": tf.float32})
        with pytest.raises(errors.InvalidArgumentError, match="int32"):
            sess.run(_stack(wrong))


def test_reserved_elements_read_as_zeros_until_set():
    with tf.Graph().as_default(), tf.Session() as sess:
        shape = tf.constant(np.array([2], np.int32))
        lst = _op("TensorListReserve", [shape, tf.constant(3)],
                  {"element_dtype": tf.float32, "shape_type": tf.int32})
        lst = _op("TensorListSetItem", [lst, tf.constant(1), tf.constant(np.float32([5, 6]))],
                  {"element_dtype": tf.float32})
        got = _op("TensorListGetItem", [lst, tf.constant(1), shape],
                  {"element_dtype": tf.float32})
        np.testing.assert_array_equal(sess.run(_stack(lst)), [[0, 0], [5, 6], [0, 0]])
        np.testing.assert_array_equal(sess.run(got), [5, 6])
        outside = _op("TensorListSetItem", [lst, tf.constant(3), tf.constant(np.float32([1, 1]))],
                      {"element_dtype": tf.float32})
        with pytest.raises(errors.InvalidArgumentError, match="element 3 in a list with 3"):
            sess.run(_stack(outside))


def test_a_list_from_a_tensor_has_its_rows_and_their_shape():
    with tf.Graph().as_default(), tf.Session() as sess:
        lst = _op("TensorListFromTensor", [tf.constant(np.arange(6, dtype=np.float32)
                                                       .reshape(3, 2)),
                                           tf.constant(np.array([2], np.int32))],
                  {"element_dtype": tf.float32, "shape_type": tf.int32})
        shape = _op("TensorListElementShape", [lst], {"shape_type": tf.int32})
        rows, dims = sess.run([_stack(lst), shape])
    np.testing.assert_array_equal(rows, np.arange(6).reshape(3, 2))
    np.testing.assert_array_equal(dims, [2])
