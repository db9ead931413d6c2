"""The steps in flight on one worker, and the ones it ended recently: their one owner.

Rule: a Step's bookkeeping (its session, cancellations, running partitions,
tensors peers have yet to fetch, peers waiting on it) changes only through a
StepTable method, under the table's own lock; the Worker's RunGraph, the
tensor server and the tensor receiver ask the table, never the lock. The
tensors themselves live in the step's rendezvous, behind its own condition.
"""
from __future__ import annotations

import collections
import functools
import threading
import weakref
from typing import Callable, Optional

from nbcluster import errors
from nbcluster.master_worker.rendezvous import StepRendezvous
from nbcluster.master_worker.worker_session import WorkerSession
from nbcluster.runtime.step import CancellationManager

_ENDED_MEMORY = 4096


class Step:
    """One step on this worker. It ends by itself once its partitions have
    run and peers have fetched every tensor sent to them, so a step that went
    well needs no CleanupGraph round trip. Its counts are the StepTable's to
    change; anyone may read them."""

    def __init__(self, step_id: int, remote_recv: Callable) -> None:
        # The rendezvous reaches its step weakly: a cycle kept a finished step's
        # received tensors until the cyclic GC ran, and with them any shared-memory
        # block read in place, which its producer then could not reuse.
        self.rendezvous = StepRendezvous(
            step_id, functools.partial(_remote_recv, weakref.ref(self), remote_recv))
        self.session: Optional[WorkerSession] = None  # set by its first RunGraph here
        self.cancellations: list[CancellationManager] = []
        self.running = 0
        self.unfetched = 0
        self.waiters = 0  # peers' RecvTensor(s) waiting on it now

    @property
    def finished(self) -> bool:
        return self.running == 0 and self.unfetched <= 0


def _remote_recv(step_ref: "weakref.ref", remote_recv: Callable, step_id: int, key: str, ctx):
    step = step_ref()
    if step is None:  # no RunGraph holds it: whatever still asks was abandoned
        raise errors.CancelledError(None, None, f"Step {step_id} ended before {key!r} came")
    return remote_recv(step, step_id, key, ctx)


class StepTable:
    """Step id -> Step (`steps`, read-only outside); `remote_recv(step, step_id, key,
    ctx)` fetches a step's tensor from a peer."""

    def __init__(self, remote_recv: Callable) -> None:
        self._lock = threading.Lock()
        self._remote_recv = remote_recv
        self.steps: dict[int, Step] = {}  # in flight
        # Steps ended before their RunGraph arrived (the master cancels every
        # partition on the first error): a late RunGraph must not block forever.
        self._ended: collections.OrderedDict = collections.OrderedDict()

    def get(self, step_id: int) -> Step:
        """The step `step_id`, begun now if it is new (already aborted if it ended)."""
        with self._lock:
            return self._get_locked(step_id)

    def _get_locked(self, step_id: int) -> Step:
        step = self.steps.get(step_id)
        if step is None:
            step = self.steps[step_id] = Step(step_id, self._remote_recv)
            if step_id in self._ended:
                step.rendezvous.abort(self._ended[step_id])
        return step

    # -- a RunGraph's partitions ---------------------------------------------
    def claim(self, step_id: int, session: WorkerSession, cancel: CancellationManager,
              remote_sends: int) -> Step:
        """A RunGraph's partitions begin to run in step `step_id` (begun now if new).

        Found and claimed at once: a peer's ended wait drops a step nobody
        claimed (`end_wait`). `cancel` is cancelled at once if the step failed.
        Args:
          session: the step's session, if it has none yet.
          remote_sends: tensors of this graph peers will fetch.
        """
        with self._lock:
            step = self._get_locked(step_id)
            step.session = step.session or session
            step.cancellations.append(cancel)
            step.running += 1
            step.unfetched += remote_sends
            if step.rendezvous.error is not None:
                cancel.cancel(step.rendezvous.error)
        return step

    def release(self, step_id: int, step: Step, loop_sends: int = 0) -> None:
        """A RunGraph's partitions ran (or failed); the step ends if finished.

        Args:
          loop_sends: tensors for peers its control-flow Sends produced (a
            loop's Send runs any number of times, so they are counted as run).
        """
        with self._lock:
            step.unfetched += loop_sends
            step.running -= 1
            self._end_if_finished(step_id, step)

    # -- peers' fetches --------------------------------------------------------
    def begin_wait(self, step_id: int) -> Step:
        """The step `step_id` (begun now if new) for a peer's fetch to wait on."""
        with self._lock:
            step = self._get_locked(step_id)
            step.waiters += 1
            return step

    def end_wait(self, step_id: int, step: Step) -> None:
        """A peer's fetch from `step` ended. A step that no RunGraph ever began
        and that nobody waits on any more is dropped, so fetches for made-up
        step ids leave nothing behind."""
        with self._lock:
            step.waiters -= 1
            if step.waiters == 0 and step.session is None and step.running == 0 and \
                    self.steps.get(step_id) is step:
                del self.steps[step_id]

    def fetched(self, step_id: int, step: Step, count: int) -> None:
        """Peers fetched `count` more of the step's tensors."""
        with self._lock:
            step.unfetched -= count
            self._end_if_finished(step_id, step)

    def find(self, step_id: int) -> Optional[Step]:
        """The step `step_id` if it is in flight; begins none."""
        return self.steps.get(step_id)

    def ids(self) -> list:
        with self._lock:
            return list(self.steps)

    # -- the end ---------------------------------------------------------------
    def _end_if_finished(self, step_id: int, step: Step) -> None:
        if step.finished and self.steps.get(step_id) is step:
            del self.steps[step_id]

    def end(self, step_id: int, error) -> Optional[Step]:
        """Ends the step with `error` (CleanupGraph): drops it, remembering that it
        ended, and wakes anything still waiting in it; returns it if it was in flight."""
        with self._lock:
            step = self.steps.pop(step_id, None)
            self._ended[step_id] = error
            while len(self._ended) > _ENDED_MEMORY:
                self._ended.popitem(last=False)
            cancellations = list(step.cancellations) if step is not None else []
        if step is not None:
            step.rendezvous.abort(error)
            for cancel in cancellations:
                cancel.cancel(error)
        return step
