"""Cluster.connect: servers someone else started are watched, never stopped."""
from __future__ import annotations

import subprocess
import sys

import pytest

from nbcluster.launch import Cluster, LaunchError, child_env
from nbcluster.server import parse_ready_line

from process_checks import alive

pytestmark = pytest.mark.timeout(120)


def test_connect_shows_tasks_up_with_their_pids_and_stop_leaves_them(local_cluster):
    cluster = Cluster.connect(local_cluster.spec, name="theirs")
    statuses = cluster.status()
    assert [(s.job, s.index, s.state) for s in statuses] == \
        [("ps", 0, "up"), ("worker", 0, "up"), ("worker", 1, "up")]
    assert {(s.job, s.index): s.pid for s in statuses} == local_cluster.pids
    assert "(connected, 3 tasks)" in repr(cluster)
    assert cluster.logs("worker", 0) == ""  # not ours: no log here
    with pytest.raises(LaunchError, match="connected"):
        cluster.kill("worker", 0)
    with pytest.raises(LaunchError, match="connected"):
        cluster.restart("worker", 0)
    assert cluster.pids == {}
    with pytest.raises(LaunchError, match=r"did not start /job:worker/task:0"):
        cluster.pid("worker", 0)
    cluster.stop()
    assert all(alive(pid) for pid in local_cluster.pids.values())
    assert Cluster.connect(local_cluster.spec).status()[0].state == "up"


def test_connect_to_a_server_started_by_hand():
    proc = subprocess.Popen([sys.executable, "-m", "nbcluster.server", "--cluster",
                             '{"localhost": ["127.0.0.1:0"]}'], env=child_env(),
                            stdout=subprocess.PIPE, text=True)
    try:
        target = parse_ready_line(proc.stdout.readline())[2]
        port = target.rsplit(":", 1)[1]
        with Cluster.connect({"worker": [f"127.0.0.1:{port}"]}) as cluster:
            (status,) = cluster.status()
            assert status.state == "up" and status.pid == proc.pid
            assert status.devices == ("/job:localhost/replica:0/task:0/device:CPU:0",)
            proc.kill()
            proc.wait(10)
            assert cluster.status()[0].state == "down"
        assert proc.poll() is not None
    finally:
        proc.kill()
        proc.wait()
        proc.stdout.close()


def test_connect_to_nothing_times_out_naming_the_task():
    from nbcluster.launch import free_ports
    port = free_ports(1)[0]
    with pytest.raises(TimeoutError, match=rf"/job:worker/task:0 at 127\.0\.0\.1:{port}"):
        Cluster.connect({"worker": [f"127.0.0.1:{port}"]}, timeout=1.5)
