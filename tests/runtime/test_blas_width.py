"""runtime/blas_width.py: a large MatMul runs at the BLAS width that is faster here,
with threadpoolctl's report of the pools unchanged between calls."""
from __future__ import annotations

import numpy as np
import pytest

import nbcluster as tf
from nbcluster.runtime import blas_pool_gate, blas_width, math_threads

BIG = blas_width.MIN_MACS


def _blas_threads() -> list:
    from threadpoolctl import threadpool_info
    return [p["num_threads"] for p in threadpool_info() if p["user_api"] == "blas"]


@pytest.fixture
def two_wide(monkeypatch):
    """This process with two BLAS threads and a clock the test moves."""
    pytest.importorskip("threadpoolctl")
    if not _blas_threads():
        pytest.skip("numpy here reports no BLAS library to threadpoolctl")
    from threadpoolctl import threadpool_limits
    now = [0.0]
    monkeypatch.setattr(blas_width, "_clock", lambda: now[0])
    monkeypatch.setattr(math_threads, "current_threads", lambda: 2)
    # the process's pool gate, its window of quiet never over: splits stay splits
    monkeypatch.setattr(blas_pool_gate, "GATE", blas_pool_gate.PoolGate(clock=lambda: 0.0))
    with threadpool_limits(2):
        yield now


def _timed(now, wide_s: float, narrow_s: float, seen: list):
    """A call that takes `wide_s` of the test's clock at two threads, `narrow_s` at one."""
    def fn():
        threads = _blas_threads()
        seen.append(threads[0])
        now[0] += wide_s if threads[0] > 1 else narrow_s
        return threads[0]
    return fn


def test_the_narrow_width_wins_when_two_threads_are_slower(two_wide):
    chooser, seen = blas_width.WidthChooser(), []
    for _ in range(200):
        chooser.call(_timed(two_wide, 10.0, 1.0, seen), BIG)
        assert _blas_threads() == [2]  # put back after every call
    assert chooser.way == blas_width.NARROW
    tail = seen[-100:]
    # Once it knows, the slow width is only tried again now and then (backing off).
    assert tail.count(2) <= 2 and tail.count(1) >= 98


def test_the_wide_width_stays_when_it_is_faster_and_a_change_of_load_is_followed(two_wide):
    chooser, seen = blas_width.WidthChooser(), []
    for _ in range(100):
        chooser.call(_timed(two_wide, 1.0, 2.0, seen), BIG)
    assert chooser.way == blas_width.WIDE and seen[-50:].count(2) >= 48
    for _ in range(100):  # the host got busy: two threads now take 10x longer
        chooser.call(_timed(two_wide, 20.0, 2.0, seen), BIG)
    assert chooser.way == blas_width.NARROW and seen[-50:].count(1) >= 48


def test_small_calls_and_one_thread_processes_are_left_alone(two_wide, monkeypatch):
    chooser, seen = blas_width.WidthChooser(), []
    for _ in range(20):
        chooser.call(_timed(two_wide, 10.0, 1.0, seen), BIG - 1)
    assert set(seen) == {2} and chooser.cost == [0.0, 0.0, 0.0]
    monkeypatch.setattr(math_threads, "current_threads", lambda: 1)
    for _ in range(20):
        chooser.call(_timed(two_wide, 10.0, 1.0, seen), BIG)
    assert set(seen) == {2} and chooser.cost == [0.0, 0.0, 0.0]


@pytest.mark.parametrize("ta,tb", [(False, False), (True, False), (False, True), (True, True)])
def test_matmul_gives_the_same_values_at_either_width(ta, tb):
    rng = np.random.default_rng(7)
    a = rng.standard_normal((256, 128) if ta else (128, 256)).astype(np.float32)
    b = rng.standard_normal((64, 256) if tb else (256, 64)).astype(np.float32)
    expected = np.matmul((a.T if ta else a).astype(np.float64), b.T if tb else b)
    with tf.Graph().as_default():
        y = tf.matmul(tf.constant(a), tf.constant(b), transpose_a=ta, transpose_b=tb)
        with tf.Session() as sess:
            got = [sess.run(y) for _ in range(40)]  # both widths get their turns
    for value in got:  # BLAS sums in another order at another width: rounding only
        assert value.dtype == np.float32
        np.testing.assert_allclose(value, expected, rtol=1e-4, atol=1e-4)


def test_overlapping_narrow_calls_put_the_pool_back_once_the_last_ends(two_wide):
    import threading
    inside, release = threading.Barrier(3), threading.Event()

    def held():
        inside.wait(10)
        release.wait(10)

    chooser = blas_width.WidthChooser()
    chooser.way, chooser.cost = blas_width.NARROW, [1.0, 10.0, 0.0]
    threads = [threading.Thread(target=chooser.call, args=(held, BIG)) for _ in range(2)]
    for t in threads:
        t.start()
    inside.wait(10)  # both calls are in, narrowed
    assert _blas_threads() == [1]
    release.set()
    for t in threads:
        t.join(10)
    assert _blas_threads() == [2]


def _split_timed(now, split_s: float, seen: list):
    """A split call: `split_s` of the test's clock, under a one-thread BLAS."""
    def split(threads):
        seen.append(("split", _blas_threads()[0], threads))
        now[0] += split_s
        return "split"
    return split


def test_our_split_wins_when_it_is_fastest_and_runs_blas_narrow(two_wide):
    chooser, seen = blas_width.WidthChooser(), []
    for _ in range(200):
        chooser.call(_timed(two_wide, 0.5, 2.0, seen), BIG, _split_timed(two_wide, 1.0, seen))
        assert _blas_threads() == [2]
    assert chooser.way == blas_width.SPLIT
    # OpenBLAS's pool is never tried where the call can be split, however fast.
    assert 2 not in seen
    splits = [s for s in seen if isinstance(s, tuple)]
    assert splits and all(blas == 1 and threads == 2 for _, blas, threads in splits)
    assert seen[-100:].count(("split", 1, 2)) >= 97  # one thread only as rare probes


def test_a_slow_split_leaves_the_call_on_one_thread(two_wide):
    chooser, seen = blas_width.WidthChooser(), []
    for _ in range(200):
        chooser.call(_timed(two_wide, 0.5, 2.0, seen), BIG, _split_timed(two_wide, 30.0, seen))
    assert chooser.way == blas_width.NARROW
    assert 2 not in seen and seen[-100:].count(1) >= 97


def _split_timed_by_call(now, times, seen: list):
    """A split call whose k-th run takes times(k) of the test's clock."""
    def split(threads):
        seen.append("split")
        now[0] += times(seen.count("split"))
        return "split"
    return split


def test_a_split_s_first_slow_run_is_a_warm_up_that_does_not_count(two_wide):
    # The first split starts the helper threads: timed, it made a split look slower
    # than one thread, and the rare probes that followed found the helpers asleep.
    chooser, seen = blas_width.WidthChooser(), []
    times = lambda k: 50.0 if k == 1 else 1.0  # noqa: E731
    for _ in range(200):
        chooser.call(_timed(two_wide, 0.5, 2.0, seen), BIG,
                     _split_timed_by_call(two_wide, times, seen))
    assert chooser.way == blas_width.SPLIT
    assert seen[-100:].count("split") >= 97


def test_one_slow_split_does_not_send_the_call_to_one_thread(two_wide):
    chooser, seen = blas_width.WidthChooser(), []
    times = lambda k: 60.0 if k == 50 else 1.0  # noqa: E731 - a helper preempted once
    for _ in range(200):
        chooser.call(_timed(two_wide, 0.5, 2.0, seen), BIG,
                     _split_timed_by_call(two_wide, times, seen))
        assert chooser.way in (None, blas_width.SPLIT)
    assert seen[-100:].count("split") >= 97


def test_a_split_is_left_only_for_a_clearly_faster_single_thread(two_wide):
    # Its probes from one thread find the helpers cold, so they read a little slow.
    close, seen = blas_width.WidthChooser(), []
    for _ in range(200):
        close.call(_timed(two_wide, 0.5, 1.0, seen), BIG, _split_timed(two_wide, 1.1, seen))
    assert close.way == blas_width.SPLIT
    clear = blas_width.WidthChooser()
    for _ in range(200):
        clear.call(_timed(two_wide, 0.5, 1.0, seen), BIG, _split_timed(two_wide, 1.5, seen))
    assert clear.way == blas_width.NARROW


def test_a_split_runs_on_openblas_s_pool_while_the_process_s_gate_says_so(two_wide):
    chooser, seen = blas_width.WidthChooser(), []
    gate = blas_pool_gate.GATE
    for _ in range(100):
        chooser.call(_timed(two_wide, 0.5, 2.0, seen), BIG, _split_timed(two_wide, 1.0, seen))
    assert chooser.way == blas_width.SPLIT and gate.cost[False] == pytest.approx(1.0 / BIG)
    gate.pool = True  # as after a quiet window
    seen.clear()
    for _ in range(40):
        chooser.call(_timed(two_wide, 0.5, 2.0, seen), BIG, _split_timed(two_wide, 1.0, seen))
        assert _blas_threads() == [2]
    assert seen.count(2) >= 38  # the calls ran at the pool's two threads, not split
    assert chooser.way == blas_width.SPLIT  # the node's own choice is unchanged
    assert gate.cost[True] == pytest.approx(0.5 / BIG)  # the gate timed them
