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
from nbcluster.master_worker.pushed_streams import PushedStreams
from nbcluster.runtime.thread_pool import DaemonPool


def make_key(src_device: str, incarnation: int, dst_device: str, tensor_name: str,
             frame_iter: str = "0:0") -> str:
    # The incarnation is a uint64 (DeviceAttributes' fixed64); a NodeDef attr
    # holds its bits as an int64, as TF's does, so a negative one is the same.
    return f"{src_device};{incarnation & _UINT64:016x};{dst_device};{tensor_name};{frame_iter}"


_UINT64 = (1 << 64) - 1


def key_of(attrs: dict, frame_iter: str = "0:0", suffix: str = "") -> str:
    """The key a _Send or _Recv with these attrs meets its other end under (TF's
    kernels build theirs from the same four attrs)."""
    return make_key(attrs["send_device"], int(attrs["send_device_incarnation"]),
                    attrs["recv_device"], attrs["tensor_name"] + suffix, frame_iter)


def attr_incarnation(incarnation: int) -> int:
    """A device's uint64 incarnation as the int64 a NodeDef attr holds (TF's cast)."""
    return incarnation - (1 << 64) if incarnation >= 1 << 63 else incarnation


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


_READERS = DaemonPool(max_workers=32, thread_name_prefix="nbcluster-stream")


@functools.lru_cache(maxsize=4096)  # a cluster has few device names; steps ask often
def task_of(device: str) -> tuple:
    spec = DeviceSpec.from_string(device)
    return spec.job, spec.task


class StepRendezvous(PushedStreams):
    """One step's tensors on one worker; a recv waits until the send lands
    (peers' streams its senders write: `PushedStreams`)."""

    def __init__(self, step_id: int, remote_recv: Optional[Callable] = None) -> None:
        self.step_id = step_id
        self._remote_recv = remote_recv
        self._lock = threading.RLock()
        self._cond = threading.Condition(self._lock)
        self._values: dict[str, object] = {}
        self._pushes: list = []  # peers' streams whose tensors the landing thread writes
        self.error: Optional[errors.OpError] = None
        self._held = 0
        self._unannounced = False  # a held send has woken no waiter yet
        self.streamed: set = set()
        self._streams: list = []  # remote keys a stream brings here (the worker's prefetch)

    def lands_here(self, key: str) -> bool:
        """Whether `key`'s tensor arrives here with no recv asking for it: a
        same-task send, or a remote one a stream brings."""
        if key in self.streamed or self._remote_recv is None:
            return True
        src, _, dst, _ = key.split(";", 3)
        return task_of(src) == task_of(dst)

    def landed(self, keys) -> set:
        """Those of `keys` whose tensors are here, waiting for none."""
        values = self._values
        return {key for key in keys if key in values}

    def wait_any(self, keys: Callable[[], list], ctx,
                 could_want: Optional[Callable[[], list]] = None) -> None:
        """Waits until one of `keys()` (asked again on every wake) has landed,
        or the step failed.

        `could_want()` is every key the caller may wait for before it has what
        it needs (default `keys()`): a caller blocked reading a stream sees no
        other tensor land, so it reads one itself only if all of those that
        have not landed come by that stream.
        Raises:
          the step's error, its cancellation, DeadlineExceededError.
        """
        values = self._values

        def landed() -> bool:
            return self.error is not None or any(key in values for key in keys())

        with self._cond:
            ctx.wait(self._cond, lambda: self._pulled_until(landed, could_want or keys),
                     "tensors from other devices")
            if self.error is not None and not any(key in values for key in keys()):
                raise self.error

    def claim_streamed(self, keys: list) -> list:
        """Those of `keys` no stream of this step brings yet, marked from now on as
        streamed (a partition's prefetch is about to open one for them)."""
        with self._cond:
            new = [k for k in keys if k not in self.streamed]
            self.streamed.update(new)
            return new

    def unclaim_streamed(self, keys: list) -> None:
        """`claim_streamed`'s keys after all come one by one (no stream was opened)."""
        with self._cond:
            self.streamed.difference_update(keys)

    def add_stream(self, keys: list, batches, resolve: Callable) -> None:
        """Tensors `keys` will come from `batches` (an iterator of lists of
        (key, value)); `resolve(batch)` turns a batch into what lands.

        No thread reads it: a recv waiting for one of its keys pulls the next
        batch itself, so a batch wakes one thread, not a reader and then the recv.
        """
        with self._cond:
            self.streamed.update(keys)
            self._streams.append(_Stream(set(keys), batches, resolve))

    def _pulled_until(self, landed: Callable[[], bool], keys: Callable[[], list]) -> bool:
        """`landed()`, after pulling batches while the wanted keys that have not
        landed all come by one stream that nobody else reads (cond held;
        released while pulling). A thread blocked on one stream cannot see
        other tensors land (another stream's, or a send of this task), so
        when those are wanted too, the streams get a reader each."""
        while not landed():
            wanted = [k for k in keys() if k not in self._values]
            streams = self._streams_for(wanted)
            if len(streams) == 1 and not streams[0].busy and streams[0].keys.issuperset(wanted):
                self._pull(streams[0])
                continue
            self._read_all_locked(streams, wanted)
            return False
        return True

    def want(self, keys: list) -> None:
        """Wakes the waiters: the keys some recv waits for are now `keys`.
        A thread pulling one stream sees nothing else land, so once they do
        not all come by one stream, each stream gets a reader."""
        with self._cond:
            self._read_all_locked(self._streams_for(keys), keys)
            self._cond.notify_all()

    def _streams_for(self, keys) -> list:
        wanted = [k for k in keys if k not in self._values]
        return [st for st in self._streams if not st.done and any(k in st.keys for k in wanted)]

    def _read_all_locked(self, streams: list, wanted) -> None:
        """Gives `streams` a reader each, unless one of them brings every key
        of `wanted` that has not landed (its waiter may read it)."""
        if len(streams) == 1 and streams[0].keys.issuperset(
                k for k in wanted if k not in self._values):
            return
        for stream in streams:
            if not stream.busy:
                stream.busy = True
                _READERS.submit(self._drain, stream)

    def _drain(self, stream: "_Stream") -> None:
        """Reads `stream` to its end on a thread of its own."""
        with self._cond:
            stream.busy = False
            while not stream.done and self.error is None:
                self._pull(stream)

    def _pull(self, stream: "_Stream") -> None:
        stream.busy = True
        self._cond.release()
        batch, error = None, None
        try:
            batch = next(stream.batches, None)
            if batch is not None:
                batch = stream.resolve(batch)
        except errors.OpError as e:
            error = e
        except Exception as e:  # noqa: BLE001 - a waiting Recv must not hang on a bug
            error = errors.InternalError(None, None, f"{type(e).__name__}: {e}")
        finally:
            self._cond.acquire()
            stream.busy = False
        if batch is None:
            stream.done = True
        else:
            self._values.update(batch)
            stream.done = all(k in self._values for k in stream.keys)
        if error is not None and self.error is None:
            self.error = error
        self._cond.notify_all()

    def send(self, key: str, value) -> None:
        with self._cond:
            self._values[key] = value
            if self._held:
                self._unannounced = True
                return
            self._cond.notify_all()
            due = self._due_locked()
        self._push_all(due)

    def hold(self) -> None:
        """Sends from now on wake no waiter until `flush` (or the last `unhold`):
        waking a thread costs ~0.1 ms here, and a peer's stream then carries
        the tensors of several sends in one message. A running executor holds
        and flushes before anything that may wait."""
        with self._cond:
            self._held += 1

    def unhold(self) -> None:
        due = []
        with self._cond:
            self._held -= 1
            if self._unannounced:
                self._unannounced = False
                self._cond.notify_all()
                due = self._due_locked()
        self._push_all(due)

    def flush(self) -> None:
        """Wakes the waiters for what held sends left (and writes what
        peers' pushed streams wait for, on this thread)."""
        if self._unannounced:
            with self._cond:
                self._unannounced = False
                self._cond.notify_all()
                due = self._due_locked()
            self._push_all(due)

    def forget(self, keys) -> None:
        """Drops the values of `keys`, which their one receiver (a peer) has taken:
        a variable's array a peer fetched may then be updated in place."""
        with self._cond:
            for key in keys:
                self._values.pop(key, None)

    def send_many(self, pairs) -> None:
        """`send` for each (key, value), waking the waiters once."""
        with self._cond:
            self._values.update(pairs)
            self._cond.notify_all()
            due = self._due_locked()
        self._push_all(due)

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

    def recv_local(self, key: str, ctx=None, deadline: Optional[float] = None,
                   stopped: Callable[[], bool] = lambda: False):
        """The value for `key` once this task's Send gives it. A peer's wait
        (`ctx` None) ends at `deadline`, or as CancelledError once `stopped()`
        (checked on every `wake`: its caller went away)."""
        with self._cond:
            if ctx is not None:
                ctx.wait(self._cond, lambda: self._pulled_until(
                    lambda: key in self._values or self.error is not None, lambda: (key,)),
                    f"tensor {key.split(';')[3]}")
            else:
                while key not in self._values and self.error is None:
                    if stopped():
                        raise errors.CancelledError(
                            None, None, f"RecvTensor {key}: the caller went away")
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
                go_on, timeout = self._may_wait(deadline, stopped, keys)
                if not go_on:
                    return None
                self._cond.wait(timeout)

    def _may_wait(self, deadline: Optional[float], stopped: Callable[[], bool],
                  keys) -> tuple:
        """Before a wait for `keys` (lock held): (False, None) once `stopped()`,
        else (True, the seconds left or None).

        Raises:
          the step's error once it is aborted; DeadlineExceededError naming `keys`.
        """
        if self.error is not None:
            raise self.error
        if stopped():
            return False, None
        timeout = None if deadline is None else deadline - time.monotonic()
        if timeout is not None and timeout <= 0:
            raise errors.DeadlineExceededError(
                None, None, f"Timed out waiting for tensors {list(keys)}")
        return True, timeout

    def ready(self, keys) -> list:
        """[(key, value)] for those of `keys` that have landed, waiting for none."""
        with self._cond:
            return [(key, self._values[key]) for key in keys if key in self._values]

    def wake(self) -> None:
        """Wakes every waiter, to look at its `stopped` again."""
        with self._cond:
            self._cond.notify_all()
            for push in self._pushes:
                push.notify()

    def abort(self, error: errors.OpError) -> None:
        with self._cond:
            if self.error is None:
                self.error = error
            self._cond.notify_all()
            for push in self._pushes:
                push.notify()


class _Stream:
    """Tensors a peer streams into one step's rendezvous, read by whoever waits."""

    def __init__(self, keys: set, batches, resolve: Callable) -> None:
        self.keys = keys
        self.batches = batches
        self.resolve = resolve
        self.busy = False  # a thread is reading it (the rendezvous lock is not held)
        self.done = False
