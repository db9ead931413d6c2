"""Benchmark: 64 MiB float32 client fetch and feed over gRPC, in GB/s.

The server is create_local_server() in a subprocess (a real gRPC hop over
127.0.0.1). Cases (medians of several runs after a warm-up):
  fetch_variable     sess.run(v): a 64 MiB variable that lives on the server
  feed_reduce_sum    sess.run(reduce_sum(x), {x: 64 MiB}): the feed crosses the
                     wire and is consumed (the sum is checked); the reduction
                     itself (~10 ms of numpy on the server) is included
  feed_target_op     sess.run(identity(x).op, {x: 64 MiB}): feed consumed by a
                     target op, nothing fetched
  feed_fetch_roundtrip  sess.run(identity(x), {x: 64 MiB}): 2 x 64 MiB moved;
                     GB/s counts both directions
64 MiB is past rpc/chunked.py's 4 MiB threshold: these measure the streamed
path (1 MiB frames; a large fetch is parked and pulled, see rpc/streaming.py).
The client (this process) gets malloc hugetlb only if GLIBC_TUNABLES has
glibc.malloc.hugetlb=1 at its start; then case names get "+client_hugetlb".
TensorFlow 2.21's yardstick (PERFORMANCE.md): 0.32-0.33 GB/s client fetch of
64 MiB; "ratio_vs_tf" = value / 0.33 (higher is better).

Run from the repository root: python -m benchmarks.transfer
"""
from __future__ import annotations

import numpy as np

import nbcluster as tf
from benchmarks._common import client_hugetlb, emit, median, subprocess_server, timed

NBYTES = 64 * 2**20
N = NBYTES // 4
TF_FETCH_GBPS = 0.33
REPEATS = 7
TIME_CAP_S = 8.0


def _timed(fn, check=None) -> list:
    check_val = fn()  # warm-up (also registers the graph)
    if check is not None:
        check(check_val)
    return timed(fn, REPEATS, TIME_CAP_S, warmup=0)


def main() -> None:
    feed = np.full(N, 0.5, np.float32)
    feed[0] = 3.0
    with subprocess_server() as (target, _proc, _):
        ctx = {"bytes": NBYTES, "server_env": "GLIBC_TUNABLES=glibc.malloc.hugetlb=1",
               "client_hugetlb": client_hugetlb()}
        g = tf.Graph()
        with g.as_default():
            v = tf.Variable(tf.fill([N], 2.0), name="big")
            x = tf.placeholder(tf.float32, [N], name="x")
            s = tf.reduce_sum(x)
            ident = tf.identity(x)
            with tf.Session(target) as sess:
                sess.run(v.initializer)

                def check_fetch(a):
                    assert a.shape == (N,) and a.dtype == np.float32 and a[-1] == 2.0, a
                    assert a.flags.writeable and a.flags.c_contiguous

                def check_sum(val):
                    assert abs(float(val) - (0.5 * (N - 1) + 3.0)) < 1e3, val

                def check_ident(a):
                    assert a.shape == (N,) and a[0] == 3.0 and a[-1] == 0.5

                cases = [
                    ("fetch_variable", lambda: sess.run(v), check_fetch, 1, True),
                    ("feed_reduce_sum", lambda: sess.run(s, {x: feed}), check_sum, 1, False),
                    ("feed_target_op", lambda: sess.run(ident.op, {x: feed}), None, 1, False),
                    ("feed_fetch_roundtrip", lambda: sess.run(ident, {x: feed}), check_ident,
                     2, False),
                ]
                for name, fn, check, mult, yard in cases:
                    times = _timed(fn, check)
                    med = median(times)
                    gbps = mult * NBYTES / med / 1e9
                    if ctx["client_hugetlb"]:
                        name += "+client_hugetlb"
                    row = {"bench": "transfer", "case": name, "value": round(gbps, 3),
                           "unit": "GB/s", "median_ms": round(med * 1e3, 1),
                           "min_ms": round(min(times) * 1e3, 1), "n": len(times), **ctx}
                    if yard:
                        row["tf_2_21_gbps"] = TF_FETCH_GBPS
                        row["ratio_vs_tf"] = round(gbps / TF_FETCH_GBPS, 2)
                    emit(row)


if __name__ == "__main__":
    main()
