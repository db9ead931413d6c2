"""Where a Send leaves a tensor and a Recv picks it up, per step.

Key layout (TF's): "src_device;src_incarnation_hex;dst_device;tensor_name;frame:iter".
A Recv whose producer lives on another task asks that task's worker
(`WorkerClient.recv_tensor`); tensors flow worker to worker.
"""
from __future__ import annotations

import functools
import threading
import time
from typing import Callable, Optional

from nbcluster import errors
from nbcluster.framework.device_spec import DeviceSpec


def make_key(src_device: str, incarnation: int, dst_device: str, tensor_name: str,
             frame_iter: str = "0:0") -> str:
    return f"{src_device};{incarnation:016x};{dst_device};{tensor_name};{frame_iter}"


def parse_key(key: str) -> tuple:
    parts = key.split(";")
    if len(parts) != 5:
        raise errors.InvalidArgumentError(None, None, f"Invalid rendezvous key: {key!r}")
    src, incarnation, dst, name, frame = parts
    try:
        return src, int(incarnation, 16), dst, name, frame
    except ValueError:
        raise errors.InvalidArgumentError(None, None,
                                          f"Invalid rendezvous key: {key!r}") from None


@functools.lru_cache(maxsize=4096)  # a cluster has few device names; steps ask often
def task_of(device: str) -> tuple:
    spec = DeviceSpec.from_string(device)
    return spec.job, spec.task


class StepRendezvous:
    """One step's tensors on one worker; a recv waits until the send lands."""

    def __init__(self, step_id: int, remote_recv: Optional[Callable] = None) -> None:
        self.step_id = step_id
        self._remote_recv = remote_recv
        self._cond = threading.Condition()
        self._values: dict[str, object] = {}
        self.error: Optional[errors.OpError] = None

    def send(self, key: str, value) -> None:
        with self._cond:
            self._values[key] = value
            self._cond.notify_all()

    def send_many(self, pairs) -> None:
        """`send` for each (key, value), waking the waiters once."""
        with self._cond:
            self._values.update(pairs)
            self._cond.notify_all()

    def recv(self, key: str, ctx):
        """The value for `key`, from here or from the producing task's worker.

        The key alone says which: its source and destination tasks differ.
        (Both carry the step's session's names, which under ClusterSpec
        propagation need not be the worker's own.)
        """
        src, _, dst, _ = key.split(";", 3)
        if self._remote_recv is not None and task_of(src) != task_of(dst):
            return self._remote_recv(self.step_id, key, ctx)
        return self.recv_local(key, ctx)

    def recv_local(self, key: str, ctx=None, deadline: Optional[float] = None):
        with self._cond:
            if ctx is not None:
                ctx.wait(self._cond, lambda: key in self._values or self.error is not None,
                         f"tensor {key.split(';')[3]}")
            else:
                while key not in self._values and self.error is None:
                    timeout = None if deadline is None else deadline - time.monotonic()
                    if timeout is not None and timeout <= 0:
                        raise errors.DeadlineExceededError(
                            None, None, f"Timed out waiting for tensor {key}")
                    self._cond.wait(timeout)
            if key in self._values:
                return self._values[key]
            raise self.error

    def recv_any(self, keys, deadline: Optional[float] = None,
                 stopped: Callable[[], bool] = lambda: False) -> tuple:
        """(key, value) for whichever of `keys` has landed first, None once
        `stopped()` (checked on every `wake`).

        Raises:
          the step's error once it is aborted; DeadlineExceededError.
        """
        with self._cond:
            while True:
                for key in keys:
                    if key in self._values:
                        return key, self._values[key]
                if self.error is not None:
                    raise self.error
                if stopped():
                    return None
                timeout = None if deadline is None else deadline - time.monotonic()
                if timeout is not None and timeout <= 0:
                    raise errors.DeadlineExceededError(
                        None, None, f"Timed out waiting for tensors {list(keys)}")
                self._cond.wait(timeout)

    def ready(self, keys) -> list:
        """[(key, value)] for those of `keys` that have landed, waiting for none."""
        with self._cond:
            return [(key, self._values[key]) for key in keys if key in self._values]

    def wake(self) -> None:
        """Wakes every waiter, to look at its `stopped` again."""
        with self._cond:
            self._cond.notify_all()

    def abort(self, error: errors.OpError) -> None:
        with self._cond:
            if self.error is None:
                self.error = error
            self._cond.notify_all()
