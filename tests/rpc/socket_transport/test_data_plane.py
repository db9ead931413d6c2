"""The same-host data plane: tensors between tasks of this host over an abstract Unix
socket, with gRPC's errors, deadlines and cancellation; gRPC when it is off or absent."""
from __future__ import annotations

import socket
import threading
import time

import numpy as np
import pytest

import nbcluster as tf
from nbcluster import errors
from nbcluster.launch import free_ports
from nbcluster.master_worker.rendezvous import make_key
from nbcluster.rpc import peers
from nbcluster.rpc.grpc_transport.worker_client import GrpcWorkerClient
from nbcluster.rpc.socket_transport import client as data_plane_client
from nbcluster.rpc.socket_transport import frames as wire
from nbcluster.rpc.socket_transport import handshake as data_plane_handshake
from nbcluster.rpc.socket_transport import shm_blocks as shm
from nbcluster.runtime.step import CancellationManager

pytestmark = pytest.mark.timeout(60)

PS, WORKER = "/job:worker/task:1", "/job:worker/task:0"
DEVICE = "/job:worker/replica:0/task:{}/device:CPU:0"


def _spec(n: int = 2) -> dict:
    return {"worker": [f"localhost:{p}" for p in free_ports(n)]}


@pytest.fixture
def servers():
    spec = _spec()
    started = [tf.distribute.Server(spec, job_name="worker", task_index=i) for i in range(2)]
    yield started
    for server in started:
        server.stop()


@pytest.fixture
def grpc_tensor_calls(monkeypatch) -> list:
    """Every tensor fetch that went over gRPC (none should, on this host)."""
    calls = []
    original = GrpcWorkerClient.__init__

    def init(self, *a, **k):
        original(self, *a, **k)
        for attr in ("_recv_many", "_recv"):
            def fail(*args, _attr=attr, **kwargs):
                calls.append(_attr)
                raise AssertionError(f"{_attr} went over gRPC")
            setattr(self, attr, fail)
    monkeypatch.setattr(GrpcWorkerClient, "__init__", init)
    return calls


def _address(server) -> str:
    return f"localhost:{server._port}"


def _key(server, name: str) -> str:
    job, task = server.server_def.job_name, server.server_def.task_index
    return make_key(f"/job:{job}/replica:0/task:{task}/device:CPU:0", server._worker.incarnation,
                    DEVICE.format(0), name)


def _unix_names() -> list:
    with open("/proc/net/unix") as f:
        return [line.split()[-1] for line in f.readlines()[1:] if "nbcluster/" in line]


VALUES = {
    "f32": np.arange(12, dtype=np.float32).reshape(3, 4),
    "f64_scalar": np.float64(2.5),
    "i64_empty": np.zeros((0, 3), np.int64),
    "bool": np.array([True, False, True]),
    "c64": np.array([1 + 2j, 3 - 4j], np.complex64),
    "u8_3d": np.arange(24, dtype=np.uint8).reshape(2, 3, 4),
    "big_f32": np.linspace(0, 1, 5 * 1024 * 1024 // 4 + 7, dtype=np.float32),  # > 4 MiB
    "strings": np.array([b"a", b"", b"xyz" * 100], object),
}


def test_values_of_every_kind_come_over_the_data_plane(servers, grpc_tensor_calls):
    with tf.Graph().as_default():
        with tf.device(PS):
            sources = {k: tf.constant(v, name=k) for k, v in VALUES.items()}
            doubled = tf.constant(np.ones(3, np.float32)) * 2.0
        with tf.device(WORKER):
            fetched = {k: tf.identity(t) for k, t in sources.items()}
            one = tf.identity(doubled)  # a lone tensor: RecvTensor, not a stream
        with tf.Session(servers[0].target) as sess:
            for _ in range(2):
                got = sess.run(fetched)
                for k, v in VALUES.items():
                    assert got[k].dtype == np.asarray(v).dtype and got[k].shape == np.shape(v), k
                    np.testing.assert_array_equal(got[k], v)
            np.testing.assert_array_equal(sess.run(one), [2.0, 2.0, 2.0])
    assert grpc_tensor_calls == []
    status = servers[1]._worker.get_status()
    assert status.bytes_sent >= VALUES["big_f32"].nbytes
    assert servers[0]._worker.get_status().bytes_received >= VALUES["big_f32"].nbytes


def test_a_producer_error_arrives_with_grpc_s_class_and_message(servers, monkeypatch):
    plane = data_plane_client.peer_for(_address(servers[1]))
    assert plane is not None
    stale = make_key(DEVICE.format(1), servers[1]._worker.incarnation + 1, DEVICE.format(0), "x")
    # produced on task 0, asked of task 1
    elsewhere = make_key(DEVICE.format(0), servers[1]._worker.incarnation, DEVICE.format(0), "x")
    got = {}
    for key in (stale, elsewhere):
        with pytest.raises(errors.OpError) as over_plane:
            list(plane.stream_tensors(7, [key], 5.0))
        got[key] = over_plane.value
    monkeypatch.setenv(data_plane_client.ENV, "grpc")
    grpc_client = peers.worker_client(_address(servers[1]))
    assert type(grpc_client) is GrpcWorkerClient  # picked once: gRPC only
    for key, error in got.items():
        with pytest.raises(errors.OpError) as over_grpc:
            list(grpc_client.stream_tensors(7, [key], 5.0))
        assert type(error) is type(over_grpc.value)
        assert error.message == over_grpc.value.message
    assert isinstance(got[stale], errors.AbortedError)
    assert isinstance(got[elsewhere], errors.InvalidArgumentError)
    # the connection survived its error: the next request reuses it
    with pytest.raises(errors.InvalidArgumentError):
        plane.recv_tensor(8, elsewhere, 5.0)


def test_a_deadline_is_deadline_exceeded_and_the_connection_recovers(servers):
    plane = data_plane_client.peer_for(_address(servers[1]))
    keys = [_key(servers[1], "never"), _key(servers[1], "nor")]
    start = time.monotonic()
    with pytest.raises(errors.DeadlineExceededError):
        list(plane.stream_tensors(11, keys, 0.3))
    with pytest.raises(errors.DeadlineExceededError):
        plane.recv_tensor(12, keys[0], 0.3)
    assert time.monotonic() - start < 5
    servers[1]._worker.cleanup_graph(11)
    servers[1]._worker.cleanup_graph(12)
    _round_trip_works(servers[1])


def _round_trip_works(server, step_id: int = 99) -> None:
    key = _key(server, "v")
    server._worker._step_table.get(step_id).rendezvous.send(key, np.float32([1, 2]))
    value = data_plane_client.peer_for(_address(server)).recv_tensor(step_id, key, 5.0)
    np.testing.assert_array_equal(value, [1, 2])


def test_a_large_tensor_read_in_place_is_not_overwritten_while_the_consumer_holds_it(servers):
    producer = servers[1]
    key, plane = _key(producer, "big"), data_plane_client.peer_for(_address(producer))
    n = shm.IN_PLACE_BYTES // 4 * 2
    values = {}
    try:
        for step in (31, 32):  # the second request would reuse the first's block if freed
            producer._worker._step_table.get(step).rendezvous.send(
                key, np.full(n, step, np.float32))
            values[step] = plane.recv_tensor(step, key, 5.0)
        assert not values[31].flags.writeable  # read in the producer's block
        assert set(np.unique(values[31])) == {31.0} and set(np.unique(values[32])) == {32.0}
        values.clear()  # freed: the next request lets the producer reuse the blocks
        producer._worker._step_table.get(33).rendezvous.send(key, np.full(n, 33, np.float32))
        assert set(np.unique(plane.recv_tensor(33, key, 5.0))) == {33.0}
    finally:
        for step in (31, 32, 33):
            producer._worker.cleanup_graph(step)


def test_cancelling_a_step_ends_the_wait_on_both_sides(servers):
    plane = data_plane_client.peer_for(_address(servers[1]))
    cancellation = CancellationManager()
    values = plane.stream_tensors(21, [_key(servers[1], "a"), _key(servers[1], "b")], None,
                                  cancellation)
    failed = []
    reader = threading.Thread(target=lambda: failed.append(_error_of(lambda: list(values))))
    reader.start()
    time.sleep(0.2)
    cancellation.cancel(errors.CancelledError(None, None, "step cancelled"))
    reader.join(5)
    assert not reader.is_alive() and isinstance(failed[0], errors.CancelledError)
    data_plane = servers[1]._data_plane
    deadline = time.monotonic() + 5  # the producer saw the hang-up and stopped waiting
    while data_plane._connections and time.monotonic() < deadline:
        time.sleep(0.02)
    assert not data_plane._connections
    already = CancellationManager()
    already.cancel(errors.CancelledError(None, None, "before"))
    with pytest.raises(errors.CancelledError):
        list(plane.stream_tensors(22, [_key(servers[1], "a")], None, already))


def _error_of(fn):
    try:
        fn()
    except errors.OpError as e:
        return e
    return None


def test_a_peer_stopped_mid_use_is_unavailable_then_a_restarted_one_serves_again():
    spec = _spec()
    first = tf.distribute.Server(spec, job_name="worker", task_index=1)
    address = _address(first)
    plane = data_plane_client.peer_for(address)
    _round_trip_works(first)  # leaves an idle pooled connection
    waiting = plane.stream_tensors(31, [_key(first, "a"), _key(first, "b")], 30.0)
    failed = []
    reader = threading.Thread(target=lambda: failed.append(_error_of(lambda: list(waiting))))
    reader.start()
    time.sleep(0.2)
    first.stop()
    reader.join(10)
    assert isinstance(failed[0], errors.UnavailableError) and address in str(failed[0])
    client = peers.worker_client(address)  # no data plane there now: gRPC, which fails too
    with pytest.raises(errors.UnavailableError):
        client.recv_tensor(32, _key(first, "a"), 2.0)
    second = tf.distribute.Server(spec, job_name="worker", task_index=1)
    try:
        _round_trip_works(second)  # the stale pooled connection is dropped, a new one made
    finally:
        second.stop()


def test_servers_at_other_addresses_are_never_confused(servers):
    other = tf.distribute.Server.create_local_server()
    try:
        names = {data_plane_client.peer_for(a).name
                 for a in (_address(servers[0]), _address(servers[1]), f"127.0.0.1:{other._port}")}
        assert len(names) == 3
        assert data_plane_client.peer_for(f"127.0.0.2:{other._port}").name not in names
        assert data_plane_client.peer_for(f"10.1.2.3:{other._port}") is None
        assert data_plane_client.peer_for(f"[::1]:{other._port}").name in names
        for server in (servers[1], other):
            _round_trip_works(server, step_id=41)
    finally:
        other.stop()


def test_no_socket_file_and_nothing_left_after_stop():
    spec = _spec()
    server = tf.distribute.Server(spec, job_name="worker", task_index=0)
    name = f"@nbcluster/local:{server._port}"
    assert name in _unix_names()
    assert all(n.startswith("@") for n in _unix_names())  # abstract: never a file
    _round_trip_works(server)
    server.stop()
    assert name not in _unix_names()
    assert not [t for t in threading.enumerate() if t.name.startswith("nbcluster-dataplane")]


def test_a_malformed_request_gets_a_clear_error_and_the_server_lives_on(servers):
    plane = data_plane_client.peer_for(_address(servers[1]))
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as raw:
        raw.connect(plane.name)
        raw.sendall(b"GARBAGE-NOT-A-REQUEST-AT-ALL")
        reply = wire.read_reply(wire.FrameReader(raw))
    code, message, _ = reply
    assert code == errors.DATA_LOSS and "b'GARB'" in message
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as raw:
        raw.connect(plane.name)
        # after the hello (rpc/data_plane_handshake.py; this task has no token)
        raw.sendall(data_plane_handshake.hello(None) +
                    wire.encode_request(wire.STREAM, 1, ["not a key"], 1.0))
        code, message, _ = wire.read_reply(wire.FrameReader(raw))
    assert code == errors.INVALID_ARGUMENT and "not a key" in message
    _round_trip_works(servers[1])


def test_a_malformed_reply_is_data_loss_naming_the_value():
    a, b = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
    with a, b:
        a.sendall(b"Q")
        with pytest.raises(errors.DataLossError, match="reply tag b'Q'"):
            wire.read_reply(wire.FrameReader(b))
        head = wire.encode_batch([("k", np.float32([1, 2]))])[0]
        a.sendall(head.replace(b"\x01\x00\x00\x00\x01", b"\x63\x00\x00\x00\x01"))  # enum 99
        with pytest.raises(errors.DataLossError, match="dtype enum 99 for tensor 'k'"):
            wire.read_reply(wire.FrameReader(b))


def test_a_batch_sent_again_reads_its_own_values_and_a_bad_one_fails_each_time():
    """A step's batches repeat their headers (their parse is remembered): each
    still reads the values it carries, and a malformed header is never kept."""
    a, b = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
    with a, b:
        reader = wire.FrameReader(b)
        for step in range(3):
            batch = [("w", np.full((2, 3), step, np.float32)), ("s", np.int64(step)),
                     ("names", np.array([b"a", b"b" * step], object))]
            wire.send_all(a, wire.encode_batch(batch))
            got = dict(wire.read_reply(reader))
            assert got["w"].shape == (2, 3) and (got["w"] == step).all()
            assert got["s"] == step and got["names"].tolist() == [b"a", b"b" * step]
        bad = wire.encode_batch([("k", np.float32([1, 2]))])[0]
        bad = bad.replace(b"\x01\x00\x00\x00\x01", b"\x63\x00\x00\x00\x01")  # enum 99
        for _ in range(2):
            a.sendall(bad)
            with pytest.raises(errors.DataLossError, match="dtype enum 99 for tensor 'k'"):
                wire.read_reply(wire.FrameReader(b))


def test_grpc_only_when_turned_off(monkeypatch):
    monkeypatch.setenv(data_plane_client.ENV, "grpc")
    server = tf.distribute.Server(_spec(1), job_name="worker", task_index=0)
    try:
        assert server._data_plane is None
        assert data_plane_client.peer_for(_address(server)) is None
        assert f"@nbcluster/local:{server._port}" not in _unix_names()
    finally:
        server.stop()


def test_task_processes_train_over_the_data_plane():
    from nbcluster.launch import Cluster

    from cluster_graphs import ps_matmul_step
    cluster = Cluster.local(ps=1, worker=2)
    try:
        ports = [int(cluster.spec.task_address(j, i).rsplit(":", 1)[1])
                 for j, i in (("ps", 0), ("worker", 0), ("worker", 1))]
        names = _unix_names()
        assert all(f"@nbcluster/local:{p}" in names for p in ports)
        w = np.arange(4, dtype=np.float32).reshape(2, 2)
        np.testing.assert_allclose(ps_matmul_step(cluster.target("worker", 0)), w @ w)
        ps, _, worker1 = cluster.status()
        assert ps.bytes_sent > 0 and worker1.bytes_received > 0
    finally:
        cluster.stop()


def test_a_late_cancellation_leaves_the_reused_connection_alone(servers):
    """A step cancelled after its stream ended must not cut the pooled
    connection's next request (the callback names its own request)."""
    plane = data_plane_client.peer_for(_address(servers[1]))
    keys = [_key(servers[1], "a"), _key(servers[1], "b")]
    rendezvous = servers[1]._worker._step_table.get(51).rendezvous
    rendezvous.send_many([(k, np.float32([i])) for i, k in enumerate(keys)])
    cancellation = CancellationManager()
    values = plane.stream_tensors(51, keys, 5.0, cancellation)
    assert sorted(k for batch in [next(values)] for k, _ in batch) == sorted(keys)
    waiting = plane.stream_tensors(52, keys, 5.0)  # reuses the connection just released
    cancellation.cancel(errors.CancelledError(None, None, "late"))
    servers[1]._worker._step_table.get(52).rendezvous.send_many(
        [(k, np.float32([7])) for k in keys])
    assert sum(len(batch) for batch in waiting) == 2


def test_a_server_not_started_refuses_so_peers_use_grpc():
    server = tf.distribute.Server(_spec(1), job_name="worker", task_index=0, start=False)
    try:
        plane = data_plane_client.peer_for(_address(server))
        assert plane.recv_tensor(1, _key(server, "v"), 1.0) is data_plane_client.NOT_SERVED
        server.start()
        _round_trip_works(server)
    finally:
        server.stop()


def test_both_ends_talk_only_to_their_own_user(servers, monkeypatch):
    a, b = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
    with a, b:
        assert wire.same_user(a) and wire.same_user(b)
    data_plane_client.forget_all()  # no pooled connection from before the patch
    monkeypatch.setattr(wire, "same_user", lambda sock: False)
    plane = data_plane_client.peer_for(_address(servers[1]))
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as raw:
        raw.connect(plane.name)  # the server accepts, sees another user, hangs up
        raw.settimeout(10)
        try:
            raw.sendall(wire.encode_request(wire.STREAM, 1, ["k"], 1.0))
            assert raw.recv(1) == b""
        except (BrokenPipeError, ConnectionResetError):
            pass  # it hung up before or with the request unread: closed all the same
    # a client declines a socket whose owner is not its user, so gRPC serves the tensor
    key = _key(servers[1], "v")
    servers[1]._worker._step_table.get(99).rendezvous.send(key, np.float32([1, 2]))
    assert plane.recv_tensor(99, key, 5.0) is data_plane_client.NOT_SERVED
    value = peers.worker_client(_address(servers[1])).recv_tensor(99, key, 5.0)
    np.testing.assert_array_equal(value, [1, 2])
