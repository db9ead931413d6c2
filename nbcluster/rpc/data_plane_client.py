"""Fetching a peer's tensors over its same-host data plane (an abstract Unix socket), else None.

gRPC stays the control plane and the fallback: a peer that is not on this
host's loopback, has no data plane, or has it turned off
(NBCLUSTER_DATA_PLANE=grpc on either side) is asked over gRPC as before.
Connections are pooled per peer and reused across steps; a request holds one
until its reply is read to the end, and one abandoned midway is closed (the
producer sees the hang-up and stops waiting). Failures become the OpErrors
the gRPC path raises: the producer's own error as its class and message, a
deadline as DeadlineExceededError, a dead peer as UnavailableError, a
cancelled step as CancelledError.
"""
from __future__ import annotations

import atexit
import functools
import os
import socket
import threading
import time
from typing import Optional

from nbcluster import errors
from nbcluster.rpc import data_plane_wire as wire
from nbcluster.rpc.status import remote_error

ENV = "NBCLUSTER_DATA_PLANE"  # "grpc": tensors travel over gRPC only
_LOOPBACK = ("localhost", "127.0.0.1", "::1", "0.0.0.0", "::", "")
_IDLE_PER_PEER = 4
NOT_SERVED = object()  # `recv_tensor`'s answer when the data plane cannot ask the peer


def enabled() -> bool:
    """Whether this process offers and uses the data plane (NBCLUSTER_DATA_PLANE != "grpc")."""
    return os.environ.get(ENV, "unix").strip().lower() != "grpc"


def socket_name(host: str, port: int) -> Optional[bytes]:
    """The abstract socket name of the server at host:port, or None if host
    is not a loopback address of this host.

    Every loopback spelling of one port names one socket (a server bound to
    "localhost" serves "127.0.0.1" too); another 127.x address is its own.
    """
    host = host.strip("[]").lower()
    if host in _LOOPBACK:
        host = "local"
    elif not host.startswith("127."):
        return None
    return f"\0nbcluster/{host}:{port}".encode()


def peer_for(address: str) -> Optional["DataPlanePeer"]:
    """The shared pool for the server at `address` ("host:port"), or None
    when it cannot be on this host's loopback or the data plane is off."""
    host, _, port = address.rpartition(":")
    if not enabled() or not port.isdigit():
        return None
    name = socket_name(host, int(port))
    if name is None:
        return None
    with _lock:
        peer = _peers.get(name)
        if peer is None:
            peer = _peers[name] = DataPlanePeer(name, f"worker {address}")
        return peer


class _Conn:
    """A pooled connection. A cancellation callback names the request it was
    registered for: one that fires late must not shut down the next request's."""

    def __init__(self, sock: socket.socket) -> None:
        self.sock = sock
        self.reader = wire.FrameReader(sock)
        self.cancelled = False
        self.request = 0
        self._lock = threading.Lock()

    def begin(self) -> int:
        with self._lock:
            self.request += 1
            return self.request

    def end(self) -> None:
        with self._lock:
            self.request += 1

    def cancel(self, request: int) -> None:
        with self._lock:
            if request != self.request:
                return  # that request ended; the connection may serve another now
            self.cancelled = True
            try:
                self.sock.shutdown(socket.SHUT_RDWR)  # wakes the reader; closing is its job
            except OSError:
                pass


class DataPlanePeer:
    """Pooled connections to one peer's data plane; thread-safe.

    Args:
      name: the peer's abstract socket name.
      label: how errors name the peer, e.g. "worker 127.0.0.1:2222".
    """

    def __init__(self, name: bytes, label: str) -> None:
        self.name = name
        self.label = label
        self._idle: list = []
        self._lock = threading.Lock()

    def stream_tensors(self, step_id: int, keys: list, timeout: Optional[float],
                       cancellation=None):
        """`GrpcWorkerClient.stream_tensors` over the data plane: asks now,
        returns an iterator of lists of (key, ndarray); None when the peer
        has no data plane (ask over gRPC).

        Raises (here or from the iterator):
          OpError: as the gRPC path raises them.
        """
        if not keys:
            return iter(())
        conn = self._request(wire.STREAM, step_id, keys, timeout)
        if conn is None:
            return None
        return self._replies(conn, set(keys), cancellation)

    def recv_tensor(self, step_id: int, key: str, timeout: Optional[float], waiter=None):
        """The tensor `key` of step `step_id`; NOT_SERVED when the peer has no
        data plane. `waiter`'s cancellation (a StepContext's), if any, ends the wait.

        Raises:
          OpError: as the gRPC path raises them.
        """
        conn = self._request(wire.SINGLE, step_id, [key], timeout)
        if conn is None:
            return NOT_SERVED
        cancellation = getattr(waiter, "cancellation", None)
        return next(self._replies(conn, {key}, cancellation))[0][1]

    def _request(self, kind: int, step_id: int, keys: list,
                 timeout: Optional[float]) -> Optional[_Conn]:
        """A connection that carries the request now, or None (no data plane there)."""
        frame = wire.encode_request(kind, step_id, keys, timeout)
        deadline = None if timeout is None else time.monotonic() + timeout
        for _ in range(2):  # an idle connection the peer closed meanwhile: once more, afresh
            conn = self._acquire()
            if conn is None:
                return None
            conn.reader.deadline = deadline
            try:
                # 0 would make the socket non-blocking: the reads' deadline decides
                conn.sock.settimeout(None if timeout is None else max(timeout, 1e-3))
                wire.send_all(conn.sock, [frame])
                return conn
            except OSError:
                conn.sock.close()
        raise errors.UnavailableError(None, None, f"{self.label}: its data plane closed "
                                                  f"the connection")

    def _replies(self, conn: _Conn, left: set, cancellation):
        """The replies to the request `conn` carries: an iterator, but
        cancellation is registered now, before the first read."""
        request, token = conn.begin(), None
        if cancellation is not None:
            token = cancellation.register(functools.partial(conn.cancel, request))
            if token is None:
                conn.cancel(request)
        return self._read_replies(conn, left, cancellation, token)

    def _read_replies(self, conn: _Conn, left: set, cancellation, token):
        finished = False

        def finish() -> None:
            nonlocal finished
            finished = True
            if token is not None:
                cancellation.deregister(token)
            self._release(conn)

        try:
            while left:
                reply = self._read(conn)
                if isinstance(reply, tuple):  # the producer's error ends the request
                    finish()
                    raise remote_error(*reply, self.label)
                for key, _ in reply:
                    if key not in left:
                        raise errors.DataLossError(None, None, f"{self.label} sent tensor "
                                                               f"{key!r}, which was not asked for")
                    left.discard(key)
                if not left:
                    finish()
                yield reply
        finally:
            if not finished:
                if token is not None:
                    cancellation.deregister(token)
                conn.end()
                conn.sock.close()  # replies may still come: the connection cannot be reused

    def _read(self, conn: _Conn):
        try:
            return wire.read_reply(conn.reader)
        except socket.timeout:
            raise errors.DeadlineExceededError(
                None, None, f"Deadline Exceeded waiting for {self.label}") from None
        except (wire.ConnectionClosed, OSError) as e:
            if conn.cancelled:
                raise errors.CancelledError(None, None, f"Receiving tensors from "
                                                        f"{self.label} was cancelled") from None
            why = "closed the connection" if isinstance(e, wire.ConnectionClosed) else str(e)
            raise errors.UnavailableError(None, None, f"{self.label}'s data plane {why}") \
                from None

    def _acquire(self) -> Optional[_Conn]:
        while True:
            with self._lock:
                conn = self._idle.pop() if self._idle else None
            if conn is None:
                return self._connect()
            if _alive(conn.sock):
                return conn
            conn.sock.close()

    def _connect(self) -> Optional[_Conn]:
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            sock.connect(self.name)
        except OSError:
            sock.close()
            return None
        if not wire.same_user(sock):  # someone else's socket under a task's name
            sock.close()
            return None
        return _Conn(sock)

    def _release(self, conn: _Conn) -> None:
        conn.end()
        conn.reader.deadline = None
        try:
            conn.sock.settimeout(0.0)  # `_alive` must not wait on a stale timeout
        except OSError:
            return
        with self._lock:
            if len(self._idle) < _IDLE_PER_PEER and not conn.cancelled:
                self._idle.append(conn)
                return
        conn.sock.close()

    def close(self) -> None:
        """Closes the idle connections (those in use close when their request ends)."""
        with self._lock:
            idle, self._idle = self._idle, []
        for conn in idle:
            conn.sock.close()


def _alive(sock: socket.socket) -> bool:
    """Whether an idle connection is still open at the other end (no bytes may be waiting)."""
    try:
        sock.recv(1, socket.MSG_PEEK | socket.MSG_DONTWAIT)
    except BlockingIOError:
        return True
    except OSError:
        return False
    return False  # closed (b""), or bytes nobody asked for: either way not reusable


def forget_all() -> None:
    """Closes every pooled connection (at exit, so none is left to the garbage collector)."""
    with _lock:
        peers = list(_peers.values())
        _peers.clear()
    for peer in peers:
        peer.close()


_peers: dict[bytes, DataPlanePeer] = {}
_lock = threading.Lock()
atexit.register(forget_all)
