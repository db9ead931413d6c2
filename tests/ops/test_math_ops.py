"""Math ops: values against numpy through a real Session, static shapes and dtypes,
build-time errors, and the Python operators on Tensors. Reductions, argmax/argmin
and range are in test_reduction_ops.py; matmul in test_linalg_ops.py."""
import warnings

import numpy as np
import pytest
from op_checks import check, run, sample

import nbcluster as tf
from nbcluster import errors
from nbcluster.ops import math as m
from nbcluster.ops import reduction as r

pytestmark = pytest.mark.timeout(60)


# -- element-wise -----------------------------------------------------------------
BINARY = [(m.add, np.add), (m.subtract, np.subtract), (m.multiply, np.multiply),
          (m.maximum, np.maximum), (m.minimum, np.minimum)]
SHAPES = [((2, 3), (2, 3)), ((2, 3), (3,)), ((4, 1, 3), (1, 5, 1)), ((), (2,)), ((0, 3), (1, 3))]
DTYPES = [np.float16, np.float32, np.float64, np.int32, np.int64]


@pytest.mark.parametrize("fn,ref", BINARY, ids=lambda f: getattr(f, "__name__", ""))
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shapes", SHAPES, ids=str)
def test_binary_matches_numpy(fn, ref, dtype, shapes):
    x, y = sample(shapes[0], dtype), sample(shapes[1], dtype)
    t = fn(tf.constant(x), tf.constant(y))
    assert t.dtype == tf.as_dtype(dtype)
    assert t.shape.as_list() == list(np.broadcast_shapes(x.shape, y.shape))
    check(run(t), ref(x, y), dtype)


COMPARE = [(m.equal, np.equal), (m.not_equal, np.not_equal), (m.less, np.less),
           (m.less_equal, np.less_equal), (m.greater, np.greater),
           (m.greater_equal, np.greater_equal)]


@pytest.mark.parametrize("fn,ref", COMPARE, ids=lambda f: getattr(f, "__name__", ""))
@pytest.mark.parametrize("dtype", DTYPES)
def test_comparisons_give_bool(fn, ref, dtype):
    x, y = sample((3, 4), dtype, -2, 2), sample((4,), dtype, -2, 2)
    t = fn(x, tf.constant(y))
    assert t.dtype == tf.bool and t.shape.as_list() == [3, 4]
    check(run(t), ref(x, y), np.bool_)


def test_equal_on_bool_and_string():
    assert run(m.equal([True, False], [True, True])).tolist() == [True, False]
    assert run(m.not_equal(tf.constant(["a", "b"]), "a")).tolist() == [False, True]


UNARY = [(m.negative, np.negative, -5), (m.square, np.square, -5), (m.sqrt, np.sqrt, 0),
         (m.exp, np.exp, -5), (m.log, np.log, 0.1), (m.log1p, np.log1p, -0.5),
         (m.tanh, np.tanh, -5),
         (m.abs, np.abs, -5), (m.reciprocal, np.reciprocal, 0.1),
         (m.rsqrt, lambda v: 1 / np.sqrt(v), 0.1)]


@pytest.mark.parametrize("fn,ref,low", UNARY, ids=lambda f: getattr(f, "__name__", ""))
@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64])
@pytest.mark.parametrize("shape", [(), (5,), (2, 3, 4)], ids=str)
def test_unary_float_matches_numpy(fn, ref, low, dtype, shape):
    x = sample(shape, dtype, low, 5)
    t = fn(tf.constant(x))
    assert t.dtype == tf.as_dtype(dtype) and t.shape.as_list() == list(shape)
    check(run(t), ref(x), dtype)


@pytest.mark.parametrize("fn,ref", [(m.negative, np.negative), (m.square, np.square),
                                    (m.abs, np.abs)])
@pytest.mark.parametrize("dtype", [np.int8, np.int32, np.int64])
def test_unary_int_matches_numpy(fn, ref, dtype):
    x = sample((3, 3), dtype, -9, 9)
    check(run(fn(tf.constant(x))), ref(x), dtype)


@pytest.mark.parametrize("fn", [m.sqrt, m.exp, m.log, m.log1p, m.tanh, m.reciprocal,
                                m.rsqrt])
def test_float_only_unary_refuses_ints(fn):
    with pytest.raises(TypeError, match="int32 not in list of allowed values"):
        fn(tf.constant([1, 2]))


def test_log_and_div_edge_values_do_not_warn():
    with warnings.catch_warnings():  # global, so it also sees executor threads
        warnings.simplefilter("error", RuntimeWarning)
        out = run([m.log(tf.constant([0.0, -1.0])), tf.constant([1.0, 0.0]) / 0.0])
    assert out[0][0] == -np.inf and np.isnan(out[0][1])
    assert out[1][0] == np.inf and np.isnan(out[1][1])


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int32, np.int64])
def test_pow(dtype):
    x, y = sample((2, 3), dtype, 1, 4), sample((3,), dtype, 0, 3)
    check(run(m.pow(tf.constant(x), tf.constant(y))), np.power(x, y), dtype)


def test_int_pow_to_negative_power_fails_at_run_time():
    with pytest.raises(errors.InvalidArgumentError):
        run(m.pow(tf.constant([2]), tf.constant([-1])))


# -- division -----------------------------------------------------------------------
@pytest.mark.parametrize("dtype,out", [(np.float16, np.float16), (np.float32, np.float32),
                                       (np.float64, np.float64), (np.int8, np.float32),
                                       (np.int16, np.float32), (np.uint8, np.float32),
                                       (np.int32, np.float64), (np.int64, np.float64)])
def test_divide_is_python3_truediv(dtype, out):
    x, y = sample((2, 3), dtype, 1, 9), sample((3,), dtype, 1, 9)
    t = m.divide(tf.constant(x), tf.constant(y))
    assert t.dtype == tf.as_dtype(out) and t.op.type == "RealDiv" and t.op.name == "truediv"
    check(run(t), x.astype(out) / y.astype(out), out)


def test_divide_refuses_unsigned_32_and_bool():
    with pytest.raises(TypeError, match="Invalid dtype"):
        m.divide(tf.constant(np.uint32([1])), tf.constant(np.uint32([1])))
    with pytest.raises(TypeError, match="same dtype"):
        m.divide(tf.constant([1.0]), tf.constant([1]))


def test_realdiv_is_float_only():
    assert run(m.realdiv(tf.constant([3.0]), 2.0)).tolist() == [1.5]
    with pytest.raises(TypeError, match="allowed values"):
        m.realdiv(tf.constant([3]), 2)


# -- dtypes of mixed arguments --------------------------------------------------------
def test_python_scalars_take_the_tensor_dtype():
    x = tf.constant([1.0, 2.0], dtype=tf.float16)
    for t in (x * 2.0, 2.0 * x, x + 1, 1 - x, x / 2, 3 / x, m.add(1, x), m.maximum(x, 0)):
        assert t.dtype == tf.float16
    assert (tf.constant([1, 2], dtype=tf.int64) + 1).dtype == tf.int64


def test_python_value_that_does_not_fit_the_dtype_is_a_type_error():
    with pytest.raises(TypeError):
        tf.constant([1, 2]) + 0.5


def test_mismatched_tensor_dtypes_are_type_errors():
    with pytest.raises(TypeError, match="Input 'y' of 'AddV2' Op has type int32 that does not "
                                        "match type float32 of argument 'x'"):
        m.add(tf.constant([1.0]), tf.constant([1]))
    with pytest.raises(TypeError, match="does not match"):
        tf.constant([1.0]) * tf.constant([1], dtype=tf.int64)


def test_numeric_ops_refuse_bool():
    with pytest.raises(TypeError, match="DataType bool not in list of allowed values"):
        m.add(tf.constant([True]), tf.constant([False]))


# -- static shapes ---------------------------------------------------------------------
def test_unknown_dims_broadcast_statically():
    x = tf.placeholder(tf.float32, [None, 3])
    assert (x + tf.constant([1.0, 2.0, 3.0])).shape.as_list() == [None, 3]
    assert (x * tf.placeholder(tf.float32, [5, 1, 1])).shape.as_list() == [5, None, 3]
    assert (m.exp(x)).shape.as_list() == [None, 3]
    assert (x + tf.placeholder(tf.float32)).shape.rank is None
    out = run(x + 1.0, {x: np.ones((4, 3), np.float32)})
    assert out.shape == (4, 3) and (out == 2).all()


def test_incompatible_shapes_fail_at_build_time_naming_both():
    with pytest.raises(ValueError, match=r"Dimensions must be equal, but are 3 and 4.*"
                                         r"\[2,3\], \[2,4\]"):
        m.add(tf.constant(np.zeros((2, 3))), tf.constant(np.zeros((2, 4))))
    with pytest.raises(ValueError, match=r"\[\?,3\], \[2\]"):
        tf.placeholder(tf.float32, [None, 3]) < tf.constant([1.0, 2.0])


def test_runtime_shape_mismatch_is_invalid_argument():
    x = tf.placeholder(tf.float32, [None])
    with pytest.raises(errors.InvalidArgumentError):
        run(x + tf.constant([1.0, 2.0]), {x: np.ones(3, np.float32)})


# -- cast ------------------------------------------------------------------------------
def test_cast():
    x = tf.constant([1.7, -1.7, 0.0, 2.5])
    t = m.cast(x, tf.int32)
    assert t.op.type == "Cast" and t.op.get_attr("SrcT") == tf.float32
    assert t.op.get_attr("DstT") == tf.int32
    assert run(t).tolist() == [1, -1, 0, 2]  # truncation toward zero, as C++ casts
    assert run(m.cast(x, tf.bool)).tolist() == [True, True, False, True]
    assert run(m.cast(tf.constant([True, False]), tf.float16)).dtype == np.float16
    assert run(m.cast(tf.constant(np.int64(2 ** 40)), tf.float64)) == 2.0 ** 40
    assert run(m.cast(tf.constant(np.complex64(3 + 4j)), tf.float32)) == 3.0


def test_cast_to_own_dtype_adds_no_op():
    x = tf.constant([1.0])
    assert m.cast(x, tf.float32) is x
    assert m.cast([1, 2], "float32").dtype == tf.float32


# -- Python operators and op names --------------------------------------------------------
def test_operators_match_numpy():
    a, b = sample((2, 3), np.float32, 1, 3), sample((3,), np.float32, 1, 3)
    x, y = tf.constant(a), tf.constant(b)
    got = run([x + y, x - y, x * y, x / y, -x, abs(-x), x ** 2.0, 2.0 ** b * x,
               1.0 + x, 1.0 - x, 2.0 * x, 1.0 / x, x < y, x <= y, x > y, x >= y,
               x @ tf.constant(a.T), a @ tf.constant(a.T), tf.constant(a) @ a.T])
    want = [a + b, a - b, a * b, a / b, -a, a, a ** 2, 2.0 ** b * a, 1 + a, 1 - a, 2 * a,
            1 / a, a < b, a <= b, a > b, a >= b, a @ a.T, a @ a.T, a @ a.T]
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=1e-5)


def test_operator_op_names_follow_tf1():
    x = tf.constant([1.0])
    names = [(x + 1).op.name, (x + 1).op.name, (x * x).op.name, (x - x).op.name,
             (x / x).op.name, (-x).op.name, (x ** 2).op.name, (x < x).op.name,
             abs(x).op.name]
    assert names == ["add", "add_1", "mul", "sub", "truediv", "Neg", "pow", "Less", "Abs"]
    assert (x + 1).op.inputs[1].op.name == "add_2/y"
    assert (1 - x).op.inputs[0].op.name == "sub_1/x"
    assert [m.add(x, x).op.name, m.add(x, x).op.name, m.add(x, x, name="s").op.name] == \
        ["AddV2", "AddV2_1", "s"]
    assert tf.matmul(tf.zeros([1, 1]), tf.zeros([1, 1])).op.name == "MatMul"


def test_tensor_equality_stays_identity():
    x = tf.constant([1.0])
    assert (x == x) is True and (x != tf.constant([1.0])) is True


def test_kernels_leave_read_only_inputs_untouched():
    a = sample((3, 4), np.float32, 0.5, 2)
    b = sample((3, 4), np.float32, 0.5, 2)
    for arr in (a, b):
        arr.flags.writeable = False
    saved = a.copy(), b.copy()
    x, y = tf.placeholder(tf.float32, [3, 4]), tf.constant(b)
    fetches = [x + y, x - y, x * y, x / y, -x, abs(x), x ** y, m.square(x), m.sqrt(x),
               m.exp(x), m.log(x), m.tanh(x), m.maximum(x, y), m.minimum(x, y),
               m.equal(x, y), x < y, m.cast(x, tf.int32), tf.matmul(x, y, transpose_b=True),
               r.reduce_sum(x), r.reduce_mean(x, 0), r.reduce_max(x, 1), r.reduce_min(x),
               r.argmax(x, 1), r.argmin(x, 0)]
    run(fetches, {x: a})
    np.testing.assert_array_equal(a, saved[0])
    np.testing.assert_array_equal(b, saved[1])


@pytest.mark.parametrize("dtype", [np.int32, np.int64, np.float32, np.float64])
def test_floordiv_and_floormod_round_like_python(dtype):
    x = np.array([7, -7, 7, -7, 0], dtype)
    y = np.array([2, 2, -2, -2, 3], dtype)
    with tf.Session() as sess:
        q, r, q2, r2 = sess.run([tf.floordiv(x, y), tf.floormod(x, y),
                                 tf.constant(x) // 2, tf.constant(x) % 3])
    np.testing.assert_array_equal(q, x // y)
    np.testing.assert_array_equal(r, x % y)  # the divisor's sign, as Python and TF
    np.testing.assert_array_equal(q2, x // 2)
    np.testing.assert_array_equal(r2, x % 3)
    assert tf.mod is tf.floormod and tf.math.floormod is tf.floormod


def test_integer_floordiv_by_zero_is_an_error_naming_it():
    with tf.Session() as sess:
        with pytest.raises(tf.errors.InvalidArgumentError, match="Integer division by zero"):
            sess.run(tf.floordiv(tf.constant([1, 2]), tf.constant([1, 0])))


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int32, np.int64])
def test_squared_difference_broadcasts_like_numpy(dtype):
    # TF's tf.nn.moments builds SquaredDifference; TF-serialized GraphDefs carry it
    x, y = sample((3, 4), dtype, -5, 5), sample((4,), dtype, -5, 5)
    t = m.squared_difference(tf.constant(x), tf.constant(y))
    assert t.op.type == "SquaredDifference" and t.shape.as_list() == [3, 4]
    check(run(t), (x - y) * (x - y), dtype)
