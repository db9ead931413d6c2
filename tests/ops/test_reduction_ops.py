"""Reduction ops, argmax/argmin and range: values against numpy through a real
Session, static shapes and dtypes, and build-time and run-time errors."""
import numpy as np
import pytest
from op_checks import check, run, sample

import nbcluster as tf
from nbcluster import errors
from nbcluster.ops import reduction as m

pytestmark = pytest.mark.timeout(60)


# -- reductions ---------------------------------------------------------------------------
REDUCE = [(m.reduce_sum, np.sum), (m.reduce_mean, np.mean), (m.reduce_max, np.max),
          (m.reduce_min, np.min), (m.reduce_prod, np.prod)]
AXES = [None, 0, 1, -1, [0, 2], (-1, 0), []]


@pytest.mark.parametrize("fn,ref", REDUCE, ids=lambda f: getattr(f, "__name__", ""))
@pytest.mark.parametrize("axis", AXES, ids=str)
@pytest.mark.parametrize("keepdims", [False, True])
@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64, np.int64])
def test_reductions_match_numpy(fn, ref, axis, keepdims, dtype):
    # a product of 24 samples stays inside float16's range when they are small
    x = sample((2, 3, 4), dtype, *((-1.5, 1.5) if ref is np.prod else (-5, 5)))
    t = fn(tf.constant(x), axis=axis, keepdims=keepdims)
    np_axis = tuple(axis) if isinstance(axis, list) else axis
    expected = ref(x.astype(np.float64), axis=np_axis, keepdims=keepdims)
    if ref is np.mean and np.dtype(dtype).kind == "i":
        expected = np.trunc(expected)
    assert t.dtype == tf.as_dtype(dtype) and t.shape.as_list() == list(np.shape(expected))
    check(run(t), expected.astype(dtype), dtype)


def test_reduction_op_and_attrs():
    t = m.reduce_sum(tf.constant([[1, 2]]), 1, keep_dims=True)
    assert t.op.type == "Sum" and t.op.name == "Sum" and t.op.get_attr("keep_dims") is True
    assert t.op.get_attr("Tidx") == tf.int32 and t.op.inputs[1].dtype == tf.int32
    assert m.reduce_mean(tf.constant([1.0]), reduction_indices=[0]).shape.as_list() == []
    with pytest.raises(ValueError, match="Cannot specify both 'keepdims' and 'keep_dims'"):
        m.reduce_sum(tf.constant([1]), keepdims=True, keep_dims=True)
    with pytest.raises(ValueError, match="Cannot specify both 'axis' and 'reduction_indices'"):
        m.reduce_sum(tf.constant([1]), axis=0, reduction_indices=0)


def test_int_mean_truncates_and_int_sum_keeps_dtype():
    assert run(m.reduce_mean(tf.constant([-1, -2]))) == -1  # C division, not floor
    assert run(m.reduce_mean(tf.constant([1, 2]))) == 1
    big = tf.constant(np.full(4, 2 ** 30, np.int32))
    assert run(m.reduce_sum(big)).dtype == np.int32  # wraps, as TF's int32 sum does


def test_reduce_prod_op_and_empty_product():
    t = tf.reduce_prod(tf.constant(np.zeros((0, 2), np.float32)), 0, name="p")
    assert t.op.type == "Prod" and t.op.name == "p" and t.op.get_attr("T") == tf.float32
    assert run(t).tolist() == [1.0, 1.0]
    with pytest.raises(TypeError):
        tf.reduce_prod(tf.constant([True]))


def test_reduce_max_of_empty_is_the_identity():
    x = tf.constant(np.zeros((0, 2), np.float32))
    assert run(m.reduce_max(x, 0)).tolist() == [-np.inf, -np.inf]
    assert run(m.reduce_min(tf.constant(np.zeros((0,), np.int32)))) == np.iinfo(np.int32).max


def test_reductions_with_unknown_dims():
    x = tf.placeholder(tf.float32, [None, 3])
    assert m.reduce_sum(x, 1).shape.as_list() == [None]
    assert m.reduce_sum(x, 0, keepdims=True).shape.as_list() == [1, 3]
    assert m.reduce_sum(x).shape.as_list() == []
    axis = tf.placeholder(tf.int32)
    assert m.reduce_sum(x, axis).shape.rank is None
    assert m.reduce_sum(x, axis, keepdims=True).shape.as_list() == [None, None]
    feed = {x: np.ones((2, 3), np.float32), axis: 1}
    assert run(m.reduce_sum(x, axis), feed).tolist() == [3.0, 3.0]


def test_reduce_all_of_unknown_rank_reduces_at_run_time():
    x = tf.placeholder(tf.float32)
    t = m.reduce_sum(x)
    assert t.shape.rank is None
    assert run(t, {x: np.ones((2, 3, 4), np.float32)}) == 24.0


def test_bad_reduction_axis():
    with pytest.raises(ValueError, match=r"Invalid reduction dimension 2 for input with 2 "
                                         r"dimensions.*\[2,3\]"):
        m.reduce_sum(tf.zeros([2, 3]), 2)
    with pytest.raises(ValueError, match="Invalid reduction dimension -3"):
        m.reduce_max(tf.zeros([2, 3]), [0, -3])
    axis = tf.placeholder(tf.int32)
    with pytest.raises(errors.InvalidArgumentError, match="Invalid reduction dimension"):
        run(m.reduce_sum(tf.zeros([2, 3]), axis), {axis: 5})
    with pytest.raises(TypeError):
        m.reduce_sum(tf.constant([True]))


# -- argmax / argmin ---------------------------------------------------------------------
@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64, np.int32, np.int64])
@pytest.mark.parametrize("axis", [0, 1, -1])
def test_argmax_argmin(dtype, axis):
    x = sample((4, 5), dtype, -3, 3)  # small range: ties, where the first index wins
    for fn, ref in ((m.argmax, np.argmax), (m.argmin, np.argmin)):
        t = fn(tf.constant(x), axis)
        assert t.dtype == tf.int64 and t.op.get_attr("output_type") == tf.int64
        expected = ref(x, axis=axis)
        assert t.shape.as_list() == list(expected.shape)
        check(run(t), expected, np.int64)


def test_argmax_defaults_and_errors():
    x = tf.constant([[1, 9], [8, 2]])
    assert run(m.argmax(x)).tolist() == [1, 0]  # TF1: axis defaults to 0
    t = m.argmax(x, dimension=1, output_type=tf.int32)
    assert t.dtype == tf.int32 and run(t).tolist() == [1, 0]
    assert m.argmax(tf.placeholder(tf.float32, [None, 3]), 1).shape.as_list() == [None]
    with pytest.raises(ValueError, match=r"Expected dimension in the range \[-2, 2\)"):
        m.argmax(x, 2)
    with pytest.raises(TypeError):
        m.argmax(x, 0, output_type=tf.float32)


# -- range -----------------------------------------------------------------------------------
def test_range():
    assert run(m.range(5)).tolist() == [0, 1, 2, 3, 4]
    t = m.range(1, 2.0, 0.25)
    assert t.dtype == tf.float32 and t.shape.as_list() == [4]
    assert run(t).tolist() == [1.0, 1.25, 1.5, 1.75]
    assert run(m.range(5, 0, -2, dtype=tf.int64)).tolist() == [5, 3, 1]
    n = tf.placeholder(tf.int32, [])
    assert m.range(n).shape.as_list() == [None]
    assert run(m.range(n), {n: 3}).tolist() == [0, 1, 2]
    with pytest.raises(ValueError, match="Requires delta != 0"):
        m.range(0, 5, 0)
    with pytest.raises(errors.InvalidArgumentError, match="Requires start <= limit"):
        run(m.range(n, 2), {n: 4})


# -- reduce_all, reduce_any, count_nonzero -----------------------------------------------
@pytest.mark.parametrize("fn, op_type, ref", [(tf.reduce_all, "All", np.all),
                                              (tf.reduce_any, "Any", np.any)])
@pytest.mark.parametrize("axis", [None, 0, -1, [0, 2], []])
@pytest.mark.parametrize("keepdims", [False, True])
def test_logical_reductions_match_numpy(fn, op_type, ref, axis, keepdims):
    x = sample((2, 3, 4), np.float32) > 0
    t = fn(tf.constant(x), axis=axis, keepdims=keepdims)
    np_axis = tuple(axis) if isinstance(axis, list) else axis
    expected = ref(x, axis=np_axis, keepdims=keepdims)
    assert t.op.type == op_type and t.dtype == tf.bool
    assert t.shape.as_list() == list(np.shape(expected))
    got = run(t)
    assert got.dtype == np.bool_
    np.testing.assert_array_equal(got, expected)


def test_logical_reductions_empty_unknown_and_errors():
    p = tf.placeholder(tf.bool, None)
    assert tf.reduce_all(p, 1).shape.rank is None
    empty = np.zeros((2, 0), bool)
    np.testing.assert_array_equal(run(tf.reduce_all(p, 1), {p: empty}), [True, True])
    np.testing.assert_array_equal(run(tf.reduce_any(p, 1), {p: empty}), [False, False])
    assert run(tf.reduce_any(p), {p: empty}) == np.False_
    assert "T" not in tf.reduce_all(p).op.node_def.attr
    with pytest.raises(TypeError, match="'input' has DataType float32"):
        tf.reduce_any(tf.constant([1.0]))
    with pytest.raises(ValueError, match="Invalid reduction dimension 2"):
        tf.reduce_all(tf.constant([[True]]), 2)


@pytest.mark.parametrize("dtype", [np.float32, np.int32, np.bool_])
def test_count_nonzero(dtype):
    x = (sample((3, 4), np.float32) > 1).astype(dtype) * (1 if dtype == np.bool_ else 3)
    x = x.astype(dtype)
    t = tf.count_nonzero(tf.constant(x), axis=1)
    assert t.dtype == tf.int64 and t.shape.as_list() == [3]
    np.testing.assert_array_equal(run(t), np.count_nonzero(x, axis=1))
    total = tf.count_nonzero(x, keepdims=True, dtype=tf.int32)
    assert total.dtype == tf.int32 and total.shape.as_list() == [1, 1]
    assert run(total)[0, 0] == np.count_nonzero(x)
    assert tf.math.count_nonzero is tf.count_nonzero


# -- Cumsum / Cumprod --------------------------------------------------------------------
def _numpy_scan(fn, x, axis, exclusive, reverse, identity):
    x = np.flip(x, axis) if reverse else x
    out = fn(x, axis=axis, dtype=x.dtype)
    if exclusive:
        out = np.concatenate([np.full_like(np.take(out, [0], axis), identity),
                              np.take(out, np.arange(x.shape[axis] - 1), axis)], axis)
    return np.flip(out, axis) if reverse else out


@pytest.mark.parametrize("op, fn, identity", [(tf.cumsum, np.cumsum, 0),
                                              (tf.cumprod, np.cumprod, 1)])
@pytest.mark.parametrize("exclusive", [False, True])
@pytest.mark.parametrize("reverse", [False, True])
@pytest.mark.parametrize("dtype, axis", [(np.float32, 1), (np.int64, -3), (np.float64, 0)])
def test_scans_match_numpy(op, fn, identity, exclusive, reverse, dtype, axis):
    # TF's gradient of reduce_prod builds Cumprods; TF-serialized GraphDefs carry them
    x = np.arange(1, 25).reshape(3, 2, 4).astype(dtype) % 5 + 1
    t = op(tf.constant(x), axis, exclusive=exclusive, reverse=reverse)
    assert t.op.type == ("Cumsum" if op is tf.cumsum else "Cumprod")
    assert t.dtype == tf.as_dtype(dtype) and t.shape.as_list() == [3, 2, 4]
    got = run(t)
    assert got.dtype == dtype
    np.testing.assert_array_equal(got, _numpy_scan(fn, x, axis, exclusive, reverse, identity))


def test_scan_refuses_an_axis_out_of_range_naming_it():
    x = tf.placeholder(tf.float32)
    with tf.Session() as sess, pytest.raises(tf.errors.InvalidArgumentError,
                                             match=r"axis must be in \[-2, 2\), got 2"):
        sess.run(tf.cumsum(x, 2), {x: np.ones((2, 2), np.float32)})
    with pytest.raises(ValueError, match="axis must be a scalar"):
        tf.cumsum(tf.ones([2]), [0])
