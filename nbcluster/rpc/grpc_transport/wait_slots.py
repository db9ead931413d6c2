"""How many RPCs that wait for a tensor one peer, and all peers, may hold at once.

gRPC serves a task from one pool of threads (`server_core.RPC_THREADS`). A
RecvTensor or RecvTensors call holds a thread until its tensor comes, so 64
of them for a step that never runs used to take every thread: GetStatus,
CleanupGraph and RunGraph then waited forever. Such waits now take a slot:
at most `per_peer` for one peer host and `total` in all (fewer than the pool,
so control RPCs always find a thread); past either, the call fails at once
with ResourceExhaustedError naming the peer and the limit.
"""
from __future__ import annotations

import collections
import contextlib
import os
import threading

from nbcluster import errors

PER_PEER_ENV = "NBCLUSTER_MAX_WAITS_PER_PEER"
DEFAULT_PER_PEER = 32
RPC_THREADS = 64  # the gRPC server's pool
# Threads no tensor wait may take, so GetStatus, CleanupGraph and RunGraph are
# always answered.
CONTROL_THREADS = 16


def per_peer_limit() -> int:
    """NBCLUSTER_MAX_WAITS_PER_PEER, else 32."""
    try:
        return max(1, int(os.environ.get(PER_PEER_ENV) or DEFAULT_PER_PEER))
    except ValueError:
        return DEFAULT_PER_PEER


def peer_host(peer: str) -> str:
    """gRPC's "ipv4:127.0.0.1:5555" / "ipv6:[::1]:5555" without the port: one
    process opens as many connections (ports) as it likes."""
    kind, sep, rest = peer.partition(":")
    if not sep or kind not in ("ipv4", "ipv6"):
        return peer
    return f"{kind}:{rest.rpartition(':')[0]}"


class WaitSlots:
    """Counts the tensor waits in flight, by peer host."""

    def __init__(self, total: int, per_peer: int) -> None:
        self.total = total
        self.per_peer = per_peer
        self._held: collections.Counter = collections.Counter()
        self._lock = threading.Lock()

    def acquire(self, peer: str, what: str) -> str:
        """Takes one slot for `peer`; returns what `release` takes back.

        Raises:
          ResourceExhaustedError: the peer, or the task, has no slot left.
        """
        host = peer_host(peer)
        with self._lock:
            mine, everyone = self._held[host], sum(self._held.values())
            if mine >= self.per_peer or everyone >= self.total:
                limit = (f"{self.per_peer} per peer ({PER_PEER_ENV})" if mine >= self.per_peer
                         else f"{self.total} on this task")
                raise errors.ResourceExhaustedError(
                    None, None, f"{what}: {host} already has {mine} call(s) waiting for "
                                f"tensors here ({everyone} in all); the limit is {limit}")
            self._held[host] += 1
        return host

    def release(self, host: str) -> None:
        with self._lock:
            self._held[host] -= 1
            if not self._held[host]:
                del self._held[host]

    @contextlib.contextmanager
    def hold(self, peer: str, what: str):
        """`acquire` for the block's duration."""
        host = self.acquire(peer, what)
        try:
            yield
        finally:
            self.release(host)

    @classmethod
    def for_server(cls) -> "WaitSlots":
        """The slots of one gRPC server of RPC_THREADS threads."""
        return cls(total=RPC_THREADS - CONTROL_THREADS, per_peer=per_peer_limit())

    def __len__(self) -> int:
        with self._lock:
            return sum(self._held.values())
