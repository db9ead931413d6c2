"""Receiving a step's tensors from peers: one stream per producing task, else a RecvTensor each."""
from __future__ import annotations

import functools
import time

from nbcluster import errors
from nbcluster.master_worker.rendezvous import make_key, task_of
from nbcluster.master_worker.task_counters import TaskCounters
from nbcluster.master_worker.worker_session import WorkerSession
from nbcluster.master_worker.worker_steps import Step


class TensorReceiver:
    """Brings peers' tensors into a worker's steps, counting them in `counters`
    (its TaskCounters). A step with no session yet uses `default`'s peers."""

    def __init__(self, counters: TaskCounters, default: WorkerSession) -> None:
        self._counters = counters
        self._default = default

    def prefetch(self, step: Step, plan: dict, step_id: int, deadline, cancel) -> None:
        """One stream per producing task brings this partition's tensors from
        it into the step's rendezvous as they are sent (a RecvTensor each cost
        the producer ~0.5 ms of CPU); a stream that fails aborts the step.
        The Recvs that wait for them read the streams (`StepRendezvous.add_stream`).

        Args:
          plan: producing task -> keys (`prefetch_plan`).
        """
        peer = (step.session or self._default).peer
        for (job, task), keys in plan.items():
            client = peer(job, task) if peer is not None else None
            if client is None:
                continue
            keys = step.rendezvous.claim_streamed(keys)
            if not keys:
                continue
            timeout = None if deadline is None else max(0.0, deadline - time.monotonic())
            try:
                values = client.stream_tensors(step_id, keys, timeout, cancel)  # sent now
            except errors.OpError as e:
                step.rendezvous.abort(e)
                return
            if values is None:  # an in-process peer: Recvs fetch one by one
                step.rendezvous.unclaim_streamed(keys)
                continue
            step.rendezvous.add_stream(keys, values, functools.partial(
                self._resolve, client, step_id, deadline))

    def _resolve(self, client, step_id: int, deadline, batch: list) -> list:
        """A streamed batch as it lands: (key, None) is fetched with RecvTensor."""
        def left():
            return None if deadline is None else max(0.0, deadline - time.monotonic())
        batch = [(key, client.recv_tensor(step_id, key, left()) if value is None else value)
                 for key, value in batch]  # None: too large to stream
        self._counters.received(sum(getattr(v, "nbytes", 0) for _, v in batch))
        return batch

    def remote_recv(self, step: Step, step_id: int, key: str, ctx):
        """The tensor `key` from the task that produced it (a Recv's remote fetch)."""
        if key in step.rendezvous.streamed:  # a stream brings it (`prefetch`)
            return step.rendezvous.recv_local(key, ctx)
        # Only a RunGraph of the step runs a Recv, so the step knows its session.
        peer = (step.session or self._default).peer
        job, task = task_of(key.split(";", 1)[0])
        client = peer(job, task) if peer is not None else None
        if client is None:
            raise errors.UnimplementedError(None, None, f"This worker cannot reach "
                                                        f"/job:{job}/task:{task} for {key!r}")
        timeout = None if ctx.deadline is None else max(0.0, ctx.deadline - time.monotonic())
        value = client.recv_tensor(step_id, key, timeout, ctx)
        self._counters.received(getattr(value, "nbytes", 0))
        return value


def prefetch_plan(nodes: list) -> dict:
    """Producing task -> keys of the remote tensors `nodes` receive from it,
    for producers that send two or more (one goes faster as a RecvTensor)."""
    by_task: dict = {}
    for n in nodes:
        # A control-flow Recv's key names its frame and iteration, known only as it runs.
        if n.op == "_Recv" and not n.attrs.get("client_terminated") and not n.attrs.get("_cf"):
            src = task_of(n.attrs["send_device"])
            if src != task_of(n.attrs["recv_device"]):
                by_task.setdefault(src, []).append(make_key(
                    n.attrs["send_device"], int(n.attrs["send_device_incarnation"]),
                    n.attrs["recv_device"], n.attrs["tensor_name"]))
    return {task: keys for task, keys in by_task.items() if len(keys) >= 2}
