"""Watching data-plane calls sent now and read later: a failure that arrives meanwhile is acted on.

Rule: a caller that sends a RunGraph and then runs its own partition before
reading the reply (`client.PendingCall`) saves two thread wakes a step over
handing the call to a pool thread, but reads nothing while its partition
runs. This one thread reads nothing either: it only looks (MSG_PEEK) at the
first byte of a reply that lands before its caller came back for it, and
calls the caller's `on_error` when that byte opens an error frame or the
peer hung up, so the caller's other partitions are cancelled as promptly as
when a pool thread saw the error. A call still silent after PROBE_S seconds
gets its `probe` run (on a thread of its own), as the blocking read would;
a failed probe is kept for the caller and `on_error` is called. In the usual
step the reply comes after the caller is back (it waits on the caller's own
tensors), so this thread does not wake.
"""
from __future__ import annotations

import logging
import os
import select
import socket
import threading
import time
from typing import Callable, Optional

from nbcluster import errors
from nbcluster.rpc.socket_transport.connections import PROBE_S

log = logging.getLogger("nbcluster.rpc")
_EVENTS = select.EPOLLIN | select.EPOLLRDHUP | select.EPOLLONESHOT


class Watched:
    """One call being watched; `failure` holds a failed probe's error."""

    def __init__(self, sock: socket.socket, on_error: Callable[[], None],
                 probe: Optional[Callable[[], None]]) -> None:
        self.sock = sock
        self.fd = sock.fileno()
        self.on_error = on_error
        self.probe = probe
        self.probe_at = time.monotonic() + PROBE_S
        self.failure: Optional[errors.OpError] = None
        self.done = False  # unwatched: its caller reads (or closed) the socket now


class ReplyWatch:
    """The process's watcher thread (started on first use) and what it watches."""

    def __init__(self) -> None:
        self._lock = threading.Lock()  # guards _watched, _poll and _thread
        self._watched: dict[int, Watched] = {}
        self._poll: Optional[select.epoll] = None
        self._thread: Optional[threading.Thread] = None

    def watch(self, sock: socket.socket, on_error: Callable[[], None],
              probe: Optional[Callable[[], None]] = None) -> Watched:
        """Watches the reply to the request `sock` just carried, until `unwatch`."""
        entry = Watched(sock, on_error, probe)
        with self._lock:
            if self._poll is None:
                self._poll = select.epoll()
                self._thread = threading.Thread(target=self._run, daemon=True,
                                                name="nbcluster-reply-watch")
                self._thread.start()
            self._watched[entry.fd] = entry
            try:
                self._poll.register(entry.fd, _EVENTS)
            except FileExistsError:  # a pooled socket watched before, fired and disarmed
                self._poll.modify(entry.fd, _EVENTS)
        return entry

    def unwatch(self, entry: Watched) -> None:
        """Stops watching (before the caller reads or closes the socket)."""
        with self._lock:
            entry.done = True
            # The socket is open, so its fd is no other watched call's.
            self._watched.pop(entry.fd, None)
            try:
                self._poll.unregister(entry.fd)  # fired (one-shot) or not, it leaves
            except OSError:
                pass

    def after_fork(self) -> None:
        """Starts afresh in a forked child: the parent's thread is not there, its
        lock may be held for good, and the epoll is the parent's own instance
        (shared: the parent's thread would get the child's events)."""
        poll = self._poll
        self.__init__()
        if poll is not None:
            poll.close()  # the child's descriptor only: the parent's stays open

    def watching(self) -> int:
        """How many calls are watched (for tests)."""
        with self._lock:
            return len(self._watched)

    def _run(self) -> None:
        while True:
            with self._lock:
                due = min((e.probe_at for e in self._watched.values()), default=None)
            wait_s = PROBE_S if due is None else max(0.0, due - time.monotonic())
            try:
                events = self._poll.poll(wait_s)
            except InterruptedError:
                continue
            for fd, _ in events:
                with self._lock:
                    entry = self._watched.pop(fd, None)
                if entry is not None:
                    self._landed(entry)
            self._probe_due()

    def _landed(self, entry: Watched) -> None:
        """A reply began (or the peer hung up) before its caller came back."""
        # Under the lock, so a caller that unwatched meanwhile (and may have read its
        # reply and closed or reused the socket) is never peeked at.
        with self._lock:
            if entry.done:
                return
            first = _first_byte(entry.sock)
            if first is None:
                # Nothing after all: the event was an earlier call's on this pooled
                # socket (its caller unwatched, read and sent again before we looked).
                # Watch on, and never wait here: this lock is every caller's.
                self._watched[entry.fd] = entry
                self._poll.modify(entry.fd, _EVENTS)
                return
        if first != b"R":  # an error frame ("X") or a hang-up (b"")
            _call(entry.on_error)

    def _probe_due(self) -> None:
        now = time.monotonic()
        with self._lock:
            due = [e for e in self._watched.values() if e.probe_at <= now]
            for entry in due:
                entry.probe_at = now + PROBE_S
        for entry in due:
            if entry.probe is not None:
                threading.Thread(target=self._probe, args=(entry,), daemon=True,
                                 name="nbcluster-reply-probe").start()

    def _probe(self, entry: Watched) -> None:
        try:
            entry.probe()
        except errors.OpError as e:
            with self._lock:
                if self._watched.get(entry.fd) is not entry:
                    return  # its caller came back meanwhile and reads on its own
                entry.failure = e
            _call(entry.on_error)


def _first_byte(sock: socket.socket) -> Optional[bytes]:
    """The reply's first byte if one has landed, b"" on a hang-up, None if nothing has.

    Never waits: a socket with a timeout (as a caller's read sets one) makes Python's
    recv wait for readability whatever its flags, so readiness is asked of poll first.
    """
    ready = select.poll()
    ready.register(sock.fileno(), select.POLLIN | select.POLLRDHUP)
    if not ready.poll(0):
        return None
    try:
        return sock.recv(1, socket.MSG_PEEK)  # readable: returns at once
    except OSError:
        return b""


def _call(on_error: Callable[[], None]) -> None:
    try:
        on_error()
    except Exception:  # noqa: BLE001 - the watcher must outlive a caller's bug
        log.exception("a data-plane caller's error callback failed")


WATCH = ReplyWatch()
os.register_at_fork(after_in_child=WATCH.after_fork)
