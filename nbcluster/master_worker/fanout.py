"""Runs one step's partitions concurrently; the first error cancels the rest.

Rule: knows partitions only as objects with a `client`; no planning here.
"""
from __future__ import annotations

import math
import threading
import time
from concurrent.futures import FIRST_EXCEPTION, Executor, Future, wait
from typing import Callable, Optional

from nbcluster import errors
from nbcluster.master_worker.transport import InProcessWorkerClient


def run_partitions(parts: list, run: Callable, cleanup: Callable[[], None],
                   timeout: Optional[float], pool: Executor,
                   start: Optional[Callable] = None) -> list:
    """[run(part) for part in parts], run concurrently.

    Remote partitions go first (a producer started late stalls every
    partition that waits on it): those `start(part, on_error)` sends at once
    (it returns an object whose `finish()` reads the result, or None) are
    read on this thread once its own partition ran, so the step wakes no
    pool thread for them (~80 µs a wake); the others each go to a pool
    thread. The in-process partition runs on this thread (several: all but
    one go to the pool too). gRPC's own non-blocking calls would start a
    thread per step. The first error, from any partition in any order, calls
    `cleanup` once, which cancels the others (they may be blocked on its
    tensors); a started call's error that lands while this thread is busy
    calls its `on_error`, which does that too.

    Raises:
      OpError: the first partition's error (a CancelledError only if no
        other error came); DeadlineExceededError 5 s past `timeout` when a
        partition ignores cancellation.
    """
    if len(parts) == 1:
        return [run(parts[0])]
    # From the step's start: this thread runs partitions itself before it gathers.
    deadline = None if timeout is None else time.monotonic() + timeout
    local = [i for i, p in enumerate(parts) if isinstance(p.client, InProcessWorkerClient)]
    remote = [i for i in range(len(parts)) if i not in local]
    cancel_lock = threading.Lock()
    cancelled = [False]
    cleaning: list = []  # the cleanup's Event once one began (none made for a good step)

    def cancel_all() -> None:
        with cancel_lock:
            if cancelled[0]:
                return
            cancelled[0] = True
            cleaning.append(threading.Event())
        try:
            cleanup()
        finally:
            cleaning[0].set()

    def on_error() -> None:
        if not cancelled[0]:
            pool.submit(cancel_all)

    started = {}
    try:
        # Inside the try: a start that fails (the peer closed its data plane)
        # must not leave the calls started before it running unread, their
        # partitions waiting on partitions that never run.
        if start is not None:
            for i in remote:
                call = start(parts[i], on_error)
                if call is not None:
                    started[i] = call
        futures = {pool.submit(run, parts[i]): i
                   for i in remote + local[:-1] if i not in started}
        for future in list(futures):
            future.add_done_callback(lambda f: f.exception() is not None and on_error())
        if local:
            futures[_inline(run, parts[local[-1]])] = local[-1]
            if any(f.done() and f.exception() is not None for f in futures):
                cancel_all()  # before waiting on started calls that may wait on it
        while started:
            i, call = started.popitem()
            future = _inline(call.finish)
            futures[future] = i
            if future.exception() is not None:
                cancel_all()
    except BaseException:  # a start's error, or not an OpError: drop what was started
        for call in started.values():
            call.abandon()
        cancel_all()
        raise
    try:
        return _gather(futures, len(parts), deadline, cancel_all, cancelled)
    finally:
        if cleaning:
            # Whichever thread cleans up (a reply watcher's `on_error` hands it to
            # the pool): the step's error comes back once that is done, so what
            # it cancels never overlaps the caller's next step.
            cleaning[0].wait()


def cleanup_step(clients, step_id: int, since: float = math.inf) -> None:
    """CleanupGraph of step `step_id` on every client's worker, errors ignored
    (the step failed already), all at once: in turn, a task that hangs
    (stopped: it answers only at the call's deadline) held back the calls after
    it, and the partitions they cancel, which may wait on its tensors. Returns
    once every call returned, so a cancelled step's effects (a dequeue still
    waiting) never overlap the caller's next step; except the calls to a task
    that did not answer a call since `since` (the step's start, monotonic:
    `unanswered_at`, found hung or gone): those are sent, for a stopped task
    to find once it runs again, but waiting out their 30 s deadline would
    only hold back the step's error. Only failed steps get here."""
    local = [c for c in clients if isinstance(c, InProcessWorkerClient)]
    remote = [c for c in clients if not isinstance(c, InProcessWorkerClient)]
    unanswered = [c for c in remote if getattr(c, "unanswered_at", -math.inf) >= since]
    waited = [c for c in remote if c not in unanswered]
    threads = [threading.Thread(target=_cleanup_quietly, args=(client, step_id), daemon=True,
                                name="nbcluster-step-cleanup")
               for client in unanswered + waited[1:]]
    for thread in threads:
        thread.start()
    for client in local + waited[:1]:
        _cleanup_quietly(client, step_id)
    for thread in threads[len(unanswered):]:
        thread.join()  # each call has its deadline


def _cleanup_quietly(client, step_id: int) -> None:
    try:
        client.cleanup_graph(step_id)
    except errors.OpError:
        pass


def _inline(fn: Callable, *args) -> Future:
    """`fn(*args)` run on this thread, as a done Future (an OpError its exception)."""
    future: Future = Future()
    try:
        future.set_result(fn(*args))
    except errors.OpError as e:
        future.set_exception(e)
    return future


def _gather(futures: dict, count: int, deadline: Optional[float], cancel_all: Callable,
            cancelled: list) -> list:
    results: list = [None] * count
    pending, first = set(futures), None
    while pending:
        wait_s = None if deadline is None else max(0.0, deadline - time.monotonic()) + 5
        done, pending = wait(pending, timeout=wait_s, return_when=FIRST_EXCEPTION)
        if not done:
            first = first or errors.DeadlineExceededError(None, None,
                                                          "Timed out running the step")
            if cancelled[0]:
                break  # a partition ignores cancellation; do not hang the client
        for future in done:
            try:
                results[futures[future]] = future.result()
            except errors.OpError as e:
                if first is None or isinstance(first, errors.CancelledError):
                    first = e
        if first is not None:
            cancel_all()
    if first is not None:
        raise first
    return results  # workers end a step that went well by themselves
