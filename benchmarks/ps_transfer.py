"""Benchmark: ps -> worker tensor transfer between task processes, GB/s.

A 1 ps + 1 worker cluster of task processes; a float32 variable of 1, 64 or
256 MiB lives on /job:ps/task:0 and `identity(v).op` on /job:worker/task:0 is
run as a target (nothing is fetched): each step moves the variable worker <-
ps once (RecvTensor), plus two small control RPCs. The session is on the
worker. GB/s = bytes / median step time (the whole step, overheads included).
The values are checked once with `reduce_sum` on the worker.
TensorFlow's yardstick (PERFORMANCE.md): ~1 GB/s at 64 MiB;
"ratio_vs_tf" = value / 1.0 (higher is better).

Run from the repository root: python -m benchmarks.ps_transfer
"""
from __future__ import annotations

import nbcluster as tf
from benchmarks._common import client_hugetlb, emit, local_cluster, median, timed

SIZES_MIB = (1, 64, 256)
TF_GBPS_64MIB = 1.0


def _case(target: str, mib: int, extra: dict) -> None:
    n = mib * 2 ** 20 // 4
    with tf.Graph().as_default():
        with tf.device("/job:ps/task:0"):
            # one name per size: variables outlive sessions on the ps
            v = tf.Variable(tf.fill([n], 0.5), name=f"big_{mib}MiB")
        with tf.device("/job:worker/task:0"):
            consume = tf.identity(v).op
            total = tf.reduce_sum(v)
        with tf.Session(target) as sess:
            sess.run(v.initializer)
            assert float(sess.run(total)) == 0.5 * n
            iters, cap = (200, 3.0) if mib == 1 else (10, 10.0)
            times = timed(lambda: sess.run(consume), iters, cap, warmup=2)
    med = median(times)
    gbps = mib * 2 ** 20 / med / 1e9
    row = {"bench": "ps_transfer", "case": f"ps_to_worker_{mib}MiB", "value": round(gbps, 3),
           "unit": "GB/s", "median_ms": round(med * 1e3, 2), "n": len(times), **extra}
    if mib == 64:
        row.update(tf_gbps=TF_GBPS_64MIB, ratio_vs_tf=round(gbps / TF_GBPS_64MIB, 2))
    emit(row)


def main() -> None:
    extra = {"server_env": "GLIBC_TUNABLES=glibc.malloc.hugetlb=1",
             "client_hugetlb": client_hugetlb()}
    with local_cluster({"ps": 1, "worker": 1}) as cluster:
        for mib in SIZES_MIB:
            _case(cluster.target("worker", 0), mib, extra)


if __name__ == "__main__":
    main()
