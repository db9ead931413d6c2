"""RunGraph over the same-host data plane: gRPC's results, step stats, errors,
deadlines and cancellation, without gRPC's round trip; corrupt frames are refused."""
from __future__ import annotations

import socket
import struct
import threading
import time

import numpy as np
import pytest

import nbcluster as tf
from nbcluster import errors
from nbcluster.launch import free_ports
from nbcluster.proto import config_pb2, worker_pb2
from nbcluster.rpc import peers
from nbcluster.rpc.grpc_transport.worker_client import GrpcWorkerClient
from nbcluster.rpc.socket_transport import calls as frames
from nbcluster.rpc.socket_transport import client as data_plane_client
from nbcluster.rpc.socket_transport import connections as data_plane_connections
from nbcluster.rpc.socket_transport import frames as wire
from nbcluster.rpc.socket_transport import handshake as data_plane_handshake

pytestmark = pytest.mark.timeout(60)

PS, WORKER = "/job:worker/task:1", "/job:worker/task:0"
FULL_TRACE = config_pb2.RunOptions(trace_level=config_pb2.RunOptions.FULL_TRACE)


def _servers() -> list:
    spec = {"worker": [f"localhost:{p}" for p in free_ports(2)]}
    return [tf.distribute.Server(spec, job_name="worker", task_index=i) for i in range(2)]


@pytest.fixture
def servers():
    started = _servers()
    yield started
    for server in started:
        server.stop()


@pytest.fixture
def run_graph_calls(monkeypatch) -> dict:
    """Counts RunGraph calls by transport; gRPC's is replaced by a spy that still calls it."""
    calls = {"grpc": 0, "plane": 0}
    original_init = GrpcWorkerClient.__init__
    original_plane = data_plane_client.DataPlanePeer.start_call

    def init(self, *a, **k):
        original_init(self, *a, **k)
        stub = self._run

        def spy(*args, **kwargs):
            calls["grpc"] += 1
            return stub(*args, **kwargs)
        self._run = spy

    def plane(self, kind, *a, **k):
        calls["plane"] += kind == frames.RUN_GRAPH
        return original_plane(self, kind, *a, **k)
    monkeypatch.setattr(GrpcWorkerClient, "__init__", init)
    monkeypatch.setattr(data_plane_client.DataPlanePeer, "start_call", plane)
    return calls


def _address(server) -> str:
    return f"localhost:{server._port}"


FEED = np.arange(12, dtype=np.float32).reshape(3, 4)


def _one_step_of_each_kind(target: str) -> dict:
    """Feeds to and fetches from the peer's partition, strings, a big tensor,
    step stats, and an error raised on the peer."""
    out = {}
    with tf.Graph().as_default():
        with tf.device(PS):
            x = tf.placeholder(tf.float32, [3, 4], name="x")
            words = tf.constant(np.array([b"a", b"", b"xyz"], object), name="words")
            big = tf.constant(np.linspace(0, 1, 5 << 18, dtype=np.float32), name="big")
            doubled = x * 2.0
            unset = tf.Variable(np.ones(2, np.float32), name="unset")
        with tf.device(WORKER):
            total = tf.reduce_sum(doubled) + tf.reduce_sum(big)
        with tf.Session(target) as sess:
            meta = tf.RunMetadata()
            got = sess.run([doubled, words, big, total], {x: FEED}, options=FULL_TRACE,
                           run_metadata=meta)
            out["values"] = got
            out["stats"] = sorted((d.device, n.node_name) for d in meta.step_stats.dev_stats
                                  for n in d.node_stats)
            try:
                sess.run(unset.value())
            except errors.OpError as e:
                out["error"] = (type(e), e.message, e.node_name)
    return out


def test_same_results_stats_and_errors_as_grpc(run_graph_calls, monkeypatch):
    runs = {}
    for transport in ("plane", "grpc"):
        if transport == "grpc":
            monkeypatch.setenv(data_plane_client.ENV, "grpc")
        started = _servers()
        try:
            runs[transport] = _one_step_of_each_kind(started[0].target)
        finally:
            for server in started:
                server.stop()
        if transport == "plane":
            assert run_graph_calls["grpc"] == 0 and run_graph_calls["plane"] >= 2
    plane, grpc_run = runs["plane"], runs["grpc"]
    for a, b in zip(plane["values"], grpc_run["values"]):
        np.testing.assert_array_equal(a, b)
    np.testing.assert_array_equal(plane["values"][0], FEED * 2)
    assert plane["stats"] == grpc_run["stats"] and any("task:1" in d for d, _ in plane["stats"])
    assert plane["error"] == grpc_run["error"]
    assert plane["error"][0] is errors.FailedPreconditionError


def _blocked_on_the_peer(target: str, sess_fn) -> None:
    """Runs `sess_fn(sess, blocked, fails)`: `blocked` waits on an empty queue
    on the peer; `fails` adds a worker-side error to the same step."""
    with tf.Graph().as_default():
        with tf.device(PS):
            queue = tf.FIFOQueue(2, [tf.float32], shapes=[[]], name="q")
            blocked = queue.dequeue() + 1.0
            enqueue = queue.enqueue(5.0)
        with tf.device(WORKER):
            odd = tf.placeholder(tf.float32, None, name="odd")
            fails = ([blocked, tf.reshape(odd, [2, 2])], {odd: np.ones(3, np.float32)})
        with tf.Session(target) as sess:
            sess_fn(sess, blocked, fails, enqueue)


def test_a_deadline_ends_the_peer_s_run_graph_and_the_next_step_works(servers,
                                                                       run_graph_calls):
    def steps(sess, blocked, fails, enqueue):
        start = time.monotonic()
        with pytest.raises(errors.DeadlineExceededError):
            sess.run(blocked, options=config_pb2.RunOptions(timeout_in_ms=300))
        assert time.monotonic() - start < 5
        sess.run(enqueue)
        assert float(sess.run(blocked)) == 6.0
    _blocked_on_the_peer(servers[0].target, steps)
    assert run_graph_calls["grpc"] == 0 and run_graph_calls["plane"] >= 3


def test_a_failing_partition_cancels_the_peer_s_waiting_run_graph(servers, run_graph_calls):
    def steps(sess, blocked, fails, enqueue):
        start = time.monotonic()
        with pytest.raises(errors.InvalidArgumentError):
            sess.run(*fails)  # the peer's RunGraph waits on the queue until cleanup
        assert time.monotonic() - start < 5
        sess.run(enqueue)
        assert float(sess.run(blocked)) == 6.0
    _blocked_on_the_peer(servers[0].target, steps)
    assert run_graph_calls["grpc"] == 0


def test_a_peer_stopped_mid_run_graph_is_unavailable():
    started = _servers()
    try:
        failed = []

        def steps(sess, blocked, fails, enqueue):
            runner = threading.Thread(target=lambda: failed.append(_error_of(
                lambda: sess.run(blocked))))
            runner.start()
            time.sleep(0.3)
            started[1].stop()
            runner.join(10)
            assert not runner.is_alive()
        _blocked_on_the_peer(started[0].target, steps)
        assert isinstance(failed[0], errors.UnavailableError), failed
        client = peers.worker_client(_address(started[1]))  # no data plane now: gRPC fails too
        with pytest.raises(errors.UnavailableError):
            client.run_graph("s", "g", 1, {}, [], 2.0, False, False)
    finally:
        for server in started:
            server.stop()


def _error_of(fn):
    try:
        fn()
    except errors.OpError as e:
        return e
    return None


def _raw_reply(name: bytes, data: bytes):
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as raw:
        raw.connect(name)
        raw.sendall(data_plane_handshake.hello(None) + data)  # these tasks have no token
        return frames.read_reply(wire.FrameReader(raw), frames.RUN_GRAPH)


def test_malformed_run_graph_requests_get_clear_errors_and_the_server_lives_on(servers):
    name = data_plane_client.peer_for(_address(servers[1])).name
    garbage = b"\xff\xff\xff"
    code, message, _ = _raw_reply(name, wire.encode_request_head(3, 7, len(garbage), 1.0)
                                  + garbage)
    assert code == errors.DATA_LOSS and "RunGraphRequest of 3 bytes" in message
    other_step = worker_pb2.RunGraphRequest(step_id=8).SerializeToString()
    code, message, _ = _raw_reply(name, wire.encode_request_head(3, 7, len(other_step), 1.0)
                                  + other_step)
    assert code == errors.DATA_LOSS and "step 8 in a frame for step 7" in message
    code, message, _ = _raw_reply(name, wire.encode_request_head(3, 7, 1 << 30, 1.0))
    assert code == errors.DATA_LOSS and f"kind 3 with {1 << 30} control bytes" in message
    request = worker_pb2.RunGraphRequest(step_id=7, graph_handle="nope")
    code, message, _ = _raw_reply(name, b"".join(
        bytes(p) for p in frames.encode_request(frames.RUN_GRAPH, request, [], 1.0)))
    assert code == errors.ABORTED and "'nope'" in message  # a request that parsed: the logic's
    with tf.Graph().as_default():
        with tf.device(PS):
            c = tf.constant(3.0) * 2.0
        with tf.Session(servers[0].target) as sess:
            assert float(sess.run(c)) == 6.0


def test_a_malformed_run_graph_reply_is_data_loss_naming_the_value():
    a, b = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
    with a, b:
        a.sendall(b"Q")
        with pytest.raises(errors.DataLossError, match="RunGraphResponse tag b'Q'"):
            frames.read_reply(wire.FrameReader(b), frames.RUN_GRAPH)
        a.sendall(b"R" + struct.pack("<I", 3) + b"\xff\xff\xff")
        with pytest.raises(errors.DataLossError, match="RunGraphResponse of 3 bytes"):
            frames.read_reply(wire.FrameReader(b), frames.RUN_GRAPH)
        a.sendall(b"R" + struct.pack("<I", 0) + b"X" + struct.pack("<iI", 2, 0)
                  + struct.pack("<I", 0))
        with pytest.raises(errors.DataLossError, match="error frame in place of the RunGraph"):
            frames.read_reply(wire.FrameReader(b), frames.RUN_GRAPH)


def test_a_reply_cut_short_is_unavailable_and_the_pool_recovers(servers):
    """A peer that hangs up mid-reply: UnavailableError, and the broken
    connection is not pooled."""
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    name = b"\0nbcluster-test/cut:" + str(time.monotonic_ns()).encode()
    listener.bind(name)
    listener.listen(1)

    def serve_half() -> None:
        conn, _ = listener.accept()
        with conn:
            conn.recv(1 << 16)
            conn.sendall(b"R" + struct.pack("<I", 100) + b"\x08")
    server = threading.Thread(target=serve_half)
    server.start()
    peer = data_plane_client.DataPlanePeer(name, "worker test")
    try:
        with pytest.raises(errors.UnavailableError, match="worker test"):
            peer.call(frames.RUN_GRAPH, worker_pb2.RunGraphRequest(step_id=1), [], 5.0)
        assert peer._idle == []
    finally:
        server.join(5)
        listener.close()


def test_a_client_on_the_master_s_host_runs_steps_over_the_data_plane(servers, monkeypatch):
    """RunStep from a GrpcMasterClient: the feed and fetches travel raw, errors keep their class."""
    from nbcluster.rpc.grpc_transport.master_client import GrpcMasterClient
    kinds = []
    original = data_plane_client.DataPlanePeer.call

    def call(self, kind, *a, **k):
        kinds.append(kind)
        return original(self, kind, *a, **k)
    monkeypatch.setattr(data_plane_client.DataPlanePeer, "call", call)
    original_init = GrpcMasterClient.__init__

    def init(self, *a, **k):
        original_init(self, *a, **k)
        self._run = None  # RunStep over gRPC would fail
    monkeypatch.setattr(GrpcMasterClient, "__init__", init)
    address = f"127.0.0.1:{servers[0]._port}"  # not the server's own target: no in-process hop
    with tf.Graph().as_default():
        x = tf.placeholder(tf.float32, [3, 4], name="x")
        with tf.device(PS):
            doubled = x * 2.0
            unset = tf.Variable(np.ones(2, np.float32), name="unset")
        with tf.Session(f"grpc://{address}") as sess:
            np.testing.assert_array_equal(sess.run(doubled, {x: FEED}), FEED * 2)
            with pytest.raises(errors.FailedPreconditionError) as info:
                sess.run(unset.value())
    assert frames.RUN_STEP in kinds
    monkeypatch.undo()
    monkeypatch.setenv(data_plane_client.ENV, "grpc")
    with tf.Graph().as_default():
        x = tf.placeholder(tf.float32, [3, 4], name="x")
        with tf.device(PS):
            doubled = x * 2.0
            unset = tf.Variable(np.ones(2, np.float32), name="unset")
        with tf.Session(f"grpc://{address}") as sess:
            with pytest.raises(errors.FailedPreconditionError) as over_grpc:
                sess.run(unset.value())
    assert over_grpc.value.message == info.value.message


def test_a_silent_peer_is_probed_and_found_hung(monkeypatch):
    """A peer that keeps its socket open but never answers (a stopped process)
    fails as UnavailableError once the probe says so, not at the step's deadline."""
    monkeypatch.setattr(data_plane_connections, "PROBE_S", 0.2)
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    name = b"\0nbcluster-test/silent:" + str(time.monotonic_ns()).encode()
    listener.bind(name)
    listener.listen(1)
    probes = []

    def probe() -> None:
        probes.append(time.monotonic())
        if len(probes) == 2:
            raise errors.UnavailableError(None, None, "worker test stopped answering")
    peer = data_plane_client.DataPlanePeer(name, "worker test")
    try:
        start = time.monotonic()
        with pytest.raises(errors.UnavailableError, match="stopped answering"):
            peer.call(frames.RUN_GRAPH, worker_pb2.RunGraphRequest(step_id=1), [], 3600.0,
                      probe=probe)
        assert len(probes) == 2 and time.monotonic() - start < 5
        with pytest.raises(errors.DeadlineExceededError):  # a deadline still comes first
            peer.call(frames.RUN_GRAPH, worker_pb2.RunGraphRequest(step_id=2), [], 0.3,
                      probe=probe)
        assert len(probes) == 3
    finally:
        listener.close()
