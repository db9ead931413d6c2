"""Resource variables on a ps, each task its own process: placed with their
handles (every ReadVariableOp and ResourceApply* runs on the ps), trained with
SGD and Adam to the ref-variable run's and NumPy's values, checkpointed on the
ps across kinds, and shared by between-graph worker clients."""
import json
import os
import subprocess
import sys

import numpy as np
import pytest

import nbcluster as tf
from nbcluster.launch import child_env
from nbcluster.training.saver import Saver

pytestmark = pytest.mark.timeout(240)

CLIENT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "resource_ps_client.py")
FULL_TRACE = tf.RunOptions(trace_level=tf.RunOptions.FULL_TRACE)
RNG = np.random.default_rng(5)
W0 = RNG.uniform(-1, 1, (4, 3)).astype(np.float32)
E0 = RNG.uniform(-1, 1, (6, 4)).astype(np.float32)
XS = [RNG.uniform(-1, 1, (5, 4)).astype(np.float32) for _ in range(2)]
IDS = np.array([1, 4, 4, 0, 1], np.int32)
STEPS = 5


def _build(cluster, use_resource: bool, make_opt):
    """Two workers' halves of one loss over ps variables (a table read by a gather)."""
    setter = tf.train.replica_device_setter(cluster=cluster.spec)
    with tf.device(setter), tf.variable_scope("model", use_resource=use_resource):
        w = tf.get_variable("w", initializer=W0)
        emb = tf.get_variable("emb", initializer=E0)
        step = tf.train.get_or_create_global_step()
    losses = []
    for task, x in enumerate(XS):
        with tf.device(f"/job:worker/task:{task}"):
            rows = tf.gather(emb, IDS) if not use_resource else emb.sparse_read(IDS)
            losses.append(tf.reduce_sum(tf.tanh((x + rows) @ w) ** 2))
    opt = make_opt()
    return (w, emb, step), opt.minimize(tf.add_n(losses), global_step=step)


def _numpy(adam: bool, lr: float):
    w, e = W0.astype(np.float64), E0.astype(np.float64)
    m = [np.zeros_like(w), np.zeros_like(e)]
    v = [np.zeros_like(w), np.zeros_like(e)]
    for t in range(1, STEPS + 1):
        dw, de = np.zeros_like(w), np.zeros_like(e)
        for x in XS:
            h = (x + e[IDS]) @ w
            dh = 2 * np.tanh(h) * (1 - np.tanh(h) ** 2)
            dw += (x + e[IDS]).T @ dh
            np.add.at(de, IDS, dh @ w.T)
        if not adam:
            w, e = w - lr * dw, e - lr * de
            continue
        alpha = lr * np.sqrt(1 - 0.999 ** t) / (1 - 0.9 ** t)
        rows = sorted(set(IDS.tolist()))
        for i, (p, g) in enumerate(((w, dw), (e, de))):
            sel = slice(None) if i == 0 else rows
            m[i][sel] = 0.9 * m[i][sel] + 0.1 * g[sel]
            v[i][sel] = 0.999 * v[i][sel] + 0.001 * g[sel] ** 2
            p[sel] -= alpha * m[i][sel] / (np.sqrt(v[i][sel]) + 1e-8)
    return w, e


def _ran_on(metadata) -> dict:
    return {n.node_name: d.device for d in metadata.step_stats.dev_stats for n in d.node_stats}


def test_sgd_and_adam_on_a_ps_match_the_ref_run_and_numpy(cluster_factory, tmp_path):
    cluster = cluster_factory({"ps": 1, "worker": 2}, timeout=60)
    target = cluster.target("worker", 0)
    optimizers = {"sgd": (lambda: tf.train.GradientDescentOptimizer(0.1), False, 0.1),
                  "adam": (lambda: tf.train.AdamOptimizer(0.05), True, 0.05)}
    for name, (make_opt, adam, lr) in optimizers.items():
        results = {}
        for use_resource in (False, True):
            with tf.Graph().as_default() as graph, tf.container(f"{name}{use_resource}"):
                (w, emb, step), train = _build(cluster, use_resource, make_opt)
                with tf.Session(target) as sess:
                    sess.run(tf.global_variables_initializer())
                    metadata = tf.RunMetadata()
                    sess.run(train, options=FULL_TRACE, run_metadata=metadata)
                    for _ in range(STEPS - 1):
                        sess.run(train)
                    results[use_resource] = sess.run([w, emb, step])
                    if use_resource:
                        ran_on = _ran_on(metadata)
                        by_type = {}
                        for op in graph.get_operations():
                            if op.name in ran_on:
                                by_type.setdefault(op.type, set()).add(ran_on[op.name])
                        ps = {"/job:ps/replica:0/task:0/device:CPU:0"}
                        for op_type in ("ReadVariableOp", "ResourceGather", "VarHandleOp"):
                            assert by_type[op_type] == ps, (op_type, by_type[op_type])
                        applied = {t for t in by_type if t.startswith("Resource")
                                   and ("Apply" in t or "Scatter" in t)}
                        assert applied and all(by_type[t] == ps for t in applied), by_type
                        assert "/job:worker/replica:0/task:1/device:CPU:0" in by_type["Tanh"]
                        if name == "adam":
                            saved = sess.run(tf.global_variables())
                            path = Saver().save(sess, str(tmp_path / "on-ps"))
        for ref, res in zip(results[False], results[True]):
            np.testing.assert_allclose(res, ref, rtol=1e-5, atol=1e-6)
        assert results[True][2] == STEPS
        for got, want in zip(results[True][:2], _numpy(adam, lr)):
            np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5)
    # The resource run's checkpoint restores into ref variables on the ps, bit for bit.
    with tf.Graph().as_default(), tf.container("restored"):
        _build(cluster, False, lambda: tf.train.AdamOptimizer(0.05))
        with tf.Session(target) as sess:
            Saver().restore(sess, path)
            for got, want in zip(sess.run(tf.global_variables()), saved):
                np.testing.assert_array_equal(got, want)


def _start_client(cluster, task: int, steps: int) -> subprocess.Popen:
    args = [sys.executable, CLIENT, "--cluster", json.dumps(cluster.spec.as_dict()),
            "--task", str(task), "--steps", str(steps)]
    return subprocess.Popen(args, env=child_env(), stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)


def test_between_graph_clients_share_resource_variables_on_the_ps(cluster_factory):
    cluster = cluster_factory({"ps": 1, "worker": 2}, timeout=60)
    steps = 15
    procs = [_start_client(cluster, task, steps) for task in (0, 1)]
    try:
        outs = []
        for p in procs:
            out, err = p.communicate(timeout=150)
            assert p.returncode == 0, f"client failed (rc={p.returncode}):\n{err[-3000:]}"
            outs.append(json.loads(out.strip().splitlines()[-1]))
    finally:
        for p in procs:  # by pid, whatever happened above
            if p.poll() is None:
                p.kill()
                p.wait()
    for out in outs:
        assert "ResourceApplyGradientDescent" in out["types"] and "VariableV2" not in \
            out["types"]
        assert set(out["devices"].values()) == {"/job:ps/task:0"}
    sys.path.insert(0, os.path.dirname(CLIENT))
    try:
        import resource_ps_client as client
    finally:
        sys.path.pop(0)
    with tf.Graph().as_default():
        try:
            table, step, _ = client.build(cluster.spec, 0)  # enables resource variables
        finally:
            tf.disable_resource_variables()
        assert table.op.type == "VarHandleOp"
        with tf.Session(cluster.target("ps", 0)) as sess:
            got, counted = sess.run([table, step])
    assert counted == 2 * steps  # one shared global step: every update counted once
    # The loss is linear, so the result is the same however the steps interleaved.
    want = 1.0 - client.LR * steps * (client.coefficients(0) + client.coefficients(1))
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)
