"""A step's rendezvous: streamed tensors are read by the recv that waits for
them, several streams get a reader each, and held sends wake no one until flushed."""
from __future__ import annotations

import threading
import time

import numpy as np
import pytest

from nbcluster import errors
from nbcluster.master_worker.rendezvous import StepRendezvous, make_key
from nbcluster.runtime.resources import ResourceMgr
from nbcluster.runtime.step import StepContext

pytestmark = pytest.mark.timeout(60)

PS = "/job:ps/replica:0/task:0/device:CPU:0"
WORKER = "/job:worker/replica:0/task:0/device:CPU:0"


def _key(name: str) -> str:
    return make_key(PS, 1, WORKER, name)


def _context(rendezvous, timeout: float = 10.0) -> StepContext:
    return StepContext(1, ResourceMgr(), "worker", rendezvous,
                       deadline=time.monotonic() + timeout)


def _remote(step_id, key, ctx):
    raise AssertionError(f"{key} is streamed: no RecvTensor may be sent for it")


def test_a_waiting_recv_reads_its_stream_on_its_own_thread():
    readers = []

    def batches():
        readers.append(threading.get_ident())
        yield [(_key("a"), np.float32(1))]
        readers.append(threading.get_ident())
        yield [(_key("b"), np.float32(2))]

    rendezvous = StepRendezvous(7, _remote)
    rendezvous.add_stream([_key("a"), _key("b")], batches(), lambda batch: batch)
    assert rendezvous.lands_here(_key("a")) and not rendezvous.lands_here(
        make_key(PS, 1, WORKER, "unstreamed"))
    ctx = _context(rendezvous)
    assert rendezvous.recv_local(_key("b"), ctx) == 2
    assert rendezvous.recv_local(_key("a"), ctx) == 1
    assert readers == [threading.get_ident()] * 2


def test_keys_from_two_streams_get_a_reader_each():
    # The first stream sends only once the second's tensor was read: one
    # thread blocked on the first stream would never see it.
    second_read = threading.Event()

    def first():
        assert second_read.wait(10), "the second stream was never read"
        yield [(_key("a"), np.float32(1))]

    def second():
        yield [(_key("b"), np.float32(2))]

    def read(batch):
        second_read.set()
        return batch

    rendezvous = StepRendezvous(7, _remote)
    rendezvous.add_stream([_key("a")], first(), lambda batch: batch)
    rendezvous.add_stream([_key("b")], second(), read)
    ctx = _context(rendezvous)
    wanted = [_key("a"), _key("b")]
    while len(rendezvous.landed(wanted)) < len(wanted):
        left = [k for k in wanted if not rendezvous.landed([k])]
        rendezvous.wait_any(lambda: left, ctx)
    assert rendezvous.landed(wanted) == set(wanted)


def test_a_waiter_that_also_wants_a_local_tensor_leaves_the_stream_to_a_reader():
    # The stream sends only once the local tensor was seen: a waiter blocked
    # reading the stream would never see it land.
    local = make_key(WORKER, 1, WORKER, "local")
    seen = threading.Event()
    rendezvous = StepRendezvous(7, _remote)

    def batches():
        rendezvous.send(local, np.float32(3))  # lands while the stream is being read
        assert seen.wait(10), "the local tensor was never seen"
        yield [(_key("a"), np.float32(1))]

    rendezvous.add_stream([_key("a"), _key("b")], batches(), lambda batch: batch)
    ctx = _context(rendezvous)
    rendezvous.wait_any(lambda: [_key("a"), local], ctx)
    assert rendezvous.landed([local]) == {local}
    seen.set()
    rendezvous.wait_any(lambda: [_key("a")], ctx)
    assert rendezvous.landed([_key("a")]) == {_key("a")}


def test_a_waiter_leaves_the_stream_to_a_reader_while_it_could_want_more():
    # As above, with the local key not yet wanted (its Recv is not ready) but
    # one the waiter could want: it must not start reading the stream either.
    local = make_key(WORKER, 1, WORKER, "local")
    seen = threading.Event()
    rendezvous = StepRendezvous(7, _remote)

    wanted = [_key("a")]

    def batches():
        rendezvous.send(local, np.float32(3))
        wanted.append(local)  # its Recv is ready now
        rendezvous.want(wanted)
        assert seen.wait(10), "the local tensor was never seen"
        yield [(_key("a"), np.float32(1))]

    rendezvous.add_stream([_key("a"), _key("b")], batches(), lambda batch: batch)
    ctx = _context(rendezvous)
    rendezvous.wait_any(lambda: list(wanted), ctx, lambda: [_key("a"), local])
    assert rendezvous.landed([local]) == {local}
    seen.set()


def test_a_failing_stream_aborts_the_step():
    def batches():
        raise errors.UnavailableError(None, None, "peer went away")
        yield  # a generator

    rendezvous = StepRendezvous(7, _remote)
    rendezvous.add_stream([_key("a")], batches(), lambda batch: batch)
    with pytest.raises(errors.UnavailableError, match="peer went away"):
        rendezvous.recv_local(_key("a"), _context(rendezvous))


def test_held_sends_wake_waiters_only_once_flushed():
    rendezvous = StepRendezvous(7)
    key = make_key(WORKER, 1, WORKER, "t")
    got = []
    waiter = threading.Thread(
        target=lambda: got.append(rendezvous.recv_local(key, None, time.monotonic() + 10)))
    rendezvous.hold()
    waiter.start()
    rendezvous.send(key, 5)
    waiter.join(0.3)
    assert waiter.is_alive() and got == []  # the value is there, no one was woken
    assert rendezvous.landed([key]) == {key}
    rendezvous.flush()
    waiter.join(10)
    assert got == [5]
    rendezvous.unhold()
