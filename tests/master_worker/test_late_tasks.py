"""A session waits for tasks that are not up yet (cluster managers start tasks
in any order), bounded by its operation timeout; a task that died after the
master reached it still fails at once."""
from __future__ import annotations

import json
import logging
import subprocess
import sys
import threading

import numpy as np
import pytest

import nbcluster as tf
from nbcluster import errors
from nbcluster.launch import child_env, free_ports
from nbcluster.master_worker import session_cluster
from nbcluster.master_worker.session_cluster import DeviceDirectory
from nbcluster.proto import config_pb2, worker_pb2
from nbcluster.server import parse_ready_line

pytestmark = pytest.mark.timeout(120)
PS = "/job:ps/replica:0/task:0"


class _LateWorker:
    """A worker client whose task refuses connections for its first `refusals` calls."""

    def __init__(self, refusals: int) -> None:
        self.refusals = refusals
        self.calls = 0

    def get_status(self, timeout=None):
        self.calls += 1
        if self.calls <= self.refusals:
            raise errors.UnavailableError(None, None, "failed to connect to all addresses")
        device = config_pb2.DeviceAttributes(name=f"{PS}/device:CPU:0", device_type="CPU")
        return worker_pb2.GetStatusResponse(device_attributes=[device])


@pytest.fixture
def quick_retries(monkeypatch):
    monkeypatch.setattr(session_cluster, "_RETRY_S", 0.01)
    monkeypatch.setattr(session_cluster, "_FIRST_LOG_S", 0.0)


def test_first_listing_retries_until_the_task_answers_and_logs_whom_it_waits_for(
        quick_retries, caplog):
    client = _LateWorker(refusals=5)
    with caplog.at_level(logging.WARNING, logger="nbcluster.master_worker"):
        found = DeviceDirectory(set(), first_contact_wait=30).get(("ps", 0), client, 1.0, PS)
    assert [d.name for d in found] == [f"{PS}/device:CPU:0"]
    assert client.calls == 6
    assert any(f"still waiting for response from worker: {PS}" in r.getMessage()
               for r in caplog.records)


def test_a_task_never_up_is_unavailable_naming_it_after_the_wait(quick_retries):
    client = _LateWorker(refusals=10 ** 9)
    with pytest.raises(errors.UnavailableError) as info:
        DeviceDirectory(set(), first_contact_wait=0.2).get(("ps", 0), client, 1.0, PS)
    assert PS in info.value.message and "waited 0.2s" in info.value.message
    assert client.calls > 1


def test_a_task_reached_before_fails_at_once(quick_retries):
    contacted: set = set()
    DeviceDirectory(contacted, 30).get(("ps", 0), _LateWorker(refusals=0), 1.0, PS)
    gone = _LateWorker(refusals=10 ** 9)
    with pytest.raises(errors.UnavailableError) as info:  # a new session, the task died
        DeviceDirectory(contacted, 30).get(("ps", 0), gone, 1.0, PS)
    assert gone.calls == 1 and "waited" not in info.value.message


# -- task processes (`python -m nbcluster.server`) over gRPC on 127.0.0.1 ------

@pytest.fixture
def tasks():
    started: list = []

    def start(cluster: dict, job: str) -> subprocess.Popen:
        proc = subprocess.Popen([sys.executable, "-m", "nbcluster.server", "--cluster",
                                 json.dumps(cluster), "--job", job, "--task", "0"],
                                env=child_env(), stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True)
        started.append(proc)
        assert parse_ready_line(proc.stdout.readline()) is not None, proc.stderr.read()
        return proc

    yield start
    for proc in started:
        if proc.poll() is None:
            proc.kill()
        proc.communicate()


def _ps_step():
    with tf.device("/job:ps/task:0"):
        v = tf.Variable(np.float32(2.0))
    with tf.device("/job:worker/task:0"):
        y = v * 3.0
    return v, y


def test_the_first_step_waits_for_a_ps_that_starts_late(tasks):
    ps, worker = free_ports(2)
    cluster = {"ps": [f"127.0.0.1:{ps}"], "worker": [f"127.0.0.1:{worker}"]}
    worker_proc = tasks(cluster, "worker")
    late = threading.Timer(3.0, tasks, args=(cluster, "ps"))
    late.start()
    try:
        with tf.Graph().as_default():
            v, y = _ps_step()
            with tf.Session(f"grpc://127.0.0.1:{worker}") as sess:
                sess.run(v.initializer)  # placed while the ps is not up yet
                assert sess.run(y) == 6.0
    finally:
        late.join()
    worker_proc.terminate()
    _, err = worker_proc.communicate(timeout=30)
    assert f"still waiting for response from worker: {PS}" in err


def test_a_client_waits_for_its_master_s_task_to_start(tasks):
    """A client started before the task its session targets (TF's client waits too)."""
    (worker,) = free_ports(1)
    cluster = {"worker": [f"127.0.0.1:{worker}"]}
    late = threading.Timer(3.0, tasks, args=(cluster, "worker"))
    late.start()
    try:
        with tf.Graph().as_default():
            with tf.Session(f"grpc://127.0.0.1:{worker}") as sess:
                assert sess.run(tf.constant(2.0) * 3.0) == 6.0
    finally:
        late.join()


def test_a_master_that_never_starts_is_unavailable_naming_it():
    (port,) = free_ports(1)
    config = tf.ConfigProto(operation_timeout_in_ms=1500)
    with tf.Graph().as_default():
        with pytest.raises(errors.UnavailableError) as info:
            tf.Session(f"grpc://127.0.0.1:{port}", config=config).run(tf.constant(1.0))
    assert f"grpc://127.0.0.1:{port}" in info.value.message and "1.5s" in info.value.message


def test_a_ps_that_never_starts_is_unavailable_naming_it(tasks):
    ps, worker = free_ports(2)
    tasks({"ps": [f"127.0.0.1:{ps}"], "worker": [f"127.0.0.1:{worker}"]}, "worker")
    with tf.Graph().as_default():
        v, _ = _ps_step()
        config = tf.ConfigProto(operation_timeout_in_ms=1500)
        with tf.Session(f"grpc://127.0.0.1:{worker}", config=config) as sess:
            with pytest.raises(errors.UnavailableError) as info:
                sess.run(v.initializer)
    assert PS in info.value.message and "waited 1.5s" in info.value.message


def test_a_ps_killed_after_it_was_reached_fails_without_waiting(cluster_factory):
    cluster = cluster_factory({"ps": 1, "worker": 1})
    with tf.Graph().as_default():
        v, y = _ps_step()
        with tf.Session(cluster.target("worker", 0)) as sess:
            sess.run(v.initializer)
            assert sess.run(y) == 6.0
        cluster.kill("ps", 0)
        with tf.Session(cluster.target("worker", 0)) as sess:  # lists devices afresh
            with pytest.raises(errors.UnavailableError) as info:
                sess.run(y)
    assert PS in info.value.message and "waited" not in info.value.message
