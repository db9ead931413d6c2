"""Whether this process runs its splittable MatMuls on OpenBLAS's own pool instead
of our split (`row_split`): one choice for the whole process, made in epochs.

Why: on free cores OpenBLAS's pool is the fastest way to run a large MatMul.
Its threads spin between calls, so a call starts on every core at once, where a
split wakes a helper that slept (~35 µs on a VM) and waits for the last block:
the one-process MLP ran 1,000-1,070 steps/s on the pool against 780-880 split
(2 vCPUs, AMD EPYC). But a pool call waits for every one of its threads, so on
a loaded host it collapses (10-50 ms a call; the same MLP beside one CPU burner
ran 200 steps/s on the pool against 560 split). And the choice cannot be one
node's: between calls the pool's threads spin on the core a split's helper
needs (a split right after a pool call took 570 µs, after a split 335), so a
node trying the pool beside split nodes finds both slow, and its probes, from
a pool asleep since the last one, read it slower still.

So every splittable call runs split, or every one on the pool, `EPOCH` calls at
a time. The pool is tried only after `probe_after` split epochs (doubling each
time the pool loses) and only while the host's other processes used less than
`FREE_OTHERS` of a core over the last `WINDOW` seconds (the host's busy time,
psutil's, less this process's own): a split's helpers still ran their share
beside a CPU burner, and each probe there cost two 10-20 ms collapses. The
pool stays while it costs under `GAIN` of the split per multiply-add; a second
pool call in an epoch costing more than `COLLAPSE` times the split
(`COLD_COLLAPSE` while the pool's threads wake) ends it at once (one alone is
as likely a preemption or a collection as a load).
"""
from __future__ import annotations

import os
import threading
import time
from typing import Callable, Optional

EPOCH = 32  # calls
WARM = 4  # calls after a change of way, not timed: the pool's threads, or a helper, waking
WINDOW = 0.1  # seconds: 10 of the host's CPU count ticks per core
FREE_OTHERS = 0.25  # cores
GAIN = 0.8
COLLAPSE = 2.0
COLD_COLLAPSE = 10.0
FIRST_PROBE, MAX_PROBE = 2, 256  # epochs


class PoolGate:
    """`pool`: whether the next splittable call runs on OpenBLAS's pool; `record`
    each such call's time as it ran."""

    def __init__(self, host_busy: Optional[Callable[[], float]] = None,
                 own_cpu: Callable[[], float] = time.process_time,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self._lock = threading.Lock()
        self._host_busy, self._own_cpu, self._clock = host_busy or _host_busy, own_cpu, clock
        self._window = None  # (wall, host busy, own CPU) seconds when it began
        self.pool = False
        self.cost = {False: 0.0, True: 0.0}  # seconds per multiply-add: split, pool
        self.probe_after = FIRST_PROBE
        self._epochs = 0  # epochs since the last change of way
        self._start_epoch()

    def _start_epoch(self) -> None:
        self._calls, self._seconds, self._macs, self._collapses = 0, 0.0, 0, 0

    def record(self, pool: bool, seconds: float, macs: int) -> None:
        """One splittable call of `macs` multiply-adds took `seconds`, on the pool or split."""
        with self._lock:
            if pool != self.pool:
                return  # began before the way changed
            if self._window is None and not pool:
                self._window = self._mark()  # the split's first call: the window begins
            self._calls += 1
            split = self.cost[False]
            if pool and split:
                limit = COLD_COLLAPSE if self._calls <= WARM else COLLAPSE
                if seconds > limit * split * macs:
                    self._collapses += 1
                    if self._collapses > 1:
                        self._pool_lost()
                    return  # not timed: it would stand for a whole epoch
            if self._calls > WARM:
                self._seconds += seconds
                self._macs += macs
            if self._calls >= EPOCH:
                self._end_epoch()

    def _end_epoch(self) -> None:
        # at least EPOCH - WARM - 1 calls were timed: only one collapse is skipped
        cost = self.cost[self.pool] = self._seconds / self._macs
        self._epochs += 1
        if self.pool:
            if cost >= GAIN * self.cost[False]:
                self._pool_lost()
                return
            self.probe_after = FIRST_PROBE
        elif self._epochs >= self.probe_after and self._cores_free():
            self._switch(True)
            return
        self._start_epoch()

    def _cores_free(self) -> bool:
        """Whether other processes left this host's cores idle over the last WINDOW."""
        now = self._clock()
        if self._window is not None and now - self._window[0] < WINDOW:
            return False
        mark, self._window = self._window, self._mark()
        if mark is None or now - mark[0] > 4 * WINDOW:
            return False  # the window starts now: a load begun since counts in full
        others = (self._window[1] - mark[1]) - (self._window[2] - mark[2])
        return others < FREE_OTHERS * (self._window[0] - mark[0])

    def _mark(self) -> tuple:
        return self._clock(), self._host_busy(), self._own_cpu()

    def _pool_lost(self) -> None:
        self.probe_after = min(MAX_PROBE, 2 * self.probe_after)
        self._switch(False)

    def _switch(self, pool: bool) -> None:
        self.pool = pool
        self._epochs = 0
        self._window = None  # the pool's own load is no one else's
        self._start_epoch()


def _host_busy() -> float:
    """Seconds every core of this host has been busy (psutil's counts, any OS)."""
    import psutil  # loaded with a process's first probe of the pool
    times = psutil.cpu_times()
    idle = times.idle + getattr(times, "iowait", 0.0)
    # Linux counts a guest's time in user time as well
    counted_twice = getattr(times, "guest", 0.0) + getattr(times, "guest_nice", 0.0)
    return sum(times) - idle - counted_twice


GATE = PoolGate()


def _after_fork_in_child() -> None:
    global GATE
    GATE = PoolGate()  # a forked child's pool threads and load are its own


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork_in_child)
