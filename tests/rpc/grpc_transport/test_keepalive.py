"""Keepalive: a call to a task that hangs fails within seconds instead of waiting
forever, and a long call to a live task is pinged without the server objecting."""
from __future__ import annotations

import os
import signal
import time

import pytest

import nbcluster as tf
from nbcluster import errors
from nbcluster.launch import Cluster, free_ports
from nbcluster.rpc.grpc_transport import channels
from nbcluster.rpc.grpc_transport.worker_client import GrpcWorkerClient

from process_checks import stop_process

pytestmark = pytest.mark.timeout(90)

DETECTION_S = (channels.KEEPALIVE_MS + channels.KEEPALIVE_TIMEOUT_MS) / 1000


def test_a_call_to_a_stopped_task_fails_as_unavailable_naming_it():
    with Cluster.local(ps=0, worker=1) as cluster:
        address = cluster.spec.task_address("worker", 0)
        client = GrpcWorkerClient(address)
        client.get_status(10)  # connected: the hang comes mid-connection
        pid = cluster.pid("worker", 0)
        try:
            stop_process(pid)  # every thread stopped: the clock counts the client alone
            started = time.monotonic()
            with pytest.raises(errors.UnavailableError) as info:
                client.get_status(80)  # far past the keepalive's detection
            took = time.monotonic() - started
        finally:
            os.kill(pid, signal.SIGCONT)
        assert f"worker {address} stopped answering" in info.value.message
        assert "keepalive" in info.value.message
        assert took < DETECTION_S + 5, took
        assert _status_after_resume(client).pid == pid  # the same channel works again


def _status_after_resume(client):
    """GetStatus on a channel whose task was just resumed. gRPC may have opened
    a connection while the task was stopped (the kernel accepts it), and its
    unanswered ping can still fail one call as Unavailable ("ping timeout")
    before the channel reconnects; the channel itself must recover."""
    for attempt in range(3):
        try:
            return client.get_status(10, wait_for_ready=True)
        except errors.UnavailableError:
            if attempt == 2:
                raise


def test_frequent_pings_during_a_long_step_are_accepted(monkeypatch):
    """A client that pings far more often than the server's minimum interval
    (strikes, which a default server answers with GOAWAY) still gets the step's
    own outcome: a dequeue on an empty queue ends by its deadline."""
    server = tf.distribute.Server({"worker": [f"127.0.0.1:{free_ports(1)[0]}"]},
                                  job_name="worker", task_index=0)
    eager = [o for o in channels.CHANNEL_OPTIONS if "ping" not in o[0] and
             "keepalive" not in o[0]] + [
        ("grpc.keepalive_time_ms", 1000), ("grpc.keepalive_timeout_ms", 2000),
        ("grpc.http2.ping_timeout_ms", 2000), ("grpc.http2.max_pings_without_data", 0)]
    monkeypatch.setattr(channels, "CHANNEL_OPTIONS", eager)
    monkeypatch.setenv("NBCLUSTER_DATA_PLANE", "grpc")  # the step must wait on a gRPC call
    address = server.server_def.cluster.job[0].tasks[0]
    channels.forget(address)
    try:
        with tf.Graph().as_default(), tf.Session(f"grpc://{address}") as sess:
            queue = tf.FIFOQueue(4, [tf.float32], shapes=[[]])
            started = time.monotonic()
            with pytest.raises(errors.DeadlineExceededError):
                sess.run(queue.dequeue(), options=tf.RunOptions(timeout_in_ms=5000))
            assert time.monotonic() - started >= 4.5  # pinged every second meanwhile
            sess.run(queue.enqueue([3.0]))
            assert sess.run(queue.dequeue()) == 3.0
    finally:
        channels.forget(address)
        server.stop()
