"""One conversation over all three transports (in process, the local socket, gRPC): the same
results, the same errors (class and message) and the same byte counts, and `rpc.peers`
picking each where it should."""
from __future__ import annotations

import numpy as np
import pytest

import nbcluster as tf
from nbcluster import errors
from nbcluster.launch import free_ports
from nbcluster.master_worker.rendezvous import make_key
from nbcluster.master_worker.transport import InProcessWorkerClient
from nbcluster.rpc import peers
from nbcluster.rpc.grpc_transport.master_client import GrpcMasterClient
from nbcluster.rpc.grpc_transport.worker_client import GrpcWorkerClient
from nbcluster.rpc.socket_transport.client import ENV, peer_for
from nbcluster.rpc.socket_transport.service_clients import SocketMasterClient, SocketWorkerClient

pytestmark = pytest.mark.timeout(120)

TRANSPORTS = ("in_process", "socket", "grpc")
DEVICE = "/job:worker/replica:0/task:0/device:CPU:0"
BIG = np.linspace(-1, 1, 5 * 1024 * 1024 // 4 + 3, dtype=np.float32)  # > 4 MiB: streamed


@pytest.fixture(scope="module")
def server():
    started = tf.distribute.Server({"worker": [f"localhost:{free_ports(1)[0]}"]},
                                   job_name="worker", task_index=0)
    yield started
    started.stop()


def _address(server) -> str:
    return f"localhost:{server._port}"


def _clients(server, transport: str) -> tuple:
    address = _address(server)
    if transport == "in_process":
        return server._master, peers.worker_client(None, local=server._worker)
    if transport == "socket":
        plane = peer_for(address)
        assert plane is not None, "the data plane is off here"
        return SocketMasterClient(address, plane), SocketWorkerClient(address, plane)
    return GrpcMasterClient(address), GrpcWorkerClient(address)


def _nodes(build) -> list:
    graph = tf.Graph()
    with graph.as_default():
        build()
    return [op.to_node() for op in graph.get_operations()]


def _outcome(call, handle: str = "") -> tuple:
    try:
        return ("ok", call())
    except errors.OpError as e:
        return (type(e).__name__, e.message.replace(handle, "<handle>") if handle else e.message)


def _conversation(server, master, worker, step_id: int) -> list:
    """What each call of the conversation returned or raised, handles left out."""
    said = []

    def first():
        x = tf.placeholder(tf.float32, [None], name="x")
        tf.reduce_sum(tf.add(tf.multiply(x, 2.0), 1.0, name="y"), name="s")
    handle, version = master.create_session(_nodes(first), None, None)
    said.append(("version", version))
    small = np.arange(6, dtype=np.float32)
    said.append(_outcome(lambda: master.run_step(handle, {"x:0": small}, ["y:0", "s:0"], [])[0]))
    said.append(_outcome(lambda: master.run_step(handle, {"x:0": BIG}, ["y:0"], [])[0]))
    said.append(_outcome(lambda: master.run_step(handle, {"x:0": small}, ["nope:0"], []),
                         handle))
    said.append(_outcome(lambda: master.run_step(handle, {}, ["y:0"], []), handle))  # x unfed

    def second():
        first()
        tf.negative(tf.constant([1.0, 2.0]), name="z")
    new_version = master.extend_session(handle, _nodes(second)[len(_nodes(first)):], version)
    said.append(("extended", new_version))
    said.append(_outcome(lambda: master.run_step(handle, {}, ["z:0"], [])[0]))
    said.append(("devices", sorted(d.name for d in master.list_devices(handle))))
    master.close_session(handle)
    said.append(_outcome(lambda: master.run_step(handle, {"x:0": small}, ["y:0"], []), handle))

    # The worker: a tensor handed over by RecvTensor, and one the step never sends.
    key = make_key(DEVICE, server._worker.incarnation, DEVICE, f"t{step_id}")
    stale = make_key(DEVICE, server._worker.incarnation + 1, DEVICE, f"t{step_id}")
    sent_before = worker.get_status().bytes_sent
    server._worker._step_table.get(step_id).rendezvous.send(key, BIG)
    said.append(_outcome(lambda: worker.recv_tensor(step_id, key, 30.0)))
    said.append(("bytes_sent", worker.get_status().bytes_sent - sent_before))
    said.append(_outcome(lambda: worker.recv_tensor(step_id, stale, 5.0)))
    worker.cleanup_graph(step_id)
    return said


def _same(a, b) -> bool:
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b))
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        return np.asarray(a).dtype == np.asarray(b).dtype and np.array_equal(a, b)
    return a == b


def test_the_same_conversation_over_every_transport(server):
    said = {t: _conversation(server, *_clients(server, t), 1000 + i)
            for i, t in enumerate(TRANSPORTS)}
    reference = said["grpc"]
    # the conversation means something: values, a streamed value, errors, counts
    np.testing.assert_array_equal(reference[1][1][0], np.arange(6, dtype=np.float32) * 2 + 1)
    np.testing.assert_array_equal(reference[2][1][0], BIG * 2 + 1)
    assert reference[3][0] == reference[4][0] == "InvalidArgumentError", reference
    assert reference[8][0] not in ("ok", "UnknownError", "InternalError"), reference
    np.testing.assert_array_equal(reference[9][1], BIG)
    assert reference[10] == ("bytes_sent", BIG.nbytes)
    assert reference[11][0] != "ok"
    for transport in ("in_process", "socket"):
        for i, (got, want) in enumerate(zip(said[transport], reference)):
            assert _same(got, want), f"{transport}, call {i}: {got!r:.300} != {want!r:.300}"
        assert len(said[transport]) == len(reference)


def test_peers_pick_each_transport_once_per_peer(server, monkeypatch):
    address = _address(server)
    assert type(peers.worker_client(None, local=server._worker)) is InProcessWorkerClient
    assert peers.master_client(address, local=server._master) is server._master
    assert type(peers.worker_client(address)) is SocketWorkerClient
    assert type(peers.master_client(address)) is SocketMasterClient
    monkeypatch.setenv(ENV, "grpc")
    assert type(peers.worker_client(address)) is GrpcWorkerClient
    assert type(peers.master_client(address)) is GrpcMasterClient
