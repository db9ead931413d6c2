"""The counters a task's GetStatus reports: steps run, tensor bytes sent to peers and
received from them.

Rule: every thread that runs a step, serves a tensor or receives one (RunGraph
handlers of every transport, RecvTensor(s) streams, a partition's prefetch
readers) bumps them through one TaskCounters, under its lock, so the totals are
exact however many threads count at once; `+=` on a shared attribute may lose
an update between its read and its write.
"""
from __future__ import annotations

import threading


class TaskCounters:
    """One task's running totals; read them as attributes, bump them by method."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.steps_run = 0
        self.bytes_sent = 0
        self.bytes_received = 0

    def step_ran(self) -> None:
        """A RunGraph's partitions ran to the end."""
        with self._lock:
            self.steps_run += 1

    def sent(self, nbytes: int) -> None:
        """Tensors of `nbytes` went to a peer."""
        if nbytes:
            with self._lock:
                self.bytes_sent += nbytes

    def received(self, nbytes: int) -> None:
        """Tensors of `nbytes` came from a peer (fetched, streamed or fed)."""
        if nbytes:
            with self._lock:
                self.bytes_received += nbytes

    def snapshot(self) -> tuple:
        """(steps_run, bytes_sent, bytes_received), read together."""
        with self._lock:
            return self.steps_run, self.bytes_sent, self.bytes_received
