"""Sparse updates: each optimizer applies an IndexedSlices gradient to its rows only
(SparseApplyMomentum, SparseApplyAdagrad, ScatterSub, Adam's TF 1.15 composite), and
on a real ps an embedding's step ships a few rows, not the table."""
import numpy as np
import pytest

import nbcluster as tf
from nbcluster import errors
from nbcluster.ops import training as training_ops

pytestmark = pytest.mark.timeout(120)

RNG = np.random.default_rng(3)
INIT = RNG.normal(size=(5, 2))
STEPS = [[0, 2], [1, 2]]  # row 0 only in the first step, rows 3 and 4 never


def _run_pair(make_opt, steps, slot=None):
    """The same gradients applied sparsely to one variable and densely to its twin.

    Returns per step (sparse value, dense value, sparse slot value or None)."""
    sparse, dense = tf.Variable(INIT, name="sparse"), tf.Variable(INIT, name="dense")
    ids = tf.placeholder(tf.int32, [None])
    weights = tf.placeholder(tf.float64, [None, 2])
    loss = tf.reduce_sum(tf.square(tf.gather(sparse, ids)) * weights)
    opt = make_opt()
    ((g, _),) = opt.compute_gradients(loss, var_list=[sparse])
    assert isinstance(g, tf.IndexedSlices)
    train = opt.apply_gradients([(g, sparse), (tf.convert_to_tensor(g), dense)])
    fetches = [sparse, dense] + ([opt.get_slot(sparse, slot)] if slot else [])
    out = []
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        for step in steps:
            sess.run(train, {ids: step, weights: RNG.uniform(0.5, 1.5, (len(step), 2))})
            out.append(sess.run(fetches))
    return out


def test_gradient_descent_equals_dense_and_adds_up_repeated_rows():
    (s, d), = _run_pair(lambda: tf.train.GradientDescentOptimizer(0.1), [[4, 1, 4]])
    np.testing.assert_allclose(s, d)
    np.testing.assert_array_equal(s[[0, 2, 3]], INIT[[0, 2, 3]])
    assert not np.allclose(s[4], INIT[4])
    ops = {op.type for op in tf.get_default_graph().get_operations()}
    assert "ScatterSub" in ops


def test_momentum_touches_only_its_rows():
    (s1, d1, _), (s2, d2, accum) = _run_pair(lambda: tf.train.MomentumOptimizer(0.1, 0.9),
                                             STEPS, "momentum")
    np.testing.assert_allclose(s1, d1)
    np.testing.assert_allclose(s2[[1, 2]], d2[[1, 2]])  # the rows of step 2
    np.testing.assert_array_equal(s2[0], s1[0])  # sparse: row 0's momentum sleeps
    assert not np.allclose(d2[0], d1[0])  # dense: it keeps row 0 moving
    np.testing.assert_array_equal(s2[[3, 4]], INIT[[3, 4]])
    assert not accum[[3, 4]].any()


def test_adagrad_equals_dense_and_leaves_untouched_accumulators():
    (_, _, _), (s, d, accum) = _run_pair(lambda: tf.train.AdagradOptimizer(0.3), STEPS,
                                         "accumulator")
    np.testing.assert_allclose(s, d)
    np.testing.assert_array_equal(s[[3, 4]], INIT[[3, 4]])
    np.testing.assert_allclose(accum[[3, 4]], 0.1)


def test_adam_is_tf_1_15s_composite_not_lazy():
    """TF 1.15's AdamOptimizer._apply_sparse decays m and v on every row, so a row
    touched once keeps moving (only contrib's LazyAdam would stop it); the result
    equals the dense update on the gradient made dense."""
    (s1, d1, _), (s2, d2, m) = _run_pair(lambda: tf.train.AdamOptimizer(0.1), STEPS, "m")
    np.testing.assert_allclose(s1, d1)
    np.testing.assert_allclose(s2, d2)
    assert not np.allclose(s2[0], s1[0])  # m of row 0 is nonzero, so it moves again
    np.testing.assert_array_equal(s2[[3, 4]], INIT[[3, 4]])
    assert not m[[3, 4]].any()
    ops = {op.type for op in tf.get_default_graph().get_operations()}
    assert {"ScatterAdd", "AssignSub", "ApplyAdam"} <= ops


def _sequential(rule, var, accum, grad, indices):
    var, accum = var.copy(), accum.copy()
    for i, row in enumerate(indices):
        var[row], accum[row] = rule(var[row], accum[row], grad[i])
    return var, accum


@pytest.mark.parametrize("nesterov", [False, True])
def test_sparse_apply_momentum_kernel_visits_repeated_rows_in_order(nesterov):
    var, accum = tf.Variable(INIT), tf.Variable(np.full((5, 2), 0.5))
    grad = RNG.normal(size=(3, 2))
    out = training_ops.sparse_apply_momentum(var, accum, 0.1, grad, [2, 0, 2], 0.9,
                                             use_nesterov=nesterov)
    assert out.op.type == "SparseApplyMomentum"
    assert [t.name for t in out.op.inputs][4].endswith("indices:0")
    assert out.op.get_attr("Tindices") == tf.int32
    assert out.op.get_attr("use_nesterov") is nesterov

    def rule(v, a, g):
        a = a * 0.9 + g
        return (v - (g * 0.1 + a * 0.9 * 0.1), a) if nesterov else (v - 0.1 * a, a)

    want_var, want_accum = _sequential(rule, INIT, np.full((5, 2), 0.5), grad, [2, 0, 2])
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        sess.run(out)
        np.testing.assert_allclose(sess.run(var), want_var)
        np.testing.assert_allclose(sess.run(accum), want_accum)


def test_sparse_apply_adagrad_kernel_visits_repeated_rows_in_order():
    var, accum = tf.Variable(INIT), tf.Variable(np.full((5, 2), 0.1))
    grad = RNG.normal(size=(3, 2))
    out = training_ops.sparse_apply_adagrad(var, accum, 0.5, grad,
                                            np.array([1, 1, 3], np.int64))
    assert out.op.type == "SparseApplyAdagrad" and out.op.get_attr("Tindices") == tf.int64
    want_var, want_accum = _sequential(
        lambda v, a, g: (v - 0.5 * g / np.sqrt(a + g * g), a + g * g),
        INIT, np.full((5, 2), 0.1), grad, [1, 1, 3])
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        sess.run(out)
        np.testing.assert_allclose(sess.run(var), want_var)
        np.testing.assert_allclose(sess.run(accum), want_accum)


def test_sparse_apply_errors():
    var, accum = tf.Variable(INIT), tf.Variable(np.ones((5, 2)))
    with pytest.raises(ValueError, match="indices.shape"):
        training_ops.sparse_apply_adagrad(var, accum, 0.1, np.ones((2, 3)), [0, 1])
    with pytest.raises(ValueError, match="must be a vector"):
        training_ops.sparse_apply_adagrad(var, accum, 0.1, np.ones((1, 1, 2)), [[0]])
    with pytest.raises(TypeError, match="indices"):
        training_ops.sparse_apply_adagrad(var, accum, 0.1, np.ones((1, 2)), [0.5])
    bad = training_ops.sparse_apply_adagrad(var, accum, 0.1, np.ones((2, 2)), [1, 5])
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        with pytest.raises(errors.InvalidArgumentError, match="Index 5 at offset 1"):
            sess.run(bad)


def test_a_sparse_gradient_of_the_wrong_dtype_is_refused():
    var = tf.Variable(INIT)
    g = tf.IndexedSlices(tf.constant([[1.0, 1.0]]), tf.constant([0]), tf.constant([5, 2]))
    with pytest.raises(TypeError, match="float32"):
        tf.train.GradientDescentOptimizer(0.1).apply_gradients([(g, var)])


def test_gate_graph_keeps_gradients_sparse():
    var = tf.Variable(INIT)
    loss = tf.reduce_sum(tf.gather(var, [1, 1]))
    opt = tf.train.GradientDescentOptimizer(1.0)
    ((g, _),) = opt.compute_gradients(loss, gate_gradients=opt.GATE_GRAPH)
    assert isinstance(g, tf.IndexedSlices)
    train = opt.apply_gradients([(g, var)])
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        sess.run(train)
        np.testing.assert_allclose(sess.run(var), INIT - [[0, 0], [2, 2], [0, 0], [0, 0],
                                                          [0, 0]])


ROWS, DIM, LOOKUPS = 20000, 32, 16


def test_an_embedding_on_a_real_ps_ships_rows_not_the_table(cluster_factory):
    cluster = cluster_factory({"ps": 1, "worker": 1}, timeout=60)
    graph = tf.Graph()
    with graph.as_default(), tf.device(tf.train.replica_device_setter(cluster=cluster.spec)):
        table = tf.Variable(tf.random_normal([ROWS, DIM], stddev=0.1, seed=1), name="emb")
        ids = tf.placeholder(tf.int32, [LOOKUPS])
        rows = tf.nn.embedding_lookup(table, ids)
        loss = tf.reduce_mean(tf.square(tf.reduce_sum(rows, 1) - 1.0))
        train = tf.train.GradientDescentOptimizer(0.05).minimize(loss)
        init = tf.global_variables_initializer()
    vocab = RNG.choice(ROWS, 64, replace=False)
    batches = [RNG.choice(vocab, LOOKUPS, replace=False) for _ in range(40)]
    with tf.Session(cluster.target("worker", 0), graph=graph) as sess:
        sess.run(init)
        first = sess.run(loss, {ids: batches[0]})
        sess.run(train, {ids: batches[0]})  # registers the step's graphs
        before = cluster.status()[0].bytes_received
        for batch in batches[1:]:
            sess.run(train, {ids: batch})
        per_step = (cluster.status()[0].bytes_received - before) / (len(batches) - 1)
        last = np.mean([sess.run(loss, {ids: b}) for b in batches[:5]])
    table_bytes = ROWS * DIM * 4
    assert per_step < 0.1 * table_bytes, (per_step, table_bytes)
    assert last < 0.5 * first, (first, last)


@pytest.mark.parametrize("make_opt, slot", [
    (lambda: tf.train.MomentumOptimizer(0.1, 0.9), "momentum"),
    (lambda: tf.train.MomentumOptimizer(0.1, 0.9, use_nesterov=True), "momentum"),
    (lambda: tf.train.AdagradOptimizer(0.3), "accumulator"),
    (lambda: tf.train.AdamOptimizer(0.1), "v")])
def test_repeated_rows_are_summed_first_so_sparse_equals_dense(make_opt, slot):
    """As TF: Unique + UnsortedSegmentSum before the sparse update, so a row named
    twice in one step gets one update with the summed gradient, as densely."""
    (s, d, _), = _run_pair(make_opt, [[2, 0, 2, 2]], slot)
    np.testing.assert_allclose(s, d)
    ops = {op.type for op in tf.get_default_graph().get_operations()}
    assert {"Unique", "UnsortedSegmentSum"} <= ops
