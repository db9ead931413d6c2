"""The step fan-out: started calls are read on the calling thread after its own
partition, with no pool thread; any partition's error cancels the others once."""
from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor
from types import SimpleNamespace

import pytest

from nbcluster import errors
from nbcluster.master_worker.fanout import cleanup_step, run_partitions
from nbcluster.master_worker.transport import InProcessWorkerClient

pytestmark = pytest.mark.timeout(60)
_WAIT_S = 10.0


class _CountingPool(ThreadPoolExecutor):
    def __init__(self) -> None:
        super().__init__(max_workers=4)
        self.submitted = 0

    def submit(self, *args, **kwargs):
        self.submitted += 1
        return super().submit(*args, **kwargs)


@pytest.fixture
def pool():
    executor = _CountingPool()
    yield executor
    executor.shutdown(wait=True)


LOCAL = SimpleNamespace(name="local", client=InProcessWorkerClient(None))
REMOTE = SimpleNamespace(name="remote", client=object())


class _Started:
    """A started remote call: `finish` gives `result` (or raises `error`)."""

    def __init__(self, log: list, result="remote result", error=None) -> None:
        self.log, self.result, self.error = log, result, error
        self.thread = None

    def finish(self):
        self.thread = threading.get_ident()
        self.log.append("finish")
        if self.error is not None:
            raise self.error
        return self.result

    def abandon(self) -> None:
        self.log.append("abandon")


def test_a_started_call_is_read_on_the_calling_thread_after_its_partition(pool):
    log: list = []
    started = _Started(log)

    def run(part):
        assert part is LOCAL  # the remote one was started, not run
        log.append("local")
        return "local result"
    out = run_partitions([REMOTE, LOCAL], run, lambda: log.append("cleanup"), None, pool,
                         start=lambda part, on_error: started)
    assert out == ["remote result", "local result"]
    assert log == ["local", "finish"]
    assert started.thread == threading.get_ident()
    assert pool.submitted == 0  # no thread woken for the step


def test_without_start_the_remote_goes_to_the_pool_as_before(pool):
    out = run_partitions([REMOTE, LOCAL], lambda part: part.name, lambda: None, None, pool,
                         start=lambda part, on_error: None)
    assert out == ["remote", "local"]
    assert pool.submitted == 1


def test_a_failing_own_partition_cancels_before_the_started_call_is_read(pool):
    log: list = []
    failure = errors.InvalidArgumentError(None, None, "bad feed")

    def run(part):
        raise failure
    with pytest.raises(errors.InvalidArgumentError):
        run_partitions([REMOTE, LOCAL], run, lambda: log.append("cleanup"), None, pool,
                       start=lambda part, on_error: _Started(
                           log, error=errors.CancelledError(None, None, "cancelled")))
    assert log == ["cleanup", "finish"]  # else the peer might wait on us forever


def test_a_started_call_s_error_wins_over_the_cancelled_and_cleans_up_once(pool):
    log: list = []
    failure = errors.NotFoundError(None, None, "no such variable")

    def run(part):
        log.append("local")
        return "local result"
    with pytest.raises(errors.NotFoundError):
        run_partitions([REMOTE, LOCAL], run, lambda: log.append("cleanup"), None, pool,
                       start=lambda part, on_error: _Started(log, error=failure))
    assert log == ["local", "finish", "cleanup"]


def test_on_error_while_the_own_partition_waits_cancels_it(pool):
    """A started call's error landing early (the reply watcher's `on_error`)
    cancels the partition this thread runs, which may wait on the peer."""
    unblocked = threading.Event()
    box: dict = {}

    def start(part, on_error):
        box["on_error"] = on_error
        return _Started([], error=errors.AbortedError(None, None, "peer failed"))

    def run(part):
        box["on_error"]()  # as the watcher thread would
        if not unblocked.wait(_WAIT_S):
            raise AssertionError("the partition was never cancelled")
        raise errors.CancelledError(None, None, "cancelled")
    with pytest.raises(errors.AbortedError):
        run_partitions([REMOTE, LOCAL], run, unblocked.set, None, pool, start=start)


def test_an_interrupt_abandons_what_was_started(pool):
    log: list = []

    def run(part):
        raise KeyboardInterrupt
    with pytest.raises(KeyboardInterrupt):
        run_partitions([REMOTE, LOCAL], run, lambda: log.append("cleanup"), None, pool,
                       start=lambda part, on_error: _Started(log))
    assert log == ["abandon", "cleanup"]


def test_a_failed_start_abandons_the_calls_started_before_it(pool):
    """Regression: the second remote partition's start raised (its peer closed the
    data plane) after the first's RunGraph was sent; that call was never read nor
    closed, its partition left waiting on partitions that never ran, no cleanup."""
    log: list = []
    first = _Started(log)
    failure = errors.UnavailableError(None, None, "its data plane closed the connection")
    other = SimpleNamespace(name="other remote", client=object())

    def start(part, on_error):
        if part is other:
            raise failure
        return first

    with pytest.raises(errors.UnavailableError):
        run_partitions([REMOTE, other, LOCAL], lambda part: "ran", lambda: log.append("cleanup"),
                       None, pool, start=start)
    assert log == ["abandon", "cleanup"]


class _Cleaned:
    """A worker client whose CleanupGraph is recorded; `hangs` holds it until released."""

    def __init__(self, log: list, name: str, hangs: threading.Event = None) -> None:
        self.log, self.name, self.hangs = log, name, hangs

    def cleanup_graph(self, step_id) -> None:
        if self.hangs is not None:
            # A stopped task: no answer until the call's deadline (the test's wait).
            if not self.hangs.wait(_WAIT_S):
                self.log.append((self.name, "waited out"))
                raise errors.DeadlineExceededError(None, None, "Deadline Exceeded")
            self.log.append((self.name, "answered late"))
            return
        self.log.append((self.name, step_id))


class _LocalCleaned(InProcessWorkerClient):
    def __init__(self, log: list) -> None:
        self.log = log

    def cleanup_graph(self, step_id) -> None:
        self.log.append(("local", step_id))


def test_a_hung_worker_s_cleanup_does_not_hold_back_the_others():
    """Regression: a failed step's CleanupGraph went to its workers one after
    another, so a stopped task's (waiting out its 30 s deadline) held back the
    cancellation of the partitions after it, which wait on its tensors. It
    still returns only once every call returned."""
    log: list = []
    hung = threading.Event()
    cleaner = threading.Thread(target=cleanup_step, daemon=True, args=(
        [_Cleaned(log, "stopped", hung), _Cleaned(log, "other"), _LocalCleaned(log)], 7))
    cleaner.start()
    try:
        for _ in range(1000):
            if len(log) >= 2:
                break
            hung.wait(0.01)
        assert sorted(log) == [("local", 7), ("other", 7)]
        assert cleaner.is_alive()  # it waits for the stopped task's call
    finally:
        hung.set()
        cleaner.join(_WAIT_S)
    assert not cleaner.is_alive() and sorted(log) == [("local", 7), ("other", 7),
                                                      ("stopped", "answered late")]


def test_the_cleanup_is_sent_to_a_task_found_hung_in_the_step_but_not_waited_for():
    """Regression: a SIGSTOPped ps, found hung by its RunGraph's probe, held the
    step's error back until its CleanupGraph's 30 s deadline. A task that did not
    answer before the step began is waited for, as any other."""
    log: list = []
    hung = threading.Event()
    stopped, earlier = _Cleaned(log, "stopped", hung), _Cleaned(log, "earlier")
    stopped.unanswered_at, earlier.unanswered_at = 101.0, 99.0
    cleaner = threading.Thread(target=cleanup_step, daemon=True, args=(
        [stopped, earlier, _Cleaned(log, "other"), _LocalCleaned(log)], 7, 100.0))
    try:
        cleaner.start()
        cleaner.join(_WAIT_S / 2)
        assert not cleaner.is_alive()  # back before the stopped task answered
        assert sorted(log) == [("earlier", 7), ("local", 7), ("other", 7)]
    finally:
        hung.set()
    pause = threading.Event()
    for _ in range(1000):  # the stopped task's call was sent all the same
        if ("stopped", "answered late") in log:
            break
        pause.wait(0.01)
    assert ("stopped", "answered late") in log


def test_the_step_s_error_comes_back_once_a_cleanup_on_another_thread_is_done(pool):
    """Regression: a started call's error that landed early had the pool clean up
    (`on_error`); this thread then read that error, found the step cancelled
    already and returned it at once, while the cleanup went on: the caller's
    next step could run before this step's dequeue on a peer was cancelled."""
    log: list = []
    began, go, returned = threading.Event(), threading.Event(), threading.Event()

    def cleanup() -> None:
        began.set()
        go.wait(_WAIT_S)
        log.append("cleaned")

    def start(part, on_error):
        call = _Started(log, error=errors.AbortedError(None, None, "peer failed"))
        finish = call.finish

        def finish_after_the_watcher():
            on_error()  # the reply watcher saw the error frame first
            assert began.wait(_WAIT_S)
            return finish()
        call.finish = finish_after_the_watcher
        return call

    def release() -> None:  # lets the cleanup end, unless the step came back first
        assert began.wait(_WAIT_S)
        for _ in range(50):
            if returned.is_set():
                break
            returned.wait(0.01)
        go.set()

    releaser = threading.Thread(target=release, daemon=True)
    releaser.start()
    with pytest.raises(errors.AbortedError):
        try:
            run_partitions([REMOTE, LOCAL], lambda part: "local", cleanup, None, pool,
                           start=start)
        finally:
            log.append("returned")
            returned.set()
    releaser.join(_WAIT_S)
    assert log == ["finish", "cleaned", "returned"]
