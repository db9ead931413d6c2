"""NN ops: relu, sigmoid, softmax and softmax cross-entropy against numpy through a
real Session, their numerical stability, static shapes and build-time errors."""
import warnings

import numpy as np
import pytest

import nbcluster as tf
from nbcluster import errors
from nbcluster.ops import nn

pytestmark = pytest.mark.timeout(60)

RNG = np.random.default_rng(1)
FLOATS = [np.float16, np.float32, np.float64]
TOL = {np.float16: 3e-3, np.float32: 1e-5, np.float64: 1e-12}


def run(fetches, feed=None):
    with tf.Session() as sess:
        return sess.run(fetches, feed)


def check(actual, expected, dtype):
    assert actual.dtype == np.dtype(dtype) and actual.shape == np.shape(expected)
    tol = TOL.get(np.dtype(dtype).type, 0)
    np.testing.assert_allclose(actual, expected, rtol=tol, atol=tol)


def np_softmax(x, axis=-1):
    e = np.exp(x - x.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


def np_xent(labels, logits, axis=-1):
    shifted = logits - logits.max(axis=axis, keepdims=True)
    log_probs = shifted - np.log(np.exp(shifted).sum(axis=axis, keepdims=True))
    return -(labels * log_probs).sum(axis=axis)


def distribution(shape, dtype=np.float32):
    return np_softmax(RNG.normal(size=shape)).astype(dtype)



# -- relu, sigmoid ------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", FLOATS + [np.int32, np.int64])
def test_relu(dtype):
    x = (RNG.normal(size=(3, 4)) * 5).astype(dtype)
    t = nn.relu(tf.constant(x))
    assert t.op.type == "Relu" and t.op.name == "Relu" and t.dtype == tf.as_dtype(dtype)
    check(run(t), np.maximum(x, 0), dtype)


def test_relu_of_batches_of_changing_shape_and_of_nan_and_inf():
    # The kernel keeps the last shape's zeros: every other shape gets its own.
    x = tf.placeholder(tf.float32, [None, 3])
    y = nn.relu(x)
    with tf.Session() as sess:
        for rows in (4, 4, 1, 0, 5, 4):
            batch = RNG.normal(size=(rows, 3)).astype(np.float32)
            check(sess.run(y, {x: batch}), np.maximum(batch, 0), np.float32)
        special = np.array([[np.nan, -np.inf, np.inf]], np.float32)
        out = sess.run(y, {x: special})
    assert np.isnan(out[0, 0]) and out[0, 1] == 0 and out[0, 2] == np.inf
    scalar = run(nn.relu(tf.constant(-2.5)))
    assert scalar.shape == () and scalar == 0


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("shape", [(), (7,), (2, 3, 4)], ids=str)
def test_sigmoid(dtype, shape):
    x = (RNG.normal(size=shape) * 4).astype(dtype)
    t = nn.sigmoid(tf.constant(x))
    assert t.op.type == "Sigmoid" and t.shape.as_list() == list(shape)
    check(run(t), (1 / (1 + np.exp(-x.astype(np.float64)))).astype(dtype), dtype)


def test_sigmoid_is_exact_at_the_extremes():
    with warnings.catch_warnings():  # global, so it also sees executor threads
        warnings.simplefilter("error", RuntimeWarning)
        out = run(nn.sigmoid(tf.constant([-1000.0, -30.0, 0.0, 30.0, 1000.0])))
    np.testing.assert_allclose(out, [0.0, 9.357623e-14, 0.5, 1.0, 1.0], rtol=1e-6)


def test_relu_and_sigmoid_dtype_rules():
    with pytest.raises(TypeError, match="parameter 'features'.*bool"):
        nn.relu(tf.constant([True]))
    with pytest.raises(TypeError, match="int32 not in list"):
        nn.sigmoid(tf.constant([1]))
    x = tf.placeholder(tf.float32, [None, 5])
    assert nn.relu(x).shape.as_list() == [None, 5]


# -- softmax ---------------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("shape,axis", [((5,), -1), ((3, 4), -1), ((3, 4), 1), ((3, 4), 0),
                                        ((2, 3, 4), 1), ((2, 3, 4), -3)], ids=str)
def test_softmax(dtype, shape, axis):
    x = (RNG.normal(size=shape) * 3).astype(dtype)
    t = nn.softmax(tf.constant(x), axis=axis)
    assert t.dtype == tf.as_dtype(dtype) and t.shape.as_list() == list(shape)
    assert t.op.name == "Softmax"
    last = axis in (-1, len(shape) - 1)
    assert (t.op.type == "Softmax") == last
    check(run(t), np_softmax(x.astype(np.float64), axis).astype(dtype), dtype)


def test_softmax_is_stable_and_takes_tf1_dim():
    x = tf.constant([[1000.0, 1001.0, -1000.0], [-1e30, 0.0, 1e30]])
    out = run([nn.softmax(x), nn.softmax(x, dim=0)])
    np.testing.assert_allclose(out[0], [[0.26894142, 0.73105858, 0.0], [0.0, 0.0, 1.0]],
                               rtol=1e-6)
    assert np.isfinite(out[1]).all()
    with pytest.raises(ValueError, match="Cannot specify both 'axis' and 'dim'"):
        nn.softmax(x, axis=0, dim=0)


def test_softmax_errors_and_shapes():
    with pytest.raises(errors.InvalidArgumentError, match=r"range \[-2, 2\).*dim=2"):
        nn.softmax(tf.zeros([2, 3]), axis=2)
    with pytest.raises(ValueError, match="at least rank 1 but is rank 0"):
        nn.softmax(tf.constant(1.0))
    with pytest.raises(TypeError):
        nn.softmax(tf.constant([1, 2]))
    x = tf.placeholder(tf.float32, [None, 3])
    assert nn.softmax(x).shape.as_list() == [None, 3]
    assert nn.softmax(tf.placeholder(tf.float32)).shape.rank is None
    out = run(nn.softmax(x), {x: np.zeros((2, 3), np.float32)})
    np.testing.assert_allclose(out, np.full((2, 3), 1 / 3), rtol=1e-6)


# -- softmax cross-entropy -----------------------------------------------------------------------
XENT = [nn.softmax_cross_entropy_with_logits_v2,
        lambda labels, logits, **kw: nn.softmax_cross_entropy_with_logits(
            labels=labels, logits=logits, **kw)]


@pytest.mark.parametrize("xent", XENT, ids=["v2", "v1"])
@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("shape", [(4, 3), (5,), (2, 3, 4)], ids=str)
def test_xent_matches_numpy(xent, dtype, shape):
    logits = (RNG.normal(size=shape) * 3).astype(dtype)
    labels = distribution(shape, dtype)
    t = xent(tf.constant(labels), tf.constant(logits))
    assert t.dtype == tf.as_dtype(dtype) and t.shape.as_list() == list(shape[:-1])
    expected = np_xent(labels.astype(np.float64), logits.astype(np.float64)).astype(dtype)
    check(run(t), expected, dtype)


def test_xent_op_keeps_backprop_output():
    logits, labels = RNG.normal(size=(4, 3)), distribution((4, 3), np.float64)
    loss = nn.softmax_cross_entropy_with_logits_v2(labels, tf.constant(logits))
    op = loss.op
    assert op.type == "SoftmaxCrossEntropyWithLogits"
    assert op.name == "softmax_cross_entropy_with_logits" and loss is op.outputs[0]
    assert [o.shape.as_list() for o in op.outputs] == [[4], [4, 3]]
    assert op.get_attr("T") == tf.float64
    got_loss, backprop = run([op.outputs[0], op.outputs[1]])
    check(backprop, np_softmax(logits) - labels, np.float64)
    check(got_loss, np_xent(labels, logits), np.float64)


def test_xent_is_stable_for_huge_logits():
    logits = tf.constant([[1e4, 0.0, -1e4], [-1e30, 1e30, 0.0]])
    labels = [[1.0, 0.0, 0.0], [0.5, 0.5, 0.0]]
    with warnings.catch_warnings():  # global, so it also sees executor threads
        warnings.simplefilter("error", RuntimeWarning)
        out = run(nn.softmax_cross_entropy_with_logits_v2(labels, logits))
    np.testing.assert_allclose(out, [0.0, 1e30], rtol=1e-6)


@pytest.mark.parametrize("axis", [0, -2])
def test_xent_along_another_axis(axis):
    logits, labels = RNG.normal(size=(3, 4)), distribution((4, 3), np.float64).T
    t = nn.softmax_cross_entropy_with_logits_v2(labels, tf.constant(logits), axis=axis)
    assert t.shape.as_list() == [4]
    check(run(t), np_xent(labels, logits, axis=0), np.float64)


def test_xent_labels_take_the_logits_dtype_and_broadcast():
    logits = tf.constant(RNG.normal(size=(2, 3)).astype(np.float64))
    t = nn.softmax_cross_entropy_with_logits_v2([[0, 1, 0], [1, 0, 0]], logits)
    assert t.dtype == tf.float64
    t = nn.softmax_cross_entropy_with_logits_v2(tf.constant([0, 0, 1]), logits)  # int labels
    assert t.dtype == tf.float64 and t.shape.as_list() == [2]
    expected = np_xent(np.array([0.0, 0.0, 1.0]), run(logits))
    check(run(t), expected, np.float64)


def test_xent_static_shapes_and_errors():
    logits = tf.placeholder(tf.float32, [None, 10])
    labels = tf.placeholder(tf.float32, [None, 10])
    loss = nn.softmax_cross_entropy_with_logits_v2(labels, logits)
    assert loss.shape.as_list() == [None]
    feed = {logits: np.zeros((3, 10), np.float32), labels: np.full((3, 10), 0.1, np.float32)}
    np.testing.assert_allclose(run(loss, feed), np.full(3, np.log(10)), rtol=1e-6)
    with pytest.raises(ValueError, match=r"\[\?,10\], \[2,3\]|\[2,3\], \[\?,10\]"):
        nn.softmax_cross_entropy_with_logits_v2(tf.zeros([2, 3]), logits)
    with pytest.raises(TypeError):
        nn.softmax_cross_entropy_with_logits_v2([[1]], tf.constant([[1]]))
    with pytest.raises(ValueError, match="named arguments"):
        nn.softmax_cross_entropy_with_logits(tf.zeros([2, 3]), tf.zeros([2, 3]))


# -- sparse softmax cross-entropy ---------------------------------------------------------
def np_sparse_xent(labels, logits):
    return np_xent(np.eye(logits.shape[-1])[labels], logits)


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("label_dtype", [np.int32, np.int64])
def test_sparse_xent_matches_dense(dtype, label_dtype):
    logits = RNG.normal(size=(4, 5)).astype(dtype)
    labels = np.array([0, 4, 2, 2], label_dtype)
    t = tf.nn.sparse_softmax_cross_entropy_with_logits(labels=labels, logits=logits)
    assert t.shape.as_list() == [4] and t.dtype == tf.as_dtype(dtype)
    types = {op.type for op in tf.get_default_graph().get_operations()}
    assert "SparseSoftmaxCrossEntropyWithLogits" in types
    check(run(t), np_sparse_xent(labels, logits.astype(np.float64)).astype(dtype), dtype)


def test_sparse_xent_op_outputs_and_stability():
    logits = np.array([[1000.0, 0.0, -1000.0], [0.0, 0.0, 0.0]])
    t = tf.nn.sparse_softmax_cross_entropy_with_logits(labels=[2, 1], logits=logits)
    loss, backprop = run(list(t.op.outputs))
    np.testing.assert_allclose(loss, [2000.0, np.log(3.0)])
    expected = np_softmax(logits) - np.eye(3)[[2, 1]]
    np.testing.assert_allclose(backprop, expected, atol=1e-12)
    assert t.op.outputs[1].shape.as_list() == [2, 3]


def test_sparse_xent_higher_rank_and_unknown_shapes():
    logits = RNG.normal(size=(2, 3, 4))
    labels = RNG.integers(0, 4, size=(2, 3))
    t = tf.nn.sparse_softmax_cross_entropy_with_logits(labels=labels, logits=logits)
    assert t.shape.as_list() == [2, 3]
    np.testing.assert_allclose(run(t), np_sparse_xent(labels, logits))
    x = tf.placeholder(tf.float32, [None, 4])
    y = tf.placeholder(tf.int64, [None])
    u = tf.nn.sparse_softmax_cross_entropy_with_logits(labels=y, logits=x)
    assert u.shape.as_list() == [None]
    assert run(u, {x: np.zeros((0, 4), np.float32), y: np.zeros(0, np.int64)}).shape == (0,)


def test_sparse_xent_errors_name_the_label():
    x = tf.placeholder(tf.float32, [None, 3])
    y = tf.placeholder(tf.int32, [None])
    t = tf.nn.sparse_softmax_cross_entropy_with_logits(labels=y, logits=x)
    with pytest.raises(errors.InvalidArgumentError,
                       match=r"Received a label value of 5 which is outside the valid range "
                             r"of \[0, 3\)\.  Label values: 0 5 1"):
        run(t, {x: np.zeros((3, 3), np.float32), y: [0, 5, 1]})
    with pytest.raises(errors.InvalidArgumentError, match="label value of -1"):
        run(t, {x: np.zeros((1, 3), np.float32), y: [-1]})
    with pytest.raises(ValueError, match=r"Rank mismatch: Rank of labels \(received 2\) "
                                         r"should equal rank of logits minus 1 \(received 2\)"):
        tf.nn.sparse_softmax_cross_entropy_with_logits(labels=[[0]], logits=[[1.0]])
    with pytest.raises(ValueError, match="Shape mismatch"):
        tf.nn.sparse_softmax_cross_entropy_with_logits(labels=[0, 1], logits=[[1.0, 2.0]])
    with pytest.raises(ValueError, match="with named arguments"):
        tf.nn.sparse_softmax_cross_entropy_with_logits([0], [[1.0]])
    with pytest.raises(TypeError, match="'labels' has DataType float32"):
        tf.nn.sparse_softmax_cross_entropy_with_logits(labels=[0.0], logits=[[1.0]])


# -- bias_add, xw_plus_b ---------------------------------------------------------------
@pytest.mark.parametrize("dtype", FLOATS + [np.int32])
def test_bias_add_channels_last(dtype):
    x = (RNG.normal(size=(2, 3, 4)) * 4).astype(dtype)
    b = (RNG.normal(size=4) * 4).astype(dtype)
    t = tf.nn.bias_add(tf.constant(x), tf.constant(b))
    assert t.op.type == "BiasAdd" and t.op.name == "BiasAdd"
    assert t.op.get_attr("data_format") == "NHWC" and t.shape.as_list() == [2, 3, 4]
    check(run(t), x + b, dtype)


def test_bias_add_channels_first():
    x, b = RNG.normal(size=(2, 3, 4, 5)), RNG.normal(size=3)
    t = tf.nn.bias_add(tf.constant(x), tf.constant(b), data_format="NCHW")
    assert t.op.get_attr("data_format") == "NCHW"
    check(run(t), x + b[:, None, None], np.float64)
    assert tf.nn.bias_add(tf.constant(x), tf.constant(b), data_format="NCDHW") \
        .op.get_attr("data_format") == "NCHW"  # TF reads any NC... as NCHW


def test_bias_add_fills_the_channel_dimension_from_the_bias():
    x = tf.placeholder(tf.float32, [None, None])
    assert tf.nn.bias_add(x, tf.zeros([7])).shape.as_list() == [None, 7]
    assert tf.nn.bias_add(tf.placeholder(tf.float32), tf.zeros([7])).shape.rank is None


@pytest.mark.parametrize("shape, bias, fmt, message", [
    ([3], [3], None, "Shape must be at least rank 2 but is rank 1"),
    ([2, 4], [3], None, "Dimensions must be equal, but are 4 and 3"),
    ([2, 3], [3], "NCHW", "Shape must be at least rank 3 but is rank 2"),
    ([2, 3], [1, 3], None, "Shape must be rank 1 but is rank 2"),
])
def test_bias_add_build_time_errors(shape, bias, fmt, message):
    with pytest.raises(ValueError, match=message):
        tf.nn.bias_add(tf.zeros(shape), tf.zeros(bias), data_format=fmt)


def test_bias_add_rejects_a_malformed_data_format_and_mismatched_dtypes():
    with pytest.raises(ValueError, match="data_format must be of the form `N...C` or `NC...`"):
        tf.nn.bias_add(tf.zeros([2, 3]), tf.zeros([3]), data_format="XYZ")
    with pytest.raises(TypeError):
        tf.nn.bias_add(tf.zeros([2, 3]), tf.zeros([3], tf.float64))


def test_bias_add_run_time_length_mismatch_is_invalid_argument():
    x, b = tf.placeholder(tf.float32), tf.placeholder(tf.float32)
    with pytest.raises(errors.InvalidArgumentError, match=r"as many biases .* \[3\] vs. \[2,4\]"):
        run(tf.nn.bias_add(x, b), {x: np.zeros((2, 4)), b: np.zeros(3)})


def test_bias_add_grad_sums_all_but_the_channel_axis():
    g = RNG.normal(size=(2, 3, 4))
    graph = tf.get_default_graph()
    nhwc = graph.create_op("BiasAddGrad", [tf.constant(g)],
                           {"T": tf.float64, "data_format": "NHWC"}).outputs[0]
    nchw = graph.create_op("BiasAddGrad", [tf.constant(g)],
                           {"T": tf.float64, "data_format": "NCHW"}).outputs[0]
    assert nhwc.shape.as_list() == [4] and nchw.shape.as_list() == [3]
    got = run([nhwc, nchw])
    check(got[0], g.sum(axis=(0, 1)), np.float64)
    check(got[1], g.sum(axis=(0, 2)), np.float64)


def test_xw_plus_b_is_matmul_then_bias_add():
    x, w, b = RNG.normal(size=(5, 3)), RNG.normal(size=(3, 2)), RNG.normal(size=2)
    t = tf.nn.xw_plus_b(tf.constant(x), tf.constant(w), tf.constant(b))
    assert t.op.type == "BiasAdd" and t.op.name == "xw_plus_b"
    assert t.op.inputs[0].op.type == "MatMul" and t.op.inputs[0].op.name == "xw_plus_b/MatMul"
    check(run(t), x @ w + b, np.float64)


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int32])
def test_relu_grad_is_the_gradient_times_the_mask_as_tf(dtype):
    features = np.array([-1, 0, 3, -2], dtype)
    grads = np.array([5, 6, 7, 8], dtype)
    g = tf.get_default_graph().create_op(
        "ReluGrad", [tf.constant(grads), tf.constant(features)], {"T": tf.as_dtype(dtype)})
    check(run(g.outputs[0]), np.array([0, 0, 7, 0], dtype), dtype)


def test_relu_grad_of_inf_or_nan_where_features_are_not_positive_is_nan_as_tf():
    g = tf.get_default_graph().create_op(
        "ReluGrad", [tf.constant([np.inf, np.nan, 2.0]), tf.constant([-1.0, -1.0, 3.0])],
        {"T": tf.float32})
    np.testing.assert_array_equal(run(g.outputs[0]), [np.nan, np.nan, 2.0])


@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64])
def test_l2_loss_is_half_the_sum_of_squares(dtype):
    # TF's clip_by_global_norm builds L2Loss; TF-serialized GraphDefs carry it
    x = np.linspace(-2, 3, 12).reshape(3, 4).astype(dtype)
    t = tf.nn.l2_loss(tf.constant(x))
    assert t.op.type == "L2Loss" and t.dtype == tf.as_dtype(dtype) and t.shape.as_list() == []
    got = run(t)
    assert got.dtype == dtype
    np.testing.assert_allclose(got, np.sum(x.astype(np.float64) ** 2) / 2, rtol=1e-3)
    with pytest.raises(TypeError, match="int32 not in list of allowed values"):
        tf.nn.l2_loss(tf.constant([1, 2]))
