"""A master closes sessions left unused past its idle limit, never one that
is running a step, and its handles cannot be guessed."""
from __future__ import annotations

import pytest

import nbcluster as tf
from nbcluster import errors
from nbcluster.master_worker import master as master_module
from nbcluster.master_worker.master import Master
from nbcluster.master_worker.transport import InProcessWorkerClient
from nbcluster.master_worker.worker import Worker
from nbcluster.runtime.devices import local_devices

pytestmark = pytest.mark.timeout(60)


class _Cache:
    def __init__(self) -> None:
        self.worker = Worker("worker", 0, local_devices("worker", 0))

    def tasks(self) -> list:
        return [("worker", 0)]

    def get(self, job: str, task: int):
        return InProcessWorkerClient(self.worker)


def _nodes():
    with tf.Graph().as_default() as g:
        tf.constant(2.0, name="two")
    return [op.to_node() for op in g.get_operations()]


def test_an_idle_session_is_closed_at_the_next_create(monkeypatch):
    monkeypatch.setenv(master_module.IDLE_ENV, "600")
    master = Master(("worker", 0), _Cache())
    assert master.idle_limit_s == 600
    old, _ = master.create_session(_nodes())
    kept, _ = master.create_session(_nodes())
    assert float(master.run_step(kept, {}, ["two:0"], [])[0][0]) == 2.0
    master._sessions[old].last_used -= 601  # as if ten minutes had passed unused
    master.create_session(_nodes())
    with pytest.raises(errors.AbortedError, match="not found"):
        master.run_step(old, {}, ["two:0"], [])
    assert float(master.run_step(kept, {}, ["two:0"], [])[0][0]) == 2.0


def test_a_session_with_a_step_in_flight_is_not_idle():
    master = Master(("worker", 0), _Cache())
    handle, _ = master.create_session(_nodes())
    session = master._sessions[handle]
    session.last_used -= master.idle_limit_s + 1
    session.steps.add((1, ()))
    master.create_session(_nodes())
    assert handle in master._sessions


def test_zero_means_never(monkeypatch):
    monkeypatch.setenv(master_module.IDLE_ENV, "0")
    master = Master(("worker", 0), _Cache())
    handle, _ = master.create_session(_nodes())
    master._sessions[handle].last_used -= 10 ** 9
    master.create_session(_nodes())
    assert float(master.run_step(handle, {}, ["two:0"], [])[0][0]) == 2.0


def test_handles_carry_64_random_bits():
    master = Master(("worker", 0), _Cache())
    handle, _ = master.create_session(_nodes())
    assert len(handle.rpartition("-")[2]) == 16
