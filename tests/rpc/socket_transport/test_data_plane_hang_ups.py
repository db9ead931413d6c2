"""Data-plane hang-ups: a new connection on a hung-up one's fd number keeps its request;
a RunGraph whose caller hung up before it began is ended."""
from __future__ import annotations

import os
import select
import socket
import threading
import uuid
from types import SimpleNamespace

import numpy as np
import pytest

from nbcluster import errors
from nbcluster.proto import worker_pb2
from nbcluster.rpc.socket_transport import calls, handshake
from nbcluster.rpc.socket_transport import frames as wire
from nbcluster.rpc.socket_transport.server import DataPlaneServer, _Connection

pytestmark = pytest.mark.timeout(60)

_WAIT_S = 10.0


class _Worker:
    """Serves one tensor, once `release` is set, unless its caller went away first
    (`stopped()`, as `Worker.recv_tensor`'s wait ends)."""

    def __init__(self) -> None:
        self._cond = threading.Condition()
        self._released = False

    def recv_tensor(self, step_id, key, timeout=None, stopped=lambda: False):
        with self._cond:
            self._cond.wait_for(lambda: self._released or stopped(), _WAIT_S)
            if stopped():
                raise errors.CancelledError(None, None, f"RecvTensor {key}: the caller went away")
            return np.array([1.0, 2.0])

    def release(self) -> None:
        with self._cond:
            self._released = True
            self._cond.notify_all()

    def wake_step(self, step_id) -> None:
        with self._cond:
            self._cond.notify_all()

    def cleanup_graph(self, step_id) -> None:
        pass


class _StalePoll:
    """The server's epoll, which, once armed, returns one batch the kernel can
    return: a new connection on the listener, and before it had been accepted,
    the hang-up of a connection whose thread has since closed its socket."""

    def __init__(self, real, listener: int) -> None:
        self._real = real
        self._listener = listener
        self._stale = None  # (fd, its connection's thread) once armed
        self.parked = threading.Event()  # the watcher waits to return the batch
        self.handled = threading.Event()  # the watcher handled it (it polls again)
        self._delivered = False

    def arm(self, fd: int, thread: threading.Thread) -> None:
        self._stale = (fd, thread)

    def poll(self, timeout=-1):
        while True:
            if self._delivered:
                self.handled.set()
            elif self._stale is not None:
                fd, thread = self._stale
                self.parked.set()
                thread.join(_WAIT_S)  # its socket is closed: the fd number is free
                select.select([self._listener], [], [], _WAIT_S)
                self._delivered = True
                return [(self._listener, select.EPOLLIN), (fd, select.EPOLLRDHUP)]
            events = self._real.poll(0.01)
            if events:
                return events

    def register(self, *args):
        self._real.register(*args)

    def unregister(self, fd):
        self._real.unregister(fd)

    def close(self):
        self._real.close()


def _wait_for(predicate) -> None:
    done = threading.Event()
    for _ in range(int(_WAIT_S / 0.01)):
        if predicate():
            return
        done.wait(0.01)
    raise AssertionError("timed out")


def test_a_new_connection_on_a_hung_up_ones_fd_keeps_its_request():
    worker = _Worker()
    server = DataPlaneServer(worker, f"\0nbcluster-test/{os.getpid()}-{uuid.uuid4().hex}".encode())
    stale = server._poll = _StalePoll(server._poll, server._listener.fileno())
    server.start()
    first, second = (socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) for _ in range(2))
    try:
        first.connect(server.name)
        _wait_for(lambda: len(server._connections) == 1)
        (fd, conn), = server._connections.items()
        stale.arm(fd, conn.thread)
        assert stale.parked.wait(_WAIT_S)
        # Shut down, not closed: the first client's own fd stays taken, so the
        # accepted connection gets the number the server's end of it freed.
        first.shutdown(socket.SHUT_RDWR)
        conn.thread.join(_WAIT_S)
        second.connect(server.name)
        second.settimeout(_WAIT_S)
        second.sendall(handshake.hello(None) +  # this server has no token
                       wire.encode_request(wire.SINGLE, 7, ["t:0"], None))
        assert stale.handled.wait(_WAIT_S)
        worker.release()
        try:
            reply = wire.read_reply(wire.FrameReader(second))
        except wire.ConnectionClosed:
            raise AssertionError("the server closed the new connection") from None
        assert isinstance(reply, list), f"the request failed: {reply}"
        assert reply[0][0] == "t:0"
        np.testing.assert_array_equal(reply[0][1], [1.0, 2.0])
        # The premise: the new connection got the hung-up one's fd number.
        assert fd in server._connections and server._connections[fd] is not conn
    finally:
        first.close()
        second.close()
        server.close()
        server.join()


class _StepWorker:
    """Runs a RunGraph until its step is cleaned up (a bounded wait, then it reports)."""

    def __init__(self) -> None:
        self.cleaned = threading.Event()
        self.counters = SimpleNamespace(received=lambda nbytes: None)

    def run_graph(self, session, graph, step_id, feeds, fetches, timeout, *flags):
        if not self.cleaned.wait(3.0):  # bounds the test before the fix; never reached after
            raise errors.DeadlineExceededError(None, None, "the step was never cleaned up")
        raise errors.CancelledError(None, None, f"Step {step_id} was cancelled")

    def cleanup_graph(self, step_id) -> None:
        self.cleaned.set()


def test_a_run_graph_whose_caller_hung_up_before_it_began_is_cleaned_up():
    """Regression: the caller died right after sending its RunGraph, and the
    hang-up was handled while the request's feeds were still being read: no
    RunGraph ran yet, so `_hung_up` cleaned nothing up, and the RunGraph then
    ran with its caller gone, waiting on peers until its deadline."""
    worker = _StepWorker()
    server = DataPlaneServer(worker, f"\0nbcluster-test/{os.getpid()}-{uuid.uuid4().hex}".encode())
    ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
    conn = _Connection(ours)
    try:
        conn.gone = True  # the watcher's `_hung_up` ran before the RunGraph began
        reply = server._call(conn, calls.RUN_GRAPH,
                             worker_pb2.RunGraphRequest(step_id=42), [], None)
        assert worker.cleaned.is_set()
        wire.send_all(ours, reply)
        code, message, _ = wire.read_reply(wire.FrameReader(theirs))
        assert code == errors.CANCELLED, message
    finally:
        conn.close()
        theirs.close()
        server.close()
        server.join()
