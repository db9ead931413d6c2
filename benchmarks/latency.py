"""Benchmark: tiny-graph `Session.run` latency (median and p90, µs).

Cases, for two tiny graphs (`x + 1` on a fed float32[4] placeholder, and a
constant add with no feed):
  in_process    Session("")                      no server, no gRPC
  local_server  Session(server.target), server in this process (no gRPC hop)
  grpc_subproc  Session(target) of create_local_server() in a subprocess:
                a real gRPC round trip over 127.0.0.1

  grpc_raw_unary  a bare grpcio unary echo (16 B) to a subprocess server with
                nbcluster's channel options: the floor for one RPC on this host

TensorFlow 2.21's yardstick (PERFORMANCE.md): 654 µs for a whole tiny run over
gRPC; "ratio_vs_tf" = value / 654 (lower is better).

Run from the repository root: python -m benchmarks.latency
"""
from __future__ import annotations

import numpy as np

import nbcluster as tf
from benchmarks._common import (
    RAW_ECHO_SCRIPT,
    client_hugetlb,
    emit,
    median,
    percentile,
    subprocess_server,
    timed,
)

TF_US = 654
WARMUP = 200
ITERS = 2000
TIME_CAP_S = 4.0  # per case, so the whole script stays well under 60 s


def _graph():
    g = tf.Graph()
    with g.as_default():
        x = tf.placeholder(tf.float32, [4], name="x")
        y = x + 1.0
        c = tf.constant(np.arange(4, dtype=np.float32)) + tf.constant(1.0)
    return g, x, y, c


def _measure(target: str, graph, fn_factory) -> list:
    with graph.as_default(), tf.Session(target) as sess:
        return timed(fn_factory(sess), ITERS, TIME_CAP_S, warmup=WARMUP)


def _cases(target: str, where: str, extra: dict) -> None:
    g, x, y, c = _graph()
    feed_val = np.zeros(4, np.float32)

    def feed_add(sess):
        r = sess.run(y, {x: feed_val})
        assert float(r[0]) == 1.0
        return lambda: sess.run(y, {x: feed_val})

    def const_add(sess):
        assert float(sess.run(c)[3]) == 4.0
        return lambda: sess.run(c)

    for graph_name, factory in (("feed_add", feed_add), ("const_add", const_add)):
        times = _measure(target, g, factory)
        med = median(times) * 1e6
        emit({"bench": "latency", "case": f"{where}/{graph_name}", "value": round(med, 1),
              "unit": "us", "p90_us": round(percentile(times, 0.9) * 1e6, 1),
              "min_us": round(min(times) * 1e6, 1), "n": len(times),
              "tf_2_21_us": TF_US, "ratio_vs_tf": round(med / TF_US, 2), **extra})


def _raw_unary(extra: dict) -> None:
    from nbcluster.rpc.grpc_transport import channels

    with subprocess_server(script=RAW_ECHO_SCRIPT) as (target, _proc, _):
        address = target[len("grpc://"):]
        chan = channels.channel(address)
        try:
            call = chan.unary_unary("/bench.Echo/Echo")
            payload = b"0123456789abcdef"
            assert call(payload, timeout=10) == payload
            times = timed(lambda: call(payload, timeout=10), ITERS, TIME_CAP_S, warmup=WARMUP)
        finally:
            channels.forget(address)
    med = median(times) * 1e6
    emit({"bench": "latency", "case": "grpc_raw_unary", "value": round(med, 1), "unit": "us",
          "p90_us": round(percentile(times, 0.9) * 1e6, 1), "min_us": round(min(times) * 1e6, 1),
          "n": len(times), "tf_2_21_us": TF_US, "ratio_vs_tf": round(med / TF_US, 2),
          "pm_md_tuned_grpcio_us": 327, **extra})


def main() -> None:
    _cases("", "in_process", {})
    server = tf.train.Server.create_local_server()
    try:
        _cases(server.target, "local_server", {})
    finally:
        server.stop()
    extra = {"server_env": "GLIBC_TUNABLES=glibc.malloc.hugetlb=1",
             "client_hugetlb": client_hugetlb()}
    with subprocess_server() as (target, _proc, _):
        _cases(target, "grpc_subproc", extra)
    _raw_unary(extra)


if __name__ == "__main__":
    main()
