"""Resource variables trained, saved and restored exactly as ref variables: the
optimizers build TF's ResourceApply* / ResourceSparseApply* ops, give the ref
run's values (and NumPy's, for SGD and Adam), checkpoints cross between the
two kinds, and the in-place SGD update serves resource variables too."""
import json
import os

import numpy as np
import pytest
from tensorflow_processes import requires_tensorflow

import nbcluster as tf
from nbcluster.kernels import training as training_kernels
from nbcluster.training.saver import Saver

pytestmark = pytest.mark.timeout(120)

W0 = np.array([[1.0, -2.0], [0.5, 3.0]], np.float32)
E0 = np.arange(12, dtype=np.float32).reshape(4, 3) / 10
X = np.array([[1.0, -1.0], [2.0, 0.5]], np.float32)
IDS = [0, 2, 2]
STEPS = 4

@pytest.fixture(autouse=True)
def ref_variables_by_default():
    tf.disable_resource_variables()
    yield
    tf.disable_resource_variables()


OPTIMIZERS = {
    "sgd": lambda: tf.train.GradientDescentOptimizer(0.1),
    "momentum": lambda: tf.train.MomentumOptimizer(0.1, 0.9),
    "nesterov": lambda: tf.train.MomentumOptimizer(0.1, 0.9, use_nesterov=True),
    "adagrad": lambda: tf.train.AdagradOptimizer(0.2),
    "adam": lambda: tf.train.AdamOptimizer(0.05),
}


def _model(use_resource: bool, make_opt):
    w = tf.get_variable("w", initializer=W0, use_resource=use_resource)
    emb = tf.get_variable("emb", initializer=E0, use_resource=use_resource)
    rows = emb.sparse_read(IDS) if use_resource else tf.gather(emb, IDS)
    loss = tf.reduce_sum(tf.matmul(X, w) ** 2) + tf.reduce_sum(rows ** 2)
    step = tf.train.get_or_create_global_step()
    opt = make_opt()
    return w, emb, step, opt, opt.minimize(loss, global_step=step)


def _train(use_resource: bool, make_opt):
    with tf.Graph().as_default() as graph:
        w, emb, step, opt, train = _model(use_resource, make_opt)
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            for _ in range(STEPS):
                sess.run(train)
            values = sess.run([w, emb, step])
        types = {op.type for op in graph.get_operations()}
        if use_resource:  # only the global step is a ref variable (not enabled here)
            assert [op.name for op in graph.get_operations() if op.type == "VariableV2"] \
                == ["global_step"]
        slots = [opt.get_slot(w, n) for n in opt.get_slot_names()]
    return values, types, slots


def _numpy_grads(w, e):
    dw = 2 * X.T @ (X @ w)
    de = np.zeros_like(e)
    np.add.at(de, IDS, 2 * e[IDS])
    return dw, de


def _numpy_sgd(lr=0.1):
    w, e = W0.astype(np.float64), E0.astype(np.float64)
    for _ in range(STEPS):
        dw, de = _numpy_grads(w, e)
        w, e = w - lr * dw, e - lr * de
    return w, e


def _numpy_adam(lr=0.05, b1=0.9, b2=0.999, eps=1e-8):
    params = [W0.astype(np.float64), E0.astype(np.float64)]
    m = [np.zeros_like(p) for p in params]
    v = [np.zeros_like(p) for p in params]
    for t in range(1, STEPS + 1):
        grads = _numpy_grads(*params)
        alpha = lr * np.sqrt(1 - b2 ** t) / (1 - b1 ** t)
        for i, g in enumerate(grads):
            if i == 1:  # sparse: only the gathered rows' moments and values change
                rows = sorted(set(IDS))
                m[i][rows] = b1 * m[i][rows] + (1 - b1) * g[rows]
                v[i][rows] = b2 * v[i][rows] + (1 - b2) * g[rows] ** 2
                params[i][rows] -= alpha * m[i][rows] / (np.sqrt(v[i][rows]) + eps)
            else:
                m[i] = b1 * m[i] + (1 - b1) * g
                v[i] = b2 * v[i] + (1 - b2) * g * g
                params[i] = params[i] - alpha * m[i] / (np.sqrt(v[i]) + eps)
    return params


@pytest.mark.parametrize("name", sorted(OPTIMIZERS))
def test_resource_training_equals_the_ref_run(name):
    ref, _, _ = _train(False, OPTIMIZERS[name])
    res, res_types, slots = _train(True, OPTIMIZERS[name])
    for a, b in zip(ref, res):
        np.testing.assert_allclose(b, a, rtol=1e-6, atol=1e-7)
    assert res[2] == STEPS
    assert not any(t.startswith(("Apply", "SparseApply")) for t in res_types)
    assert not res_types & {"ScatterSub", "ScatterAdd", "SparseApplyMomentum"}
    dense = {"sgd": "ResourceApplyGradientDescent", "momentum": "ResourceApplyMomentum",
             "nesterov": "ResourceApplyMomentum", "adagrad": "ResourceApplyAdagrad",
             "adam": "ResourceApplyAdam"}[name]
    sparse = {"sgd": "ResourceScatterSub", "momentum": "ResourceSparseApplyMomentum",
              "nesterov": "ResourceSparseApplyMomentum",
              "adagrad": "ResourceSparseApplyAdagrad", "adam": "ResourceScatterAdd"}[name]
    assert {dense, sparse} <= res_types
    assert all(s.op.type == "VarHandleOp" for s in slots)  # slots are resource ones too


def test_sgd_and_adam_match_numpy():
    res, _, _ = _train(True, OPTIMIZERS["sgd"])
    for got, want in zip(res[:2], _numpy_sgd()):
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
    res, _, _ = _train(True, OPTIMIZERS["adam"])
    for got, want in zip(res[:2], _numpy_adam()):
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


def test_resource_apply_ops_carry_tfs_attrs_and_take_handles():
    w = tf.Variable(W0, name="w", use_resource=True)
    train = tf.train.MomentumOptimizer(0.1, 0.9, use_nesterov=True).minimize(
        tf.reduce_sum(w * w))
    (apply,) = [op for op in tf.get_default_graph().get_operations()
                if op.type == "ResourceApplyMomentum"]
    assert [t.dtype for t in apply.inputs[:2]] == [tf.resource, tf.resource]
    assert apply.inputs[0] is w.handle and not apply.outputs
    assert apply.get_attr("T") == tf.float32 and apply.get_attr("use_nesterov") is True
    assert apply.get_attr("use_locking") is False
    assert train.type == "NoOp"
    with pytest.raises(TypeError, match="does not match type float32"):
        from nbcluster.ops import training as training_ops
        training_ops.apply_gradient_descent(w, np.float64(0.1),
                                            tf.constant(W0.astype(np.float64)))


def test_the_global_step_of_resource_runs_is_resource_and_counts():
    tf.enable_resource_variables()
    try:
        w = tf.Variable(W0, name="w")
        step = tf.train.get_or_create_global_step()
        train = tf.train.GradientDescentOptimizer(0.1).minimize(tf.reduce_sum(w),
                                                                global_step=step)
    finally:
        tf.disable_resource_variables()
    assert step.op.type == "VarHandleOp" and step.dtype == tf.int64
    assert train.type == "AssignAddVariableOp"  # as TF's apply_gradients builds it
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        for _ in range(3):
            sess.run(train)
        assert tf.train.global_step(sess, step) == 3


# -- checkpoints ------------------------------------------------------------------------
def step_of(graph):
    return tf.train.get_global_step(graph)


def _saved_after_training(tmp_path, use_resource: bool):
    with tf.Graph().as_default():
        _, _, _, _, train = _model(use_resource, OPTIMIZERS["adam"])
        saver = Saver()
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            sess.run(train)
            values = {v.op.name: sess.run(v) for v in tf.global_variables()}
            path = saver.save(sess, str(tmp_path / f"model-{use_resource}"))
            assert sess.run(step_of(tf.get_default_graph())) == 1
    return path, values


@pytest.mark.parametrize("saved_as_resource", [False, True])
def test_checkpoints_cross_between_ref_and_resource_variables(tmp_path, saved_as_resource):
    path, saved = _saved_after_training(tmp_path, saved_as_resource)
    with open(path + ".index") as index:  # the same keys whichever kind wrote them
        assert set(json.load(index)["tensors"]) == set(saved)
    with tf.Graph().as_default():
        _, _, _, _, train = _model(not saved_as_resource, OPTIMIZERS["adam"])
        with tf.Session() as sess:
            Saver().restore(sess, path)
            restored = {v.op.name: sess.run(v) for v in tf.global_variables()}
            sess.run(train)  # and training goes on from there
    assert restored.keys() == saved.keys() and len(saved) == 9  # w, emb, 4 slots, 2 betas, step
    for name, value in saved.items():
        np.testing.assert_array_equal(restored[name], value, err_msg=name)


def test_a_failed_restore_into_a_resource_variable_names_it(tmp_path):
    with tf.Graph().as_default():
        tf.Variable(np.zeros((2, 3), np.float32), name="w")
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            path = Saver().save(sess, str(tmp_path / "m"))
    tf.Variable(np.zeros((3, 2), np.float32), name="w", use_resource=True)
    with tf.Session() as sess, pytest.raises(
            tf.errors.InvalidArgumentError, match=r"Restoring variable 'w' .* shape"):
        Saver().restore(sess, path)


# -- in-place updates ---------------------------------------------------------------------
def test_resource_sgd_updates_in_place_while_nothing_else_holds_the_array(monkeypatch):
    calls = []
    rule = training_kernels._IN_PLACE["ApplyGradientDescent"]

    def counted(*args):
        calls.append(1)
        rule(*args)
    monkeypatch.setitem(training_kernels._IN_PLACE, "ApplyGradientDescent", counted)
    v = tf.Variable(np.array([1.0, 2.0, 3.0], np.float32), name="v", use_resource=True)
    g = tf.constant(np.ones(3, np.float32))
    train = tf.train.GradientDescentOptimizer(0.5).apply_gradients([(g, v)])
    read = v.read_value()
    with tf.control_dependencies([read]):
        held = tf.train.GradientDescentOptimizer(0.5).apply_gradients([(g, v)])
    with tf.Session() as sess:
        sess.run(v.initializer)
        first = sess.run(v)
        for _ in range(3):
            sess.run(train)
        assert len(calls) == 3  # nothing held the array: written in place
        np.testing.assert_array_equal(first, [1.0, 2.0, 3.0])  # a fetch keeps its values
        before, _ = sess.run([read, held])  # the read is fetched: a new array instead
        np.testing.assert_array_equal(before, [-0.5, 0.5, 1.5])
        np.testing.assert_array_equal(sess.run(v), [-1.0, 0.0, 1.0])


# -- placement and partitioned tables ----------------------------------------------------
def test_greedy_placement_sizes_a_handle_by_its_variable():
    assert tf.train.byte_size_load_fn(tf.Variable(np.zeros((3, 4), np.float32),
                                                  use_resource=True).op) == 48
    strategy = tf.train.GreedyLoadBalancingStrategy(2, tf.train.byte_size_load_fn)
    with tf.device(tf.train.replica_device_setter(ps_tasks=2, ps_strategy=strategy)):
        big = tf.Variable(np.zeros((100, 10), np.float32), name="big", use_resource=True)
        small = [tf.Variable(np.zeros(4, np.float32), name=f"s{i}", use_resource=True)
                 for i in range(3)]
    assert big.device == "/job:ps/task:0"
    assert {v.device for v in small} == {"/job:ps/task:1"}  # all lighter than `big`


def test_a_partitioned_resource_table_trains_sparsely_like_the_ref_one():
    ids = np.array([7, 0, 7, 3], np.int32)
    results = {}
    for use_resource in (False, True):
        with tf.Graph().as_default() as graph:
            table = tf.get_variable("table", [8, 2], partitioner=tf.fixed_size_partitioner(2),
                                    initializer=tf.constant_initializer(1.0),
                                    use_resource=use_resource)
            rows = tf.nn.embedding_lookup(table, ids, partition_strategy="div")
            loss = tf.reduce_sum(rows * rows)
            opt = tf.train.GradientDescentOptimizer(0.1)
            grads = opt.compute_gradients(loss)
            assert all(isinstance(g, tf.IndexedSlices) for g, _ in grads)
            train = opt.apply_gradients(grads)
            with tf.Session() as sess:
                sess.run(tf.global_variables_initializer())
                for _ in range(2):
                    sess.run(train)
                results[use_resource] = sess.run(table.as_tensor())
            types = {op.type for op in graph.get_operations()}
        assert ("ResourceGather" in types) is use_resource
    np.testing.assert_allclose(results[True], results[False])
    want = np.ones((8, 2))
    for _ in range(2):
        grad = np.zeros_like(want)
        np.add.at(grad, ids, 2 * want[ids])
        want -= 0.1 * grad
    np.testing.assert_allclose(results[True], want, rtol=1e-6)


# -- a GraphDef TensorFlow wrote -------------------------------------------------------
@requires_tensorflow  # TF runs in a subprocess only, never in this one
@pytest.mark.parametrize("optimizer", ["sgd", "adam"])
def test_a_graph_def_tensorflow_built_with_resource_variables_runs_to_tfs_values(
        tmp_path, optimizer):
    import subprocess
    import sys
    script = os.path.join(os.path.dirname(os.path.abspath(__file__)), "tf_resource_graph.py")
    out = tmp_path / "tf.npz"
    done = subprocess.run([sys.executable, script, str(out), optimizer], capture_output=True,
                          text=True, timeout=240, check=False)
    assert done.returncode == 0, done.stderr[-3000:]
    tf_side = np.load(out)
    assert {"VarHandleOp", "ReadVariableOp", "AssignVariableOp", "ResourceGather"} <= \
        set(tf_side["types"].tolist())
    graph_def = tf.GraphDef.FromString(tf_side["graph_def"].tobytes())
    with tf.Graph().as_default():
        tf.import_graph_def(graph_def, name="")
        with tf.Session() as sess:
            sess.run(str(tf_side["init"]))
            for _ in range(4):
                sess.run(str(tf_side["train"]))
            w, emb, step = sess.run([str(r) for r in tf_side["reads"]])
    np.testing.assert_allclose(w, tf_side["w"], rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(emb, tf_side["emb"], rtol=1e-5, atol=1e-6)
    assert step == tf_side["step"] == 4
