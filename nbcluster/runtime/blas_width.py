"""How wide one large MatMul call runs: on one BLAS thread, or in blocks on our own
threads (`row_split`), or, where a call cannot be split, on the process's BLAS
threads: whichever is fastest on this host now. Each MatMul node keeps its own
timings. A node's split may run on OpenBLAS's pool instead: that is the whole
process's choice (`blas_pool_gate`), made only while the host's other cores
are idle.

Rule: only the thread count of the same BLAS routine changes (or the size of
the blocks it runs on), so results differ at most in rounding (the sums'
order), as between any two BLAS thread counts; a call at one thread puts the
pool back to the count it found before it returns, so threadpoolctl reports
the rule of `runtime/math_threads.py` between calls.

Why: OpenBLAS splits a call evenly over its threads and waits for all of them.
On a loaded small host the other core is often busy with other processes, the
helper thread is not scheduled, and a 128x784 @ 784x256 MatMul that takes 1.1 ms
on one thread takes 8-16 ms on two (measured on a 2-vCPU VM shared by other
jobs); idle, two threads take half the time of one. Our own blocks never
collapse like that (the caller takes whatever blocks no helper took) and pay
only a helper's wake-up, so a node that can split never probes OpenBLAS's
pool itself: in a fresh process's first 100 steps its probes alone cost more
than its wins (median 650 against 430 steps/s, 1-layer MLP, loaded 2-vCPU VM).
Neither one thread nor a split wins always, so a node
times its calls per multiply-add each way (a moving average) and uses the
fastest, trying another again after a number of calls that doubles each time
the choice stays (32 up to 4096). The costs are lopsided (a collapsed wide
call costs ten narrow ones, a narrow call at most two wide ones), so a node
starts at one thread and goes wide only while that is 20% faster; a wide call
that collapses sends it back at once. A split is the other way round: it
cannot collapse, but its rare probes from one thread find its helpers asleep
(a helper's wake on a VM's idle vCPU costs more than on a busy one) and
measure it slower than it runs, and a single spike (a helper preempted once)
sent it to one thread for good. So a call that can be split starts split and
leaves it only for a single thread 20% faster; each way's first run is a
warm-up, not timed (a helper thread's start); and one slow split counts as at
most twice its average. Measured on the one-process MLP (2 vCPUs): quiet,
760-840 -> 900-1070 steps/s; beside two CPU burners, 556-568 -> 595.
"""
from __future__ import annotations

import threading
import time
from typing import Optional

from nbcluster.runtime import blas_pool_gate, math_threads

# Below this many multiply-adds OpenBLAS runs one thread by itself.
MIN_MACS = 1 << 20
_FIRST_PROBE = 32
_MAX_PROBE = 4096
_ALPHA = 0.25
_WIDE_GAIN = 0.8  # the wide width's cost must be below this share of the narrow one's
_clock = time.perf_counter  # tests give a clock of their own


class _Blas:
    """Narrows the process's BLAS pools to one thread while any narrow call runs.

    Calls on several executor threads overlap: the first one in saves the
    pools' counts, the last one out puts them back.
    """

    def __init__(self) -> None:
        self._setters = None
        self._lock = threading.Lock()
        self._inside = 0
        self._saved: list = []

    def enter(self) -> None:
        with self._lock:
            if self._setters is None:
                self._setters = _find_setters()
            if self._inside == 0:
                self._saved = [(set_threads, get_threads())
                               for get_threads, set_threads in self._setters]
                for set_threads, _ in self._saved:
                    set_threads(1)
            self._inside += 1

    def leave(self) -> None:
        with self._lock:
            self._inside -= 1
            if self._inside == 0:
                for set_threads, threads in self._saved:
                    set_threads(threads)


def _find_setters() -> list:
    try:
        from threadpoolctl import ThreadpoolController
    except ImportError:
        return []
    out = []
    for lib in ThreadpoolController().select(user_api="blas").lib_controllers:
        # threadpoolctl lets one thread own OpenBLAS's limits (the one that set
        # them first); a per-call count from an executor thread must bypass that.
        get, put = lib.get_num_threads, \
            getattr(lib, "_real_set_num_threads", None) or lib.set_num_threads
        # OpenBLAS's own pair, found once (threadpoolctl looks them up every call).
        symbol = getattr(lib, "_get_symbol", None)
        if symbol is not None and getattr(lib, "internal_api", "") == "openblas" and \
                getattr(lib, "threading_layer", "") != "openmp":
            found = symbol("openblas_get_num_threads"), symbol("openblas_set_num_threads")
            if None not in found:
                get, put = found
        out.append((get, put))
    return out


_BLAS = _Blas()


def one_thread_call(fn, *args):
    """fn(*args) with the process's BLAS pools at one thread, put back after."""
    if math_threads.current_threads() <= 1:
        return fn(*args)
    _BLAS.enter()
    try:
        return fn(*args)
    finally:
        _BLAS.leave()


# The ways a call can run: one BLAS thread; the process's BLAS threads
# (OpenBLAS's own pool); blocks on our own threads, one BLAS thread each.
NARROW, WIDE, SPLIT = 0, 1, 2


class WidthChooser:
    """One MatMul node's choice of how wide its calls run: NARROW or SPLIT, else WIDE."""

    def __init__(self) -> None:
        self.way: Optional[int] = None  # the way in use; set by the first call
        self.cost = [0.0, 0.0, 0.0]  # seconds per multiply-add, per way; 0: unmeasured
        self.runs = [0, 0, 0]  # calls per way so far (a way's first one is not timed)
        self.calls = 0
        self.probe_after = _FIRST_PROBE
        self._turn = 0  # which other way the next probe tries

    def call(self, fn, macs: int, split=None):
        """fn() at the width chosen for this call; or split(threads) when given and
        chosen: our own threads, each with a one-thread BLAS (`row_split`)."""
        threads = math_threads.current_threads()
        if threads <= 1 or macs < MIN_MACS:
            return fn()
        self.calls += 1
        # OpenBLAS's own wide call only where ours cannot split: its probes alone,
        # collapsing at 10-50 ms on a loaded host, cost more than it ever saved.
        ways = (NARROW, SPLIT) if split is not None else (NARROW, WIDE)
        if self.way is None:
            self.way = SPLIT if split is not None else NARROW
        way, probing = self._pick(ways)
        # A split may run on OpenBLAS's pool instead: the whole process's choice.
        gate = blas_pool_gate.GATE if way == SPLIT else None
        runs = WIDE if gate is not None and gate.pool else way
        if runs != WIDE:
            _BLAS.enter()
        start = _clock()
        try:
            return split(threads) if runs == SPLIT else fn()
        finally:
            seconds = _clock() - start
            if runs != WIDE:
                _BLAS.leave()
            if gate is not None:
                gate.record(runs == WIDE, seconds, macs)
            self._learn(ways, way, seconds / macs, probing)

    def _pick(self, ways: tuple):
        """The way of this call, and whether it is a probe of another than the one in use."""
        others = [w for w in ways if w != self.way]
        unmeasured = [w for w in others if not self.cost[w]]
        if unmeasured:
            return unmeasured[0], True
        if self.calls >= self.probe_after:
            self._turn += 1
            return others[self._turn % len(others)], True
        return self.way, False

    def _learn(self, ways: tuple, way: int, took: float, probing: bool) -> None:
        self.runs[way] += 1
        if self.runs[way] == 1:
            return  # a warm-up: a helper thread's start, a first touch of the output
        old = self.cost[way]
        if way == SPLIT and old:
            # One slow split (a helper preempted, a GC pause) counts as at most twice
            # the average: a split never collapses as OpenBLAS's pool does, and one
            # spike sent it to one thread, where its rare probes find its helpers
            # cold (asleep for a whole step) and measure it slower than it runs.
            took = min(took, 2 * old)
        self.cost[way] = took if not old else old + _ALPHA * (took - old)
        if probing:
            self.calls = 0
        if not all(self.cost[w] for w in ways):
            return
        narrow = self.cost[NARROW]
        fastest = min((w for w in ways if w != NARROW), key=lambda w: self.cost[w])
        if fastest == WIDE:
            best = WIDE if self.cost[WIDE] < _WIDE_GAIN * narrow else NARROW
        else:  # a split is left only for a clearly faster single thread
            best = NARROW if narrow < _WIDE_GAIN * self.cost[SPLIT] else SPLIT
        if best != self.way:
            self.way = best
            self.probe_after = _FIRST_PROBE
        elif probing:
            self.probe_after = min(_MAX_PROBE, self.probe_after * 2)
