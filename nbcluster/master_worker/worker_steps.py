"""The steps in flight on one worker, and the ones it ended recently."""
from __future__ import annotations

import collections
import functools
from typing import Callable, Optional

from nbcluster.master_worker.rendezvous import StepRendezvous
from nbcluster.master_worker.worker_session import WorkerSession
from nbcluster.runtime.step import CancellationManager

_ENDED_MEMORY = 4096


class Step:
    """One step on this worker. It ends by itself once its partitions have
    run and peers have fetched every tensor sent to them, so a step that went
    well needs no CleanupGraph round trip."""

    def __init__(self, step_id: int, remote_recv: Callable) -> None:
        self.rendezvous = StepRendezvous(step_id, functools.partial(remote_recv, self))
        self.session: Optional[WorkerSession] = None  # set by its first RunGraph here
        self.cancellations: list[CancellationManager] = []
        self.running = 0
        self.unfetched = 0
        self.waiters = 0  # peers' RecvTensor(s) waiting on it now

    @property
    def finished(self) -> bool:
        return self.running == 0 and self.unfetched <= 0


class StepTable:
    """Step id -> Step (`steps`), under the worker's lock (`lock`, which also
    guards its sessions and graphs); `remote_recv(step, step_id, key, ctx)`
    fetches a step's tensor from a peer."""

    def __init__(self, lock, remote_recv: Callable) -> None:
        self.lock = lock
        self._remote_recv = remote_recv
        self.steps: dict[int, Step] = {}  # in flight
        # Steps ended before their RunGraph arrived (the master cancels every
        # partition on the first error): a late RunGraph must not block forever.
        self._ended: collections.OrderedDict = collections.OrderedDict()

    def get(self, step_id: int) -> Step:
        """The step `step_id`, begun now if it is new (already aborted if it ended)."""
        with self.lock:
            return self.get_locked(step_id)

    def get_locked(self, step_id: int) -> Step:
        """`get` for a caller that holds `lock`."""
        step = self.steps.get(step_id)
        if step is None:
            step = self.steps[step_id] = Step(step_id, self._remote_recv)
            if step_id in self._ended:
                step.rendezvous.abort(self._ended[step_id])
        return step

    def begin_wait(self, step_id: int) -> Step:
        """The step `step_id` (begun now if new) for a peer's fetch to wait on."""
        with self.lock:
            step = self.get_locked(step_id)
            step.waiters += 1
            return step

    def end_wait(self, step_id: int, step: Step) -> None:
        """A peer's fetch from `step` ended. A step that no RunGraph ever began
        and that nobody waits on any more is dropped, so fetches for made-up
        step ids leave nothing behind."""
        with self.lock:
            step.waiters -= 1
            if step.waiters == 0 and step.session is None and step.running == 0 and \
                    self.steps.get(step_id) is step:
                del self.steps[step_id]

    def find(self, step_id: int) -> Optional[Step]:
        """The step `step_id` if it is in flight; begins none."""
        return self.steps.get(step_id)

    def ids(self) -> list:
        with self.lock:
            return list(self.steps)

    def fetched(self, step_id: int, step: Step, count: int) -> None:
        """Peers fetched `count` more of the step's tensors."""
        with self.lock:
            step.unfetched -= count
            self.end_if_finished(step_id, step)

    def end_if_finished(self, step_id: int, step: Step) -> None:
        """Drops the step once finished; the caller holds `lock`."""
        if step.finished and self.steps.get(step_id) is step:
            del self.steps[step_id]

    def end(self, step_id: int, error) -> Optional[Step]:
        """Drops the step, remembering that it ended with `error`; returns it
        if it was in flight."""
        with self.lock:
            step = self.steps.pop(step_id, None)
            self._ended[step_id] = error
            while len(self._ended) > _ENDED_MEMORY:
                self._ended.popitem(last=False)
        return step
