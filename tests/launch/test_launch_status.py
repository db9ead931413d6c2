"""launch/status.py: TaskStatus rows from GetStatus, device memory, a closed StatusClient."""
from __future__ import annotations

import os

import pytest

from nbcluster import errors
from nbcluster.launch.status import StatusClient, task_status
from nbcluster.proto import worker_pb2

pytestmark = pytest.mark.timeout(60)

GIB = 1 << 30


def _response() -> worker_pb2.GetStatusResponse:
    response = worker_pb2.GetStatusResponse(
        pid=42, host="h", steps_run=3, bytes_sent=10, bytes_received=20, active_sessions=1,
        last_error="", job_name="worker", task_index=0, incarnation_start_unix_micros=1)
    response.device_attributes.add(name="/job:worker/replica:0/task:0/device:CPU:0",
                                   device_type="CPU", memory_limit=24 * GIB)
    response.device_attributes.add(name="/job:worker/replica:0/task:0/device:GPU:0",
                                   device_type="GPU", memory_limit=80 * GIB)
    return response


def test_task_status_carries_each_device_memory():
    status = task_status("worker", 0, "127.0.0.1:1", _response(), "up")
    assert status.devices == ("/job:worker/replica:0/task:0/device:CPU:0",
                              "/job:worker/replica:0/task:0/device:GPU:0")
    assert status.device_memory == (24 * GIB, 80 * GIB)
    assert (status.pid, status.steps_run, status.bytes_sent, status.bytes_received) == \
        (42, 3, 10, 20)


def test_a_silent_task_has_no_devices_and_its_launcher_pid():
    status = task_status("worker", 0, "127.0.0.1:1", None, "down", pid=7, host="here")
    assert (status.devices, status.device_memory, status.pid, status.uptime_s) == \
        ((), (), 7, None)


def test_a_real_task_reports_the_host_memory_for_its_cpu(local_cluster):
    host = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    for status in local_cluster.status():
        assert status.state == "up"
        assert status.device_memory == (host,) * len(status.devices) and status.devices


def test_a_closed_status_client_refuses_calls_and_opens_no_channel():
    client = StatusClient()
    client.close()
    with pytest.raises(errors.CancelledError, match="127.0.0.1:9"):
        client.get("127.0.0.1:9", 0.1)
    assert client.get_many({"a": "127.0.0.1:9"}, 0.1) == {"a": None}
    assert client._clients == {}
