"""Serving this task's tensors to peers: RecvTensor, and RecvTensors' batched stream."""
from __future__ import annotations

import time
from typing import Callable, Optional

from nbcluster import errors
from nbcluster.distributed.rendezvous import parse_key, task_of
from nbcluster.distributed.worker_steps import StepTable


class TensorServer:
    """Answers peers' fetches of `worker`'s tensors, counting them in its
    `bytes_sent`; `names()` gives the (job, task) names its sessions give it."""

    def __init__(self, worker, steps: StepTable, names: Callable[[], set]) -> None:
        self._worker = worker
        self._steps = steps
        self._names = names

    def recv_tensor(self, step_id: int, key: str, timeout: Optional[float] = None,
                    waiter=None):
        """The tensor `key` of step `step_id`, once this task's Send has produced it.

        `waiter` is the receiving step's context when the caller is in this
        process: its cancellation and deadline then end the wait.
        """
        self.check_key(key)
        deadline = None if timeout is None else time.monotonic() + timeout
        step = self._steps.get(step_id)
        value = step.rendezvous.recv_local(key, waiter, deadline)
        step.rendezvous.forget((key,))  # a key has one receiver, as in TF
        self._steps.fetched(step_id, step, 1)
        self._worker.bytes_sent += getattr(value, "nbytes", 0)
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
        step = self._steps.get(step_id)
        left = list(keys)
        while left:
            got = step.rendezvous.recv_any(left, deadline, stopped)
            if got is None:
                return
            left.remove(got[0])
            batch, sent = [], 0
            for key, value in [got] + step.rendezvous.ready(left):
                if key != got[0]:
                    left.remove(key)
                nbytes = getattr(value, "nbytes", 0)
                if max_bytes is not None and nbytes >= max_bytes:
                    batch.append((key, None))
                    continue
                batch.append((key, value))
                sent += 1
                self._worker.bytes_sent += nbytes
            step.rendezvous.forget([key for key, value in batch if value is not None])
            self._steps.fetched(step_id, step, sent)
            yield batch

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
