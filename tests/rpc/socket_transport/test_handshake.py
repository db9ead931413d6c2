"""The same-host data plane admits a connection only after its first frame
carries the task's token: a wrong or missing token, or a request sent
without the hello, is refused (UNAUTHENTICATED / DataLoss) and nothing runs;
the right token goes on to the request."""
from __future__ import annotations

import socket

import pytest

import nbcluster as tf
from nbcluster import errors
from nbcluster.proto import master_pb2
from nbcluster.rpc.grpc_transport import tokens
from nbcluster.rpc.socket_transport import calls as data_plane_calls
from nbcluster.rpc.socket_transport import frames as wire
from nbcluster.rpc.socket_transport import handshake as data_plane_handshake
from nbcluster.rpc.socket_transport.client import DataPlanePeer
from nbcluster.rpc.socket_transport.connections import socket_name

pytestmark = pytest.mark.timeout(60)

TOKEN = "the-data-plane-token-0123"


@pytest.fixture
def server(monkeypatch):
    monkeypatch.delenv("NBCLUSTER_DATA_PLANE", raising=False)
    with tf.distribute.Server({"w": ["127.0.0.1:0"]}, token=TOKEN) as s:
        yield s


def _name(server) -> bytes:
    return socket_name("127.0.0.1", int(server.target.rsplit(":", 1)[1]))


def _raw(server, first: bytes):
    """Connects as a same-user process would, sends `first`; the reply frame."""
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
        sock.settimeout(10.0)
        sock.connect(_name(server))
        sock.sendall(first)
        reader = wire.FrameReader(sock)
        assert bytes(reader.exact(1)) == b"X"  # an error frame ...
        reply = wire.read_error(reader)
        assert sock.recv(1) == b""  # ... and the connection is closed
        return reply


def _run_step(handle: str):
    return data_plane_calls.encode_request(
        data_plane_calls.RUN_STEP, master_pb2.RunStepRequest(session_handle=handle), [], 5.0)


def test_a_wrong_or_missing_token_is_refused(server):
    for token in ("wrong", None):
        code, message, _ = _raw(server, data_plane_handshake.hello(token) + b"".join(
            _run_step("s")))
        assert code == errors.UNAUTHENTICATED and "requires its cluster's token" in message


def test_a_request_without_the_hello_is_refused(server):
    code, message, _ = _raw(server, wire.encode_request(wire.STREAM, 1, ["a:0"], 1.0))
    assert code == errors.DATA_LOSS and "handshake" in message


def test_the_peer_sends_the_token_of_its_address(server):
    address = "127.0.0.1:" + server.target.rsplit(":", 1)[1]
    peer = DataPlanePeer(_name(server), f"worker {address}", address)
    request = master_pb2.RunStepRequest(session_handle="no-such-session")
    try:
        tokens.register(address, "wrong")
        with pytest.raises(errors.UnauthenticatedError, match="requires its cluster's token"):
            peer.call(data_plane_calls.RUN_STEP, request, [], 5.0)
        assert peer._idle == []  # the refused connection is closed, never reused
        tokens.register(address, TOKEN)  # the handshake passes: the master answers the step
        with pytest.raises(errors.OpError) as info:
            peer.call(data_plane_calls.RUN_STEP, request, [], 5.0)
        assert not isinstance(info.value, errors.UnauthenticatedError)
        assert "no-such-session" in info.value.message
    finally:
        tokens.register(address, TOKEN)
        peer.close()
