"""Serving this task's tensors to peers on the same host over an abstract Unix socket.

Rules: a request is answered by the same `serving` functions (RecvTensors,
RecvTensor, RunGraph, RunStep) that gRPC's handlers call, so
waiting, aborts, deadlines and byte counts are theirs; a bad request ends its
connection with an error frame, never the server. One thread per connection
blocks in recv and answers on its own (no hand-off: a wake-up costs ~80 µs);
one more thread accepts connections and notices consumers that hang up while
their request waits for a tensor. The socket's name is abstract ("\\0..."), so
nothing is left on disk when the process dies.
"""
from __future__ import annotations

import logging
import math
import os
import select
import socket
import sys
import threading
from typing import Optional

from nbcluster import errors
from nbcluster.master_worker.master import CallerWatch
from nbcluster.rpc.serving import (
    serve_push_tensors,
    serve_recv_tensor,
    serve_run_graph,
    serve_run_step,
)
from nbcluster.rpc.socket_transport import calls
from nbcluster.rpc.socket_transport import frames as wire
from nbcluster.rpc.socket_transport import shm_blocks as shm
from nbcluster.rpc.socket_transport.connections import enabled, socket_name
from nbcluster.rpc.socket_transport.handshake import server_handshake

log = logging.getLogger("nbcluster.rpc")
_JOIN_S = 5.0
_ONE = (1).to_bytes(8, sys.byteorder)  # what an eventfd adds (a pipe takes any bytes)


class _Connection:
    """One accepted consumer; `gone` once it hung up (checked by the waiting request)."""

    def __init__(self, sock: socket.socket, blocks: Optional[shm.BlockPool] = None) -> None:
        self.sock = sock
        self.gone = False
        self.step_id: Optional[int] = None  # the request being answered
        self.running_graph: Optional[int] = None  # the step of a RunGraph under way
        self.running_step = None  # the CallerWatch of a RunStep under way
        self.thread: Optional[threading.Thread] = None
        self.shared = blocks.lender() if blocks is not None else None  # large tensors' blocks
        # While a pushed stream's tensors are written by their producers,
        # this connection's thread waits for the next request, or for a
        # producer's signal (`wakeup`), in one poll (`idle`).
        self._signal_r, self._signal_w = _signal_fds()
        self._signal_lock = threading.Lock()  # a producer's signal never hits a closed fd
        self._poller = select.poll()
        self._poller.register(sock.fileno(), select.POLLIN)
        self._poller.register(self._signal_r, select.POLLIN)

    def send(self, pieces: list) -> None:
        wire.send_all(self.sock, pieces, self.shared.take_fds() if self.shared else ())

    def wakeup(self) -> None:
        """Makes `idle` return (a producer left it something to do)."""
        with self._signal_lock:
            if self._signal_w >= 0:
                try:
                    os.write(self._signal_w, _ONE)
                except OSError:
                    pass  # a signal is already pending (full) or this is closing

    def idle(self, timeout: Optional[float]) -> bool:
        """Waits for `wakeup`, the next request (or a hang-up), or `timeout`
        seconds; True when the socket has something."""
        wait_ms = None if timeout is None else max(0, math.ceil(timeout * 1000))
        try:
            events = self._poller.poll(wait_ms)
        except InterruptedError:
            return False
        readable = False
        for fd, _ in events:
            if fd == self._signal_r:
                try:
                    os.read(self._signal_r, 4096)
                except OSError:
                    pass  # drained already
            else:
                readable = True
        return readable

    def close(self) -> None:
        self.sock.close()
        with self._signal_lock:
            fds, self._signal_r, self._signal_w = {self._signal_r, self._signal_w}, -1, -1
        for fd in fds:
            os.close(fd)

    def deliver(self, batch: list):
        """Writes a RecvTensors batch from the thread that produced it, without
        blocking: None once written, else a callable (for this connection's
        thread) that writes the rest. A batch larger than the socket's buffer
        goes to that thread whole: encoding it (copies into shared blocks) is
        no work for the producer's thread, and it would not fit anyway."""
        if sum(getattr(value, "nbytes", 0) for _, value in batch) > wire.SEND_BUFFER // 2:
            return lambda: self.send(wire.encode_batch(batch, self.shared))
        pieces = wire.encode_batch(batch, self.shared)
        left, fds = wire.send_now(self.sock, pieces,
                                  self.shared.take_fds() if self.shared else ())
        if not left:
            return None
        return lambda: wire.send_all(self.sock, left, fds)


class DataPlaneServer:
    """The data plane of one server's worker (and master).

    Args:
      worker: the `Worker` whose tensors and RunGraph it serves.
      name: the abstract socket name (`socket_name`).
      master: the `Master` whose RunStep it serves, if any.
    Raises:
      OSError: the name is taken (another server of this host has it).
    """

    def __init__(self, worker, name: bytes, master=None, token: Optional[str] = None) -> None:
        self._worker = worker
        self._master = master
        self._token = token  # every connection's first frame must carry it
        self.name = name
        self._listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            self._listener.bind(name)  # reserves the name; connecting waits for start()
        except OSError:
            self._listener.close()
            raise
        self._wake_r, self._wake_w = os.pipe()
        self._poll = select.epoll()
        self._poll.register(self._listener.fileno(), select.EPOLLIN)
        self._poll.register(self._wake_r, select.EPOLLIN)
        self._connections: dict[int, _Connection] = {}
        self._threads: list = []  # every connection's, until it is joined or seen dead
        self._lock = threading.Lock()  # guards _connections, _threads and _closed
        self._blocks = shm.BlockPool() if shm.enabled() else None
        self._closed = False
        self._watcher = threading.Thread(target=self._watch, name="nbcluster-dataplane",
                                         daemon=True)

    @classmethod
    def open(cls, host: str, port: int, worker, master=None,
             token: Optional[str] = None) -> Optional["DataPlaneServer"]:
        """The data plane for a server bound to host:port, or None: turned off
        (NBCLUSTER_DATA_PLANE=grpc), a host that is not this host's loopback, or
        the name is taken."""
        name = socket_name(host, port)
        if name is None or not enabled():
            return None
        try:
            return cls(worker, name, master, token)
        except OSError as e:
            log.info("no data plane at %r: %s", name, e)
            return None

    def start(self) -> None:
        """Accepts connections from now on."""
        self._listener.listen(64)
        self._watcher.start()

    def close(self) -> None:
        """Stops accepting and shuts every connection down (their threads end
        once their request ends: `Worker.cancel_steps` ends waiting ones)."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
            connections = list(self._connections.values())
        try:
            os.write(self._wake_w, b"x")
        except OSError:
            pass  # the watcher is gone already (it logged why)
        for conn in connections:
            conn.gone = True
            _shutdown(conn.sock)
        if self._watcher.ident is None:  # never started: nobody else releases them
            self._release_watch()

    def join(self, timeout: float = _JOIN_S) -> None:
        """Waits for the accepting thread and every connection's thread to end."""
        if self._watcher.ident is not None:
            self._watcher.join(timeout)
        with self._lock:
            threads, self._threads = self._threads, []
        for thread in threads:
            thread.join(timeout)
        if self._blocks is not None and self._closed:
            self._blocks.close()  # blocks still lent close when their connection ends

    def _watch(self) -> None:
        try:
            listener = self._listener.fileno()
            while True:
                fds = [fd for fd, _ in self._poll.poll()]
                if self._wake_r in fds:
                    return
                # A batch's hang-ups before its accept: a hung-up connection's
                # thread may close its socket meanwhile, and the accepted one
                # then gets the same fd number, which a hang-up handled after
                # it would take for the new connection's (ending its request).
                for fd in fds:
                    if fd != listener:
                        self._hung_up(fd)
                if listener in fds:
                    self._accept()
        except Exception:  # noqa: BLE001 - peers then fall back to gRPC; say why
            log.exception("the data plane at %r stopped accepting", self.name)
        finally:
            self._release_watch()

    def _release_watch(self) -> None:
        self._listener.close()
        self._poll.close()
        os.close(self._wake_r)
        os.close(self._wake_w)

    def _accept(self) -> None:
        try:
            sock, _ = self._listener.accept()
        except OSError:
            return
        if not wire.same_user(sock):  # another user of this host: it may ask over gRPC
            sock.close()
            return
        wire.widen(sock)
        conn = _Connection(sock, self._blocks)
        with self._lock:
            if self._closed:
                conn.close()
                return
            self._connections[sock.fileno()] = conn
            # Only a hang-up wakes this thread; data wakes the connection's own.
            self._poll.register(sock.fileno(), select.EPOLLRDHUP)
            conn.thread = threading.Thread(target=self._serve, args=(conn,), daemon=True,
                                           name="nbcluster-dataplane-conn")
            self._threads = [t for t in self._threads if t.is_alive()] + [conn.thread]
        conn.thread.start()

    def _hung_up(self, fd: int) -> None:
        with self._lock:
            conn = self._connections.get(fd)
            if conn is None:
                return
            try:
                self._poll.unregister(fd)  # level-triggered: it would fire again
            except OSError:
                pass  # its thread closed it meanwhile
        conn.gone = True
        running = conn.running_graph
        if running is not None:  # as gRPC's RunGraph handler: the caller is gone
            self._worker.cleanup_graph(running)
        caller = conn.running_step
        if caller is not None:
            caller.caller_gone()
        step_id = conn.step_id
        if step_id is not None:
            self._worker.wake_step(step_id)  # its wait checks `gone`

    def _serve(self, conn: _Connection) -> None:
        reader = wire.FrameReader(conn.sock)
        try:
            if not server_handshake(conn.sock, reader, self._token):  # before any request
                return
            while not conn.gone:
                held = frozenset()
                try:
                    kind, step_id, keys, timeout = wire.read_request(reader)
                    if kind == wire.HELD:  # blocks its arrays still read: not reused yet
                        held = frozenset(keys)
                        kind, step_id, keys, timeout = wire.read_request(reader)
                        if kind == wire.HELD:
                            raise wire.malformed("a HELD frame after a HELD frame")
                    if kind in calls.REQUESTS:  # keys: the control bytes; the feeds follow
                        keys = calls.read_request(reader, kind, step_id, keys)
                except errors.DataLossError as e:
                    wire.send_all(conn.sock, [wire.encode_error(e)])
                    return  # the framing is lost: this connection cannot go on
                if conn.shared is not None:
                    conn.shared.reclaim(held)  # the consumer read the previous reply to its end
                conn.step_id = step_id
                self._answer(conn, kind, step_id, keys, timeout)
                conn.step_id = None
        except (wire.ConnectionClosed, OSError):
            pass  # the consumer went away, or close() shut the connection
        finally:
            self._forget(conn)

    def _answer(self, conn: _Connection, kind: int, step_id: int, keys: list,
                timeout: Optional[float]) -> None:
        worker = self._worker
        try:
            if kind in calls.REQUESTS:
                conn.send(self._call(conn, kind, *keys, timeout))
                return
            if kind == wire.SINGLE:
                value = serve_recv_tensor(worker, step_id, keys[0], timeout,
                                          lambda: conn.gone)
                conn.send(wire.encode_batch([(keys[0], value)], conn.shared))
                return
            # Each batch is written by the thread whose Send produced it (a
            # wake of this thread per batch cost ~0.1 ms of the step);
            # this thread wakes at the stream's end, or to write the rest.
            serve_push_tensors(worker, step_id, keys, conn.deliver, timeout, lambda: conn.gone,
                               conn.wakeup, conn.idle)
            return
        except errors.OpError as e:
            error = e
        except OSError:
            raise
        except Exception as e:  # noqa: BLE001 - a bug becomes INTERNAL, the server lives on
            log.exception("internal error answering a data-plane request")
            error = errors.InternalError(None, None, f"{type(e).__name__}: {e}")
        wire.send_all(conn.sock, [wire.encode_error(error)])

    def _call(self, conn: _Connection, kind: int, request, feeds: list,
              timeout: Optional[float]) -> list:
        """The reply pieces to a RunGraph or RunStep: its result, or its error
        as gRPC's handler would map it (a kernel's OSError included: it is not
        the socket's)."""
        try:
            if kind == calls.RUN_STEP:
                if self._master is None:
                    raise errors.UnimplementedError(None, None, "RunStep: no master here")
                conn.running_step = caller = CallerWatch()
                if conn.gone:  # it hung up before the watch was set
                    caller.caller_gone()
                try:
                    result = serve_run_step(self._master, request, feeds, caller)
                finally:
                    conn.running_step = None
                return calls.encode_reply(*result, conn.shared)
            conn.running_graph = request.step_id
            if conn.gone:  # it hung up before that was set (`_hung_up` saw no RunGraph)
                self._worker.cleanup_graph(request.step_id)
            try:
                result = serve_run_graph(self._worker, request, feeds, timeout)
            finally:
                conn.running_graph = None
            return calls.encode_reply(*result, conn.shared)
        except errors.OpError as e:
            error = e
        except Exception as e:  # noqa: BLE001 - a bug becomes INTERNAL, the server lives on
            log.exception("internal error in %s over the data plane",
                          calls.REQUESTS[kind].__name__)
            error = errors.InternalError(None, None, f"{type(e).__name__}: {e}")
        return [wire.encode_error(error)]

    def _forget(self, conn: _Connection) -> None:
        fd = conn.sock.fileno()
        with self._lock:
            self._connections.pop(fd, None)
            if not self._closed:
                try:
                    self._poll.unregister(fd)
                except (KeyError, OSError, ValueError):
                    pass  # already unregistered on hang-up
        conn.close()
        if conn.shared is not None:
            conn.shared.close()


def _signal_fds() -> tuple:
    """(read end, write end) of a non-blocking signal: one eventfd where Linux has it."""
    if hasattr(os, "eventfd"):
        fd = os.eventfd(0, os.EFD_NONBLOCK | os.EFD_CLOEXEC)
        return fd, fd
    r, w = os.pipe()
    os.set_blocking(r, False)
    os.set_blocking(w, False)
    return r, w


def _shutdown(sock: socket.socket) -> None:
    try:
        sock.shutdown(socket.SHUT_RDWR)
    except OSError:
        pass  # already closed by its thread
