"""Stopping a cluster from its record (what the sidebar's Stop does): its tasks end, the
record goes, the owner sees them stopped; a pid that is no longer the task is left alone."""
from __future__ import annotations

import json
import pathlib
import subprocess
import sys
import time

import pytest

from nbcluster.launch import Cluster, LaunchError, record_stop, records

from process_checks import alive, wait_gone

pytestmark = pytest.mark.timeout(90)


def test_stopping_a_record_ends_its_tasks_and_removes_it():
    with Cluster.local(ps=1, worker=1, name="outside") as cluster:
        [record] = [r for r in records.running() if r["name"] == "outside"]
        record_id = pathlib.Path(record["path"]).stem
        assert record_stop.find(record_id)["owner_pid"] == record["owner_pid"]
        stopped = record_stop.stop_recorded(record)
        assert sorted(stopped) == ["/job:ps/task:0", "/job:worker/task:0"]
        assert wait_gone(list(cluster.pids.values()), 10.0) == []
        # a thread group's leader reads as a zombie while its other threads still exit,
        # and waitpid cannot reap it until they have: wait for the owner to see the exit
        deadline = time.monotonic() + 10.0
        while any(cluster.exit_code(*key) is None for key in cluster.pids) and \
                time.monotonic() < deadline:
            time.sleep(0.05)
        assert not pathlib.Path(record["path"]).exists()
        with pytest.raises(KeyError):
            record_stop.find(record_id)
        # the owner learns it from the exit status: a clean exit on SIGTERM
        assert {s.state for s in cluster.status()} == {"stopped"}
    assert records.running() == []


def test_a_pid_that_is_not_the_recorded_task_is_not_signalled(tmp_path):
    stranger = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        path = records.directory() / "1-fake.json"
        path.parent.mkdir(parents=True, exist_ok=True)
        record = {"version": 1, "name": "fake", "owner_pid": stranger.pid, "launcher": "local",
                  "tasks": [{"job": "worker", "index": 0, "pid": stranger.pid}]}
        path.write_text(json.dumps(record))
        [found] = [r for r in records.running() if r["name"] == "fake"]
        assert record_stop.stop_recorded(found, grace=0.5) == []
        assert alive(stranger.pid) and not path.exists()
    finally:
        stranger.kill()
        stranger.wait()


def test_a_remote_cluster_is_refused_by_name():
    record = {"name": "far", "launcher": "ssh", "tasks": [], "path": "/nonexistent/x.json"}
    with pytest.raises(LaunchError, match="Cluster 'far' runs on other hosts"):
        record_stop.stop_recorded(record)
