"""StepTable, the one owner of a worker's steps: a RunGraph claims and releases its
step, peers' waits and fetches end it, CleanupGraph ends it with an error."""
from __future__ import annotations

import pytest

from nbcluster import errors
from nbcluster.master_worker.worker_session import WorkerSession
from nbcluster.master_worker.worker_steps import StepTable
from nbcluster.runtime.resources import ResourceMgr
from nbcluster.runtime.step import CancellationManager, StepContext

pytestmark = pytest.mark.timeout(30)

SESSION = WorkerSession(("w", 0), {}, ResourceMgr(), False, None)
KEY = "/job:ps/replica:0/task:0/device:CPU:0;1;/job:w/replica:0/task:0/device:CPU:0;w:0;0:0"


def _table() -> StepTable:
    return StepTable(lambda step, step_id, key, ctx: None)


def test_a_step_ends_once_its_partitions_ran_and_peers_fetched_its_tensors():
    table = _table()
    first = table.claim(1, SESSION, CancellationManager(), remote_sends=2)
    assert table.claim(1, None, CancellationManager(), remote_sends=0) is first  # 2nd partition
    assert first.session is SESSION and first.running == 2 and first.unfetched == 2
    table.release(1, first)
    table.release(1, first, loop_sends=1)  # a loop's Send produced one more for a peer
    assert table.find(1) is first  # three tensors are still to be fetched
    table.fetched(1, first, 2)
    assert table.find(1) is first
    table.fetched(1, first, 1)
    assert table.find(1) is None and table.ids() == []


def test_a_wait_on_a_step_nobody_began_leaves_nothing_behind():
    table = _table()
    step = table.begin_wait(5)
    assert table.ids() == [5] and step.waiters == 1
    table.end_wait(5, step)
    assert table.ids() == []
    waiting = table.begin_wait(6)
    claimed = table.claim(6, SESSION, CancellationManager(), remote_sends=0)
    assert claimed is waiting
    table.end_wait(6, waiting)
    assert table.find(6) is claimed  # begun by a RunGraph: it stays until it runs


def test_cleanup_ends_a_step_and_a_late_run_graph_fails_at_once():
    table = _table()
    cancel = CancellationManager()
    step = table.claim(3, SESSION, cancel, remote_sends=1)
    error = errors.CancelledError(None, None, "Step 3 was cancelled")
    assert table.end(3, error) is step
    assert cancel.error is error and step.rendezvous.error is error
    late = CancellationManager()
    again = table.claim(3, SESSION, late, remote_sends=0)  # a RunGraph after the cleanup
    assert again is not step and late.error is error and again.rendezvous.error is error
    assert table.end(99, error) is None  # a step never seen: remembered, nothing to wake
    assert table.get(99).rendezvous.error is error


def test_a_finished_step_and_the_tensors_it_received_are_freed_without_the_cyclic_gc():
    import gc
    import weakref

    import numpy as np

    asked = []
    table = StepTable(lambda step, step_id, key, ctx: asked.append((step, key)) or
                      np.ones(3, np.float32))
    gc.disable()  # what frees them must be their reference counts alone
    try:
        step = table.claim(7, SESSION, CancellationManager(), remote_sends=0)
        received = np.zeros(4, np.float32)
        step.rendezvous.add_stream([KEY], iter([[(KEY, received)]]), lambda batch: batch)
        ctx = StepContext(7, ResourceMgr(), "w", step.rendezvous)  # a Recv pulls the stream
        assert step.rendezvous.recv_local(KEY, ctx) is received
        del ctx
        fetch = step.rendezvous._remote_recv  # what a Recv of a peer's tensor calls
        assert fetch(7, KEY, None).tolist() == [1, 1, 1]
        assert asked == [(step, KEY)]  # the step itself reaches the kernel
        asked.clear()
        freed = weakref.ref(step), weakref.ref(step.rendezvous), weakref.ref(received)
        table.release(7, step)
        del step, received
        assert [ref() is None for ref in freed] == [True, True, True]
    finally:
        gc.enable()
    # whatever still holds a freed step's fetch cannot fetch for it
    with pytest.raises(errors.CancelledError, match="Step 7 ended"):
        fetch(7, KEY, None)
