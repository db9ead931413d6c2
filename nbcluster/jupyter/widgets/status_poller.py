"""The dashboard's background thread: polls a cluster every `interval` s, off the kernel's thread.

Rules: the thread is a daemon and holds its owner only through a weak
method, so a dashboard that is garbage collected stops its poller; every
poller still running is stopped at interpreter exit (one atexit hook); a
poll that returns False (the cluster was stopped) ends the thread.
"""
from __future__ import annotations

import atexit
import threading
import weakref
from typing import Callable

_live: "weakref.WeakSet[StatusPoller]" = weakref.WeakSet()
_live_lock = threading.Lock()
_hooked = False


def _stop_all() -> None:
    """atexit: stops every poller, so none calls a task while the kernel shuts down."""
    with _live_lock:
        pollers = list(_live)
    for poller in pollers:
        poller.stop(wait=False)


def _register(poller: "StatusPoller") -> None:
    global _hooked
    with _live_lock:
        _live.add(poller)
        if not _hooked:
            atexit.register(_stop_all)
            _hooked = True


def observe(cluster, timeout: float) -> tuple:
    """What one poll of `cluster` sees.

    Args:
      cluster: a launch.Cluster.
      timeout: seconds for the tasks' GetStatus answers.
    Returns:
      (TaskStatus list, {(job, index): exit code} of the task processes it
      knows ended, whether the cluster was stopped).
    """
    stopped = cluster.stopped  # read first: a stop during the poll shows next time
    statuses = cluster.status(timeout=timeout)
    codes = {}
    for job, index in cluster.targets:
        code = cluster.exit_code(job, index)
        if code is not None:
            codes[(job, index)] = code
    return statuses, codes, stopped


class StatusPoller:
    """Calls `poll()` every `interval` seconds on a daemon thread until it returns
    False, `stop()` is called, the owner of `poll` is collected, or the process exits.

    Args:
      poll: a bound method; only a weak reference to its object is kept.
      interval: seconds between the end of one poll and the start of the next.
      name: the thread's name.
    """

    def __init__(self, poll: Callable[[], bool], interval: float, name: str) -> None:
        self._poll = weakref.WeakMethod(poll)
        self.interval = interval
        self.polls = 0  # polls completed, for tests and for "is it still polling"
        self.errors = 0  # polls that raised (the thread goes on)
        self.last_exception = None
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name=name, daemon=True)

    def start(self) -> "StatusPoller":
        _register(self)
        self._thread.start()
        return self

    @property
    def alive(self) -> bool:
        return self._thread.is_alive()

    def stop(self, wait: bool = True, timeout: float = 5.0) -> None:
        """Asks the thread to end; with `wait`, joins it (not from the thread itself)."""
        self._stop.set()
        if wait and self._thread.is_alive() and \
                threading.current_thread() is not self._thread:
            self._thread.join(timeout)

    def _run(self) -> None:
        while not self._stop.wait(self.interval):
            poll = self._poll()
            if poll is None:  # the dashboard was garbage collected
                return
            try:
                keep_going = poll()
            except Exception as e:  # noqa: BLE001 - a poll's failure must not kill the dashboard
                self.errors += 1
                self.last_exception = e
                keep_going = True
            del poll  # hold no strong reference while sleeping
            self.polls += 1
            if keep_going is False:
                return
