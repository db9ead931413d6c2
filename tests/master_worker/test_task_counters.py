"""TaskCounters (GetStatus's steps run and bytes sent / received) keep exact totals
however many threads bump them: the counter alone, and through a Worker's RunGraph,
RecvTensor and RecvTensors paths at once."""
from __future__ import annotations

import sys
import threading

import numpy as np
import pytest

from nbcluster.framework.node import Node
from nbcluster.master_worker.rendezvous import make_key
from nbcluster.master_worker.task_counters import TaskCounters
from nbcluster.master_worker.worker import Worker
from nbcluster.proto import worker_pb2
from nbcluster.rpc.serving import serve_run_graph
from nbcluster.runtime.devices import local_devices
from nbcluster.runtime.step import CancellationManager

pytestmark = pytest.mark.timeout(120)

THREADS = 8


@pytest.fixture
def fast_switching():
    """Threads switch as often as CPython allows, so a lost update would show."""
    before = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    try:
        yield
    finally:
        sys.setswitchinterval(before)


def _hammer(work, n_threads: int = THREADS) -> None:
    start = threading.Barrier(n_threads)
    failures: list = []

    def run(i: int) -> None:
        try:
            start.wait(30)
            work(i)
        except BaseException as e:  # noqa: BLE001 - reported by the test below
            failures.append(e)

    threads = [threading.Thread(target=run, args=(i,)) for i in range(n_threads)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert not any(t.is_alive() for t in threads), "a hammering thread hung"
    assert not failures, failures


def test_the_counters_keep_exact_totals_under_threads(fast_switching):
    counters = TaskCounters()
    rounds = 20000

    def work(i: int) -> None:
        for _ in range(rounds):
            counters.sent(3)
            counters.received(i + 1)
            counters.step_ran()
            counters.sent(0)  # nothing: changes nothing

    _hammer(work)
    assert counters.snapshot() == (THREADS * rounds, THREADS * rounds * 3,
                                   rounds * sum(range(1, THREADS + 1)))
    assert (counters.steps_run, counters.bytes_sent, counters.bytes_received) == \
        counters.snapshot()


def _worker():
    worker = Worker("w", 0, local_devices("w", 0))
    device = next(iter(worker.devices))
    return worker, device


def test_a_worker_counts_every_fed_and_served_byte_from_many_threads(fast_switching):
    worker, device = _worker()
    handle = worker.register_graph("s", [Node("noop", "NoOp", (), device)])
    steps_each, fed = 40, np.arange(25, dtype=np.float32)  # 100 bytes a RunGraph

    def run_graphs(i: int) -> None:
        for j in range(steps_each):
            req = worker_pb2.RunGraphRequest(session_handle="s", graph_handle=handle,
                                             step_id=1000 * (i + 1) + j)
            serve_run_graph(worker, req, [(f"feed{i}", fed)], 30.0)

    _hammer(run_graphs)
    status = worker.get_status()
    assert status.steps_run == THREADS * steps_each
    assert status.bytes_received == THREADS * steps_each * fed.nbytes
    assert worker._step_table.steps == {}  # each step ended by itself

    # Peers fetch one step's tensors, by RecvTensor and by RecvTensors' stream at once.
    peer_device = "/job:peer/replica:0/task:0/device:CPU:0"
    keys = [make_key(device, worker.incarnation, peer_device, f"t{k}")
            for k in range(THREADS * 6)]
    values = {key: np.full(k + 1, k, np.float64) for k, key in enumerate(keys)}
    # held as a RunGraph of step 7 holds it, whose Sends produced them for peers
    step = worker._step_table.claim(7, worker._default, CancellationManager(), len(keys))
    for key, value in values.items():
        step.rendezvous.send(key, value)
    got: dict = {}

    def fetch(i: int) -> None:
        mine = keys[i * 6:(i + 1) * 6]
        for key in mine[:3]:
            got[key] = worker.recv_tensor(7, key, 30.0)
        for batch in worker.recv_tensors(7, mine[3:], 30.0):
            got.update(batch)

    _hammer(fetch)
    assert set(got) == set(keys)
    for key, value in got.items():
        np.testing.assert_array_equal(value, values[key])
    assert worker.get_status().bytes_sent == sum(v.nbytes for v in values.values())
    assert worker._step_table.steps == {7: step}  # its partitions still run
    worker._step_table.release(7, step)
    assert worker._step_table.steps == {}  # every tensor fetched, every partition ran
