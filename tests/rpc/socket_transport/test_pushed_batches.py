"""A RecvTensors batch written by the producing thread: never blocks it, and what
the socket did not take is written whole, in order, by the connection's thread."""
from __future__ import annotations

import os
import socket
import threading

import numpy as np
import pytest

from nbcluster.rpc.socket_transport import frames as wire
from nbcluster.rpc.socket_transport import shm_blocks as shm
from nbcluster.rpc.socket_transport.server import _Connection

pytestmark = pytest.mark.timeout(60)


def _pair(sndbuf: int = 0):
    a, b = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
    if sndbuf:
        a.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, sndbuf)
    return a, b


def _read_all(sock: socket.socket, n: int, out: bytearray) -> None:
    while len(out) < n:
        chunk = sock.recv(n - len(out))
        if not chunk:
            return
        out += chunk


def test_send_now_writes_what_fits_and_leaves_the_rest_without_blocking():
    a, b = _pair(sndbuf=64 * 1024)
    try:
        payload = np.arange(1 << 20, dtype=np.uint8)  # 1 MiB: larger than the buffer
        head = b"head"
        left, fds = wire.send_now(a, [head, memoryview(payload)])  # nobody reads yet
        sent = len(head) + payload.nbytes - sum(p.nbytes for p in left)
        assert left and 0 < sent < len(head) + payload.nbytes and fds == []
        got = bytearray()
        reader = threading.Thread(target=_read_all, args=(b, len(head) + payload.nbytes, got))
        reader.start()
        wire.send_all(a, left, fds)
        reader.join(30)
        assert bytes(got) == head + payload.tobytes()
    finally:
        a.close()
        b.close()


def test_send_now_keeps_the_descriptors_when_nothing_went():
    a, b = _pair(sndbuf=4096)
    r, w = os.pipe()
    try:
        wire.send_now(a, [b"x" * (1 << 20)])  # fills the buffer
        left, fds = wire.send_now(a, [b"next"], [r])
        assert [bytes(p) for p in left] == [b"next"] and fds == [r]
    finally:
        for fd in (r, w):
            os.close(fd)
        a.close()
        b.close()


def test_send_now_on_a_socket_with_a_timeout_leaves_it_all_without_waiting():
    # Python waits for room on such a socket whatever MSG_DONTWAIT says: a full
    # buffer would hold the producing thread for the whole timeout, then raise.
    a, b = _pair(sndbuf=4096)
    try:
        wire.send_now(a, [b"x" * (1 << 20)])  # fills the buffer
        a.settimeout(30.0)
        done = {}
        sender = threading.Thread(target=lambda: done.update(
            left=wire.send_now(a, [b"next"])[0]), daemon=True)
        sender.start()
        sender.join(10)
        assert not sender.is_alive()
        assert [bytes(p) for p in done["left"]] == [b"next"]
    finally:
        a.close()
        b.close()


def test_a_delivered_batch_reads_back_and_a_large_one_is_left_to_the_connection():
    a, b = _pair()
    wire.widen(a)
    conn = _Connection(a)  # no shared blocks: every byte goes through the socket
    reader = wire.FrameReader(b)
    try:
        small = np.arange(200_000, dtype=np.float32)  # 0.8 MB, a step's weights
        assert conn.deliver([("w", small), ("b", np.float32(3))]) is None
        got = dict(wire.read_reply(reader))
        np.testing.assert_array_equal(got["w"], small)
        assert got["b"] == np.float32(3)

        large = np.ones(wire.SEND_BUFFER // 4, dtype=np.float32)  # more than half the buffer
        rest = conn.deliver([("big", large)])
        assert callable(rest) and not reader.buffered()  # nothing was written here
        writer = threading.Thread(target=rest)
        writer.start()
        (key, value), = wire.read_reply(reader)
        writer.join(30)
        assert key == "big"
        np.testing.assert_array_equal(value, large)
    finally:
        a.close()
        b.close()


@pytest.mark.skipif(not hasattr(os, "memfd_create"), reason="needs memfd_create (Linux)")
def test_a_delivered_batch_carries_its_shared_blocks():
    a, b = _pair()
    pool = shm.BlockPool()
    conn = _Connection(a, pool)
    reader = wire.FrameReader(b)
    try:
        big = np.arange(shm.MIN_BYTES // 4, dtype=np.float32)
        assert conn.deliver([("big", big)]) is None
        (key, value), = wire.read_reply(reader)
        np.testing.assert_array_equal(value, big)
    finally:
        conn.shared.close()
        pool.close()
        a.close()
        b.close()
