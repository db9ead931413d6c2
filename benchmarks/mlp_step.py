"""Benchmark: steps/s of a 784 -> 256 -> 10 MLP forward pass on 1 ps + 2 workers.

Weights and biases live on /job:ps/task:0; each worker holds its own batch of
128 x 784 (a variable on the worker, so the client feeds nothing) and runs the
forward pass with the ps's weights (relu hidden layer, softmax cross-entropy
loss against fixed labels). One step fetches both workers' mean losses; the
session is on worker 0. The losses are checked against NumPy once.
Each step moves the weights (~0.8 MiB) ps -> each worker.

Run from the repository root: python -m benchmarks.mlp_step
"""
from __future__ import annotations

import numpy as np

import nbcluster as tf
from benchmarks._common import client_hugetlb, emit, local_cluster, median, percentile, timed

BATCH = 128
ITERS = 500
TIME_CAP_S = 5.0


def _numpy_loss(x, labels, w1, b1, w2, b2) -> float:
    logits = np.maximum(x @ w1 + b1, 0) @ w2 + b2
    logits = logits - logits.max(axis=1, keepdims=True)
    log_p = logits - np.log(np.exp(logits).sum(axis=1, keepdims=True))
    return float(-(labels * log_p).sum(axis=1).mean())


def main() -> None:
    rng = np.random.default_rng(0)
    w1 = (rng.standard_normal((784, 256)) * 0.05).astype(np.float32)
    b1 = np.zeros(256, np.float32)
    w2 = (rng.standard_normal((256, 10)) * 0.05).astype(np.float32)
    b2 = np.zeros(10, np.float32)
    batches = [rng.standard_normal((BATCH, 784)).astype(np.float32) for _ in range(2)]
    labels = np.eye(10, dtype=np.float32)[rng.integers(0, 10, BATCH)]
    with local_cluster({"ps": 1, "worker": 2}) as cluster, tf.Graph().as_default():
        with tf.device("/job:ps/task:0"):
            params = [tf.Variable(p, name=n) for p, n in
                      ((w1, "w1"), (b1, "b1"), (w2, "w2"), (b2, "b2"))]
        losses = []
        for i, batch in enumerate(batches):
            with tf.device(f"/job:worker/task:{i}"):
                x = tf.Variable(batch, trainable=False, name=f"x{i}")
                y = tf.constant(labels)
                hidden = tf.nn.relu(tf.matmul(x, params[0]) + params[1])
                logits = tf.matmul(hidden, params[2]) + params[3]
                losses.append(tf.reduce_mean(
                    tf.nn.softmax_cross_entropy_with_logits_v2(labels=y, logits=logits)))
        with tf.Session(cluster.target("worker", 0)) as sess:
            sess.run(tf.global_variables_initializer())
            got = sess.run(losses)
            for g, batch in zip(got, batches):
                assert abs(g - _numpy_loss(batch, labels, w1, b1, w2, b2)) < 1e-4, got
            times = timed(lambda: sess.run(losses), ITERS, TIME_CAP_S, warmup=20)
    med = median(times)
    emit({"bench": "mlp_step", "case": "mlp_784_256_10_ps1_worker2", "value": round(1 / med, 1),
          "unit": "steps/s", "median_ms": round(med * 1e3, 3),
          "p90_ms": round(percentile(times, 0.9) * 1e3, 3), "n": len(times), "batch": BATCH,
          "server_env": "GLIBC_TUNABLES=glibc.malloc.hugetlb=1",
          "client_hugetlb": client_hugetlb()})


if __name__ == "__main__":
    main()
