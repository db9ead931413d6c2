"""Benchmark: tiny-graph `Session.run` latency with one remote hop (median, p90 µs).

A 1 ps + 1 worker cluster of task processes (`python -m nbcluster.server`);
the session is on the worker's target, so every run is client -> worker's
master (RunStep) plus, for the ps cases, master -> ps worker (RunGraph):
  ps_const_add     a constant add pinned to /job:ps/task:0, fetched
  ps_feed_add      `x + 1` on the ps, x (float32[4]) fed by the client
  worker_const_add the same constant add on the session's own task (no hop),
                   for comparison
TensorFlow's yardstick (PERFORMANCE.md): 1,382 µs for a tiny run whose op is
on another task; "ratio_vs_tf" = value / 1382 (lower is better).

Run from the repository root: python -m benchmarks.remote_hop
"""
from __future__ import annotations

import numpy as np

import nbcluster as tf
from benchmarks._common import client_hugetlb, emit, local_cluster, median, percentile, timed

TF_US = 1382
ITERS = 2000
TIME_CAP_S = 4.0


def _case(name: str, target: str, device: str, feed: bool, extra: dict) -> None:
    with tf.Graph().as_default():
        with tf.device(device):
            x = tf.placeholder(tf.float32, [4], name="x")
            y = x + 1.0 if feed else tf.constant(np.arange(4, dtype=np.float32)) + 1.0
        value = np.zeros(4, np.float32)
        feeds = {x: value} if feed else None
        with tf.Session(target) as sess:
            assert float(sess.run(y, feeds)[0]) == 1.0
            times = timed(lambda: sess.run(y, feeds), ITERS, TIME_CAP_S, warmup=200)
    med = median(times) * 1e6
    emit({"bench": "remote_hop", "case": name, "value": round(med, 1), "unit": "us",
          "p90_us": round(percentile(times, 0.9) * 1e6, 1), "n": len(times),
          "tf_us": TF_US, "ratio_vs_tf": round(med / TF_US, 2), **extra})


def main() -> None:
    extra = {"server_env": "GLIBC_TUNABLES=glibc.malloc.hugetlb=1",
             "client_hugetlb": client_hugetlb()}
    with local_cluster({"ps": 1, "worker": 1}) as cluster:
        target = cluster.target("worker", 0)
        _case("ps_const_add", target, "/job:ps/task:0", False, extra)
        _case("ps_feed_add", target, "/job:ps/task:0", True, extra)
        _case("worker_const_add", target, "/job:worker/task:0", False, extra)


if __name__ == "__main__":
    main()
