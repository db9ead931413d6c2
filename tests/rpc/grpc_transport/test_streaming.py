"""Tensor RPCs over real gRPC: unary when small, streamed when large, bad streams refused.

A fake worker behind `worker_handler` on 127.0.0.1 exercises the worker RPCs
(RunGraph, RecvTensor) without a cluster; a subprocess server exercises the
master's RunStep and shows a bad stream leaves it up.
"""
from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import grpc
import numpy as np
import pytest

import nbcluster as tf
from nbcluster import errors
from nbcluster.master_worker.task_counters import TaskCounters
from nbcluster.proto import master_pb2
from nbcluster.rpc.codec import chunked
from nbcluster.rpc.grpc_transport import channels
from nbcluster.rpc.grpc_transport.master_service import RUN_STEP_REQUEST
from nbcluster.rpc.grpc_transport.worker_client import GrpcWorkerClient
from nbcluster.rpc.grpc_transport.worker_service import worker_handler

pytestmark = pytest.mark.timeout(120)

MIB = 1 << 20


class EchoWorker:
    """RunGraph echoes each send under the key asked for; RecvTensor returns `self.value`."""

    def __init__(self) -> None:
        self.counters = TaskCounters()
        self.value = None

    def run_graph(self, session, graph, step_id, sends, fetches, timeout, stats, graphs):
        from nbcluster.master_worker.transport import RunGraphResult
        return RunGraphResult({key: sends[key] for key in fetches})

    def recv_tensor(self, step_id, key, timeout, stopped=None):
        if key == "missing":
            raise errors.NotFoundError(None, None, f"no tensor {key}")
        return self.value

    def wake_step(self, step_id):
        pass


@pytest.fixture
def echo_worker():
    worker = EchoWorker()
    server = grpc.server(ThreadPoolExecutor(max_workers=8), handlers=[worker_handler(worker)],
                         options=channels.SERVER_OPTIONS)
    port = server.add_insecure_port("127.0.0.1:0")
    server.start()
    address = f"127.0.0.1:{port}"
    try:
        yield worker, GrpcWorkerClient(address)
    finally:
        channels.forget(address)
        server.stop(None)


@pytest.mark.parametrize("nbytes", [16, chunked.STREAM_THRESHOLD - 1, chunked.STREAM_THRESHOLD,
                                    64 * MIB + 3])
def test_run_graph_round_trips_any_size(echo_worker, nbytes):
    _, client = echo_worker
    sends = {"a": np.arange(nbytes, dtype=np.uint8), "b": np.float64(2.5),
             "s": np.array([b"x", b"yz"], object)}
    result = client.run_graph("sess", "g", 1, sends, ["a", "b", "s"], 60.0, False, False)
    np.testing.assert_array_equal(result.fetches["a"], sends["a"])
    assert result.fetches["b"] == 2.5 and result.fetches["s"].tolist() == [b"x", b"yz"]


@pytest.mark.parametrize("shape", [(3,), (17, MIB // 4)])
def test_recv_tensor_small_and_large(echo_worker, shape):
    worker, client = echo_worker
    worker.value = np.random.default_rng(0).standard_normal(shape).astype(np.float32)
    got = client.recv_tensor(1, "key", 30.0)
    np.testing.assert_array_equal(got, worker.value)
    if got.nbytes >= chunked.STREAM_THRESHOLD:
        assert got.flags.writeable and got.flags.c_contiguous and got.ctypes.data % 64 == 0


def test_errors_keep_their_class(echo_worker):
    _, client = echo_worker
    with pytest.raises(errors.NotFoundError):
        client.recv_tensor(1, "missing", 30.0)


def test_unknown_pull_token_is_not_found(echo_worker):
    _, client = echo_worker
    pull = channels.channel(client.address).unary_stream(
        "/nbcluster.WorkerService/PullResponse")
    with pytest.raises(grpc.RpcError) as info:
        list(pull(b"no-such-token", timeout=10))
    assert info.value.code() == grpc.StatusCode.NOT_FOUND


# -- against a subprocess server ---------------------------------------------------

def _frames(nbytes: int) -> list:
    request = master_pb2.RunStepRequest(session_handle="nope", fetch=["y:0"])
    return list(chunked.encode_frames(request, RUN_STEP_REQUEST,
                                      [("x:0", np.ones(nbytes, np.uint8))]))


@pytest.mark.parametrize("cut", [
    lambda f: f[:-1],                  # truncated
    lambda f: f + [b"extra"],          # too long
    lambda f: [b"\xff\xff"] + f[1:],   # garbage head
    lambda f: [],                      # nothing at all
], ids=["truncated", "long", "garbage", "empty"])
def test_bad_streams_are_data_loss_and_the_server_stays_up(server_target, cut):
    address = server_target[len("grpc://"):]
    streamed = grpc.insecure_channel(address).stream_unary(
        "/nbcluster.MasterService/RunStepStreamed")
    with pytest.raises(grpc.RpcError) as info:
        streamed(iter(cut(_frames(5 * MIB))), timeout=30)
    assert info.value.code() == grpc.StatusCode.DATA_LOSS
    with tf.Graph().as_default():
        x = tf.placeholder(tf.float32, [2])
        with tf.Session(server_target) as sess:
            assert sess.run(x * 2, {x: [1, 2]}).tolist() == [2, 4]


def test_64mib_feed_and_fetch_are_writable(server_target):
    n = 16 * MIB  # float32: 64 MiB
    big = np.arange(n, dtype=np.float32)
    with tf.Graph().as_default():
        x = tf.placeholder(tf.float32, [n])
        v = tf.Variable(tf.fill([n], 3.0))
        with tf.Session(server_target) as sess:
            sess.run(v.initializer)
            for out in (sess.run(tf.identity(x), {x: big}), sess.run(v)):
                assert out.shape == (n,) and out.dtype == np.float32
                assert out.flags.writeable and out.flags.c_contiguous
                assert out.ctypes.data % 64 == 0
                out[0] = -1.0  # ours to change
            np.testing.assert_array_equal(sess.run(tf.identity(x), {x: big}), big)
            assert sess.run(tf.reduce_sum(x), {x: np.ones(n, np.float32)}) == n
            small = sess.run(tf.reduce_max(x, keepdims=True), {x: big})
            assert small.flags.writeable and small.tolist() == [n - 1]
