"""`tf.train.Coordinator`: one stop flag for a group of threads, and the first error that set it.

Rule: any thread may request a stop, with or without an exception; the first
exception wins and `join` raises it once the threads it waits for ended (or
the grace period ran out), so a failing input thread fails the training loop
that joins it instead of dying quietly.
"""
from __future__ import annotations

import contextlib
import threading
import time
from typing import Optional

from nbcluster import errors

# Errors that mean "the input ran out": a stop, not a failure (TF's default).
CLEAN_STOP_EXCEPTIONS = (errors.OutOfRangeError,)


class Coordinator:
    """Coordinates the stop of a group of threads (TF's tf.train.Coordinator).

    Args:
      clean_stop_exception_types: exception types that request a stop without
        being an error (default: OutOfRangeError).
    Example:
      >>> coord = Coordinator()
      >>> threads = tf.train.start_queue_runners(sess, coord=coord)
      >>> while not coord.should_stop(): sess.run(train_op)
      >>> coord.request_stop(); coord.join(threads)
    """

    def __init__(self, clean_stop_exception_types=None) -> None:
        self._clean = tuple(CLEAN_STOP_EXCEPTIONS if clean_stop_exception_types is None
                            else clean_stop_exception_types)
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._exception: Optional[BaseException] = None
        self._registered: list = []
        self._joined = False

    def request_stop(self, ex: Optional[BaseException] = None) -> None:
        """Asks every thread to stop; `ex` (the first one given, unless of a clean
        type) is raised by `join` and `raise_requested_exception`."""
        with self._lock:
            if ex is not None and self._exception is None and not isinstance(ex, self._clean):
                self._exception = ex
            self._stop.set()

    def should_stop(self) -> bool:
        return self._stop.is_set()

    def wait_for_stop(self, timeout: Optional[float] = None) -> bool:
        """Waits until a stop is requested; False if `timeout` s passed first."""
        return self._stop.wait(timeout)

    def clear_stop(self) -> None:
        """Forgets a stop and its exception (a new round of threads may start)."""
        with self._lock:
            self._stop.clear()
            self._exception = None
            self._joined = False

    @contextlib.contextmanager
    def stop_on_exception(self):
        """A block whose exception requests the stop (and is kept) instead of propagating."""
        try:
            yield
        except Exception as e:  # noqa: BLE001 - handed to request_stop, as TF's
            self.request_stop(e)

    def register_thread(self, thread: threading.Thread) -> None:
        """Adds `thread` to those `join()` waits for by default."""
        with self._lock:
            self._registered.append(thread)

    def raise_requested_exception(self) -> None:
        with self._lock:
            if self._exception is not None:
                raise self._exception

    @property
    def joined(self) -> bool:
        return self._joined

    def join(self, threads=None, stop_grace_period_secs: float = 120,
             ignore_live_threads: bool = False) -> None:
        """Waits for a stop request, then for `threads` (and the registered ones)
        to end within `stop_grace_period_secs`.

        Raises:
          the exception passed to request_stop, if any;
          RuntimeError: threads still alive after the grace period (named),
            unless ignore_live_threads.
        """
        self._stop.wait()
        with self._lock:
            threads = list(threads or []) + [t for t in self._registered
                                             if t not in (threads or [])]
        deadline = time.monotonic() + stop_grace_period_secs
        for thread in threads:
            if thread.ident is not None:  # started
                thread.join(max(0.0, deadline - time.monotonic()))
        self._joined = True
        self.raise_requested_exception()
        alive = [t.name for t in threads if t.is_alive()]
        if alive and not ignore_live_threads:
            raise RuntimeError(f"Coordinator stopped with threads still running: "
                               f"{' '.join(alive)}")
