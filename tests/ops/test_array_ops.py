"""Array ops against numpy: values through Session, static shapes, build errors."""
import numpy as np
import pytest

import nbcluster as tf
from nbcluster.kernels.registry import get_kernel_factory
from nbcluster.ops.array import rank, size
from nbcluster.runtime.devices import local_devices

pytestmark = pytest.mark.timeout(60)

NUMERIC = [np.float16, np.float32, np.float64, np.int32, np.int64]
ALL = NUMERIC + [np.bool_]
SHAPES = [(), (4,), (2, 3), (2, 1, 3)]



def run(fetches, feed_dict=None):
    with tf.Session() as sess:
        return sess.run(fetches, feed_dict)


def sample(shape, dtype):
    rng = np.random.default_rng(0)
    if dtype == np.bool_:
        return rng.random(shape) > 0.5
    if dtype == object:
        return np.array([str(v).encode() for v in rng.integers(0, 99, int(np.prod(shape)))],
                        dtype=object).reshape(shape)
    return (rng.standard_normal(shape) * 10).astype(dtype)


def ops_of_type(graph, op_type):
    return [op for op in graph.get_operations() if op.type == op_type]


# -- Const, Identity, Placeholder ------------------------------------------------------
@pytest.mark.parametrize("dtype", ALL + [object])
@pytest.mark.parametrize("shape", SHAPES)
def test_const_identity_placeholder_values(dtype, shape):
    value = sample(shape, dtype)
    tf_dtype = tf.string if dtype == object else tf.as_dtype(dtype)
    c = tf.constant(value, dtype=tf_dtype)
    x = tf.placeholder(tf_dtype, shape)
    out_c, out_i, out_x = run([c, tf.identity(c), tf.identity(x)], {x: value})
    for out in (out_c, out_i, out_x):
        np.testing.assert_array_equal(out, value)
    assert tf.identity(x).dtype == tf_dtype and tf.identity(x).shape == tf.TensorShape(shape)


def test_const_kernel_returns_one_read_only_array():
    value = np.arange(6, dtype=np.float32).reshape(2, 3)
    op = tf.constant(value).op
    compute = get_kernel_factory("Const", "CPU")(op.to_node(), local_devices("localhost", 0)[0])
    (first,), (second,) = compute(None), compute(None)
    assert first is second
    assert not first.flags.writeable
    np.testing.assert_array_equal(first, value)
    with pytest.raises(ValueError):
        first[0, 0] = 7


def test_placeholder_static_shape_and_attrs():
    x = tf.placeholder(tf.float32, [None, 3], name="x")
    assert x.shape.as_list() == [None, 3] and x.op.type == "Placeholder"
    assert x.op.get_attr("dtype") == tf.float32
    y = tf.placeholder(tf.int32)
    assert y.shape.rank is None and y.name == "Placeholder:0"


@pytest.mark.parametrize("dtype, shape, message", [
    (tf.float32, [None, 3], "with dtype float and shape [?,3]"),
    (tf.float64, [2], "with dtype double and shape [2]"),
    (tf.int32, None, "with dtype int32"),
    (tf.string, [], "with dtype string"),
])
def test_unfed_placeholder_raises_invalid_argument(dtype, shape, message):
    x = tf.placeholder(dtype, shape, name="x")
    with pytest.raises(tf.errors.InvalidArgumentError) as info:
        run(tf.identity(x))
    text = info.value.message
    assert "You must feed a value for placeholder tensor 'x' " + message in text
    if shape is None or shape == []:
        assert " and shape" not in text


def test_placeholder_with_default():
    d = tf.placeholder_with_default([[1.0, 2.0]], shape=[None, 2])
    assert d.op.type == "PlaceholderWithDefault" and d.shape.as_list() == [None, 2]
    np.testing.assert_array_equal(run(d), [[1.0, 2.0]])
    fed = np.ones((3, 2), np.float32)
    np.testing.assert_array_equal(run(d, {d: fed}), fed)
    with pytest.raises(ValueError, match=r"Dimension 1 in both shapes must be equal, but are "
                                         r"2 and 3.*PlaceholderWithDefault"):
        tf.placeholder_with_default([[1.0, 2.0]], shape=[None, 3])


# -- Reshape ---------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", ALL + [object])
@pytest.mark.parametrize("source, target", [((6,), [2, 3]), ((2, 3), [-1]), ((2, 3), [3, -1]),
                                            ((1,), []), ((2, 3, 4), [4, -1, 2])])
def test_reshape_values_and_static_shape(dtype, source, target):
    value = sample(source, dtype)
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
@pytest.mark.parametrize("dtype", ALL + [object])
@pytest.mark.parametrize("shape, perm", [((2, 3), None), ((2, 3, 4), None), ((2, 3, 4), [1, 0, 2]),
                                         ((5,), None), ((2, 3), [0, 1])])
def test_transpose_values(dtype, shape, perm):
    value = sample(shape, dtype)
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
    value = sample(shape, dtype)
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
    value = sample(shape, dtype)
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


# -- ConcatV2 / Pack -------------------------------------------------------------------
@pytest.mark.parametrize("dtype", ALL + [object])
@pytest.mark.parametrize("shapes, axis", [([(2, 3), (4, 3)], 0), ([(2, 3), (2, 1), (2, 2)], 1),
                                          ([(2, 3), (2, 2)], -1), ([(3,), (0,)], 0)])
def test_concat(dtype, shapes, axis):
    values = [sample(s, dtype) for s in shapes]
    out = tf.concat([tf.constant(v) for v in values], axis)
    expected = np.concatenate(values, axis)
    assert out.op.type == "ConcatV2" and out.op.get_attr("N") == len(values)
    assert out.shape.as_list() == list(expected.shape)
    np.testing.assert_array_equal(run(out), expected)


def test_concat_partial_shapes_and_single_value():
    a = tf.placeholder(tf.float32, [None, 3])
    b = tf.placeholder(tf.float32, [2, None])
    assert tf.concat([a, b], 0).shape.as_list() == [None, 3]
    assert tf.concat([a, b], 1).shape.as_list() == [2, None]
    assert tf.concat([a, tf.placeholder(tf.float32)], 0).shape.as_list() == [None, 3]
    assert tf.concat([a, b], tf.placeholder(tf.int32, [])).shape.as_list() == [None, None]
    one = tf.concat([a], 0)
    assert one.op.type == "Identity" and one.shape.as_list() == [None, 3]
    mixed = tf.concat([tf.constant([1.0]), [2, 3]], 0)
    np.testing.assert_array_equal(run(mixed), np.array([1, 2, 3], np.float32))


def test_concat_errors():
    with pytest.raises(ValueError, match=r"Shape must be rank 2 but is rank 1 for 'concat' "
                                         r"\(op: 'ConcatV2'\) with input shapes: "
                                         r"\[2,3\], \[3\], \[\]"):
        tf.concat([tf.zeros([2, 3]), tf.zeros([3])], 0)
    with pytest.raises(ValueError, match="Dimension 1 in both shapes must be equal, but are 3 "
                                         "and 4"):
        tf.concat([tf.zeros([2, 3]), tf.zeros([2, 4])], 0)
    with pytest.raises(ValueError, match=r"Expected concatenating dimensions in the range "
                                         r"\[-2, 2\), but got 2"):
        tf.concat([tf.zeros([2, 3]), tf.zeros([2, 4])], 2)
    with pytest.raises(TypeError, match=r"Tensors in list passed to 'values' of 'ConcatV2' Op "
                                        r"have types \[float32, int32\] that don't all match"):
        tf.concat([tf.zeros([2]), tf.zeros([2], tf.int32)], 0)
    a, b = tf.placeholder(tf.float32), tf.placeholder(tf.float32)
    with pytest.raises(tf.errors.InvalidArgumentError,
                       match=r"ConcatOp : Dimensions of inputs should match: shape\[0\] = "
                             r"\[2,3\] vs. shape\[1\] = \[2,4\]"):
        run(tf.concat([a, b], 0), {a: np.zeros((2, 3)), b: np.zeros((2, 4))})


@pytest.mark.parametrize("dtype", ALL + [object])
@pytest.mark.parametrize("shape, axis", [((), 0), ((3,), 0), ((3,), 1), ((2, 3), -1), ((2, 3), 1)])
def test_stack(dtype, shape, axis):
    values = [sample(shape, dtype), sample(shape, dtype)[::-1] if shape else sample(shape, dtype)]
    out = tf.stack([tf.constant(v) for v in values], axis)
    expected = np.stack(values, axis)
    assert out.op.type == "Pack" and out.op.get_attr("axis") == axis
    assert out.shape.as_list() == list(expected.shape)
    np.testing.assert_array_equal(run(out), expected)


def test_stack_constants_partial_shapes_and_errors():
    assert tf.stack([[1, 2], [3, 4]]).op.type == "Const"
    x = tf.placeholder(tf.int32, [None])
    packed = tf.stack([x, [5, 6]], axis=1)
    assert packed.shape.as_list() == [2, 2] and packed.op.type == "Pack"
    np.testing.assert_array_equal(run(packed, {x: [1, 2]}), [[1, 5], [2, 6]])
    with pytest.raises(ValueError, match=r"axis = 2 not in \[-2, 2\)"):
        tf.stack([x, x], axis=2)
    with pytest.raises(ValueError, match="Shapes must be equal rank, but are 1 and 2"):
        tf.stack([x, tf.zeros([2, 2], tf.int32)])
    y = tf.placeholder(tf.int32)
    with pytest.raises(tf.errors.InvalidArgumentError, match="Shapes of all inputs must match"):
        run(tf.stack([x, y]), {x: [1, 2], y: [1, 2, 3]})


# -- zeros, ones, fill, *_like ---------------------------------------------------------
@pytest.mark.parametrize("dtype", ALL + [object])
@pytest.mark.parametrize("shape", [[], [3], [2, 3], [0, 2]])
def test_zeros_ones_small_are_consts(dtype, shape):
    tf_dtype = tf.string if dtype == object else tf.as_dtype(dtype)
    z = tf.zeros(shape, tf_dtype)
    assert z.op.type == "Const" and z.op.name == "zeros"
    assert z.shape.as_list() == shape and z.dtype == tf_dtype
    expected = np.full(shape, b"", dtype=object) if dtype == object else np.zeros(shape, dtype)
    np.testing.assert_array_equal(run(z), expected)
    if dtype != object:
        o = tf.ones(shape, tf_dtype)
        assert o.op.type == "Const"
        np.testing.assert_array_equal(run(o), np.ones(shape, dtype))


def test_zeros_ones_large_or_dynamic_are_fills():
    big = tf.ones([100, 20], tf.int64)
    assert big.op.type == "Fill" and big.op.name == "ones" and big.shape.as_list() == [100, 20]
    np.testing.assert_array_equal(run(big), np.ones((100, 20), np.int64))
    dims = tf.placeholder(tf.int32, [2])
    z = tf.zeros(dims, tf.float16)
    assert z.op.type == "Fill" and z.shape.as_list() == [None, None] and z.dtype == tf.float16
    np.testing.assert_array_equal(run(z, {dims: [2, 5]}), np.zeros((2, 5), np.float16))
    x = tf.placeholder(tf.float32, [None, 4])
    zs = tf.zeros(tf.shape(x))
    assert zs.shape.as_list() == [None, 4]
    assert run(zs, {x: np.ones((3, 4))}).shape == (3, 4)


@pytest.mark.parametrize("dtype", ALL + [object])
def test_fill(dtype):
    value = sample((), dtype)
    out = tf.fill([2, 3], tf.constant(value))
    assert out.op.type == "Fill" and out.shape.as_list() == [2, 3] and out.op.get_attr("T") \
        == out.dtype
    np.testing.assert_array_equal(run(out), np.full((2, 3), value, dtype=value.dtype))


def test_fill_errors():
    with pytest.raises(ValueError, match=r"Shape must be rank 0 but is rank 1 for 'Fill' "
                                         r"\(op: 'Fill'\) with input shapes: \[2\], \[2\]"):
        tf.fill([2, 3], [1.0, 2.0])
    dims = tf.placeholder(tf.int32, [None])
    with pytest.raises(tf.errors.InvalidArgumentError, match="must be >= 0"):
        run(tf.fill(dims, 1.0), {dims: [2, -3]})


@pytest.mark.parametrize("dtype", ALL)
def test_zeros_like_ones_like(dtype):
    value = sample((2, 3), dtype)
    c = tf.constant(value)
    z, o = tf.zeros_like(c), tf.ones_like(c)
    assert z.op.type == "Const" and z.dtype == c.dtype and o.shape.as_list() == [2, 3]
    x = tf.placeholder(c.dtype, [None, 3])
    zx, ox = tf.zeros_like(x), tf.ones_like(x)
    assert zx.op.type == "ZerosLike" and zx.shape.as_list() == [None, 3]
    assert ox.op.type == "Fill" and ox.shape.as_list() == [None, 3]
    outs = run([z, o, zx, ox], {x: value})
    for out, expected in zip(outs, [np.zeros_like(value), np.ones_like(value)] * 2):
        assert out.dtype == expected.dtype
        np.testing.assert_array_equal(out, expected)


def test_like_ops_with_other_dtype_and_strings():
    x = tf.placeholder(tf.int32, [None])
    z = tf.zeros_like(x, dtype=tf.float32)
    assert z.dtype == tf.float32 and z.op.type == "Fill"
    np.testing.assert_array_equal(run(z, {x: [1, 2]}), np.zeros(2, np.float32))
    s = tf.placeholder(tf.string, [None])
    np.testing.assert_array_equal(run(tf.zeros_like(s), {s: [b"a", b"b"]}), [b"", b""])


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
