"""DaemonPool: the runtime's thread pool, whose threads never hold up process exit.

Rules: a pool thread may block for ever (a dequeue on a queue nobody fills,
a Recv whose sender never runs, an RPC to a task that is gone). Python joins
concurrent.futures' threads at interpreter exit, so one such step kept a
finished program alive after its last line, as TF's never do. These threads
are daemons and unknown to concurrent.futures: a pending step is abandoned at
exit, and nothing waits on it. Like ThreadPoolExecutor, a task reuses an idle
thread before a new one starts (up to `max_workers`); a thread idle for
`_IDLE_EXIT_S` ends, so the pool of a stopped server leaves no threads behind.
"""
from __future__ import annotations

import itertools
import os
import queue
import threading
import weakref
from concurrent.futures import Executor, Future

_IDLE_EXIT_S = 10.0
_POOLS: "weakref.WeakSet[DaemonPool]" = weakref.WeakSet()


class DaemonPool(Executor):
    """A concurrent.futures Executor on daemon threads (see the module rules)."""

    def __init__(self, max_workers: int, thread_name_prefix: str) -> None:
        self._max_workers = max_workers
        self._prefix = thread_name_prefix
        self._names = itertools.count()
        self._reset()
        _POOLS.add(self)

    def _reset(self) -> None:
        self._work: "queue.SimpleQueue" = queue.SimpleQueue()
        self._idle = threading.Semaphore(0)  # one token per thread waiting for work
        self._lock = threading.Lock()
        self._threads = 0

    def submit(self, fn, /, *args, **kwargs) -> Future:
        future: Future = Future()
        self._work.put((future, fn, args, kwargs))
        if not self._idle.acquire(blocking=False):
            with self._lock:
                if self._threads < self._max_workers:
                    self._threads += 1
                    threading.Thread(target=self._serve, daemon=True,
                                     name=f"{self._prefix}_{next(self._names)}").start()
        return future

    def _serve(self) -> None:
        while True:
            try:
                item = self._work.get(timeout=_IDLE_EXIT_S)
            except queue.Empty:
                with self._lock:
                    # This thread's idle token still here: no submit counts on
                    # it, so it may end. Taken: a task is on its way to it.
                    if self._idle.acquire(blocking=False):
                        self._threads -= 1
                        return
                continue
            future, fn, args, kwargs = item
            del item
            if future.set_running_or_notify_cancel():
                try:
                    future.set_result(fn(*args, **kwargs))
                except BaseException as e:  # the future carries it, as in CPython's pool
                    future.set_exception(e)
            del future, fn, args, kwargs  # no reference to a result while idle
            self._idle.release()


def _after_fork_in_child() -> None:
    # A forked child has none of the parent's threads: counting them, or
    # their idle tokens, would leave its tasks queued for ever.
    for pool in list(_POOLS):
        pool._reset()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork_in_child)
