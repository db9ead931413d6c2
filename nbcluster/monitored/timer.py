"""Every-N-steps-or-seconds triggers for hooks, and the stop flag hooks share.

Rule: pure bookkeeping, no graph and no session: hooks read the global step
themselves and ask the timer whether it is time.
"""
from __future__ import annotations

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
