"""MonitoredTrainingSession across processes: 1 ps + workers as `python -m nbcluster.server`
tasks, between-graph replication (each client its own graph and thread), and recovery
when the ps restarts mid-training."""
from __future__ import annotations

import concurrent.futures
import time

import numpy as np
import pytest

import nbcluster as tf
from nbcluster.examples.mlp import build_mlp
from nbcluster.examples.synthetic import Batches, mnist_like

pytestmark = pytest.mark.timeout(240)

CLIENT_TIMEOUT_S = 150


def _build(spec, task: int):
    setter = tf.train.replica_device_setter(worker_device=f"/job:worker/task:{task}",
                                            cluster=spec)
    with tf.device(setter):
        step = tf.train.get_or_create_global_step()
        model = build_mlp(tf.train.GradientDescentOptimizer(0.1), global_step=step)
    return model, step


def _train(cluster, task: int, last_step: int, hooks=(), **session_kwargs) -> dict:
    """One worker's client, as TF's tutorials write it; its losses and last global step."""
    x, y = mnist_like(2048, seed=1 + task)  # each worker its own shard
    with tf.Graph().as_default():
        model, step = _build(cluster.spec, task)
        all_hooks = [tf.train.StopAtStepHook(last_step=last_step), *hooks]
        losses = []
        with tf.train.MonitoredTrainingSession(master=cluster.target("worker", task),
                                               is_chief=(task == 0), hooks=all_hooks,
                                               max_wait_secs=60, **session_kwargs) as sess:
            started = time.monotonic()
            batches = Batches(x, y, 64, seed=task)
            while not sess.should_stop():
                bx, by = batches.next()
                _, loss = sess.run([model.train_op, model.loss],
                                   {model.x: bx, model.labels: by})
                losses.append(float(loss))
            final = int(sess.raw_session().run(step))
    return {"losses": losses, "final_step": final, "started": started}


def _global_step_on_ps(cluster) -> int:
    with tf.Graph().as_default():
        _, step = _build(cluster.spec, 0)
        with tf.Session(cluster.target("ps", 0)) as sess:
            return int(sess.run(step))


def test_chief_and_worker_train_one_model_until_the_last_step(cluster_factory):
    cluster = cluster_factory({"ps": 1, "worker": 2}, timeout=60)
    last_step = 100
    with concurrent.futures.ThreadPoolExecutor(2) as pool:
        # The non-chief starts first: it must wait for the chief's initialization.
        worker = pool.submit(_train, cluster, 1, last_step)
        time.sleep(1.0)
        chief_started = time.monotonic()
        chief = pool.submit(_train, cluster, 0, last_step)
        results = [chief.result(CLIENT_TIMEOUT_S), worker.result(CLIENT_TIMEOUT_S)]
    chief, worker = results
    assert worker["started"] > chief_started  # it trained only once the chief had begun
    losses = chief["losses"]
    assert np.mean(losses[-5:]) < 0.5 * np.mean(losses[:5]), losses
    # The worker trained the same shared model: its last losses are low too.
    assert worker["losses"] and np.mean(worker["losses"][-5:]) < 0.5 * np.mean(losses[:5])
    # A hook's fetched step can lag the other worker's increments by a run or
    # two (as in TF), so the step may pass last_step by a few, never fall short.
    for r in results:
        assert last_step <= r["final_step"] <= last_step + 4, r
    # Every run of either worker incremented the one global step on the ps once.
    assert _global_step_on_ps(cluster) == sum(len(r["losses"]) for r in results)
    assert last_step <= _global_step_on_ps(cluster) <= last_step + 4


class RestartPsOnce(tf.train.SessionRunHook):
    """Kills and restarts the ps task once the global step reaches `at_step`, and
    records the global step each new session starts from."""

    def __init__(self, cluster, at_step: int) -> None:
        self.cluster, self.at_step = cluster, at_step
        self.restarted, self.steps_at_create = False, []

    def begin(self):
        self.step = tf.train.get_global_step()

    def after_create_session(self, session, coord):
        self.steps_at_create.append(int(session.run(self.step)))

    def before_run(self, run_context):
        return tf.train.SessionRunArgs(self.step)

    def after_run(self, run_context, run_values):
        if not self.restarted and run_values.results >= self.at_step:
            self.restarted = True
            self.cluster.restart("ps", 0)


def test_the_chief_recovers_from_a_ps_restart_through_its_checkpoint(cluster_factory,
                                                                     tmp_path):
    cluster = cluster_factory({"ps": 1, "worker": 1}, timeout=60)
    old_ps = cluster.pid("ps", 0)
    restart = RestartPsOnce(cluster, at_step=25)
    result = _train(cluster, 0, 40, hooks=[restart], checkpoint_dir=str(tmp_path),
                    save_checkpoint_steps=10)
    assert restart.restarted and cluster.pid("ps", 0) != old_ps
    # The second session started from the checkpoint of step 20, not from scratch.
    assert restart.steps_at_create == [0, 20]
    assert result["final_step"] == 40 and _global_step_on_ps(cluster) == 40
    # Steps 20..25 ran twice (their updates died with the ps); nothing else did.
    assert 40 + 5 <= len(result["losses"]) <= 40 + 6
    assert np.mean(result["losses"][-5:]) < 0.5 * np.mean(result["losses"][:5])
    assert tf.train.latest_checkpoint(str(tmp_path)).endswith("model.ckpt-40")


class WatchStep(tf.train.SessionRunHook):
    """Publishes the global step after each run; records the step of each new session."""

    def __init__(self) -> None:
        self.latest, self.steps_at_create = 0, []

    def begin(self):
        self.step = tf.train.get_global_step()

    def after_create_session(self, session, coord):
        self.steps_at_create.append(int(session.run(self.step)))

    def before_run(self, run_context):
        return tf.train.SessionRunArgs(self.step)

    def after_run(self, run_context, run_values):
        self.latest = int(run_values.results)


def test_a_ps_killed_while_the_chief_trains_is_recovered_from(cluster_factory, tmp_path):
    cluster = cluster_factory({"ps": 1, "worker": 1}, timeout=60)
    watch = WatchStep()

    def restart_when_past(step: int) -> float:
        deadline = time.monotonic() + CLIENT_TIMEOUT_S
        while watch.latest < step:
            assert time.monotonic() < deadline, "training never reached the step"
            time.sleep(0.01)
        cluster.restart("ps", 0)  # kills it mid-step, most likely, then starts it again
        return time.monotonic()

    with concurrent.futures.ThreadPoolExecutor(1) as pool:
        restarted = pool.submit(restart_when_past, 25)
        result = _train(cluster, 0, 60, hooks=[watch], checkpoint_dir=str(tmp_path),
                        save_checkpoint_steps=10)
        restarted.result(CLIENT_TIMEOUT_S)
    # The first session began at 0; every later one from a checkpoint at or past 20.
    first, *later = watch.steps_at_create
    assert first == 0 and later, watch.steps_at_create
    assert all(s % 10 == 0 and s >= 20 for s in later), watch.steps_at_create
    assert result["final_step"] == 60 and _global_step_on_ps(cluster) == 60
    assert len(result["losses"]) >= 60  # steps past the last checkpoint ran again
