"""One worker's client of the resource-variable PS test: its own graph, its own loop.

Run as `python resource_ps_client.py --cluster JSON --task I --steps N`. With
resource variables enabled (as TF2 code has them), builds under
replica_device_setter a table on the ps whose loss is linear (so SGD's result
does not depend on how the workers' steps interleave), trains it with its own
constant gradient, and prints one JSON line: the op types it built and the
global step it last saw.
"""
from __future__ import annotations

import argparse
import json
import time

import numpy as np

import nbcluster as tf

ROWS, COLS, LR = 6, 3, 0.05


def coefficients(task: int) -> np.ndarray:
    """Worker `task`'s d loss / d table."""
    return np.arange(ROWS * COLS, dtype=np.float32).reshape(ROWS, COLS) * (task + 1) / 10


def build(cluster: tf.train.ClusterSpec, task: int):
    tf.enable_resource_variables()
    setter = tf.train.replica_device_setter(worker_device=f"/job:worker/task:{task}",
                                            cluster=cluster)
    with tf.device(setter):
        step = tf.train.get_or_create_global_step()
        table = tf.get_variable("table", initializer=np.ones((ROWS, COLS), np.float32))
        loss = tf.reduce_sum(table * coefficients(task))
        train = tf.train.GradientDescentOptimizer(LR).minimize(loss, global_step=step)
    return table, step, train


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--cluster", required=True)
    parser.add_argument("--task", type=int, required=True)
    parser.add_argument("--steps", type=int, default=20)
    args = parser.parse_args()
    cluster = tf.train.ClusterSpec(json.loads(args.cluster))
    with tf.Graph().as_default() as graph:
        table, step, train = build(cluster, args.task)
        ready = tf.is_variable_initialized(table)
        with tf.Session("grpc://" + cluster.task_address("worker", args.task)) as sess:
            if args.task == 0:
                sess.run(tf.global_variables_initializer())
            deadline = time.monotonic() + 60
            while not sess.run(ready):
                if time.monotonic() > deadline:
                    raise TimeoutError("the chief never initialized the table")
                time.sleep(0.02)
            for _ in range(args.steps):
                sess.run(train)
            seen = int(sess.run(step))
    print(json.dumps({"types": sorted({op.type for op in graph.get_operations()}),
                      "devices": {table.op.name: table.device, step.op.name: step.device},
                      "step": seen}))


if __name__ == "__main__":
    main()
