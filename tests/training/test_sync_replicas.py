"""SyncReplicasOptimizer: its API in one process, then synchronous training of the MLP
across `python -m nbcluster.server` processes (1 ps + 2 workers, between-graph)."""
from __future__ import annotations

import concurrent.futures
import threading
import time

import numpy as np
import pytest

import nbcluster as tf
from nbcluster.examples.mlp import build_mlp
from nbcluster.examples.synthetic import Batches, mnist_like

pytestmark = pytest.mark.timeout(240)

CLIENT_TIMEOUT_S = 150
LR = 0.1


def _sync_opt(replicas: int = 2, **kwargs):
    return tf.train.SyncReplicasOptimizer(tf.train.GradientDescentOptimizer(LR),
                                          replicas_to_aggregate=replicas,
                                          total_num_replicas=replicas, **kwargs)


# -- one process ------------------------------------------------------------------------
def test_constructor_and_order_errors_name_the_values():
    sgd = tf.train.GradientDescentOptimizer(LR)
    with pytest.raises(TypeError, match="'sgd'"):
        tf.train.SyncReplicasOptimizer("sgd", replicas_to_aggregate=2)
    with pytest.raises(ValueError, match="replicas_to_aggregate.*0"):
        tf.train.SyncReplicasOptimizer(sgd, replicas_to_aggregate=0)
    with pytest.raises(ValueError, match="total_num_replicas.*-1"):
        tf.train.SyncReplicasOptimizer(sgd, replicas_to_aggregate=2, total_num_replicas=-1)
    opt = _sync_opt()
    with pytest.raises(ValueError, match="after apply_gradients"):
        opt.get_init_tokens_op()
    with pytest.raises(ValueError, match="after apply_gradients"):
        opt.get_chief_queue_runner()
    hook = opt.make_session_run_hook(is_chief=True)
    assert isinstance(hook, tf.train.SessionRunHook)
    with pytest.raises(ValueError, match="apply_gradient"):
        hook.begin()
    v = tf.Variable([1.0, 2.0], name="v")
    loss = tf.reduce_sum(v * v)
    with pytest.raises(ValueError, match="Global step is required"):
        opt.apply_gradients(opt.compute_gradients(loss))


def test_graph_pieces_and_slots():
    step = tf.train.get_or_create_global_step()
    opt = tf.train.SyncReplicasOptimizer(tf.train.MomentumOptimizer(LR, 0.9),
                                         replicas_to_aggregate=3, total_num_replicas=2)
    v = tf.Variable([1.0, 2.0], name="v")
    train_op = opt.minimize(tf.reduce_sum(v * v), global_step=step)
    assert isinstance(train_op, tf.Operation)
    local = tf.local_variables()
    assert [x.op.name for x in local] == ["sync_rep_local_step"] and local[0].dtype == tf.int64
    assert opt.get_slot_names() == ["momentum"] and opt.get_slot(v, "momentum") is not None
    graph = tf.get_default_graph()
    accs = [op for op in graph.get_operations() if op.type == "ResourceConditionalAccumulator"]
    assert [a.get_attr("shared_name") for a in accs] == ["v:0/grad_accum"]
    runner = opt.get_chief_queue_runner()
    assert len(runner.enqueue_ops) == 1
    # replicas_to_aggregate=3 > total_num_replicas=2: at least one token is needed.
    with pytest.raises(ValueError, match="0 \\(given\\) vs 1 \\(needed\\)"):
        opt.get_init_tokens_op(num_tokens=0)
    with pytest.raises(ValueError, match="already called"):
        opt.minimize(tf.reduce_sum(v), global_step=step)


def test_single_replica_trains_in_process():
    step = tf.train.get_or_create_global_step()
    opt = _sync_opt(replicas=1)
    model = build_mlp(opt, global_step=step)
    x, y = mnist_like(512, seed=1)
    batches, losses = Batches(x, y, 64), []
    hooks = [opt.make_session_run_hook(is_chief=True), tf.train.StopAtStepHook(last_step=20)]
    with tf.train.MonitoredTrainingSession(hooks=hooks, log_step_count_steps=None) as sess:
        while not sess.should_stop():
            bx, by = batches.next()
            _, loss = sess.run([model.train_op, model.loss], {model.x: bx, model.labels: by})
            losses.append(float(loss))
        assert sess.raw_session().run(step) == 20
    # One initial token lets the first run finish before any update.
    assert len(losses) == 21
    assert np.mean(losses[-3:]) < 0.5 * np.mean(losses[:3]), losses
    # Closing the session ended the chief's queue runner, blocked in its take.
    deadline = time.monotonic() + 10
    while any(t.name.startswith("sync_token_q-runner") for t in threading.enumerate()):
        assert time.monotonic() < deadline, "the chief's queue runner outlived its session"
        time.sleep(0.05)


def test_the_chief_moves_the_averages_after_each_aggregated_step():
    step = tf.train.get_or_create_global_step()
    v = tf.Variable([4.0, -2.0], name="v")
    ema = tf.train.ExponentialMovingAverage(0.5)
    opt = _sync_opt(replicas=1, variable_averages=ema, variables_to_average=[v])
    train_op = opt.minimize(tf.reduce_sum(v * v), global_step=step)
    hooks = [opt.make_session_run_hook(is_chief=True), tf.train.StopAtStepHook(last_step=3)]
    # each step: v -= LR * 2v, then shadow = (shadow + v) / 2, from shadow = v's start
    want_v, want_shadow = np.array([4.0, -2.0]), np.array([4.0, -2.0])
    for _ in range(3):
        want_v = want_v - LR * 2 * want_v
        want_shadow = 0.5 * want_shadow + 0.5 * want_v
    with tf.train.MonitoredTrainingSession(hooks=hooks, log_step_count_steps=None) as sess:
        raw = sess.raw_session()
        while not sess.should_stop():
            sess.run(train_op)
        # the chief's runner applies asynchronously: the global step moves first,
        # the averages right after, in the same run
        deadline = time.monotonic() + 10
        while not np.allclose(raw.run(ema.average(v)), want_shadow, rtol=1e-5):
            assert time.monotonic() < deadline, raw.run([step, v, ema.average(v)])
            time.sleep(0.01)
        values, steps = raw.run([v, step])
    np.testing.assert_allclose(values, want_v, rtol=1e-5)
    assert steps == 3
    with pytest.raises(ValueError, match="variables_to_average needs variable_averages"):
        _sync_opt(variables_to_average=[v])


# -- across processes --------------------------------------------------------------------
def _build(spec, task: int):
    setter = tf.train.replica_device_setter(worker_device=f"/job:worker/task:{task}",
                                            cluster=spec)
    with tf.device(setter):
        step = tf.train.get_or_create_global_step()
        opt = _sync_opt()
        model = build_mlp(opt, global_step=step)
    return model, step, opt


def _train(cluster, task: int, last_step: int) -> dict:
    """One worker's client: train until the global step reaches last_step."""
    x, y = mnist_like(2048, seed=1 + task)
    with tf.Graph().as_default():
        model, step, opt = _build(cluster.spec, task)
        hooks = [opt.make_session_run_hook(is_chief=(task == 0)),
                 tf.train.StopAtStepHook(last_step=last_step)]
        losses = []
        with tf.train.MonitoredTrainingSession(master=cluster.target("worker", task),
                                               is_chief=(task == 0), hooks=hooks,
                                               max_wait_secs=60) as sess:
            batches = Batches(x, y, 64, seed=task)
            while not sess.should_stop():
                bx, by = batches.next()
                _, loss = sess.run([model.train_op, model.loss],
                                   {model.x: bx, model.labels: by})
                losses.append(float(loss))
    return {"losses": losses}


def _read_on_ps(cluster, fetch):
    """Runs `fetch(model, step, token_queue)` in a fresh graph against the ps."""
    with tf.Graph().as_default():
        model, step, _ = _build(cluster.spec, 0)
        with tf.colocate_with(step.op):
            queue = tf.FIFOQueue(-1, tf.int64, shapes=[[]], shared_name="sync_token_q")
        with tf.Session(cluster.target("ps", 0)) as sess:
            return sess.run(fetch(model, step, queue))


def test_two_workers_step_in_lockstep_until_the_last_step(cluster_factory):
    cluster = cluster_factory({"ps": 1, "worker": 2}, timeout=60)
    last_step = 30
    with concurrent.futures.ThreadPoolExecutor(2) as pool:
        futures = [pool.submit(_train, cluster, task, last_step) for task in (1, 0)]
        worker, chief = [f.result(CLIENT_TIMEOUT_S) for f in futures]
    runs = len(chief["losses"]) + len(worker["losses"])
    final, tokens_left = _read_on_ps(cluster, lambda m, step, q: (step, q.size()))
    # Every global step took two gradients; every run of a worker took one token:
    # the replicas_to_aggregate initial ones, then two per global step.
    assert final == last_step
    assert 2 * last_step <= runs <= 2 * last_step + 2, (len(chief["losses"]),
                                                        len(worker["losses"]))
    assert runs + tokens_left == 2 * last_step + 2
    # Both took part; as in TF, one step's two gradients may come from the same worker
    # (the non-chief starts late: it waits for the chief's initialization).
    assert chief["losses"] and worker["losses"]
    losses = chief["losses"]
    assert np.mean(losses[-5:]) < 0.7 * np.mean(losses[:5]), losses


def _one_step(cluster, task: int, batch: tuple) -> dict:
    """Runs the train op once; the chief then waits for the global step to reach 1."""
    with tf.Graph().as_default():
        model, step, opt = _build(cluster.spec, task)
        hooks = [opt.make_session_run_hook(is_chief=(task == 0))]
        with tf.train.MonitoredTrainingSession(master=cluster.target("worker", task),
                                               is_chief=(task == 0), hooks=hooks,
                                               max_wait_secs=60) as sess:
            raw = sess.raw_session()
            before = raw.run(model.variables)
            sess.run(model.train_op, {model.x: batch[0], model.labels: batch[1]})
            deadline = time.monotonic() + 60
            while task == 0 and raw.run(step) < 1:
                assert time.monotonic() < deadline, "the chief's update never came"
                time.sleep(0.05)
    return {"before": before}


def _gradients(weights: list, batch: tuple) -> list:
    """The MLP's gradients at `weights` for `batch`, in this process."""
    with tf.Graph().as_default():
        model = build_mlp()
        grads = tf.gradients(model.loss, model.variables)
        with tf.Session() as sess:
            for var, value in zip(model.variables, weights):
                var.load(value, sess)
            return sess.run(grads, {model.x: batch[0], model.labels: batch[1]})


def test_one_global_step_applies_the_mean_of_both_gradients(cluster_factory):
    cluster = cluster_factory({"ps": 1, "worker": 2}, timeout=60)
    batches = [mnist_like(32, seed=10 + task) for task in (0, 1)]
    with concurrent.futures.ThreadPoolExecutor(2) as pool:
        futures = [pool.submit(_one_step, cluster, task, batches[task]) for task in (0, 1)]
        chief, _ = [f.result(CLIENT_TIMEOUT_S) for f in futures]
    after, final = _read_on_ps(cluster, lambda m, step, q: (m.variables, step))
    assert final == 1
    w0 = chief["before"]
    g0, g1 = _gradients(w0, batches[0]), _gradients(w0, batches[1])
    for w, a, b, got in zip(w0, g0, g1, after):
        assert not np.allclose(a, b)  # the workers' gradients really differ
        np.testing.assert_allclose(got, w - LR * (a + b) / 2, rtol=1e-5, atol=1e-6)
