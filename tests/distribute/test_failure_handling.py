"""Probing tasks: a task waited for is reached by a probe that is in flight when it
comes up, and a failed probe returns only after its time, so a loop of them never spins."""
from __future__ import annotations

import socket
import threading
import time

import pytest

from nbcluster.distribute.failure_handling import probe, probe_waiting

pytestmark = pytest.mark.timeout(120)


def test_a_probe_in_flight_reaches_a_task_that_comes_up_during_it(cluster_factory):
    # A fail-fast probe only notices a task that bound meanwhile when gRPC's backup
    # poller looks at the channel (every 5 s, in a process that serves nothing).
    cluster = cluster_factory({"worker": 1})
    address = cluster.spec.task_address("worker", 0)
    first = probe(address)
    cluster.kill("worker", 0)
    assert probe(address) is None
    found = {}
    waiting = threading.Thread(target=lambda: found.update(value=probe_waiting(address, 60.0)))
    waiting.start()
    cluster.restart("worker", 0)
    waiting.join(90)
    assert not waiting.is_alive()
    assert found["value"] is not None and found["value"] != first  # the new incarnation


def test_a_failed_probe_returns_after_its_time_not_at_once():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        address = f"127.0.0.1:{s.getsockname()[1]}"  # refuses: nothing listens
    began = time.monotonic()
    assert probe_waiting(address, 0.5) is None
    assert time.monotonic() - began >= 0.5

