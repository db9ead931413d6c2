"""A partition that receives several tensors from one task gets them over one
RecvTensors stream per step (TensorReceiver.prefetch), over real gRPC between two
servers in this process: values, the too-large-to-stream fallback, errors on
the producer, and a step that times out while its stream waits."""
from __future__ import annotations

import time

import numpy as np
import pytest

import nbcluster as tf
from nbcluster import errors
from nbcluster.launch import free_ports
from nbcluster.proto import config_pb2
from nbcluster.rpc.codec import chunked

pytestmark = pytest.mark.timeout(60)

PS, WORKER = "/job:worker/task:1", "/job:worker/task:0"


@pytest.fixture
def servers():
    spec = {"worker": [f"localhost:{p}" for p in free_ports(2)]}
    started = [tf.distribute.Server(spec, job_name="worker", task_index=i) for i in range(2)]
    yield started
    for server in started:
        server.stop()


def _streams_used(monkeypatch) -> list:
    from nbcluster.rpc.grpc_transport.worker_client import GrpcWorkerClient
    from nbcluster.rpc.socket_transport.service_clients import SocketWorkerClient
    calls = []
    for cls in (GrpcWorkerClient, SocketWorkerClient):  # whichever rpc.peers picked
        def spy(self, step_id, keys, timeout, cancellation=None,
                _original=cls.stream_tensors):
            calls.append(list(keys))
            return _original(self, step_id, keys, timeout, cancellation)
        monkeypatch.setattr(cls, "stream_tensors", spy)
    return calls


def test_tensors_of_one_producer_come_in_one_stream_large_ones_by_recv(servers, monkeypatch):
    calls = _streams_used(monkeypatch)
    big_n = chunked.STREAM_THRESHOLD // 4 + 1000  # past the stream's limit
    with tf.Graph().as_default():
        with tf.device(PS):
            a = tf.Variable(np.arange(4, dtype=np.float32), name="a")
            b = tf.Variable(np.full(3, 2.0, np.float32), name="b")
            big = tf.Variable(tf.fill([big_n], 0.5), name="big")
        with tf.device(WORKER):
            total = tf.reduce_sum(a) + tf.reduce_sum(b) + tf.reduce_sum(big)
        with tf.Session(servers[0].target) as sess:
            sess.run(tf.global_variables_initializer())
            for _ in range(3):
                assert float(sess.run(total)) == pytest.approx(6 + 6 + 0.5 * big_n)
    assert calls and all(len(keys) == 3 for keys in calls)
    for server in servers:  # every step ended by itself: no CleanupGraph needed
        assert server._worker._step_table.steps == {}


def test_an_error_on_the_producer_fails_the_step_and_the_next_runs(servers):
    with tf.Graph().as_default():
        with tf.device(PS):
            x = tf.placeholder(tf.float32, [None], name="x")
            shaped = tf.reshape(x, [2, 2])
            other = tf.constant(np.ones(3, np.float32)) * 2.0
        with tf.device(WORKER):
            total = tf.reduce_sum(shaped) + tf.reduce_sum(other)
        with tf.Session(servers[0].target) as sess:
            with pytest.raises(errors.InvalidArgumentError):
                sess.run(total, {x: np.ones(3, np.float32)})
            assert float(sess.run(total, {x: np.ones(4, np.float32)})) == 10.0


def test_a_step_that_times_out_while_its_stream_waits_ends_and_the_next_runs(servers):
    with tf.Graph().as_default():
        with tf.device(PS):
            queue = tf.FIFOQueue(4, [tf.float32], shapes=[[]], name="q")
            dequeued = queue.dequeue()
            other = tf.constant(3.0) * 2.0
            enqueue = queue.enqueue([tf.constant(1.0)])
        with tf.device(WORKER):
            total = dequeued + other
        with tf.Session(servers[0].target) as sess:
            options = config_pb2.RunOptions(timeout_in_ms=300)
            start = time.monotonic()
            with pytest.raises(errors.DeadlineExceededError):
                sess.run(total, options=options)
            assert time.monotonic() - start < 10
            sess.run(enqueue)
            assert float(sess.run(total)) == 7.0
