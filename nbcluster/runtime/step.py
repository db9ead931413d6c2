"""Per-step state a kernel sees: cancellation, deadline, resources, feeds."""
from __future__ import annotations

import threading
import time
from typing import Callable, Optional

from nbcluster import errors


class CancellationManager:
    """Cancels a step once; blocking kernels register callbacks to wake up."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._callbacks: dict[int, Callable] = {}
        self._next = 0
        self.error: Optional[errors.OpError] = None

    @property
    def cancelled(self) -> bool:
        return self.error is not None

    def cancel(self, error: errors.OpError) -> None:
        with self._lock:
            if self.error is not None:
                return
            self.error = error
            callbacks, self._callbacks = list(self._callbacks.values()), {}
        for callback in callbacks:
            callback()

    def register(self, callback: Callable) -> Optional[int]:
        """Adds `callback`; returns a token, or None if already cancelled."""
        with self._lock:
            if self.error is not None:
                return None
            self._next += 1
            self._callbacks[self._next] = callback
            return self._next

    def deregister(self, token: Optional[int]) -> None:
        with self._lock:
            self._callbacks.pop(token, None)


class StepContext:
    """Everything one step of one partition shares; handed to every kernel."""

    def __init__(self, step_id: int, resources, default_container: str,
                 rendezvous=None, feeds: Optional[dict] = None,
                 cancellation: Optional[CancellationManager] = None,
                 deadline: Optional[float] = None, collect_stats: bool = False) -> None:
        self.step_id = step_id
        self.resources = resources
        self.default_container = default_container
        self.rendezvous = rendezvous
        self.feeds = feeds if feeds is not None else {}
        self.fetches: dict = {}
        self.cancellation = cancellation or CancellationManager()
        self.deadline = deadline
        self.collect_stats = collect_stats

    def check(self) -> None:
        """Raises the step's cancellation error, or DeadlineExceeded if past due."""
        if self.cancellation.error is not None:
            raise self.cancellation.error
        if self.deadline is not None and time.monotonic() > self.deadline:
            raise errors.DeadlineExceededError(None, None, "Timed out waiting for the step")

    def wait(self, condition: threading.Condition, ready: Callable[[], bool],
             what: str) -> None:
        """Waits on `condition` (held) until `ready()`; wakes on cancel/deadline."""
        token = self.cancellation.register(lambda: _notify(condition))
        try:
            while not ready():
                self.check()
                timeout = None if self.deadline is None else self.deadline - time.monotonic()
                if timeout is not None and timeout <= 0:
                    raise errors.DeadlineExceededError(None, None,
                                                       f"Timed out waiting for {what}")
                condition.wait(timeout if timeout is None else min(timeout, 1.0))
        finally:
            self.cancellation.deregister(token)


def _notify(condition: threading.Condition) -> None:
    with condition:
        condition.notify_all()
