"""A forked child starts its data-plane client afresh: no connection pooled in the
parent, and a reply watcher of its own (the parent's thread is not there)."""
from __future__ import annotations

import os
import select
import signal
import socket
import threading

import pytest

from nbcluster.rpc.socket_transport import client, reply_watch
from nbcluster.rpc.socket_transport.connections import Conn, alive

pytestmark = pytest.mark.timeout(60)
_WAIT_S = 10.0


def _in_child(check) -> str:
    """`check()`'s answer, run in a forked child; "hung" if none came in time."""
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: answer, then leave without pytest's teardown
        try:
            answer = check()
        except BaseException as e:  # noqa: BLE001 - the parent reports it
            answer = f"failed: {e!r}"
        os.write(w, answer.encode())
        os._exit(0)
    os.close(w)
    try:
        ready, _, _ = select.select([r], [], [], _WAIT_S)
        return os.read(r, 4096).decode() if ready else "hung"
    finally:
        os.close(r)
        try:
            os.kill(pid, signal.SIGKILL)  # gone already, unless it hung
        except ProcessLookupError:
            pass
        os.waitpid(pid, 0)


def test_a_child_pools_none_of_the_parent_s_connections(monkeypatch):
    """Regression: a child forked from a process with a pooled connection (a
    notebook's multiprocessing worker) reused it, so two processes wrote
    requests to one socket and read each other's replies."""
    monkeypatch.delenv(client.ENV, raising=False)
    peer = client.peer_for("127.0.0.1:1")  # nothing serves there: only its pool is used
    ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
    conn = Conn(ours)
    peer._release(conn)  # an idle pooled connection
    try:
        assert peer._idle == [conn]

        def check() -> str:
            if peer._idle:
                return "the parent's connection is pooled in the child"
            if not peer._lock.acquire(timeout=_WAIT_S):
                return "the pool's lock is held"
            return "ok"
        assert _in_child(check) == "ok"
        assert peer._idle == [conn] and alive(conn.sock)  # the parent's is untouched
    finally:
        client._peers.pop(peer.name, None)
        peer.close()
        theirs.close()


def test_a_child_watches_replies_with_a_thread_of_its_own():
    """Regression: the child inherited the parent's watcher state without its
    thread (its errors were never noticed early) and, if a parent thread held
    the watcher's lock at the fork, every call's watch() in the child blocked."""
    ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
    reply_watch.WATCH.unwatch(reply_watch.WATCH.watch(ours, lambda: None))  # started
    held, release = threading.Event(), threading.Event()

    def hold() -> None:
        with reply_watch.WATCH._lock:
            held.set()
            release.wait(_WAIT_S)

    holder = threading.Thread(target=hold, daemon=True)
    holder.start()
    assert held.wait(_WAIT_S)

    def check() -> str:
        mine, peer = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        fired = threading.Event()
        reply_watch.WATCH.watch(mine, fired.set)
        peer.close()  # the peer hangs up before the reply
        return "ok" if fired.wait(_WAIT_S / 2) else "on_error was never called"
    try:
        assert _in_child(check) == "ok"
    finally:
        release.set()
        holder.join(_WAIT_S)
        ours.close()
        theirs.close()
