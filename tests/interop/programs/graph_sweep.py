"""Real TensorFlow builds one small graph per case of each op family and runs it:
`graph_sweep.py OUT_DIR`. Each case is a list of runs (fetch names, feeds) on
one graph, gradients (tf.gradients) included; for every case it writes
OUT_DIR/<case>.pb (the GraphDef TF serialized) and OUT_DIR/<case>.npz (the
feeds and the values TF fetched), and prints one JSON manifest:
{case: {"family", "runs": [{"fetches", "feeds"}], "compare", "rtol", "atol"}}.
"""
import json
import sys
from pathlib import Path

import numpy as np
import tensorflow as tf

tf1 = tf.compat.v1
tf1.disable_v2_behavior()  # graph mode, v1 control flow, ref variables
CASES: dict = {}
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
    # not make_one_shot_iterator: its dataset_factory is a function of the GraphDef's
    # library, which nbcluster does not import (docs/interop.md)
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


def tensor_names(fetches) -> list:
    return [f.name for f in fetches]


def main(out_dir: Path) -> None:
    manifest = {}
    for name, spec in CASES.items():
        with tf.Graph().as_default() as graph:
            runs = [r if isinstance(r, tuple) else (r, {}) for r in spec["build"]()]
            arrays, described = {}, []
            with tf1.Session() as sess:
                for r, (fetches, feeds) in enumerate(runs):
                    values = sess.run(fetches, feeds)
                    for f, value in enumerate(values):
                        if value is not None:
                            arrays[f"run{r}_fetch{f}"] = np.asarray(value)
                    feed_names = []
                    for f, (key, value) in enumerate(feeds.items()):
                        arrays[f"run{r}_feed{f}"] = np.asarray(value)
                        feed_names.append(key.name)
                    described.append({"fetches": tensor_names(fetches), "feeds": feed_names})
            (out_dir / f"{name}.pb").write_bytes(graph.as_graph_def().SerializeToString())
        np.savez(out_dir / f"{name}.npz", **arrays)
        manifest[name] = {"family": spec["family"], "runs": described,
                          "compare": spec["compare"], "rtol": spec["rtol"],
                          "atol": spec["atol"]}
    print(json.dumps(manifest))


if __name__ == "__main__":
    main(Path(sys.argv[1]))
