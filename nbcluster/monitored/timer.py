"""Every-N-steps-or-seconds triggers for hooks, and the stop flag hooks share.

Rule: pure bookkeeping, no graph and no session: hooks read the global step
themselves and ask the timer whether it is time.
"""
from __future__ import annotations

import threading
import time
from typing import Optional


class SecondOrStepTimer:
    """Fires every `every_secs` seconds or every `every_steps` steps (one of the two).

    Args:
      every_secs: seconds between triggers.
      every_steps: steps between triggers.
    Raises:
      ValueError: both or neither given, or a non-positive value.
    Example:
      >>> timer = SecondOrStepTimer(every_steps=10)
      >>> timer.should_trigger_for_step(0), timer.update_last_triggered_step(0)
      (True, (None, None))
      >>> timer.should_trigger_for_step(5), timer.should_trigger_for_step(10)
      (False, True)
    """

    def __init__(self, every_secs: Optional[float] = None,
                 every_steps: Optional[int] = None) -> None:
        if (every_secs is None) == (every_steps is None):
            raise ValueError(f"exactly one of every_secs and every_steps must be given, got "
                             f"every_secs={every_secs!r}, every_steps={every_steps!r}")
        for name, value in (("every_secs", every_secs), ("every_steps", every_steps)):
            if value is not None and not value > 0:
                raise ValueError(f"{name} must be positive, got {value!r}")
        self._every_secs, self._every_steps = every_secs, every_steps
        self.reset()

    def reset(self) -> None:
        self._last_time: Optional[float] = None
        self._last_step: Optional[int] = None

    def should_trigger_for_step(self, step: int) -> bool:
        """Whether `step` is due: the first step always is, the same step never twice."""
        if self._last_step is None:
            return True
        if step == self._last_step:
            return False
        if self._every_secs is not None:
            return time.monotonic() >= self._last_time + self._every_secs
        return step >= self._last_step + self._every_steps

    def update_last_triggered_step(self, step: int):
        """Records a trigger at `step`; returns (seconds, steps) since the previous
        one, (None, None) for the first."""
        now = time.monotonic()
        elapsed = (None, None) if self._last_step is None else \
            (now - self._last_time, step - self._last_step)
        self._last_time, self._last_step = now, step
        return elapsed

    def last_triggered_step(self) -> Optional[int]:
        return self._last_step


class Coordinator:
    """The stop flag a MonitoredSession shares with its hooks (tf.train.Coordinator's
    stop half; nbcluster has no queue-runner threads to join).

    Example:
      >>> coord = Coordinator()
      >>> coord.request_stop(); coord.should_stop()
      True
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._exception: Optional[BaseException] = None

    def request_stop(self, ex: Optional[BaseException] = None) -> None:
        """Asks every user of this coordinator to stop; `ex`, if given, is raised
        by raise_requested_exception() (the first one wins)."""
        with self._lock:
            if ex is not None and self._exception is None:
                self._exception = ex
            self._stop.set()

    def should_stop(self) -> bool:
        return self._stop.is_set()

    def wait_for_stop(self, timeout: Optional[float] = None) -> bool:
        return self._stop.wait(timeout)

    def raise_requested_exception(self) -> None:
        with self._lock:
            if self._exception is not None:
                raise self._exception

    def clear_stop(self) -> None:
        with self._lock:
            self._stop.clear()
            self._exception = None
