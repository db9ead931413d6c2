"""Scheduled closures and the queue the coordinator's worker threads take them from.

Rule: every change of a closure's state goes through one `ClosureQueue`
method under its condition's lock: queued -> in flight -> finished, failed,
or (a worker failed under it, or its data ran out there) queued again.
"""
from __future__ import annotations

import collections
import threading
from typing import Callable, Optional

from nbcluster.distribute.remote_value import RemoteValue, cancelled_error


class Closure:
    """One scheduled call: `fn(*args, **kwargs)` and where its result goes."""

    def __init__(self, fn: Callable, args: tuple, kwargs: dict) -> None:
        self.fn = fn
        self.args = args
        self.kwargs = kwargs
        self.remote_value = RemoteValue()
        self.attempts = 0          # runs started, retries included
        self.transient_retries = 0  # retries after an error no task probe explained
        # Workers whose per-worker iterator it takes from had run out: it runs
        # on one with data left, and fails only once every worker's ran out.
        self.ran_dry: set = set()


class ClosureQueue:
    """FIFO of closures; counts the ones in flight; keeps the first error.

    As TF's: once a closure fails, the queued ones are cancelled and the
    error is raised once, by the next `put`, `wait` or `done`, then cleared.
    Args:
      workers: how many workers take closures (`ran_dry` fails a closure once
        it ran dry on all of them).
    """

    def __init__(self, workers: int = 1) -> None:
        self._workers = workers
        self._cv = threading.Condition()
        self._queue: collections.deque = collections.deque()
        self._in_flight = 0
        self._error: Optional[BaseException] = None
        self._closed = False
        self.retried = 0  # closures run again (their worker failed, or a transient error)
        self.scheduled = 0  # closures ever put: counted under the lock, so exact across threads

    def put(self, closure: Closure) -> None:
        with self._cv:
            self._raise_error()
            self._queue.append(closure)
            self.scheduled += 1
            self._cv.notify_all()

    def get(self, worker: Optional[int] = None) -> Optional[Closure]:
        """The next closure `worker` can run (its data has not run out there),
        once there is one; None once the queue is closed."""
        with self._cv:
            while True:
                if self._closed:
                    return None
                closure = next((c for c in self._queue if worker not in c.ran_dry), None)
                if closure is not None:
                    break
                self._cv.wait()
            self._queue.remove(closure)
            self._in_flight += 1
            closure.attempts += 1
            return closure

    def put_back(self, closure: Closure) -> None:
        """Queues an in-flight closure again, first in line (its worker failed)."""
        with self._cv:
            self._in_flight -= 1
            self.retried += 1
            if self._error is not None or self._closed:
                closure.remote_value._set_error(cancelled_error(self._error or "closed"))
            else:
                self._queue.appendleft(closure)
            self._cv.notify_all()

    def ran_dry(self, closure: Closure, worker: int, error: BaseException) -> None:
        """`closure` found its per-worker iterator on `worker` exhausted before
        it ran: it goes back, first in line, for a worker with data left (a
        slow worker's batches are not lost to a fast one's end of data), and
        fails with `error` (OutOfRangeError) once every worker's ran out."""
        with self._cv:
            closure.ran_dry.add(worker)
            closure.attempts -= 1  # it did not run
            if len(closure.ran_dry) >= self._workers:
                self._fail_locked(closure, error)
                return
            self._in_flight -= 1
            if self._error is not None or self._closed:
                closure.remote_value._set_error(cancelled_error(self._error or "closed"))
            else:
                self._queue.appendleft(closure)
            self._cv.notify_all()

    def mark_finished(self, closure: Closure, value) -> None:
        with self._cv:
            self._in_flight -= 1
            closure.remote_value._set_value(value)
            self._cv.notify_all()

    def mark_failed(self, closure: Closure, error: BaseException) -> None:
        with self._cv:
            self._fail_locked(closure, error)

    def _fail_locked(self, closure: Closure, error: BaseException) -> None:
        self._in_flight -= 1
        closure.remote_value._set_error(error)
        if self._error is None:
            self._error = error
        while self._queue:
            self._queue.popleft().remote_value._set_error(cancelled_error(error))
        self._cv.notify_all()

    def wait(self, timeout: Optional[float] = None) -> bool:
        """Blocks until every closure ran or one failed; raises that failure.

        Returns: False if `timeout` passed first, else True.
        """
        with self._cv:
            done = self._cv.wait_for(lambda: self._error is not None or self._closed or
                                     (not self._queue and not self._in_flight), timeout)
            self._raise_error()
            return done

    def done(self) -> bool:
        with self._cv:
            self._raise_error()
            return not self._queue and not self._in_flight

    def outstanding(self) -> int:
        """Closures queued or running (a progress count: read without the lock, so it
        may be one update stale)."""
        return len(self._queue) + self._in_flight

    def notify(self) -> None:
        """Wakes waiting threads (a worker came back, or the coordinator closes)."""
        with self._cv:
            self._cv.notify_all()

    def close(self) -> None:
        """Stops the queue: queued closures are cancelled, `get` returns None."""
        with self._cv:
            self._closed = True
            while self._queue:
                self._queue.popleft().remote_value._set_error(
                    cancelled_error(RuntimeError("the coordinator was closed")))
            self._cv.notify_all()

    def _raise_error(self) -> None:
        if self._error is not None:
            error, self._error = self._error, None
            raise error
