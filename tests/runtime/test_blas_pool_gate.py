"""runtime/blas_pool_gate.py: the process's splittable MatMuls go to OpenBLAS's pool
only while the host's other cores are idle and the pool is clearly faster, and leave
it at a collapse."""
from __future__ import annotations

import pytest

from nbcluster.runtime import blas_pool_gate
from nbcluster.runtime.blas_pool_gate import PoolGate

MACS = 25_690_112  # 128x784 @ 784x256
STEP_REST = 0.0005  # seconds of other work between two MatMul calls


class Host:
    """A clock and CPU counts the test moves: this process's and every other one's."""

    def __init__(self) -> None:
        self.now = self.busy = self.own = 0.0

    def gate(self) -> PoolGate:
        return PoolGate(host_busy=lambda: self.busy, own_cpu=lambda: self.own,
                        clock=lambda: self.now)

    def run(self, gate: PoolGate, calls: int, split_s: float, pool_s: float,
            others: float = 0.0, collapse_at=()) -> list:
        """`calls` MatMuls through `gate` (a call in `collapse_at` takes 20 ms on the
        pool), `others` cores busy meanwhile; which ran on the pool."""
        ways = []
        for i in range(calls):
            pool = gate.pool
            took = (0.02 if i in collapse_at else pool_s) if pool else split_s
            wall = took + STEP_REST
            self.now += wall
            self.own += wall * (2 if pool else 1.5)  # a pool spins its threads
            self.busy += wall * (2 if pool else 1.5) + wall * others
            gate.record(pool, took, MACS)
            ways.append(pool)
        return ways


def test_the_pool_is_tried_only_once_the_other_processes_leave_the_cores_idle():
    host = Host()
    gate = host.gate()
    assert not any(host.run(gate, 3000, split_s=0.00045, pool_s=0.0003, others=1.0))
    ways = host.run(gate, 3000, split_s=0.00045, pool_s=0.0003, others=0.0)
    first = ways.index(True)
    # most of a window of quiet first, then the pool for good
    quiet = first * (0.00045 + STEP_REST)
    assert quiet >= (1 - blas_pool_gate.FREE_OTHERS) * blas_pool_gate.WINDOW
    assert all(ways[first:])


def test_the_pool_stays_while_clearly_faster_and_a_slower_one_is_left_and_tried_less():
    host = Host()
    fast = host.gate()
    ways = host.run(fast, 4000, split_s=0.00045, pool_s=0.0003)
    assert all(ways[ways.index(True):]) and fast.probe_after == blas_pool_gate.FIRST_PROBE
    slow = host.gate()
    ways = host.run(slow, 20000, split_s=0.00045, pool_s=0.0004)  # not 20% faster
    assert not ways[-1] and slow.probe_after > 8 * blas_pool_gate.FIRST_PROBE
    assert sum(ways) < 0.05 * len(ways)  # each try one epoch, the tries ever rarer
    assert 0 < slow.cost[True] and slow.cost[True] >= blas_pool_gate.GAIN * slow.cost[False]


@pytest.mark.parametrize("collapses,stays", [((), True), ((10,), True), ((10, 11), False),
                                             ((10, 10 + blas_pool_gate.EPOCH), True)])
def test_a_second_collapse_in_an_epoch_ends_the_pool_at_once(collapses, stays):
    host = Host()
    gate = host.gate()
    ways = host.run(gate, 2000, split_s=0.00045, pool_s=0.0003)
    assert gate.pool
    # the pool's epochs began with its first call; collapses at these places in one
    first, start = ways.index(True), len(ways)
    epoch = start + (first - start) % blas_pool_gate.EPOCH
    ways = host.run(gate, 80, split_s=0.00045, pool_s=0.0003,
                    collapse_at={epoch - start + k for k in collapses})
    assert gate.pool is stays
    if not stays:
        assert ways[-1] is False and gate.probe_after == 2 * blas_pool_gate.FIRST_PROBE


def test_the_pool_s_waking_calls_are_not_read_as_a_collapse():
    host = Host()
    gate = host.gate()
    ways = host.run(gate, 2000, split_s=0.00045, pool_s=0.0003)
    first = ways.index(True)
    host2 = Host()
    cold = host2.gate()
    # the pool's first calls take 3x the split (its threads asleep), then run fast
    host2.run(cold, first, split_s=0.00045, pool_s=0.0003)
    assert cold.pool
    for _ in range(blas_pool_gate.WARM):
        cold.record(True, 3 * 0.00045, MACS)
    assert all(host2.run(cold, 500, split_s=0.00045, pool_s=0.0003))
    assert cold.probe_after == blas_pool_gate.FIRST_PROBE  # never lost


def test_the_host_s_counts_come_from_psutil():
    busy = blas_pool_gate._host_busy()
    assert busy > 0
    x = 0
    for i in range(2_000_000):  # some CPU for this process, so for the host
        x += i
    assert blas_pool_gate._host_busy() >= busy
