"""With auth on, a session's own cluster may name only tasks that require a token:
a CreateSession cluster_def or a CreateWorkerSession ServerDef naming an open
task is PermissionDeniedError naming its address, and nothing is dialled with
the token; the cluster's own tasks, under any job names, are fine."""
from __future__ import annotations

import pytest

import nbcluster as tf
from nbcluster import errors
from nbcluster.launch import Cluster
from nbcluster.proto import config_pb2
from nbcluster.rpc.grpc_transport.worker_client import GrpcWorkerClient

pytestmark = pytest.mark.timeout(120)


@pytest.fixture
def token_cluster(monkeypatch):
    monkeypatch.delenv("NBCLUSTER_TOKEN", raising=False)
    with Cluster.local(ps=1, worker=1) as cluster:
        yield cluster


def _config(cluster: dict) -> config_pb2.ConfigProto:
    return tf.ConfigProto(cluster_def=tf.train.ClusterSpec(cluster).as_cluster_def(),
                          operation_timeout_in_ms=30_000)


def _run_on(target: str, config, device: str) -> float:
    with tf.Graph().as_default():
        with tf.device(device):
            a = tf.constant(2.0) * 3.0
        with tf.Session(target, config=config) as sess:
            return sess.run(a)


def test_a_cluster_def_naming_an_open_task_is_refused(token_cluster, server_target):
    worker = token_cluster.spec.task_address("worker", 0)
    open_task = server_target[len("grpc://"):].replace("localhost", "127.0.0.1")
    config = _config({"worker": [worker], "other": [open_task]})
    with pytest.raises(errors.PermissionDeniedError) as info:
        _run_on(f"grpc://{worker}", config, "/job:other/task:0")
    assert f"/job:other/task:0 at {open_task}" in info.value.message
    assert "cluster_def" in info.value.message
    # the master and the cluster go on: its own tasks, renamed, are fine
    ps = token_cluster.spec.task_address("ps", 0)
    assert _run_on(f"grpc://{worker}", _config({"a": [worker], "b": [ps]}),
                   "/job:b/task:0") == 6.0


def test_a_server_def_naming_an_open_task_is_refused(token_cluster, server_target):
    worker = token_cluster.spec.task_address("worker", 0)
    open_task = server_target[len("grpc://"):].replace("localhost", "127.0.0.1")
    server_def = config_pb2.ServerDef(
        cluster=tf.train.ClusterSpec({"w": [worker], "x": [open_task]}).as_cluster_def(),
        job_name="w", task_index=0, protocol="grpc")
    client = GrpcWorkerClient(worker)
    with pytest.raises(errors.PermissionDeniedError, match=f"at {open_task}, which this task"):
        client.create_worker_session("s-1", True, server_def)
    assert client.get_status(10.0).job_name == "worker"
