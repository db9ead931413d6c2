"""Calling a same-host peer over its data plane (an abstract Unix socket): tensors, RunGraph, RunStep.

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
from typing import Callable, Optional

from nbcluster import errors
from nbcluster.rpc.grpc_transport import tokens
from nbcluster.rpc.peer_status import remote_error
from nbcluster.rpc.socket_transport import calls
from nbcluster.rpc.socket_transport import frames as wire
from nbcluster.rpc.socket_transport.connections import (  # noqa: F401
    ENV,
    PROBE_S,
    Conn,
    alive,
    await_reply,
    enabled,
    socket_name,
)
from nbcluster.rpc.socket_transport.handshake import hello
from nbcluster.rpc.socket_transport.reply_watch import WATCH

_IDLE_PER_PEER = 4
NOT_SERVED = object()  # `recv_tensor`'s answer when the data plane cannot ask the peer


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
            peer = _peers[name] = DataPlanePeer(name, f"worker {address}", address)
        return peer


class DataPlanePeer:
    """Pooled connections to one peer's data plane; thread-safe.

    Args:
      name: the peer's abstract socket name.
      label: how errors name the peer, e.g. "worker 127.0.0.1:2222".
    """

    def __init__(self, name: bytes, label: str, address: str = "") -> None:
        self.name = name
        self.label = label
        self.address = address  # whose token the handshake carries
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

    def call(self, kind: int, request, feeds: list, timeout: Optional[float],
             label: Optional[str] = None, probe: Optional[Callable[[], None]] = None):
        """A RunGraph (`kind` RUN_GRAPH) or RunStep (RUN_STEP) over the data
        plane: (response message, [(name, ndarray)]), or NOT_SERVED when the
        peer has no data plane. Nothing cancels it from here, as over gRPC: a
        cancelled step's CleanupGraph makes the peer's RunGraph fail, and
        that error comes back.

        Args:
          label: how errors name the peer (default: `self.label`).
          probe: called every PROBE_S seconds while no reply has begun; it
            raises (UnavailableError) when the peer stopped answering, as
            gRPC's keepalive pings find a hung task (a stopped process keeps
            its socket open, so nothing else would end the wait).
        Raises:
          OpError: as the gRPC path raises them.
        """
        pending = self.start_call(kind, request, feeds, timeout, label, probe)
        return NOT_SERVED if pending is NOT_SERVED else pending.finish()

    def start_call(self, kind: int, request, feeds: list, timeout: Optional[float],
                   label: Optional[str] = None, probe: Optional[Callable[[], None]] = None,
                   on_error: Optional[Callable[[], None]] = None):
        """`call`, sent now and read by `PendingCall.finish()` later (on the
        calling thread, which meanwhile runs its own work); NOT_SERVED when the
        peer has no data plane. `on_error`, if given, is called (on another
        thread) when the reply turns out an error, or a probe fails, before
        `finish` was called (`reply_watch`)."""
        conn = self._send(calls.encode_request(kind, request, feeds, timeout), timeout)
        if conn is None:
            return NOT_SERVED
        conn.begin()
        watched = WATCH.watch(conn.sock, on_error, probe) if on_error is not None else None
        return PendingCall(self, conn, kind, label or self.label, probe, watched)

    def _request(self, kind: int, step_id: int, keys: list,
                 timeout: Optional[float]) -> Optional[Conn]:
        """A connection that carries the request now, or None (no data plane there)."""
        return self._send([wire.encode_request(kind, step_id, keys, timeout)], timeout)

    def _send(self, frame: list, timeout: Optional[float]) -> Optional[Conn]:
        """A connection that carried `frame` (pieces for `send_all`), or None."""
        deadline = None if timeout is None else time.monotonic() + timeout
        for _ in range(2):  # an idle connection the peer closed meanwhile: once more, afresh
            conn = self._acquire()
            if conn is None:
                return None
            conn.reader.deadline = deadline
            try:
                # 0 would make the socket non-blocking: the reads' deadline decides
                conn.sock.settimeout(None if timeout is None else max(timeout, 1e-3))
                greeting, conn.hello = conn.hello, b""
                shared = conn.reader.shared  # blocks its arrays still read, if any, go first
                held = wire.encode_held(shared.held()) if shared is not None else b""
                wire.send_all(conn.sock, [greeting, held, *frame] if greeting or held else frame)
                return conn
            except OSError:
                conn.sock.close()
        raise errors.UnavailableError(None, None, f"{self.label}: its data plane closed "
                                                  f"the connection")

    def _replies(self, conn: Conn, left: set, cancellation):
        """The replies to the request `conn` carries: an iterator, but
        cancellation is registered now, before the first read."""
        request, token = conn.begin(), None
        if cancellation is not None:
            token = cancellation.register(functools.partial(conn.cancel, request))
            if token is None:
                conn.cancel(request)
        return self._read_replies(conn, left, cancellation, token)

    def _read_replies(self, conn: Conn, left: set, cancellation, token):
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

    def _read(self, conn: Conn, read=wire.read_reply, label: Optional[str] = None):
        label = label or self.label
        try:
            reply = read(conn.reader)
        except socket.timeout:
            raise errors.DeadlineExceededError(
                None, None, f"Deadline Exceeded waiting for {label}") from None
        except (wire.ConnectionClosed, OSError) as e:
            if conn.cancelled:
                raise errors.CancelledError(None, None, f"Receiving tensors from "
                                                        f"{label} was cancelled") from None
            why = "closed the connection" if isinstance(e, wire.ConnectionClosed) else str(e)
            raise errors.UnavailableError(None, None, f"{label}'s data plane {why}") from None
        if isinstance(reply, tuple) and len(reply) == 3 and reply[0] == errors.UNAUTHENTICATED:
            conn.cancelled = True  # refused at the handshake, closed there: never pooled
        return reply

    def _acquire(self) -> Optional[Conn]:
        while True:
            with self._lock:
                conn = self._idle.pop() if self._idle else None
            if conn is None:
                return self._connect()
            if alive(conn.sock):
                return conn
            conn.sock.close()

    def _connect(self) -> Optional[Conn]:
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            sock.connect(self.name)
        except OSError:
            sock.close()
            return None
        if not wire.same_user(sock):  # someone else's socket under a task's name
            sock.close()
            return None
        wire.widen(sock)
        conn = Conn(sock)
        # the first frame: the token, in front of the first request (handshake.py)
        conn.hello = hello(tokens.for_address(self.address))
        return conn

    def _release(self, conn: Conn) -> None:
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

    def after_fork(self) -> None:
        """Drops, in a forked child, the connections pooled in the parent: both
        processes would write requests to, and read replies from, one socket."""
        self._lock = threading.Lock()  # another thread of the parent may have held it
        idle, self._idle = self._idle, []
        for conn in idle:
            conn.sock.close()  # the child's descriptor only: the parent's stays open

    def close(self) -> None:
        """Closes the idle connections (those in use close when their request ends)."""
        with self._lock:
            idle, self._idle = self._idle, []
        for conn in idle:
            conn.sock.close()


class PendingCall:
    """A RunGraph or RunStep sent over the data plane, its reply not read yet.

    Exactly one of `finish` or `abandon` must follow, on any one thread.
    """

    def __init__(self, peer: DataPlanePeer, conn: Conn, kind: int, label: str,
                 probe: Optional[Callable[[], None]], watched) -> None:
        self._peer, self._conn, self._kind = peer, conn, kind
        self._label, self._probe, self._watched = label, probe, watched

    def finish(self):
        """(response message, [(name, ndarray)]), read now (waiting for it).

        Raises:
          OpError: as `DataPlanePeer.call` raises them.
        """
        conn, peer = self._conn, self._peer
        try:
            self._unwatch()
            if self._probe is not None:
                await_reply(conn, self._probe)
            reply = peer._read(conn, functools.partial(calls.read_reply, kind=self._kind),
                               self._label)
        except BaseException:
            conn.end()
            conn.sock.close()  # the reply was not read to its end: the framing is lost
            raise
        peer._release(conn)
        if len(reply) == 3:  # (code, message, node): the peer's error
            raise remote_error(*reply, self._label)
        return reply

    def abandon(self) -> None:
        """Drops the call unread: closes its connection (the peer sees the hang-up)."""
        self._unwatch()
        self._conn.end()
        self._conn.sock.close()

    def _unwatch(self) -> None:
        watched, self._watched = self._watched, None
        if watched is not None:
            WATCH.unwatch(watched)
            if watched.failure is not None:  # the peer failed its probe meanwhile
                raise watched.failure


def forget_all() -> None:
    """Closes every pooled connection (at exit, so none is left to the garbage collector)."""
    with _lock:
        peers = list(_peers.values())
        _peers.clear()
    for peer in peers:
        peer.close()


def _after_fork() -> None:
    global _lock
    _lock = threading.Lock()
    for peer in _peers.values():  # kept: sessions' clients hold them
        peer.after_fork()


_peers: dict[bytes, DataPlanePeer] = {}
_lock = threading.Lock()
atexit.register(forget_all)
os.register_at_fork(after_in_child=_after_fork)
