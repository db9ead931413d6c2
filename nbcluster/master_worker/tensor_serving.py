"""Serving this task's tensors to peers: RecvTensor, and RecvTensors' batched stream."""
from __future__ import annotations

import os
import time
from typing import Callable, Optional

from nbcluster import errors
from nbcluster.master_worker.rendezvous import parse_key, task_of
from nbcluster.master_worker.task_counters import TaskCounters
from nbcluster.master_worker.worker_steps import StepTable

UNBEGUN_ENV = "NBCLUSTER_UNBEGUN_STEP_WAIT_S"
_UNBEGUN_DEFAULT_S = 60.0


def unbegun_wait() -> float:
    """How long a peer may wait on a step no RunGraph has begun here (the env var, else 60 s)."""
    try:
        return max(0.0, float(os.environ.get(UNBEGUN_ENV) or _UNBEGUN_DEFAULT_S))
    except ValueError:
        return _UNBEGUN_DEFAULT_S


class TensorServer:
    """Answers peers' fetches of `worker`'s tensors (from its `steps`), counting
    them in `counters`; `names()` gives the (job, task) names its sessions give it.

    A peer's wait is bounded three ways: its own deadline; `stopped()` (its
    caller went away: the RPC layer wakes the step then); and, until a
    RunGraph begins the step here, `unbegun_wait_s` (a fetch for a step that
    never comes would otherwise wait forever). A fetch for a step nobody
    began leaves no step behind (`StepTable.end_wait`).
    """

    def __init__(self, worker, steps: StepTable, counters: TaskCounters,
                 names: Callable[[], set], unbegun_wait_s: Optional[float] = None) -> None:
        self._worker = worker
        self._steps = steps
        self._counters = counters
        self._names = names
        self._unbegun_wait_s = unbegun_wait() if unbegun_wait_s is None else unbegun_wait_s

    def recv_tensor(self, step_id: int, key: str, timeout: Optional[float] = None,
                    waiter=None, stopped=lambda: False):
        """The tensor `key` of step `step_id`, once this task's Send has produced it.

        `waiter` is the receiving step's context when the caller is in this
        process: its cancellation and deadline then end the wait.
        """
        self.check_key(key)
        deadline = None if timeout is None else time.monotonic() + timeout
        step = self._steps.begin_wait(step_id)
        try:
            if waiter is not None:
                value = step.rendezvous.recv_local(key, waiter, deadline)
            else:
                value = self._bounded(step, step_id, deadline,
                                      lambda d: step.rendezvous.recv_local(key, None, d, stopped))
            step.rendezvous.forget((key,))  # a key has one receiver, as in TF
        finally:
            self._steps.end_wait(step_id, step)
        self._steps.fetched(step_id, step, 1)
        self._counters.sent(getattr(value, "nbytes", 0))
        return value

    def recv_tensors(self, step_id: int, keys: list, timeout: Optional[float] = None,
                     stopped=lambda: False, max_bytes: Optional[int] = None):
        """Yields the tensors `keys` as this task's Sends produce them, in that
        order: each time a list of (key, value) pairs, all that were there.
        (key, None) is a value of `max_bytes` or more, which the caller then
        fetches with `recv_tensor`. Ends early once `stopped()` (checked on
        `wake_step`).
        """
        for key in keys:
            self.check_key(key)
        deadline = None if timeout is None else time.monotonic() + timeout
        step = self._steps.begin_wait(step_id)
        try:
            left = list(keys)
            while left:
                got = self._bounded(step, step_id, deadline,
                                    lambda d: step.rendezvous.recv_any(left, d, stopped))
                if got is None:
                    return
                left.remove(got[0])
                batch, sent, nbytes_sent = [], 0, 0
                for key, value in [got] + step.rendezvous.ready(left):
                    if key != got[0]:
                        left.remove(key)
                    nbytes = getattr(value, "nbytes", 0)
                    if max_bytes is not None and nbytes >= max_bytes:
                        batch.append((key, None))
                        continue
                    batch.append((key, value))
                    sent += 1
                    nbytes_sent += nbytes
                self._counters.sent(nbytes_sent)
                step.rendezvous.forget([key for key, value in batch if value is not None])
                self._steps.fetched(step_id, step, sent)
                yield batch
        finally:
            self._steps.end_wait(step_id, step)

    def push_tensors(self, step_id: int, keys: list, deliver: Callable,
                     timeout: Optional[float] = None, stopped=lambda: False,
                     wakeup: Optional[Callable] = None, idle: Optional[Callable] = None) -> None:
        """`recv_tensors` for a transport that can write a batch without
        blocking: whichever thread lands tensors of `keys` (this task's Send,
        at its flush) calls `deliver(batch)` with [(key, value)], so this
        thread wakes only at the end, or to write what `deliver` left (it
        returns None, or a callable that writes the rest; see
        `StepRendezvous.add_push`). Returns once all were delivered, or
        `stopped()` (checked on `wake_step`). With `wakeup` and `idle` this
        thread waits in `idle` and is not woken by the stream's end
        (`StepRendezvous.await_push`).
        """
        for key in keys:
            self.check_key(key)
        deadline = None if timeout is None else time.monotonic() + timeout
        step = self._steps.begin_wait(step_id)

        def counted(batch: list):
            self._counters.sent(sum(getattr(value, "nbytes", 0) for _, value in batch))
            step.rendezvous.forget([key for key, _ in batch])
            self._steps.fetched(step_id, step, len(batch))
            return deliver(batch)

        push = step.rendezvous.add_push(keys, counted, wakeup)
        try:
            try:
                while True:
                    leftover = self._bounded(
                        step, step_id, deadline,
                        lambda d: step.rendezvous.await_push(push, d, stopped, idle))
                    if leftover is None:
                        return
                    leftover()
                    step.rendezvous.resume_push(push)
            finally:
                # A batch a Send began writing as the stream failed: its rest goes
                # first, as the error frame that follows must not land inside it.
                leftover = step.rendezvous.remove_push(push)
                if leftover is not None and not stopped():
                    leftover()
        except errors.OpError:
            # That batch brought the last keys: the stream ended well, and an error
            # frame after its end would be read as the connection's next reply.
            if not push.left and push.failure is None:
                return
            raise
        finally:
            self._steps.end_wait(step_id, step)

    def _bounded(self, step, step_id: int, deadline: Optional[float], wait):
        """`wait(deadline)`, cut short while no RunGraph has begun the step."""
        started = time.monotonic()
        while True:
            limit = deadline
            if step.session is None:
                unbegun = started + self._unbegun_wait_s
                limit = unbegun if deadline is None else min(deadline, unbegun)
            try:
                return wait(limit)
            except errors.DeadlineExceededError:
                if limit == deadline:  # the caller's own deadline
                    raise
                if step.session is not None:
                    continue  # it began meanwhile: wait on, to the caller's deadline
                raise errors.DeadlineExceededError(
                    None, None, f"No RunGraph began step {step_id} on /job:"
                                f"{self._worker.job}/task:{self._worker.task} within "
                                f"{self._unbegun_wait_s:g}s ({UNBEGUN_ENV}); its tensors "
                                f"will not come") from None

    def wake_step(self, step_id: int) -> None:
        """Wakes the step's `recv_tensors` waiters (their caller went away)."""
        step = self._steps.find(step_id)
        if step is not None:
            step.rendezvous.wake()

    def check_key(self, key: str) -> None:
        job, task = self._worker.job, self._worker.task
        src, incarnation, _, _, _ = parse_key(key)
        # The incarnation first: a restarted task no longer knows the session
        # that renamed it, and a stale step must read as Aborted.
        if incarnation != self._worker.incarnation:
            raise errors.AbortedError(None, None, f"Task /job:{job}/task:{task} was "
                                                  f"restarted; the step's graph is stale")
        if task_of(src) != (job, task) and task_of(src) not in self._names():
            raise errors.InvalidArgumentError(None, None, f"Tensor {key!r} is not produced "
                                                          f"on /job:{job}/task:{task}")
