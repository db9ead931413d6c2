"""One worker of the between-graph replication test: its own graph, its own client loop.

Run as `python ps_worker.py --cluster JSON --task I --steps N --out DIR`. Builds
the MLP under replica_device_setter (variables and the global step on the ps),
measures the held-out loss, waits at a barrier (a counter on the ps) until
every worker has measured it, trains with a session on its own worker's
target, waits at a second barrier until every worker is done, and reads the
weights once more. Writes DIR/worker<I>.npz (those weights) and prints one JSON line.
"""
from __future__ import annotations

import argparse
import json
import os
import time

import numpy as np

import nbcluster as tf
from nbcluster.examples.mlp import build_mlp
from nbcluster.examples.synthetic import Batches, mnist_like

WAIT_S = 60.0


def _wait_until(predicate, what: str) -> None:
    deadline = time.monotonic() + WAIT_S
    while not predicate():
        if time.monotonic() > deadline:
            raise TimeoutError(f"gave up waiting for {what} after {WAIT_S}s")
        time.sleep(0.02)


def _barrier(sess, arrive, counter, workers: int, what: str) -> None:
    sess.run(arrive)
    _wait_until(lambda: sess.run(counter) >= workers, what)


def build(cluster: tf.train.ClusterSpec, task: int, lr: float):
    """The worker's graph: (model, global step, barrier counters (started, done))."""
    setter = tf.train.replica_device_setter(worker_device=f"/job:worker/task:{task}",
                                            cluster=cluster)
    with tf.device(setter):
        step = tf.train.get_or_create_global_step()
        model = build_mlp(tf.train.GradientDescentOptimizer(lr), global_step=step)
        started = tf.Variable(0, trainable=False, name="workers_started")
        done = tf.Variable(0, trainable=False, name="workers_done")
    return model, step, (started, done)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--cluster", required=True, help="the ClusterSpec as JSON")
    parser.add_argument("--task", type=int, required=True)
    parser.add_argument("--steps", type=int, default=60)
    parser.add_argument("--batch", type=int, default=128)
    parser.add_argument("--lr", type=float, default=0.1)
    parser.add_argument("--out", required=True)
    args = parser.parse_args()
    cluster = tf.train.ClusterSpec(json.loads(args.cluster))
    workers = cluster.num_tasks("worker")
    target = "grpc://" + cluster.task_address("worker", args.task)
    x, y = mnist_like(4096, seed=1 + args.task)  # each worker its own shard
    eval_x, eval_y = mnist_like(1024, seed=100)
    with tf.Graph().as_default():
        model, step, barriers = build(cluster, args.task, args.lr)
        arrive = [counter.assign_add(1) for counter in barriers]
        ready = [tf.is_variable_initialized(v) for v in tf.global_variables()]
        init = tf.global_variables_initializer()
        with tf.Session(target) as sess:
            if args.task == 0:
                sess.run(init)
            else:
                _wait_until(lambda: all(sess.run(ready)), "the chief's initialization")
            eval_feed = {model.x: eval_x, model.labels: eval_y}
            first_eval = float(sess.run(model.loss, eval_feed))
            _barrier(sess, arrive[0], barriers[0], workers, "the other workers to start")
            batches, losses = Batches(x, y, args.batch, seed=args.task), []
            start = time.perf_counter()
            for _ in range(args.steps):
                bx, by = batches.next()
                _, loss = sess.run([model.train_op, model.loss],
                                   {model.x: bx, model.labels: by})
                losses.append(float(loss))
            seconds = time.perf_counter() - start
            _barrier(sess, arrive[1], barriers[1], workers, "the other workers to finish")
            weights = sess.run(model.variables)
            final_step = int(sess.run(step))
            final_eval = float(sess.run(model.loss, eval_feed))
    np.savez(os.path.join(args.out, f"worker{args.task}.npz"), *weights)
    print(json.dumps({"task": args.task, "steps": args.steps, "seconds": seconds,
                      "first_loss": losses[0], "last_loss": losses[-1],
                      "first_eval_loss": first_eval, "final_eval_loss": final_eval,
                      "final_global_step": final_step}), flush=True)


if __name__ == "__main__":
    main()
