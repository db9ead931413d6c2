"""A peer's pushed stream: the thread that lands its tensors writes them, held
sends are written at their flush, and the serving thread wakes only to end
the stream, write what a delivery left, or fail."""
from __future__ import annotations

import threading
import time
from types import SimpleNamespace

import numpy as np
import pytest

from nbcluster import errors
from nbcluster.master_worker.rendezvous import StepRendezvous, make_key
from nbcluster.master_worker.task_counters import TaskCounters
from nbcluster.master_worker.tensor_serving import TensorServer
from nbcluster.master_worker.worker_steps import StepTable

pytestmark = pytest.mark.timeout(60)

PS = "/job:ps/replica:0/task:0/device:CPU:0"
WORKER = "/job:worker/replica:0/task:0/device:CPU:0"


def _key(name: str) -> str:
    return make_key(PS, 1, WORKER, name)


class _Sink:
    """A deliver callback that records each batch and the thread it ran on."""

    def __init__(self, leave=None) -> None:
        self.batches: list = []
        self.threads: list = []
        self._leave = leave  # batch -> a leftover callable, or None

    def __call__(self, batch: list):
        self.batches.append([key for key, _ in batch])
        self.threads.append(threading.get_ident())
        return self._leave(batch) if self._leave is not None else None


def _serve(rendezvous, push, deadline=None, stopped=lambda: False, idle=None) -> dict:
    """await_push on a thread of its own, as a connection's thread runs it."""
    out: dict = {"leftovers": 0}

    def run() -> None:
        try:
            while True:
                leftover = rendezvous.await_push(push, deadline, stopped, idle)
                if leftover is None:
                    out["ended"] = True
                    return
                out["leftovers"] += 1
                leftover()
                rendezvous.resume_push(push)
        except BaseException as e:  # noqa: BLE001 - the test inspects it
            out["error"] = e

    out["thread"] = threading.Thread(target=run, daemon=True)
    out["thread"].start()
    return out


def test_the_sending_thread_writes_a_pushed_stream():
    rendezvous = StepRendezvous(7)
    sink = _Sink()
    push = rendezvous.add_push([_key("a"), _key("b")], sink)
    served = _serve(rendezvous, push)
    rendezvous.send(_key("a"), np.float32(1))
    rendezvous.send(_key("b"), np.float32(2))
    served["thread"].join(10)
    assert served.get("ended") and "error" not in served
    assert sink.batches == [[_key("a")], [_key("b")]]
    assert sink.threads == [threading.get_ident()] * 2  # the sender's, not the server's
    assert served["leftovers"] == 0


def test_landed_keys_are_written_at_once_and_held_sends_at_their_flush():
    rendezvous = StepRendezvous(7)
    rendezvous.send(_key("a"), np.float32(1))  # before the peer asked
    sink = _Sink()
    push = rendezvous.add_push([_key("a"), _key("b"), _key("c")], sink)
    assert sink.batches == [[_key("a")]]
    served = _serve(rendezvous, push)
    rendezvous.hold()
    rendezvous.send(_key("c"), np.float32(3))
    rendezvous.send(_key("b"), np.float32(2))
    assert sink.batches == [[_key("a")]]  # held: nobody is written yet
    rendezvous.flush()
    assert sink.batches == [[_key("a")], [_key("b"), _key("c")]]  # one batch, the stream's order
    rendezvous.unhold()
    served["thread"].join(10)
    assert served.get("ended")


def test_what_a_delivery_leaves_is_written_by_the_serving_thread_in_order():
    rendezvous = StepRendezvous(7)
    written: list = []
    release = threading.Event()

    def leave(batch):
        keys = [key for key, _ in batch]
        if keys == [_key("a")]:
            def rest():  # on the serving thread, while the sender lands "b"
                assert release.wait(10)
                written.append(("rest", keys, threading.get_ident()))
            return rest
        written.append(("now", keys, threading.get_ident()))
        return None

    push = rendezvous.add_push([_key("a"), _key("b")], _Sink(leave))
    served = _serve(rendezvous, push)
    rendezvous.send(_key("a"), np.float32(1))
    rendezvous.send(_key("b"), np.float32(2))  # must not overtake "a"'s rest
    assert written == []
    release.set()
    served["thread"].join(10)
    assert served.get("ended") and served["leftovers"] == 1
    server = served["thread"].ident
    assert written == [("rest", [_key("a")], server), ("now", [_key("b")], server)]


def test_an_abort_while_keys_are_left_fails_the_stream():
    rendezvous = StepRendezvous(7)
    push = rendezvous.add_push([_key("a")], _Sink())
    served = _serve(rendezvous, push)
    rendezvous.abort(errors.AbortedError(None, None, "step 7 ended"))
    served["thread"].join(10)
    assert isinstance(served.get("error"), errors.AbortedError)


def test_a_failing_delivery_fails_the_stream_not_the_sender():
    def broken(batch):
        raise BrokenPipeError("the peer went away")

    rendezvous = StepRendezvous(7)
    push = rendezvous.add_push([_key("a"), _key("b")], broken)
    served = _serve(rendezvous, push)
    rendezvous.send(_key("a"), np.float32(1))  # raises nothing here
    served["thread"].join(10)
    assert isinstance(served.get("error"), BrokenPipeError)


def test_a_stopped_caller_ends_the_wait_on_wake_and_a_deadline_fails_it():
    rendezvous = StepRendezvous(7)
    stop = threading.Event()
    push = rendezvous.add_push([_key("a")], _Sink())
    served = _serve(rendezvous, push, stopped=stop.is_set)
    stop.set()
    rendezvous.wake()
    served["thread"].join(10)
    assert served.get("ended") and "error" not in served

    late = rendezvous.add_push([_key("b")], _Sink())
    with pytest.raises(errors.DeadlineExceededError, match="Timed out"):
        rendezvous.await_push(late, time.monotonic() + 0.05)


def test_a_removed_push_is_written_no_more():
    rendezvous = StepRendezvous(7)
    sink = _Sink()
    push = rendezvous.add_push([_key("a")], sink)
    rendezvous.remove_push(push)
    rendezvous.send(_key("a"), np.float32(1))
    assert sink.batches == []
    # A sender that picked the push just before it was removed writes nothing either
    # (its connection may be closed by then).
    rendezvous._run_push(push)
    assert sink.batches == []


class _Idle:
    """An `idle` wait as a connection's thread does it: until a signal, or
    its connection's next request (True)."""

    def __init__(self) -> None:
        self.cond = threading.Condition()
        self.signals = 0
        self.request = False
        self.calls = 0

    def wakeup(self) -> None:  # called under the rendezvous lock: only signals
        with self.cond:
            self.signals += 1
            self.cond.notify_all()

    def next_request(self) -> None:
        with self.cond:
            self.request = True
            self.cond.notify_all()

    def __call__(self, timeout):
        with self.cond:
            self.calls += 1
            seen = self.signals
            self.cond.wait_for(lambda: self.request or self.signals != seen, timeout)
            return self.request


def test_with_an_idle_wait_the_stream_end_signals_nobody_and_the_next_request_ends_it():
    rendezvous = StepRendezvous(7)
    idle = _Idle()
    sink = _Sink()
    push = rendezvous.add_push([_key("a")], sink, idle.wakeup)
    served = _serve(rendezvous, push, idle=idle)
    with idle.cond:
        assert idle.cond.wait_for(lambda: idle.calls == 1, 10)  # the thread waits in idle
    rendezvous.send(_key("a"), np.float32(1))
    assert sink.batches == [[_key("a")]] and sink.threads == [threading.get_ident()]
    assert idle.signals == 0 and served["thread"].is_alive()  # the end woke nobody
    idle.next_request()  # the consumer read it all and asks again
    served["thread"].join(10)
    assert served.get("ended") and "error" not in served


def test_with_an_idle_wait_a_leftover_or_an_abort_signals_the_thread():
    rendezvous = StepRendezvous(7)
    idle = _Idle()
    written = []
    push = rendezvous.add_push([_key("a"), _key("b")],
                               _Sink(lambda batch: lambda: written.append(batch[0][0])),
                               idle.wakeup)
    served = _serve(rendezvous, push, idle=idle)
    rendezvous.send(_key("a"), np.float32(1))  # its write is left to the thread
    with idle.cond:
        assert idle.cond.wait_for(lambda: idle.signals >= 1, 10)
    rendezvous.abort(errors.AbortedError(None, None, "step 7 ended"))
    served["thread"].join(10)
    assert written == [_key("a")] and idle.signals == 2
    assert isinstance(served.get("error"), errors.AbortedError)


def _held_writer(events: list, done: str, rest=None):
    """A `deliver` that says it began (`in_write`), waits to be let go
    (`finish_write`), then records `done` and returns `rest` (what it left)."""
    in_write, finish_write = threading.Event(), threading.Event()

    def deliver(batch):
        in_write.set()
        assert finish_write.wait(10)
        events.append(done)
        return rest
    return deliver, in_write, finish_write

def test_an_abort_during_a_write_fails_the_stream_only_once_that_write_ended():
    # The serving thread writes the error frame: it must not interleave with
    # a batch a producer is writing on the same connection.
    rendezvous = StepRendezvous(7)
    events: list = []
    slow, in_write, finish_write = _held_writer(events, "written")
    push = rendezvous.add_push([_key("a"), _key("b")], slow)
    sender = threading.Thread(target=rendezvous.send, args=(_key("a"), np.float32(1)))
    sender.start()
    assert in_write.wait(10)
    failed: list = []

    def serve() -> None:
        try:
            rendezvous.await_push(push)
        except errors.AbortedError as e:
            events.append("failed")
            failed.append(e)

    server = threading.Thread(target=serve, daemon=True)
    server.start()
    rendezvous.abort(errors.AbortedError(None, None, "step 7 ended"))
    time.sleep(0.2)  # room for a wrong early failure to show; the right one waits anyway
    finish_write.set()
    server.join(10)
    sender.join(10)
    assert events == ["written", "failed"] and failed


def test_removing_a_failed_stream_waits_for_a_write_a_send_began_and_returns_its_rest():
    """Regression: between `await_push` raising (an abort, a deadline) and
    `remove_push`, a Send landed a key and began writing its batch; the
    removal did not wait for it, so the serving thread's error frame went onto
    the connection during (or inside) that batch, and a partial write's rest
    was never written: the consumer's framing was lost."""
    rendezvous = StepRendezvous(7)
    events: list = []
    partial, in_write, finish_write = _held_writer(
        events, "batch begun", lambda: events.append("batch rest"))
    push = rendezvous.add_push([_key("a"), _key("b")], partial, lambda: None)
    rendezvous.abort(errors.AbortedError(None, None, "step 7 ended"))
    with pytest.raises(errors.AbortedError):
        rendezvous.await_push(push)  # nothing was being written: it fails at once
    sender = threading.Thread(target=rendezvous.send, args=(_key("a"), np.float32(1)))
    sender.start()  # the key lands before the serving thread removed the push
    assert in_write.wait(10)
    rest: list = []

    def remove() -> None:
        rest.append(rendezvous.remove_push(push))
        events.append("removed")  # the serving thread writes its error frame next

    remover = threading.Thread(target=remove, daemon=True)
    remover.start()
    for _ in range(1000):  # until it waits for the write (or wrongly returned)
        with rendezvous._cond:
            if push.draining or not remover.is_alive():
                break
        time.sleep(0.01)
    finish_write.set()
    sender.join(10)
    remover.join(10)
    assert events == ["batch begun", "removed"]
    rest[0]()  # what the serving thread writes before its error frame
    assert events[-1] == "batch rest"
    rendezvous.send(_key("b"), np.float32(2))
    assert events[-1] == "batch rest"  # removed: no more writes


def test_a_stream_whose_last_keys_were_written_as_it_failed_ends_well_after_their_rest():
    """Regression: the step was aborted (its wait raised), and before the push was
    removed a Send wrote the stream's last keys, partly. The serving thread
    then wrote an error frame after a stream that had ended (the consumer read
    it as its pooled connection's next reply) and never wrote the batch's rest."""
    steps = StepTable(lambda *args: None)  # no peers: nothing is fetched from one
    server = TensorServer(SimpleNamespace(job="ps", task=0, incarnation=1), steps,
                          TaskCounters(), lambda: set())
    step = steps.begin_wait(7)  # the step the stream waits on
    rendezvous = step.rendezvous
    rendezvous.abort(errors.AbortedError(None, None, "step 7 ended"))
    written: list = []

    def deliver(batch):
        written.append([key for key, _ in batch])
        return lambda: written.append("rest")  # the socket took part of it

    remove = rendezvous.remove_push

    def late_send_then_remove(push):
        rendezvous.send(_key("a"), np.float32(1))  # lands just before the removal
        return remove(push)

    rendezvous.remove_push = late_send_then_remove
    try:
        server.push_tensors(7, [_key("a")], deliver)  # no error: the stream was complete
    finally:
        steps.end_wait(7, step)
    assert written == [[_key("a")], "rest"]
