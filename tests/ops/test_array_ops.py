"""Array ops against numpy: Const, Identity, placeholders, ConcatV2 and Pack."""
import numpy as np
import pytest
from op_checks import ARRAY_DTYPES, run, sample_any

import nbcluster as tf
from nbcluster.runtime.devices import local_devices
from nbcluster.runtime.kernel_table import get_kernel_factory

pytestmark = pytest.mark.timeout(60)

SHAPES = [(), (4,), (2, 3), (2, 1, 3)]


# -- Const, Identity, Placeholder ------------------------------------------------------
@pytest.mark.parametrize("dtype", ARRAY_DTYPES + [object])
@pytest.mark.parametrize("shape", SHAPES)
def test_const_identity_placeholder_values(dtype, shape):
    value = sample_any(shape, dtype)
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



# -- ConcatV2 / Pack -------------------------------------------------------------------
@pytest.mark.parametrize("dtype", ARRAY_DTYPES + [object])
@pytest.mark.parametrize("shapes, axis", [([(2, 3), (4, 3)], 0), ([(2, 3), (2, 1), (2, 2)], 1),
                                          ([(2, 3), (2, 2)], -1), ([(3,), (0,)], 0)])
def test_concat(dtype, shapes, axis):
    values = [sample_any(s, dtype) for s in shapes]
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


@pytest.mark.parametrize("dtype", ARRAY_DTYPES + [object])
@pytest.mark.parametrize("shape, axis", [((), 0), ((3,), 0), ((3,), 1), ((2, 3), -1), ((2, 3), 1)])
def test_stack(dtype, shape, axis):
    first = sample_any(shape, dtype)
    values = [first, first[::-1] if shape else first]
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


# -- Tile, Split, SplitV -------------------------------------------------------------------
@pytest.mark.parametrize("dtype", ARRAY_DTYPES + [object])
def test_tile_matches_numpy(dtype):
    x = sample_any((2, 3), dtype)
    t = tf.tile(tf.constant(x), [2, 1])
    assert t.op.type == "Tile" and t.shape.as_list() == [4, 3]
    np.testing.assert_array_equal(run(t), np.tile(x, [2, 1]))
    np.testing.assert_array_equal(run(tf.tile(x, [0, 2])), np.tile(x, [0, 2]))


def test_tile_unknown_shapes_and_errors():
    from nbcluster import errors
    p = tf.placeholder(tf.float32, [None, 2])
    m = tf.placeholder(tf.int32, [2])
    assert tf.tile(p, [3, 2]).shape.as_list() == [None, 4]
    assert tf.tile(p, m).shape.as_list() == [None, None]
    x = sample_any((1, 2), np.float32)
    np.testing.assert_array_equal(run(tf.tile(p, m), {p: x, m: [2, 3]}), np.tile(x, [2, 3]))
    with pytest.raises(ValueError, match="Dimension must be 2 but is 3"):
        tf.tile(p, [1, 2, 3])
    u = tf.placeholder(tf.int32, [None])
    with pytest.raises(errors.InvalidArgumentError,
                       match="Expected multiples argument to be a vector of length 2 but got "
                             "length 1"):
        run(tf.tile(p, u), {p: x, u: [2]})
    with pytest.raises(errors.InvalidArgumentError, match=r"Expected multiples\[1\] >= 0, "
                                                          r"but got -1"):
        run(tf.tile(p, m), {p: x, m: [1, -1]})


@pytest.mark.parametrize("dtype", ARRAY_DTYPES)
def test_split_even_and_sized(dtype):
    x = sample_any((4, 6), dtype)
    parts = tf.split(tf.constant(x), 3, axis=1)
    assert [p.op.type for p in parts] == ["Split"] * 3
    assert all(p.shape.as_list() == [4, 2] for p in parts)
    for got, want in zip(run(parts), np.split(x, 3, axis=1)):
        np.testing.assert_array_equal(got, want)
    sized = tf.split(tf.constant(x), [1, -1, 2], axis=-1)
    assert sized[0].op.type == "SplitV"
    assert [p.shape.as_list() for p in sized] == [[4, 1], [4, 3], [4, 2]]
    for got, want in zip(run(sized), np.split(x, [1, 4], axis=1)):
        np.testing.assert_array_equal(got, want)


def test_split_unknown_shapes_empty_parts_and_errors():
    from nbcluster import errors
    p = tf.placeholder(tf.float32, [None, 5])
    halves = tf.split(p, 2)
    assert all(h.shape.as_list() == [None, 5] for h in halves)
    x = sample_any((4, 5), np.float32)
    np.testing.assert_array_equal(run(halves[1], {p: x}), x[2:])
    sizes = tf.placeholder(tf.int32, [None])
    parts = tf.split(p, sizes, axis=1, num=2)
    got = run(parts, {p: x, sizes: [0, 5]})
    assert got[0].shape == (4, 0)
    np.testing.assert_array_equal(got[1], x)
    with pytest.raises(ValueError, match="Cannot infer num from shape"):
        tf.split(p, sizes, axis=1)
    with pytest.raises(ValueError, match="evenly divisible by 2 but is 5"):
        tf.split(p, 2, axis=1)
    with pytest.raises(ValueError, match="don't sum up to the size of the split dimension"):
        tf.split(p, [2, 2], axis=1)
    with pytest.raises(errors.InvalidArgumentError,
                       match=r"split_dim 0 \(size = 3\) and num_split 2"):
        run(halves, {p: x[:3]})
    with pytest.raises(errors.InvalidArgumentError, match="Determined shape must either match"):
        run(parts, {p: x, sizes: [1, 1]})


# -- auto-packing: a list holding tensors converts to one tensor --------------------------
def test_list_of_tensors_converts_by_pack():
    g1, g2 = tf.constant([1.0, 2.0]), tf.placeholder(tf.float32, [2])
    total = tf.reduce_sum([g1, g2])
    packed = total.op.inputs[0]
    assert (packed.op.type, packed.op.name, packed.shape.as_list()) == ("Pack", "Sum/input",
                                                                        [2, 2])
    assert run(total, {g2: [10.0, 20.0]}) == 33.0
    v = tf.Variable([3.0, 4.0])
    nested = tf.convert_to_tensor([[g1, [5.0, 6.0]], [g2, v]])
    assert nested.op.name == "packed" and nested.dtype == tf.float32
    assert [t.op.name for t in nested.op.inputs] == ["packed/0", "packed/1"]
    with tf.Session() as sess:
        sess.run(v.initializer)
        np.testing.assert_array_equal(
            sess.run(nested, {g2: [7.0, 8.0]}),
            [[[1, 2], [5, 6]], [[7, 8], [3, 4]]])
        np.testing.assert_array_equal(sess.run(tf.multiply([g1, g1], 2.0)), [[2, 4], [2, 4]])


def test_list_of_tensors_mixed_dtypes_and_shapes_fail_clearly():
    a = tf.constant([1.0, 2.0])
    with pytest.raises(TypeError, match=r"types \[float32, int32\] that don't all match"):
        tf.convert_to_tensor([a, tf.constant([1, 2])])
    with pytest.raises(ValueError, match="requested dtype int32"):
        tf.convert_to_tensor([a], dtype=tf.int32)
    with pytest.raises(ValueError):
        tf.convert_to_tensor([a, tf.constant([1.0, 2.0, 3.0])])
    assert tf.convert_to_tensor([[1, 2]]).op.type == "Const"  # no tensor: still one Const
