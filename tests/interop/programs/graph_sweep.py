"""Real TensorFlow builds one small graph per case of each op family and runs it:
`graph_sweep.py OUT_DIR`. Each case is a list of runs (fetch names, feeds) on
one graph, gradients (tf.gradients) included; for every case it writes
OUT_DIR/<case>.pb (the GraphDef TF serialized) and OUT_DIR/<case>.npz (the
feeds and the values TF fetched), and prints one JSON manifest:
{case: {"family", "runs": [{"fetches", "feeds", "error"}], "compare", "rtol", "atol"}},
"error" naming the class of TF's OpError where the run failed (else null).
"""
import json
import sys
from pathlib import Path

import numpy as np
import tensorflow as tf

tf1 = tf.compat.v1
tf1.disable_v2_behavior()  # graph mode, v1 control flow, ref variables
CASES: dict = {}
OUT = Path(".")  # main() sets it: where checkpoints of the io case go
rng = np.random.default_rng(11)
A = rng.standard_normal((3, 4)).astype(np.float32)
B = rng.standard_normal((4, 5)).astype(np.float32)
V = rng.standard_normal((2, 3, 4)).astype(np.float32)


def case(family, compare="values", rtol=1e-5, atol=1e-6):
    """Registers a builder: it makes ops in a fresh graph, returns a list of runs,
    each [fetches] or ([fetches], {placeholder: value})."""
    def register(build):
        CASES[f"{family}.{build.__name__}"] = dict(build=build, family=family,
                                                  compare=compare, rtol=rtol, atol=atol)
        return build
    return register


def grads(y, xs):
    return [g for g in tf.gradients(y, xs) if g is not None]


# -- array / shapes / fill / slicing ------------------------------------------------------
@case("array")
def concat_pack_split():
    x = tf1.placeholder(tf.float32, [None, 4], name="x")
    c = tf.concat([x, x * 2.0], axis=1)
    p = tf.stack([x, x + 1.0], axis=1)
    s1, s2 = tf.split(c, 2, axis=1)
    v1, v2 = tf.split(c, [3, 5], axis=1)
    t = tf.tile(x, [2, 3])
    u = tf.unstack(p, axis=1)
    loss = tf.reduce_sum(c * c) + tf.reduce_sum(p) + tf.reduce_sum(s2 * v1[:, :1]) \
        + tf.reduce_sum(t * 0.5) + tf.reduce_sum(u[1] * v2[:, :4])
    return [([c, p, s1, s2, v1, v2, t, u[0]] + grads(loss, [x]), {x: A})]


@case("array")
def identity_placeholder_default():
    d = tf1.placeholder_with_default(tf.constant([1.0, 2.0]), [2], name="d")
    i = tf.identity(d * 3.0)
    return [[i], ([i], {d: np.array([5.0, 6.0], np.float32)})]


@case("shapes")
def reshape_transpose_squeeze():
    x = tf1.placeholder(tf.float32, [2, 3, 4], name="x")
    r = tf.reshape(x, [6, -1])
    t = tf.transpose(x, [2, 0, 1])
    e = tf.expand_dims(x, 1)
    q = tf.squeeze(e, [1])
    sh, sz, rk = tf.shape(x), tf.size(x), tf.rank(x)
    loss = tf.reduce_sum(r * 2.0) + tf.reduce_sum(t * t) + tf.reduce_sum(q * e[:, 0])
    return [([r, t, e, q, sh, sz, rk] + grads(loss, [x]), {x: V})]


@case("fill")
def fill_zeros_ones():
    x = tf.constant(A)
    f = tf.fill([2, 3], 7.5)
    z, o = tf.zeros_like(x), tf.ones_like(x)
    zi = tf.zeros([3], tf.int32)
    return [[f, z, o, zi, tf.ones([2, 2], tf.int64)]]


@case("slicing")
def slice_strided_pad():
    x = tf1.placeholder(tf.float32, [3, 4], name="x")
    s = tf.slice(x, [1, 0], [2, 3])
    st = x[::2, 1:3]
    st2 = x[-1, ::-1]
    pd = tf.pad(x, [[1, 0], [0, 2]])
    bt = tf.broadcast_to(tf.constant([1.0, 2.0, 3.0, 4.0]), [2, 4])
    ip = tf.math.invert_permutation([2, 0, 1])
    loss = tf.reduce_sum(s * s) + tf.reduce_sum(st * 3.0) + tf.reduce_sum(st2) \
        + tf.reduce_sum(pd * pd)
    return [([s, st, st2, pd, bt, ip] + grads(loss, [x]), {x: A})]


@case("slicing")
def unstack_concat_offsets():
    x = tf1.placeholder(tf.float32, [3, 4], name="x")
    y = tf.constant(B[:3])
    c = tf.concat([x, y, x], axis=1)
    parts = tf.unstack(x)
    loss = tf.reduce_sum(c * c) + tf.reduce_sum(parts[2] * 4.0)
    return [(parts + grads(loss, [x]), {x: A})]


# -- indexing / logic ---------------------------------------------------------------------
@case("indexing")
def gather_segments_onehot():
    x = tf1.placeholder(tf.float32, [3, 4], name="x")
    g = tf.gather(x, [2, 0, 2])
    g1 = tf.gather(x, [3, 1], axis=1)
    seg = tf.math.unsorted_segment_sum(x, [1, 0, 1], num_segments=3)
    oh = tf.one_hot([0, 2, 1], 4, on_value=2.0, off_value=-1.0)
    uy, ui = tf.unique([4, 1, 4, 2, 1])
    loss = tf.reduce_sum(g * g) + tf.reduce_sum(g1) + tf.reduce_sum(seg * seg)
    return [([g, g1, seg, oh, uy, ui] + grads(loss, [x]), {x: A})]


@case("indexing")
def where_select():
    x = tf1.placeholder(tf.float32, [3, 4], name="x")
    w = tf1.where(x > 0.0, x, -x)
    w2 = tf.where(x > 0.0, x, tf.zeros_like(x))
    idx = tf.where(x > 0.0)
    loss = tf.reduce_sum(w * w) + tf.reduce_sum(w2)
    return [([w, w2, idx] + grads(loss, [x]), {x: A})]


@case("logic")
def comparisons_and_boolean():
    x, y = tf.constant(A), tf.constant(A[::-1].copy())
    a, b = x > y, x <= y
    out = [tf.logical_and(a, x > 0.0), tf.logical_or(a, b), tf.logical_not(a),
           tf.equal(x, y), tf.not_equal(x, x), tf.greater_equal(x, y), tf.less(x, y),
           tf.math.is_nan(x / 0.0 * 0.0), tf.math.is_inf(x / 0.0), tf.math.is_finite(x)]
    return [out]


# -- math / linalg / reduction ------------------------------------------------------------
@case("math")
def unary():
    x = tf1.placeholder(tf.float32, [3, 4], name="x")
    p = tf.abs(x) + 0.5
    out = [tf.abs(x), tf.negative(x), tf.exp(x), tf.math.log(p), tf.math.log1p(p),
           tf.sqrt(p), tf.square(x), tf.sign(x), tf.tanh(x)]
    loss = tf.add_n([tf.reduce_sum(o) for o in out[:7] + out[8:]])
    return [(out + grads(loss, [x]), {x: A})]


@case("math")
def binary_broadcast():
    x = tf1.placeholder(tf.float32, [3, 4], name="x")
    y = tf1.placeholder(tf.float32, [4], name="y")
    q = tf.abs(y) + 1.0
    out = [x + y, x - y, x * y, x / q, tf.maximum(x, y), tf.minimum(x, y),
           tf.pow(tf.abs(x) + 1.0, q), tf.math.floordiv(x, q), tf.math.floormod(x, q),
           tf.math.divide_no_nan(x, y * 0.0), tf1.add_n([x, x, x]),
           tf.cast(x * 10.0, tf.int32), tf.cast(x > 0.0, tf.float32)]
    loss = tf.add_n([tf.reduce_sum(o) for o in out[:7] + out[9:11]])
    return [(out + grads(loss, [x, y]), {x: A, y: B[:, 0]})]


@case("math")
def integer_arithmetic():
    x = tf.constant([[7, -3, 4], [9, 2, -8]], tf.int32)
    y = tf.constant([2, 5, 3], tf.int32)
    return [[x + y, x * y, tf.math.floordiv(x, y), tf.math.floormod(x, y), tf.maximum(x, y),
             tf.cast(x, tf.int64), tf.abs(x), tf.sign(x)]]


@case("linalg")
def matmul_batch_matmul():
    x = tf1.placeholder(tf.float32, [3, 4], name="x")
    w = tf.constant(B)
    m = tf.matmul(x, w)
    mt = tf.matmul(w, x, transpose_a=True, transpose_b=True)
    bx = tf.constant(V)
    bm = tf.matmul(bx, tf.transpose(bx, [0, 2, 1]))
    loss = tf.reduce_sum(m * m) + tf.reduce_sum(mt) + tf.reduce_sum(bm)
    return [([m, mt, bm] + grads(loss, [x]), {x: A})]


@case("linalg")
def batch_matmul_gradient():
    x = tf1.placeholder(tf.float32, [2, 3, 4], name="x")
    y = tf.constant(rng.standard_normal((2, 4, 2)).astype(np.float32))
    m = tf.matmul(x, y)
    return [([m] + grads(tf.reduce_sum(m * m), [x]), {x: V})]


@case("reduction")
def reductions():
    x = tf1.placeholder(tf.float32, [2, 3, 4], name="x")
    out = [tf.reduce_sum(x, [0, 2]), tf.reduce_mean(x, 1, keepdims=True), tf.reduce_max(x),
           tf.reduce_min(x, -1), tf.reduce_prod(x, 0), tf.argmax(x, 2), tf.argmin(x, 0),
           tf.reduce_all(x > -5.0, 1), tf.reduce_any(x > 1.0, [0, 1]), tf.reduce_sum(x)]
    loss = tf.add_n([tf.reduce_sum(o) for o in out[:5]])
    return [(out + grads(loss, [x]), {x: V})]


@case("reduction")
def mean_of_unknown_shape():
    x = tf1.placeholder(tf.float32, [None, None], name="x")
    m = tf.reduce_mean(x)
    return [([m] + grads(m * m, [x]), {x: A})]


# -- nn -----------------------------------------------------------------------------------
@case("nn")
def activations():
    x = tf1.placeholder(tf.float32, [3, 4], name="x")
    out = [tf.nn.relu(x), tf.sigmoid(x), tf.tanh(x), tf.nn.softmax(x), tf.nn.log_softmax(x),
           tf.nn.bias_add(x, tf.constant([0.1, 0.2, 0.3, 0.4]))]
    loss = tf.add_n([tf.reduce_sum(o * o) for o in out])
    return [(out + grads(loss, [x]), {x: A})]


@case("nn")
def losses():
    logits = tf1.placeholder(tf.float32, [3, 4], name="logits")
    labels = tf.constant([3, 0, 1], tf.int64)
    dense = tf.nn.softmax_cross_entropy_with_logits(labels=tf.one_hot(labels, 4),
                                                    logits=logits)
    sparse = tf.nn.sparse_softmax_cross_entropy_with_logits(labels=labels, logits=logits)
    sig = tf.nn.sigmoid_cross_entropy_with_logits(labels=tf.ones_like(logits), logits=logits)
    mean = tf1.losses.softmax_cross_entropy(tf.one_hot(labels, 4), logits)
    loss = tf.reduce_sum(dense) + tf.reduce_sum(sparse) + tf.reduce_sum(sig) + mean
    return [([dense, sparse, sig, mean] + grads(loss, [logits]), {logits: A})]


@case("nn")
def dense_layer_with_bias_grad():
    x = tf1.placeholder(tf.float32, [3, 4], name="x")
    w, b = tf.constant(B), tf.constant(np.linspace(-1, 1, 5).astype(np.float32))
    h = tf.nn.relu(tf.nn.bias_add(tf.matmul(x, w), b))
    loss = tf.reduce_mean(tf.square(h))
    return [([h, loss] + grads(loss, [x, w, b]), {x: A})]


# -- random: TF's Philox streams are not ours, so shapes and dtypes only ------------------
@case("random", compare="shape")
def seeded_random():
    tf1.set_random_seed(5)
    return [[tf1.random_uniform([3, 4]), tf1.random_normal([2, 5], seed=3),
             tf1.truncated_normal([6]), tf1.random_uniform([4], 0, 10, tf.int32),
             tf1.random_uniform([2, 2], dtype=tf.float64),
             tf1.random_shuffle(tf.range(5))]]


# -- state / resource variables / training ------------------------------------------------
@case("state")
def ref_variables():
    v = tf1.Variable(A, name="v")
    c = tf1.Variable(0, name="c", dtype=tf.int32)
    init = tf1.global_variables_initializer()
    ok = tf1.is_variable_initialized(v)
    add = tf1.assign_add(v, tf.ones_like(v))
    sub = tf1.assign_sub(v, tf.fill([3, 4], 0.5))
    sc = tf1.scatter_add(v, [0, 2], tf.ones([2, 4]))
    sub_rows = tf1.scatter_sub(v, [1], tf.ones([1, 4]) * 3.0)
    su = tf1.scatter_update(v, [2], tf.zeros([1, 4]))
    up = c.count_up_to(3)
    return [[init], [ok], [add], [sub], [sc], [sub_rows], [su], [v.value()], [up], [up],
            [c.value()]]


@case("resource_variables")
def resource_variables():
    v = tf1.get_variable("rv", initializer=A, use_resource=True)
    e = tf1.get_variable("emb", initializer=B, use_resource=True)
    init = tf1.global_variables_initializer()
    g = tf.gather(e, [3, 1])
    loss = tf.reduce_sum(v * v) + tf.reduce_sum(g * g)
    gv, ge = tf.gradients(loss, [v, e])
    sc = tf1.scatter_add(v, [0], tf.ones([1, 4]))  # ResourceScatterAdd
    sm = e.scatter_max(tf.IndexedSlices(tf.zeros([2, 5]), [0, 2]))
    return [[tf1.is_variable_initialized(v)], [init], [v.read_value(), g, gv, ge.values,
                                                      ge.indices, tf.shape(v)],
            [v.assign_add(tf.ones_like(A)).op], [v.assign_sub(tf.ones_like(A) * 2.0).op],
            [sc.op], [sm.op], [v.read_value(), e.read_value()]]


def trainer(optimizer, use_resource):
    """Two dense/sparse training steps with `optimizer`; the variables after each."""
    w = tf1.get_variable("w", initializer=B, use_resource=use_resource)
    emb = tf1.get_variable("emb", initializer=A, use_resource=use_resource)
    x = tf1.placeholder(tf.float32, [2, 4], name="x")
    rows = tf.gather(emb, [2, 0])
    loss = tf.reduce_mean(tf.square(tf.matmul(x + rows, w)))
    step = optimizer.minimize(loss)
    feed = {x: A[:2]}
    return [[tf1.global_variables_initializer()], ([loss, step], feed), ([step], feed),
            [w.value() if not use_resource else w.read_value(),
             emb.value() if not use_resource else emb.read_value()]]


for _name, _make in {"sgd": lambda: tf1.train.GradientDescentOptimizer(0.1),
                     "momentum": lambda: tf1.train.MomentumOptimizer(0.1, 0.9),
                     "nesterov": lambda: tf1.train.MomentumOptimizer(0.1, 0.9,
                                                                      use_nesterov=True),
                     "adagrad": lambda: tf1.train.AdagradOptimizer(0.1),
                     "adam": lambda: tf1.train.AdamOptimizer(0.01)}.items():
    for _resource in (False, True):
        def _build(make=_make, resource=_resource):
            return trainer(make(), resource)
        _build.__name__ = f"{_name}_{'resource' if _resource else 'ref'}"
        case("training", rtol=1e-5)(_build)


# -- control: v1 cond / while_loop, their gradients ---------------------------------------
@case("control")
def cond_and_gradient():
    x = tf1.placeholder(tf.float32, [3, 4], name="x")
    p = tf1.placeholder(tf.bool, [], name="p")
    y = tf.cond(p, lambda: tf.reduce_sum(x * x), lambda: tf.reduce_sum(x * 3.0))
    (g,) = tf.gradients(y, [x])
    return [([y, g], {x: A, p: True}), ([y, g], {x: A, p: False})]


@case("control")
def while_loop_and_gradient():
    x = tf1.placeholder(tf.float32, [4], name="x")
    i0 = tf.constant(0)
    _, y = tf1.while_loop(lambda i, acc: i < 3, lambda i, acc: (i + 1, acc * x + 1.0),
                          [i0, tf.ones_like(x)])
    (g,) = tf.gradients(tf.reduce_sum(y), [x])
    return [([y, g], {x: A[0]})]


@case("control")
def no_op_stop_gradient_assert():
    x = tf1.placeholder(tf.float32, [4], name="x")
    check = tf1.assert_positive(tf.abs(x) + 1.0)
    with tf.control_dependencies([check, tf.no_op()]):
        y = tf.stop_gradient(x * 2.0) + x * x
    (g,) = tf.gradients(tf.reduce_sum(y), [x])
    return [([y, g], {x: A[0]})]


# -- data: tf.data pipelines without functions --------------------------------------------
@case("data")
def dataset_pipeline():
    ds = tf1.data.Dataset.from_tensor_slices(np.arange(10, dtype=np.int64))
    ds = ds.skip(1).take(8).repeat(2).batch(3).prefetch(1)
    it = tf1.data.make_initializable_iterator(ds)
    nxt = it.get_next()
    return [[it.initializer], [nxt], [nxt], [nxt]]


@case("data")
def dataset_range_zip_concat():
    a = tf1.data.Dataset.range(3)
    b = tf1.data.Dataset.from_tensors(np.float32([1.5, 2.5])).repeat(3)
    ds = tf1.data.Dataset.zip((a, b)).concatenate(tf1.data.Dataset.zip((a, b)))
    it = tf1.data.make_initializable_iterator(ds.batch(2))
    nxt = it.get_next()
    return [[it.initializer], list(nxt), list(nxt)]


# -- more attrs and gradients per family --------------------------------------------------
@case("array")
def gradients_of_rearrangements():
    x = tf1.placeholder(tf.float32, [3, 4], name="x")
    parts = tf.split(x, [1, 3], axis=1)
    halves = tf.split(x, 2, axis=1)
    t = tf.tile(x, [2, 1])
    loss = tf.reduce_sum(parts[1] * parts[1]) + tf.reduce_sum(halves[0] * 3.0) \
        + tf.reduce_sum(t * t) + tf.reduce_sum(tf.stack([x, x * x], 0)[1])
    return [(grads(loss, [x]), {x: A})]


@case("shapes")
def unknown_dims_and_int64_shapes():
    x = tf1.placeholder(tf.float32, [None, None, 4], name="x")
    r = tf.reshape(x, tf.stack([tf.shape(x)[0], -1]))
    s64, n64 = tf.shape(x, out_type=tf.int64), tf.size(x, out_type=tf.int64)
    sq = tf.squeeze(tf.expand_dims(x, -1))
    t = tf.transpose(x)
    loss = tf.reduce_sum(r * r) + tf.reduce_sum(sq * t[0, 0, 0]) + tf.reduce_sum(t * 2.0)
    return [([r, s64, n64, sq, t] + grads(loss, [x]), {x: V})]


@case("slicing")
def strided_slice_masks():
    x = tf1.placeholder(tf.float32, [2, 3, 4], name="x")
    out = [x[..., 1], x[:, tf.newaxis, 1:, ::2], x[1, :, -2:], x[::-1, 2, :3], x[..., ::-1, 0],
           tf.slice(x, [0, 1, 1], [-1, 2, 2])]
    loss = tf.add_n([tf.reduce_sum(o * o) for o in out])
    return [(out + grads(loss, [x]), {x: V})]


@case("slicing")
def broadcast_to_and_pad_gradients():
    x = tf1.placeholder(tf.float32, [1, 4], name="x")
    b = tf.broadcast_to(x, [3, 4])
    p = tf.pad(x, [[2, 1], [1, 1]], constant_values=0.0)
    loss = tf.reduce_sum(b * tf.constant(A)) + tf.reduce_sum(p * p)
    return [([b, p] + grads(loss, [x]), {x: A[:1]})]


@case("indexing")
def gathers_and_segment_gradients():
    x = tf1.placeholder(tf.float32, [3, 4], name="x")
    ids = tf1.placeholder(tf.int64, [None], name="ids")
    g = tf.gather(x, ids)
    gm = tf.gather(x, [[0, 1], [2, 2]])
    seg = tf.math.unsorted_segment_sum(x * x, tf.constant([2, 2, 0]), 4)
    bm = tf.boolean_mask(x, x[:, 0] > 0.0)
    sel = tf1.where(tf.constant([True, False, True]), x, x * 10.0)
    loss = tf.reduce_sum(g * g) + tf.reduce_sum(gm) + tf.reduce_sum(seg) + tf.reduce_sum(bm) \
        + tf.reduce_sum(sel * sel)
    return [([g, gm, seg, bm, sel] + grads(loss, [x]), {x: A, ids: np.array([2, 1, 2])})]


@case("logic")
def logical_xor_and_comparisons_of_ints():
    a = tf.constant([True, True, False, False])
    b = tf.constant([True, False, True, False])
    i = tf.constant([3, -1, 4, 1], tf.int64)
    return [[tf.math.logical_xor(a, b), tf.equal(i, 4), tf.greater(i, 0), tf.less_equal(i, 1),
             tf.equal(tf.constant(["a", "b"]), "b")]]


@case("math")
def float64_and_half():
    x = tf.constant(A.astype(np.float64))
    h = tf.constant(A.astype(np.float16))
    y = tf1.placeholder(tf.float64, [3, 4], name="y")
    out = [x * y + 1.0, tf.exp(y) / x, tf.square(h) + h, tf.cast(h, tf.float32),
           tf.cast(y, tf.float16), tf.sqrt(tf.abs(y)), tf.math.reciprocal(x)]
    loss = tf.reduce_sum(out[0] * out[1]) + tf.reduce_sum(out[5])
    return [(out + grads(loss, [y]), {y: (A * 2.0).astype(np.float64)})]


@case("math")
def division_and_power_gradients():
    x = tf1.placeholder(tf.float32, [3, 4], name="x")
    y = tf1.placeholder(tf.float32, [3, 1], name="y")
    q = tf.abs(y) + 0.5
    out = [x / q, tf.math.divide_no_nan(x, y), tf.pow(q, x), tf.maximum(x, y),
           tf.minimum(x, 0.0), tf1.add_n([x, x * y]), x - y, tf.sqrt(q) * x,
           tf.math.log1p(q) * x]
    loss = tf.add_n([tf.reduce_sum(o * o) for o in out])
    return [(out + grads(loss, [x, y]), {x: A, y: B[:3, :1]})]


@case("linalg")
def batch_matmul_broadcast():
    x = tf1.placeholder(tf.float32, [2, 3, 4], name="x")
    w = tf1.placeholder(tf.float32, [4, 5], name="w")
    m = tf.matmul(x, w)
    a = tf.matmul(x, x, adjoint_b=True)
    loss = tf.reduce_sum(m * m) + tf.reduce_sum(a)
    return [([m, a] + grads(loss, [x, w]), {x: V, w: B})]


@case("reduction")
def extremes_and_products_gradients():
    x = tf1.placeholder(tf.float32, [3, 4], name="x")
    out = [tf.reduce_max(x, 1), tf.reduce_min(x, 0, keepdims=True), tf.reduce_prod(x, 1),
           tf.reduce_mean(x, [0, 1]), tf.reduce_sum(x, -1),
           tf.argmax(x, 1, output_type=tf.int32), tf.math.count_nonzero(x > 0.0, 1),
           tf.cumsum(x, 1), tf.math.cumprod(x, 0, exclusive=True, reverse=True)]
    loss = tf.add_n([tf.reduce_sum(o * o) for o in out[:5] + out[7:]])
    return [(out + grads(loss, [x]), {x: A})]


@case("reduction")
def integer_reductions_and_range():
    x = tf.constant([[3, 1, 4], [1, 5, 9]], tf.int32)
    return [[tf.reduce_sum(x, 0), tf.reduce_prod(x, 1), tf.reduce_max(x), tf.reduce_mean(x, 1),
             tf.range(2, 11, 3), tf.range(5, dtype=tf.int64), tf.range(0.0, 1.0, 0.25)]]


@case("nn")
def softmax_family_gradients():
    x = tf1.placeholder(tf.float32, [3, 4], name="x")
    s, ls = tf.nn.softmax(x), tf.nn.log_softmax(x)
    b = tf.nn.bias_add(tf.reshape(x, [3, 2, 2]), [1.0, -1.0], data_format="NCHW")
    w = tf.nn.weighted_cross_entropy_with_logits(labels=tf.ones_like(x) * 0.5, logits=x,
                                                 pos_weight=2.0)
    loss = tf.reduce_sum(s * tf.constant(A)) + tf.reduce_sum(ls * ls) + tf.reduce_sum(b * b) \
        + tf.reduce_sum(w)
    return [([s, ls, b, w] + grads(loss, [x]), {x: A})]


@case("nn")
def second_derivatives():
    x = tf1.placeholder(tf.float32, [3, 4], name="x")
    y = tf.reduce_sum(tf.nn.relu(x) * x + tf.sigmoid(x) + tf.tanh(x) * 2.0 + tf.sqrt(x * x + 1.0)
                      + tf.math.reciprocal(x * x + 1.0))
    (g,) = tf.gradients(y, [x])
    (h,) = tf.gradients(tf.reduce_sum(g * g), [x])
    return [([g, h], {x: A})]


@case("clipping")
def clipping():
    x = tf1.placeholder(tf.float32, [3, 4], name="x")
    v = tf.clip_by_value(x, -0.5, 0.5)
    n = tf.clip_by_norm(x, 1.0)
    (c1, c2), gn = tf.clip_by_global_norm([x, x * 2.0], 2.0)
    loss = tf.reduce_sum(v * v) + tf.reduce_sum(n * n) + tf.reduce_sum(c1 * c2)
    return [([v, n, c1, c2, gn, tf.linalg.global_norm([x])] + grads(loss, [x]), {x: A})]


@case("embedding")
def embedding_lookup():
    emb = tf.constant(B)
    ids = tf1.placeholder(tf.int32, [None], name="ids")
    e = tf1.nn.embedding_lookup(emb, ids)
    e2 = tf1.nn.embedding_lookup([emb[:2], emb[2:]], ids, partition_strategy="div")
    loss = tf.reduce_sum(e * e) + tf.reduce_sum(e2)
    (g,) = tf.gradients(loss, [emb])
    return [([e, e2, tf.convert_to_tensor(g)], {ids: np.array([3, 0, 3], np.int32)})]


@case("init_ops")
def initializers_of_variables():
    tf1.set_random_seed(1)
    vs = [tf1.get_variable("z", [2, 3], initializer=tf1.zeros_initializer()),
          tf1.get_variable("o", [3], initializer=tf1.ones_initializer(), dtype=tf.int32),
          tf1.get_variable("c", [2, 2], initializer=tf1.constant_initializer([1., 2., 3., 4.]))]
    return [[tf1.global_variables_initializer()], [v.value() for v in vs]]


@case("init_ops", compare="shape")
def random_initializers():
    tf1.set_random_seed(1)
    vs = [tf1.get_variable("g", [4, 3], initializer=tf1.glorot_uniform_initializer()),
          tf1.get_variable("n", [5], initializer=tf1.random_normal_initializer(0.0, 2.0)),
          tf1.get_variable("t", [3, 3], initializer=tf1.truncated_normal_initializer()),
          tf1.get_variable("s", [2, 6], initializer=tf1.variance_scaling_initializer())]
    return [[tf1.global_variables_initializer()], [v.value() for v in vs]]


@case("queue")
def fifo_queue():
    q = tf1.FIFOQueue(5, [tf.float32, tf.int32], shapes=[[2], []])
    enq = q.enqueue_many([tf.constant(A[:3, :2]), tf.constant([1, 2, 3])])
    one = q.dequeue()
    many = q.dequeue_many(2)
    return [[enq], [q.size()], list(one), list(many), [q.size()]]


@case("accumulator")
def conditional_accumulator():
    acc = tf1.ConditionalAccumulator(tf.float32, shape=[2], shared_name="acc")
    apply = [acc.apply_grad(tf.constant([1.0, 2.0]), local_step=0),
             acc.apply_grad(tf.constant([3.0, 6.0]), local_step=0)]
    return [[apply[0]], [apply[1]], [acc.num_accumulated()], [acc.take_grad(2)]]


@case("tensor_array")
def tensor_array_in_a_while_loop():
    x = tf1.placeholder(tf.float32, [3, 4], name="x")
    ta = tf.TensorArray(tf.float32, size=3).unstack(x)
    out = tf.TensorArray(tf.float32, size=3)

    def body(i, acc, out):
        acc = acc * 0.5 + ta.read(i)
        return i + 1, acc, out.write(i, acc)

    _, last, out = tf1.while_loop(lambda i, *_: i < 3, body, [0, tf.zeros([4]), out])
    stacked = out.stack()
    (g,) = tf.gradients(tf.reduce_sum(stacked * stacked), [x])
    return [([last, stacked, g], {x: A})]


@case("summary")
def scalar_and_merged_summaries():
    x = tf.constant(2.5)
    s = tf1.summary.scalar("loss", x)
    t = tf1.summary.tensor_summary("t", tf.constant([1.0, 2.0]))
    return [[s, t, tf1.summary.merge([s, t])]]


@case("control")
def nested_cond_in_while_with_gradient():
    x = tf1.placeholder(tf.float32, [], name="x")

    def body(i, acc):
        acc = tf.cond(tf.equal(i % 2, 0), lambda: acc * x, lambda: acc + x)
        return i + 1, acc

    _, y = tf1.while_loop(lambda i, _: i < 4, body, [tf.constant(0), tf.constant(1.0)])
    (g,) = tf.gradients(y, [x])
    case_ = tf.case([(x > 5.0, lambda: x * 2.0), (x > 1.0, lambda: x * 3.0)],
                    default=lambda: -x)
    return [([y, g, case_], {x: np.float32(1.5)}), ([y, g, case_], {x: np.float32(6.0)})]


@case("control")
def cond_on_ref_variable():
    v = tf1.Variable(2.0, name="v")
    p = tf1.placeholder(tf.bool, [], name="p")
    y = tf.cond(p, lambda: tf1.assign_add(v, 1.0), lambda: tf.identity(v))
    return [[v.initializer], ([y], {p: True}), ([y], {p: False}), [v.value()]]


@case("data")
def dataset_shard_repeat_batch_drop_remainder():
    ds = tf1.data.Dataset.range(9).shard(2, 1).repeat(2).take(7).batch(3, drop_remainder=True)
    it = tf1.data.make_initializable_iterator(ds)
    nxt = it.get_next()
    return [[it.initializer], [nxt], [nxt]]


@case("data", compare="shape")
def dataset_shuffle_seeded():
    ds = tf1.data.Dataset.range(10).shuffle(10, seed=3).batch(4)
    it = tf1.data.make_initializable_iterator(ds)
    nxt = it.get_next()
    return [[it.initializer], [nxt], [nxt]]


@case("state")
def variable_shapes_and_assign_without_validation():
    v = tf1.Variable(tf.zeros([2]), name="v", validate_shape=False)
    w = tf1.Variable(np.arange(6, dtype=np.int64).reshape(2, 3), name="w")
    grow = tf1.assign(v, tf.ones([3]), validate_shape=False)
    return [[tf1.global_variables_initializer()], [grow], [v.value()],
            [tf1.assign(w, w * 2)], [tf1.assign_add(w, tf.ones_like(w))], [w.value()]]


@case("array")
def negative_axes_and_attr_variants():
    x = tf1.placeholder(tf.float32, [2, 3, 4], name="x")
    out = [tf.concat([x, x], -1), tf.stack([x, x], -2), tf.unstack(x, axis=-1)[3],
           tf.squeeze(tf.expand_dims(x, -2), [-2]), tf.one_hot([1, 0], 3, axis=0),
           tf.cast(x * 3.7, tf.int64), tf.argmax(x, -1, output_type=tf.int64),
           tf.gather(x, [[1, 0]], axis=-1, batch_dims=0), tf.reverse(x, [1])]
    loss = tf.reduce_sum(out[0] * out[1][:, :, 0, :1]) + tf.reduce_sum(out[2]) \
        + tf.reduce_sum(out[3] * out[3]) + tf.reduce_sum(out[7])
    return [(out + grads(loss, [x]), {x: V})]


@case("indexing")
def sparse_gradients_aggregated():
    emb = tf1.placeholder(tf.float32, [4, 5], name="emb")
    a = tf.gather(emb, [0, 2, 2])
    b = tf.gather(emb, [3, 0])
    loss = tf.reduce_sum(a * a) + tf.reduce_sum(b * 2.0) + tf.reduce_sum(emb * 0.5)
    (g,) = tf.gradients(loss, [emb])
    return [([tf.convert_to_tensor(g)], {emb: B})]


@case("nn")
def moments_and_normalization():
    x = tf1.placeholder(tf.float32, [3, 4], name="x")
    mean, var = tf.nn.moments(x, [0])
    l2 = tf.math.l2_normalize(x, 1)
    loss = tf.reduce_sum(mean * var) + tf.reduce_sum(l2 * tf.constant(A))
    return [([mean, var, l2, tf.nn.l2_loss(x)] + grads(loss, [x]), {x: A})]


@case("training")
def moving_average_and_global_step():
    v = tf1.Variable(A, name="v")
    step = tf1.train.get_or_create_global_step()
    ema = tf1.train.ExponentialMovingAverage(0.9, num_updates=step)
    update = ema.apply([v])
    inc = tf1.assign_add(step, 1)
    with tf.control_dependencies([update]):
        bump = tf1.assign(v, v * 2.0)
    return [[tf1.global_variables_initializer()], [update], [bump, inc], [update],
            [ema.average(v).value(), v.value(), step.value()]]


@case("state")
def partitioned_variable():
    v = tf1.get_variable("pv", initializer=tf.constant(B), partitioner=tf1.fixed_size_partitioner(2))
    x = tf1.placeholder(tf.float32, [3, 4], name="x")
    loss = tf.reduce_sum(tf.matmul(x, v.as_tensor()))
    step = tf1.train.GradientDescentOptimizer(0.5).minimize(loss)
    return [[tf1.global_variables_initializer()], ([step], {x: A}), [v.as_tensor()]]


@case("control")
def while_loop_with_tensor_array_gather_and_scatter():
    x = tf1.placeholder(tf.float32, [4, 3], name="x")
    ta = tf.TensorArray(tf.float32, size=4, clear_after_read=False).scatter([3, 2, 1, 0], x)
    out = tf.TensorArray(tf.float32, size=4, clear_after_read=False)

    def body(i, out):
        return i + 1, out.write(i, ta.read(i) * tf.cast(i + 1, tf.float32))

    _, out = tf1.while_loop(lambda i, _: i < 4, body, [0, out])
    gathered = out.gather([0, 3])
    concat = out.concat()
    (g,) = tf.gradients(tf.reduce_sum(gathered * gathered) + tf.reduce_sum(concat), [x])
    return [([gathered, concat, out.size(), g], {x: A.T.copy()})]


@case("queue")
def random_shuffle_queue_sizes():
    q = tf1.RandomShuffleQueue(10, 0, [tf.int32], shapes=[[]], seed=4)
    enq = q.enqueue_many([tf.range(6)])
    many = q.dequeue_many(6)
    return [[enq], [q.size()], [tf.reduce_sum(many)], [q.size()], [q.close()]]


@case("summary", compare="shape")
def histogram_and_image_summaries():
    # the Summary protos' bytes are TF's encoding and bucketing: their sizes differ
    h = tf1.summary.histogram("h", tf.constant(A))
    return [[h]]


@case("io")
def saver_save_and_restore():
    w = tf1.Variable(A, name="w")
    b = tf1.Variable(np.arange(3, dtype=np.int64), name="b")
    saver = tf1.train.Saver([w, b])
    save = saver.saver_def.save_tensor_name
    restore = saver.saver_def.restore_op_name
    feed_name = saver.saver_def.filename_tensor_name
    graph = tf1.get_default_graph()
    filename = graph.get_tensor_by_name(feed_name)
    path = np.array(str(OUT / "io_ckpt" / "model").encode())
    return [[tf1.global_variables_initializer()], ([graph.get_tensor_by_name(save)],
                                                   {filename: path}),
            [tf1.assign(w, tf.zeros_like(w)), tf1.assign(b, b * 0)],
            ([graph.get_operation_by_name(restore)], {filename: path}),
            [w.value(), b.value()]]


@case("errors")
def run_time_errors():
    x = tf1.placeholder(tf.float32, [None], name="x")
    i = tf1.placeholder(tf.int32, [None], name="i")
    m = tf1.placeholder(tf.float32, None, name="m")
    v = tf1.Variable([1.0, 2.0], name="v")
    q = tf1.FIFOQueue(2, [tf.float32], shapes=[[]])
    check = tf1.Assert(tf.reduce_all(x > 0.0), [x])
    with tf.control_dependencies([check]):
        checked = tf.identity(x)
    return [([checked], {x: np.float32([1.0, -1.0])}),
            ([tf.gather(x, i)], {x: np.float32([1.0, 2.0]), i: np.int32([0, 5])}),
            ([tf.reshape(x, [3])], {x: np.float32([1.0, 2.0])}),
            ([tf.math.floordiv(i, i * 0)], {i: np.int32([3])}),
            [v.value()],
            [q.close()], [q.dequeue()],
            ([tf.concat([x, m], 0)], {x: np.float32([1.0]), m: np.ones((1, 1), np.float32)}),
            ([checked], {x: np.float32([2.0])})]


@case("data")
def dataset_functions_from_the_library():
    # map's function, unbatch's and the one-shot iterator's factory live in the library
    ds = tf1.data.Dataset.range(6).map(lambda v: v * 3 + 1).batch(4).unbatch().batch(2)
    nxt = tf1.data.make_one_shot_iterator(ds).get_next()
    return [[nxt], [nxt], [nxt]]


def control_flow_v2(build):
    """Builds with TF2's functional control flow (If, While and their library functions)."""
    def wrapped():
        tf1.enable_control_flow_v2()
        try:
            return build()
        finally:
            tf1.disable_control_flow_v2()
    wrapped.__name__ = build.__name__
    return wrapped


@case("functional")
@control_flow_v2
def cond_v2_and_gradient():
    x = tf1.placeholder(tf.float32, [3, 4], name="x")
    p = tf1.placeholder(tf.bool, [], name="p")
    y = tf.cond(p, lambda: tf.reduce_sum(tf.square(x)), lambda: tf.reduce_sum(x * 3.0))
    (g,) = tf.gradients(y, [x])
    return [([y, g], {x: A, p: True}), ([y, g], {x: A, p: False})]


@case("functional")
@control_flow_v2
def while_v2_and_gradient():
    x = tf1.placeholder(tf.float32, [4], name="x")
    _, y = tf1.while_loop(lambda i, acc: i < 3, lambda i, acc: (i + 1, acc * x + 1.0),
                          [tf.constant(0), tf.ones_like(x)])
    (g,) = tf.gradients(tf.reduce_sum(y), [x])
    return [([y, g], {x: A[0]})]


def tensor_names(fetches) -> list:
    return [f.name for f in fetches]


def main(out_dir: Path) -> None:
    global OUT
    OUT = out_dir
    manifest = {}
    for name, spec in CASES.items():
        with tf.Graph().as_default() as graph:
            runs = [r if isinstance(r, tuple) else (r, {}) for r in spec["build"]()]
            arrays, described = {}, []
            with tf1.Session() as sess:
                for r, (fetches, feeds) in enumerate(runs):
                    try:
                        values, error = sess.run(fetches, feeds), None
                    except tf.errors.OpError as e:  # the run's error class is what counts
                        values, error = [], type(e).__name__
                    for f, value in enumerate(values):
                        if value is not None:
                            arrays[f"run{r}_fetch{f}"] = np.asarray(value)
                    feed_names = []
                    for f, (key, value) in enumerate(feeds.items()):
                        arrays[f"run{r}_feed{f}"] = np.asarray(value)
                        feed_names.append(key.name)
                    described.append({"fetches": tensor_names(fetches), "feeds": feed_names,
                                      "error": error})
            (out_dir / f"{name}.pb").write_bytes(graph.as_graph_def().SerializeToString())
        np.savez(out_dir / f"{name}.npz", **arrays)
        manifest[name] = {"family": spec["family"], "runs": described,
                          "compare": spec["compare"], "rtol": spec["rtol"],
                          "atol": spec["atol"]}
    print(json.dumps(manifest))


if __name__ == "__main__":
    main(Path(sys.argv[1]))
