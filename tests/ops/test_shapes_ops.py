"""Shape ops against numpy: Reshape, Transpose, ExpandDims, Squeeze, Shape, Size, Rank."""
import numpy as np
import pytest
from op_checks import ARRAY_DTYPES, run, sample_any

import nbcluster as tf
from nbcluster.ops.shapes import rank, size

pytestmark = pytest.mark.timeout(60)


# -- Reshape ---------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", ARRAY_DTYPES + [object])
@pytest.mark.parametrize("source, target", [((6,), [2, 3]), ((2, 3), [-1]), ((2, 3), [3, -1]),
                                            ((1,), []), ((2, 3, 4), [4, -1, 2])])
def test_reshape_values_and_static_shape(dtype, source, target):
    value = sample_any(source, dtype)
    out = tf.reshape(tf.constant(value), target)
    expected = value.reshape(target)
    assert out.shape.as_list() == list(expected.shape)
    assert out.op.inputs[1].op.type == "Const" and out.op.get_attr("Tshape") == tf.int32
    np.testing.assert_array_equal(run(out), expected)


def test_reshape_partial_shapes():
    x = tf.placeholder(tf.float32, [None, 6])
    assert tf.reshape(x, [-1, 3]).shape.as_list() == [None, 3]
    assert tf.reshape(x, tf.placeholder(tf.int32, [3])).shape.as_list() == [None] * 3
    assert tf.reshape(x, tf.placeholder(tf.int32)).shape.rank is None
    y = tf.placeholder(tf.float32, [4, 5])
    assert tf.reshape(tf.zeros([20]), tf.shape(y)).shape.as_list() == [4, 5]
    z = tf.reshape(x, [tf.shape(x)[0], 2, 3]) if _has_getitem(x) else None
    if z is not None:
        assert z.shape.as_list() == [None, 2, 3]
    out = run(tf.reshape(x, [-1, 3]), {x: np.ones((2, 6))})
    assert out.shape == (4, 3)


def _has_getitem(x):
    try:
        x[0]
        return True
    except TypeError:
        return False


def test_reshape_build_errors():
    with pytest.raises(ValueError, match=r"Cannot reshape a tensor with 6 elements to shape "
                                         r"\[4\] \(4 elements\) for 'Reshape' \(op: 'Reshape'\) "
                                         r"with input shapes: \[2,3\], \[1\]"):
        tf.reshape(tf.zeros([2, 3]), [4], name="Reshape")
    with pytest.raises(ValueError, match=r"Cannot reshape a tensor with 6 elements to shape "
                                         r"\[4,\?\]"):
        tf.reshape(tf.zeros([2, 3]), [4, -1])
    with pytest.raises(ValueError, match="Shape must be rank 1 but is rank 2"):
        tf.reshape(tf.zeros([4]), [[2, 2]])
    with pytest.raises(TypeError, match="DataType float32 not in list of allowed values"):
        tf.reshape(tf.zeros([4]), [2.0, 2.0])


def test_reshape_runtime_errors():
    x = tf.placeholder(tf.float32)
    shape = tf.placeholder(tf.int32, [None])
    r = tf.reshape(x, shape)
    value = np.zeros((2, 3), np.float32)
    with pytest.raises(tf.errors.InvalidArgumentError,
                       match="Input to reshape is a tensor with 6 values, but the requested "
                             "shape has 4"):
        run(r, {x: value, shape: [4]})
    with pytest.raises(tf.errors.InvalidArgumentError, match="requires a multiple of 4"):
        run(r, {x: value, shape: [4, -1]})
    with pytest.raises(tf.errors.InvalidArgumentError, match="Only one input size may be -1"):
        run(r, {x: value, shape: [-1, -1]})
    np.testing.assert_array_equal(run(r, {x: value, shape: [3, -1]}), value.reshape(3, 2))


# -- Transpose -------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", ARRAY_DTYPES + [object])
@pytest.mark.parametrize("shape, perm", [((2, 3), None), ((2, 3, 4), None), ((2, 3, 4), [1, 0, 2]),
                                         ((5,), None), ((2, 3), [0, 1])])
def test_transpose_values(dtype, shape, perm):
    value = sample_any(shape, dtype)
    out = tf.transpose(tf.constant(value), perm)
    expected = np.transpose(value, perm)
    assert out.shape.as_list() == list(expected.shape) and out.op.type == "Transpose"
    result = run(out)
    np.testing.assert_array_equal(result, expected)
    assert result.flags.c_contiguous


def test_transpose_partial_and_unknown_rank():
    x = tf.placeholder(tf.float32, [None, 3])
    assert tf.transpose(x).shape.as_list() == [3, None]
    assert tf.transpose(x, tf.placeholder(tf.int32, [2])).shape.as_list() == [None, None]
    u = tf.placeholder(tf.float32)
    t = tf.transpose(u)
    assert t.shape.rank is None
    value = np.arange(24, dtype=np.float32).reshape(2, 3, 4)
    np.testing.assert_array_equal(run(t, {u: value}), value.T)


def test_transpose_errors():
    with pytest.raises(ValueError, match=r"Dimension must be 2 but is 3 for 'transpose' "
                                         r"\(op: 'Transpose'\) with input shapes: \[2,3\], \[3\]"):
        tf.transpose(tf.zeros([2, 3]), [0, 1, 2])
    with pytest.raises(ValueError, match="perm dim 2 is out of range of input rank 2"):
        tf.transpose(tf.zeros([2, 3]), [0, 2])
    x, perm = tf.placeholder(tf.float32), tf.placeholder(tf.int32)
    with pytest.raises(tf.errors.InvalidArgumentError,
                       match="transpose expects a vector of size 2"):
        run(tf.transpose(x, perm), {x: np.zeros((2, 3)), perm: [1, 0, 2]})


# -- ExpandDims / Squeeze --------------------------------------------------------------
@pytest.mark.parametrize("dtype", [np.float32, np.int64, np.bool_, object])
@pytest.mark.parametrize("shape, axis", [((), 0), ((2, 3), 0), ((2, 3), 1), ((2, 3), -1),
                                         ((2, 3), 2), ((2, 3), -3)])
def test_expand_dims(dtype, shape, axis):
    value = sample_any(shape, dtype)
    out = tf.expand_dims(tf.constant(value), axis)
    expected = np.expand_dims(value, axis)
    assert out.shape.as_list() == list(expected.shape) and out.op.type == "ExpandDims"
    np.testing.assert_array_equal(run(out), expected)


def test_expand_dims_partial_and_errors():
    x = tf.placeholder(tf.float32, [None, 3])
    assert tf.expand_dims(x, 1).shape.as_list() == [None, 1, 3]
    assert tf.expand_dims(x, tf.placeholder(tf.int32, [])).shape.as_list() == [None] * 3
    assert tf.expand_dims(x, dim=0).shape.as_list() == [1, None, 3]
    with pytest.raises(ValueError,
                       match="Tried to expand dim index 3 for tensor with 2 dimensions"):
        tf.expand_dims(x, 3)
    with pytest.raises(ValueError, match="Must specify an axis"):
        tf.expand_dims(x)


@pytest.mark.parametrize("dtype", [np.float16, np.int32, np.bool_, object])
@pytest.mark.parametrize("shape, axis", [((1, 2, 1, 3), None), ((1, 2, 1, 3), [0]),
                                         ((1, 2, 1, 3), [-2, 0]), ((1,), None), ((2, 3), None)])
def test_squeeze(dtype, shape, axis):
    value = sample_any(shape, dtype)
    out = tf.squeeze(tf.constant(value), axis)
    expected = np.squeeze(value, None if axis is None else tuple(axis))
    assert out.shape.as_list() == list(expected.shape)
    assert out.op.get_attr("squeeze_dims") == ([] if axis is None else axis)
    np.testing.assert_array_equal(run(out), expected)


def test_squeeze_partial_and_errors():
    x = tf.placeholder(tf.float32, [None, 1, 3])
    assert tf.squeeze(x).shape.rank is None
    assert tf.squeeze(x, [1]).shape.as_list() == [None, 3]
    assert tf.squeeze(x, [0]).shape.as_list() == [1, 3]
    assert tf.squeeze(x, 1).shape.as_list() == [None, 3]
    with pytest.raises(ValueError, match=r"Can not squeeze dim\[2\], expected a dimension of 1, "
                                         r"got 3 for 'Squeeze[_0-9]*' \(op: 'Squeeze'\)"):
        tf.squeeze(x, [2])
    with pytest.raises(ValueError, match="Tried to squeeze dim index 3 for tensor with 3"):
        tf.squeeze(x, [3])
    with pytest.raises(tf.errors.InvalidArgumentError, match=r"Can not squeeze dim\[0\]"):
        run(tf.squeeze(x, [0]), {x: np.zeros((2, 1, 3))})
    np.testing.assert_array_equal(run(tf.squeeze(x), {x: np.ones((1, 1, 3))}), np.ones(3))


# -- Shape / Size / Rank ---------------------------------------------------------------
def test_shape_size_rank_static_are_consts():
    c = tf.zeros([2, 3])
    for t, expected in [(tf.shape(c), [2, 3]), (size(c), 6), (rank(c), 2)]:
        assert t.op.type == "Const" and t.dtype == tf.int32
        np.testing.assert_array_equal(run(t), expected)
    assert tf.shape(c, out_type=tf.int64).dtype == tf.int64


@pytest.mark.parametrize("shape", [(), (5,), (2, 0, 3), (4, 1, 2, 3)])
def test_shape_size_rank_dynamic(shape):
    x = tf.placeholder(tf.float32)
    s, n, r = tf.shape(x), size(x, out_type=tf.int64), rank(x)
    assert [t.op.type for t in (s, n, r)] == ["Shape", "Size", "Rank"]
    assert s.shape.rank == 1 and s.shape[0] is None and n.shape.as_list() == []
    assert n.dtype == tf.int64 and r.dtype == tf.int32
    out_s, out_n, out_r = run([s, n, r], {x: np.zeros(shape)})
    np.testing.assert_array_equal(out_s, shape)
    assert out_s.dtype == np.int32 and out_n.dtype == np.int64
    assert out_n == int(np.prod(shape)) and out_r == len(shape)
    assert tf.shape(tf.placeholder(tf.float32, [None, 2])).shape.as_list() == [2]


def test_build_in_an_explicit_graph_and_name_scopes():
    graph = tf.Graph()
    with graph.as_default():
        x = tf.placeholder(tf.float32, [2, 3], name="x")
    out = tf.reshape(x, [3, 2], name="r")
    assert out.graph is graph and out.op.name == "r"
    assert out.op.inputs[1].op.name == "r/shape"


def test_shape_n_gives_every_input_its_shape():
    # TF's gradient of ConcatV2 builds ShapeN; GraphDefs TF serialized carry it
    x, y = tf.placeholder(tf.float32, [None, 3]), tf.placeholder(tf.int32)
    sx, sy = tf.shape_n([x, y], out_type=tf.int64)
    assert sx.op.type == "ShapeN" and sx.op is sy.op and sx.op.get_attr("N") == 2
    assert sx.shape.as_list() == [2] and sy.shape.rank == 1 and sx.dtype == tf.int64
    got = run([sx, sy], {x: np.zeros((4, 3)), y: np.zeros((2, 5, 1), np.int32)})
    np.testing.assert_array_equal(got[0], [4, 3])
    np.testing.assert_array_equal(got[1], [2, 5, 1])
    assert got[0].dtype == np.int64
    assert tf.gradients(tf.reduce_sum(tf.cast(sx, tf.float32)), [x]) == [None]


@pytest.mark.parametrize("axis", [[0], [1, 2], [-1], [], [2, 0, 1]])
def test_reverse_matches_numpy_flip(axis):
    # tf.reverse is TF's ReverseV2; TF-serialized GraphDefs carry it
    x = np.arange(24).reshape(2, 3, 4).astype(np.float32)
    t = tf.reverse(tf.constant(x), axis)
    assert t.op.type == "ReverseV2" and t.shape.as_list() == [2, 3, 4]
    np.testing.assert_array_equal(run(t), np.flip(x, tuple(axis)) if axis else x)


def test_reverse_refuses_a_repeated_or_out_of_range_axis():
    with pytest.raises(ValueError, match="axis -3 specified more than once"):
        tf.reverse(tf.ones([2, 3, 4]), [0, -3])
    with pytest.raises(ValueError, match=r"'axis'\[0\] = 3 is out of valid range \[-2, 1\]"):
        tf.reverse(tf.ones([2, 3]), [3])
    x, axis = tf.placeholder(tf.float32), tf.placeholder(tf.int32, [None])
    with tf.Session() as sess, pytest.raises(tf.errors.InvalidArgumentError,
                                             match="axis 1 specified more than once"):
        sess.run(tf.reverse(x, axis), {x: np.ones((2, 2)), axis: [1, 1]})
