"""The reply watcher: an error or a hang-up landing before its caller reads calls
`on_error`; a good reply does not; a silent peer's failed probe is kept for the caller."""
from __future__ import annotations

import socket
import threading

import pytest

from nbcluster import errors
from nbcluster.rpc.socket_transport import reply_watch
from nbcluster.rpc.socket_transport.reply_watch import ReplyWatch

pytestmark = pytest.mark.timeout(60)
_WAIT_S = 10.0


@pytest.fixture
def pair():
    ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
    yield ours, theirs
    ours.close()
    theirs.close()


def _until_unwatched(watch: ReplyWatch) -> None:
    done = threading.Event()
    while watch.watching() and not done.wait(0.005):
        pass


def test_an_error_frame_landing_first_calls_on_error_and_stays_unread(pair):
    ours, theirs = pair
    watch, fired = ReplyWatch(), threading.Event()
    entry = watch.watch(ours, fired.set)
    theirs.sendall(b"X\x01\x00\x00\x00")
    assert fired.wait(_WAIT_S)
    watch.unwatch(entry)
    assert ours.recv(16) == b"X\x01\x00\x00\x00"  # peeked only: the caller reads it all


def test_a_hang_up_calls_on_error(pair):
    ours, theirs = pair
    watch, fired = ReplyWatch(), threading.Event()
    watch.watch(ours, fired.set)
    theirs.close()
    assert fired.wait(_WAIT_S)


def test_a_good_reply_does_not_call_on_error(pair):
    ours, theirs = pair
    calls = []
    watch = ReplyWatch()
    entry = watch.watch(ours, lambda: calls.append("error"))
    theirs.sendall(b"R\x00\x00\x00\x00")
    _until_unwatched(watch)  # the watcher looked at it
    assert calls == []
    watch.unwatch(entry)
    assert ours.recv(16) == b"R\x00\x00\x00\x00"


def test_a_pooled_socket_is_watched_again_after_it_fired(pair):
    ours, theirs = pair
    watch = ReplyWatch()
    first = threading.Event()
    entry = watch.watch(ours, first.set)
    theirs.sendall(b"X")
    assert first.wait(_WAIT_S)
    watch.unwatch(entry)
    assert ours.recv(1) == b"X"
    second = threading.Event()
    watch.watch(ours, second.set)  # the same fd, registered (disarmed) before
    theirs.sendall(b"X")
    assert second.wait(_WAIT_S)


def test_after_unwatch_an_error_is_the_caller_s_to_read(pair):
    ours, theirs = pair
    watch, calls = ReplyWatch(), []
    watch.unwatch(watch.watch(ours, lambda: calls.append("error")))
    theirs.sendall(b"X")
    other, other_peer = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        fired = threading.Event()
        watch.watch(other, fired.set)
        other_peer.sendall(b"X")
        assert fired.wait(_WAIT_S)  # the watcher polled after the first socket's bytes came
    finally:
        other.close()
        other_peer.close()
    assert calls == []


def test_a_silent_peer_s_failed_probe_calls_on_error_and_is_kept(pair, monkeypatch):
    ours, _ = pair
    monkeypatch.setattr(reply_watch, "PROBE_S", 0.05)
    hung = errors.UnavailableError(None, None, "worker x stopped answering")

    def probe():
        raise hung
    watch, fired = ReplyWatch(), threading.Event()
    entry = watch.watch(ours, fired.set, probe)
    assert fired.wait(_WAIT_S)
    watch.unwatch(entry)
    assert entry.failure is hung


def test_a_reply_the_caller_took_after_the_poll_is_not_read_as_a_hang_up(pair):
    # the watcher's poll returned for this call, but its caller unwatched, read its good
    # reply and closed the socket before the watcher looked: no error for a healthy step
    ours, theirs = pair
    watch, calls = ReplyWatch(), []
    entry = watch.watch(ours, lambda: calls.append("error"))
    watch.unwatch(entry)
    ours.close()
    watch._landed(entry)
    assert calls == []


def test_a_stale_wake_on_a_socket_with_a_timeout_neither_waits_nor_stops_the_watch(pair):
    # A pooled socket's earlier call fired; its caller read that reply and sent the next
    # call (a caller's read leaves a timeout on the socket) before the watcher looked.
    # The watcher then finds nothing: it must not wait under its lock for the reply
    # (every caller's watch() would block behind it), and must go on watching.
    ours, theirs = pair
    ours.settimeout(120.0)
    watch, fired = ReplyWatch(), threading.Event()
    entry = watch.watch(ours, fired.set)
    looked = threading.Thread(target=watch._landed, args=(entry,), daemon=True)
    looked.start()
    looked.join(_WAIT_S)
    assert not looked.is_alive()
    assert watch.watching() == 1 and not fired.is_set()
    theirs.sendall(b"X")
    assert fired.wait(_WAIT_S)
