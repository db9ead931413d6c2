"""The closure queue and the failure policy, without a cluster."""
import threading

import pytest

from nbcluster import errors
from nbcluster.distribute.closures import Closure, ClosureQueue
from nbcluster.distribute.failure_handling import (
    MAX_TRANSIENT_RETRIES,
    Diagnosis,
    handle_closure_error,
)

pytestmark = pytest.mark.timeout(30)


def closure(tag):
    return Closure(lambda: tag, (tag,), {})


def test_put_back_goes_first_in_line_and_counts_as_a_retry():
    queue = ClosureQueue()
    a, b = closure("a"), closure("b")
    queue.put(a)
    queue.put(b)
    assert queue.get() is a
    queue.put_back(a)
    assert queue.get() is a and a.attempts == 2 and queue.retried == 1
    queue.mark_finished(a, 1)
    assert not queue.done()
    assert queue.get() is b
    queue.mark_finished(b, 2)
    assert queue.done() and queue.wait(0) and a.remote_value.fetch() == 1


def test_a_failure_cancels_the_queue_and_is_raised_once():
    queue = ClosureQueue()
    first, rest = closure(0), [closure(i) for i in range(1, 4)]
    for c in [first] + rest:
        queue.put(c)
    assert queue.get() is first
    boom = errors.InternalError(None, None, "boom")
    queue.mark_failed(first, boom)
    for c in rest:
        with pytest.raises(errors.CancelledError, match="boom"):
            c.remote_value.fetch()
    with pytest.raises(errors.InternalError):
        queue.put(closure(9))  # raised by the next put, as TF's schedule does
    queue.put(closure(9))     # and only once
    assert not queue.done()


def test_wait_blocks_until_in_flight_closures_end():
    queue = ClosureQueue()
    queue.put(closure(1))
    c = queue.get()
    assert not queue.wait(0.05)
    threading.Timer(0.05, queue.mark_finished, (c, "done")).start()
    assert queue.wait(5)


def test_close_cancels_queued_closures_and_stops_getters():
    queue = ClosureQueue()
    queued = closure(1)
    queue.put(queued)
    got = []
    getter = threading.Thread(target=lambda: got.append(queue.get()))
    queue.close()
    getter.start()
    getter.join(5)
    assert got == [None]
    with pytest.raises(errors.CancelledError, match="closed"):
        queued.remote_value.fetch()


class FakeHealth:
    def __init__(self, kind):
        self.kind = kind

    def diagnose(self, worker, error):
        wrapped = errors.UnavailableError(None, None, f"ps gone: {error.message}") \
            if self.kind == "ps" else error
        return Diagnosis(self.kind, wrapped)


def test_the_policy_requeues_for_workers_and_fails_for_ps():
    queue = ClosureQueue()
    lost = errors.UnavailableError(None, None, "socket closed")
    c = closure(1)
    queue.put(c)
    queue.get()
    assert handle_closure_error(FakeHealth("worker"), queue, 1, c, lost) is True
    assert queue.get() is c  # queued again
    assert handle_closure_error(FakeHealth("ps"), queue, 1, c, lost) is False
    with pytest.raises(errors.UnavailableError, match="ps gone"):
        c.remote_value.fetch()


def test_unexplained_transient_errors_are_retried_a_few_times_only():
    queue = ClosureQueue()
    c = closure(1)
    queue.put(c)
    aborted = errors.AbortedError(None, None, "graph handle not found")
    for _ in range(MAX_TRANSIENT_RETRIES):
        assert queue.get() is c
        handle_closure_error(FakeHealth("none"), queue, 0, c, aborted)
    assert queue.get() is c
    handle_closure_error(FakeHealth("none"), queue, 0, c, aborted)
    with pytest.raises(errors.AbortedError):
        c.remote_value.fetch()
    with pytest.raises(errors.AbortedError):
        queue.wait(0)  # the pending error, raised once
    user = errors.InvalidArgumentError(None, None, "bad feed")
    d = closure(2)
    queue.put(d)
    queue.get()
    handle_closure_error(FakeHealth("none"), queue, 0, d, user)
    with pytest.raises(errors.InvalidArgumentError):
        d.remote_value.fetch()


def test_a_closure_whose_data_ran_dry_goes_to_another_worker_first_in_line():
    queue = ClosureQueue(workers=2)
    a, b = closure("a"), closure("b")
    queue.put(a)
    queue.put(b)
    assert queue.get(0) is a
    queue.ran_dry(a, 0, errors.OutOfRangeError(None, None, "End of sequence"))
    assert queue.get(0) is b  # worker 0 has no data for `a`: it takes the next one
    assert queue.get(1) is a and a.attempts == 1 and queue.retried == 0
    queue.mark_finished(a, 1)
    queue.mark_finished(b, 2)
    assert queue.done() and a.remote_value.fetch() == 1


def test_a_closure_fails_out_of_range_once_every_worker_ran_dry():
    queue = ClosureQueue(workers=2)
    a, later = closure("a"), closure("later")
    queue.put(a)
    queue.put(later)
    end = errors.OutOfRangeError(None, None, "End of sequence")
    queue.ran_dry(queue.get(0), 0, end)
    assert queue.get(1) is a
    queue.ran_dry(a, 1, end)
    with pytest.raises(errors.OutOfRangeError):
        a.remote_value.fetch()
    with pytest.raises(errors.CancelledError):
        later.remote_value.fetch()
    with pytest.raises(errors.OutOfRangeError):
        queue.wait(5)
