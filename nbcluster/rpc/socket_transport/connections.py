"""Same-host data-plane connections: a server's socket name, one pooled connection, its liveness.

Rule: no request logic here (that is `client`); only naming,
per-request cancellation of a connection, and whether it is still usable.
"""
from __future__ import annotations

import os
import select
import socket
import threading
import time
from typing import Callable, Optional

from nbcluster.rpc.socket_transport import frames as wire

ENV = "NBCLUSTER_DATA_PLANE"  # "grpc": tensors travel over gRPC only
PROBE_S = 10.0  # silence on a RunGraph / RunStep before asking whether the peer is alive
_LOOPBACK = ("localhost", "127.0.0.1", "::1", "0.0.0.0", "::", "")


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


class Conn:
    """A pooled connection. A cancellation callback names the request it was
    registered for: one that fires late must not shut down the next request's."""

    def __init__(self, sock: socket.socket) -> None:
        self.sock = sock
        self.reader = wire.FrameReader(sock)
        self.cancelled = False
        self.request = 0
        self.hello = b""  # the handshake its first request carries (client._connect sets it)
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


def await_reply(conn: Conn, probe: Callable[[], None]) -> None:
    """Returns once a reply begins or the request's deadline passed; calls
    `probe` every PROBE_S seconds of silence before that."""
    poller = select.poll()
    poller.register(conn.sock.fileno(), select.POLLIN | select.POLLHUP)
    while not conn.reader.buffered():
        wait_s = PROBE_S
        if conn.reader.deadline is not None:
            wait_s = min(wait_s, conn.reader.deadline - time.monotonic())
            if wait_s <= 0:
                return  # the read that follows raises DeadlineExceededError
        if poller.poll(wait_s * 1000):
            return
        if conn.reader.deadline is None or time.monotonic() < conn.reader.deadline:
            probe()


def alive(sock: socket.socket) -> bool:
    """Whether an idle connection is still open at the other end (no bytes may be waiting)."""
    try:
        sock.recv(1, socket.MSG_PEEK | socket.MSG_DONTWAIT)
    except BlockingIOError:
        return True
    except OSError:
        return False
    return False  # closed (b""), or bytes nobody asked for: either way not reusable
