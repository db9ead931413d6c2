"""Splits one large 2-D MatMul over this process's math threads: a block of output rows
(or columns) each, every block a one-thread BLAS call on threads of our own.

Why: OpenBLAS splits a call evenly over its threads and waits for all of them,
so on a loaded host one thread the scheduler left out holds the whole call up
(a 0.25 ms MatMul took 10-50 ms), and its idle threads spin. Here the calling
thread takes blocks itself until none is left, and a helper takes one only
once it runs: a helper that is not scheduled costs the caller nothing but the
wake-up, and at worst the caller waits for the one block a running helper
holds. numpy releases the GIL inside the BLAS call, so the blocks overlap.

Rule: the caller narrows BLAS to one thread meanwhile (`blas_width`); every
block is the same BLAS routine on a slice, so results differ from one call
only in rounding, as between any two BLAS thread counts.
"""
from __future__ import annotations

import collections
import os
import threading
from typing import Optional

import numpy as np

# Only BLAS types gain: numpy multiplies other types in its own loop, GIL held.
_BLAS_TYPES = frozenset(np.dtype(t) for t in (np.float32, np.float64, np.complex64,
                                              np.complex128))
_MIN_BLOCK = 16  # rows (or columns) per block: below this BLAS loses its blocking
# A helper woken late (70-300 µs on a loaded VM) still finds blocks left to take.
_BLOCKS_PER_THREAD = 2

_lock = threading.Lock()
_wake = threading.Condition(_lock)
_jobs: collections.deque = collections.deque()  # jobs with blocks left to take
_helpers = 0


class _Job:
    __slots__ = ("fn", "blocks", "next", "busy", "done", "error")

    def __init__(self, fn, blocks: list) -> None:
        self.fn, self.blocks = fn, blocks
        self.next = 0  # the first block nobody took yet
        self.busy = 0  # blocks helpers took and have not finished
        self.done: Optional[threading.Event] = None  # made when the caller must wait
        self.error: Optional[BaseException] = None


def _take_locked():
    while _jobs:
        job = _jobs[0]
        if job.next < len(job.blocks) and job.error is None:
            i = job.next
            job.next += 1
            job.busy += 1
            return job, i
        _jobs.popleft()
    return None


def _serve() -> None:
    with _wake:
        while True:
            taken = _take_locked()
            if taken is None:
                _wake.wait()
                continue
            job, i = taken
            _lock.release()
            try:
                job.fn(*job.blocks[i])
            except BaseException as e:  # noqa: BLE001 - the caller raises it
                job.error = e
            finally:
                _lock.acquire()
            job.busy -= 1
            if not job.busy and job.next == len(job.blocks) and job.done is not None:
                job.done.set()


def _ensure_helpers(count: int) -> None:
    global _helpers
    while _helpers < count:
        _helpers += 1
        threading.Thread(target=_serve, daemon=True, name=f"nbcluster-rows_{_helpers}").start()


def run_blocks(fn, blocks: list, threads: int) -> None:
    """fn(*block) for every block, on the calling thread and up to threads - 1 helpers."""
    job = _Job(fn, blocks)
    with _wake:
        _ensure_helpers(threads - 1)
        _jobs.append(job)
        _wake.notify(threads - 1)
    while True:
        with _lock:
            if job.next == len(blocks) or job.error is not None:
                job.next = len(blocks)  # after an error, nobody takes another block
                wait = job.busy > 0
                if wait:
                    job.done = threading.Event()
                # Out of the queue now, not when a helper next looks: its closure
                # holds the operands, and a variable's array someone holds is
                # copied on update instead of updated in place.
                try:
                    _jobs.remove(job)
                except ValueError:
                    pass
                break
            i = job.next
            job.next += 1
        try:
            fn(*blocks[i])
        except BaseException as e:  # noqa: BLE001 - raised once the helpers are out
            job.error = e
    if wait:
        job.done.wait()
    job.fn = None  # no helper holds the job now: nor may it hold the operands
    if job.error is not None:
        raise job.error


def splittable(a, b) -> bool:
    """Whether np.matmul(a, b) is a BLAS call that row_split.matmul can divide."""
    return (a.ndim == 2 and b.ndim == 2 and a.dtype == b.dtype and a.dtype in _BLAS_TYPES
            and max(a.shape[0], b.shape[1]) >= 2 * _MIN_BLOCK)


def matmul(a, b, threads: int):
    """np.matmul(a, b) of 2-D BLAS-typed arrays, its larger output side cut in blocks."""
    m, n = a.shape[0], b.shape[1]
    out = np.empty((m, n), dtype=a.dtype)
    side = max(m, n)
    count = max(1, min(threads * _BLOCKS_PER_THREAD, side // _MIN_BLOCK))
    cuts = [side * k // count for k in range(count + 1)]
    blocks = list(zip(cuts[:-1], cuts[1:]))
    if m >= n:
        def rows(r0, r1):
            np.matmul(a[r0:r1], b, out=out[r0:r1])
        run_blocks(rows, blocks, threads)
    else:
        def cols(c0, c1):
            np.matmul(a, b[:, c0:c1], out=out[:, c0:c1])
        run_blocks(cols, blocks, threads)
    return out


def _after_fork_in_child() -> None:
    # A forked child has none of the parent's helpers, nor its jobs.
    global _helpers, _lock, _wake
    _helpers = 0
    _jobs.clear()
    _lock = threading.Lock()
    _wake = threading.Condition(_lock)


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork_in_child)
