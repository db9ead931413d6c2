"""RemoteValue: the eventual result of a closure the coordinator scheduled."""
from __future__ import annotations

import threading
from typing import Any, Optional

from nbcluster import errors


class RemoteValue:
    """The value a scheduled function returns, once a worker has run it.

    Example:
      >>> value = coordinator.schedule(step, args=(iterator,))  # doctest: +SKIP
      >>> value.fetch()  # blocks until a worker ran `step`  # doctest: +SKIP
    """

    def __init__(self) -> None:
        self._ready = threading.Event()
        self._value: Any = None
        self._error: Optional[BaseException] = None

    def fetch(self):
        """Blocks until the function has run; returns its outputs as numpy values.

        Returns: the structure the function returned, tensors replaced by
          numpy values (operations by None).
        Raises:
          OpError: the function failed (CancelledError when it was dropped
            because another scheduled function failed first).
        """
        self._ready.wait()
        if self._error is not None:
            raise self._error
        return self._value

    def get(self):
        """The same as `fetch()` (there are no eager tensors to hand back)."""
        return self.fetch()

    def _is_ready(self) -> bool:
        return self._ready.is_set()

    def _set_value(self, value) -> None:
        self._value = value
        self._ready.set()

    def _set_error(self, error: BaseException) -> None:
        self._error = error
        self._ready.set()

    def __repr__(self) -> str:
        state = "pending" if not self._ready.is_set() else \
            "failed" if self._error is not None else "ready"
        return f"<RemoteValue {state}>"


def cancelled_error(cause: BaseException) -> errors.CancelledError:
    """What a closure dropped after another's failure gets (TF's wording, plus why)."""
    return errors.CancelledError(
        None, None, f"The corresponding function is cancelled. Please reschedule the "
                    f"function. (An earlier function failed: {cause})")
