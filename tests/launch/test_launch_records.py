"""Cluster records: written when a Cluster starts, rewritten on restart, removed on stop,
pruned once their owner is gone, written atomically, never fatal."""
from __future__ import annotations

import gc
import json
import logging
import os
import subprocess
import sys
import time

import pytest

from nbcluster.launch import Cluster, records

pytestmark = pytest.mark.timeout(120)


@pytest.fixture
def runtime_dir(tmp_path, monkeypatch):
    """An isolated Jupyter runtime dir (the records go to its nbcluster/ folder)."""
    monkeypatch.setenv("JUPYTER_RUNTIME_DIR", str(tmp_path / "runtime"))
    return tmp_path / "runtime"


def _record_files(runtime_dir) -> list:
    folder = runtime_dir / "nbcluster"
    return sorted(p.name for p in folder.iterdir()) if folder.is_dir() else []


def test_written_on_start_rewritten_on_restart_removed_on_stop(runtime_dir):
    with Cluster.local(ps=1, worker=1, name="rec test") as cluster:
        path = runtime_dir / "nbcluster" / f"{os.getpid()}-rec_test.json"
        assert _record_files(runtime_dir) == [path.name]  # no temp file left behind
        record = json.loads(path.read_text())
        assert record["name"] == "rec test" and record["owner_pid"] == os.getpid()
        assert record["launcher"] == "local" and record["version"] == 1
        tasks = {(t["job"], t["index"]): t for t in record["tasks"]}
        assert {key: t["pid"] for key, t in tasks.items()} == cluster.pids
        assert {key: t["target"] for key, t in tasks.items()} == cluster.targets
        assert [r["name"] for r in records.running()] == ["rec test"]

        old_pid = cluster.pid("worker", 0)
        cluster.restart("worker", 0)
        rewritten = json.loads(path.read_text())
        new_pid = {(t["job"], t["index"]): t["pid"] for t in rewritten["tasks"]}["worker", 0]
        assert new_pid == cluster.pid("worker", 0) != old_pid
        assert rewritten["started"] == record["started"]  # the cluster's start, not the task's
    assert _record_files(runtime_dir) == []
    assert records.running() == []


def test_connect_writes_no_record_and_same_names_do_not_collide(runtime_dir):
    with Cluster.local(jobs={"worker": 1}, name="twin") as first, \
            Cluster.local(jobs={"worker": 1}, name="twin") as second:
        stem = f"{os.getpid()}-twin"
        assert _record_files(runtime_dir) == [f"{stem}-2.json", f"{stem}.json"]
        connected = Cluster.connect(first.spec, name="connected")
        assert len(_record_files(runtime_dir)) == 2
        connected.stop()
        second.stop()
        assert _record_files(runtime_dir) == [f"{stem}.json"]  # first's record stays
        assert [r["tasks"][0]["pid"] for r in records.running()] == [first.pid("worker", 0)]


def test_garbage_collected_cluster_removes_its_record(runtime_dir):
    cluster = Cluster.local(jobs={"worker": 1}, name="dropped")
    assert len(_record_files(runtime_dir)) == 1
    del cluster
    gc.collect()
    assert _record_files(runtime_dir) == []


def _zombie() -> subprocess.Popen:
    """A child that exited but is not reaped yet: kill(pid, 0) still succeeds for it."""
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        with open(f"/proc/{child.pid}/stat") as f:
            if f.read().rsplit(")", 1)[-1].split()[0] == "Z":
                return child
        time.sleep(0.02)
    child.kill()
    child.wait()
    raise AssertionError(f"child {child.pid} did not exit within 10 s")


def test_running_prunes_records_whose_owner_is_gone(runtime_dir):
    folder = runtime_dir / "nbcluster"
    folder.mkdir(parents=True)
    zombie = _zombie()
    reaped = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                            capture_output=True, text=True, check=True)
    for pid in (zombie.pid, int(reaped.stdout)):
        (folder / f"{pid}-old.json").write_text(json.dumps(
            {"version": 1, "name": "old", "owner_pid": pid, "started": 1.0, "tasks": []}))
    (folder / "notes.json").write_text("not json")  # not records: skipped, left alone
    (folder / f"{os.getpid()}-odd.json").write_text(json.dumps({"owner_pid": os.getpid(),
                                                              "tasks": ["not a task"]}))
    live = {"version": 1, "name": "live", "owner_pid": os.getpid(), "started": 2.0, "tasks": []}
    (folder / f"{os.getpid()}-live.json").write_text(json.dumps(live))
    try:
        assert [r["name"] for r in records.running()] == ["live"]
        assert _record_files(runtime_dir) == sorted([f"{os.getpid()}-live.json",
                                                     f"{os.getpid()}-odd.json", "notes.json"])
    finally:
        zombie.wait()


def test_rewrite_is_atomic_a_failed_rename_keeps_the_old_record(runtime_dir, monkeypatch, caplog):
    with Cluster.local(jobs={"worker": 1}, name="atomic") as cluster:
        path = runtime_dir / "nbcluster" / f"{os.getpid()}-atomic.json"
        before = path.read_text()

        def no_rename(src, dst):
            raise OSError(28, "No space left on device")
        monkeypatch.setattr(records.os, "replace", no_rename)
        with caplog.at_level(logging.WARNING, logger="nbcluster.launch.records"):
            cluster.restart("worker", 0)  # rewrites the record: the rename fails
        assert "No space left on device" in caplog.text and "'atomic'" in caplog.text
        assert path.read_text() == before  # the reader still sees the whole old record
        assert _record_files(runtime_dir) == [path.name]  # the temp file was removed
        monkeypatch.undo()
        cluster.restart("worker", 0)
        assert json.loads(path.read_text())["tasks"][0]["pid"] == cluster.pid("worker", 0)


def test_unwritable_runtime_dir_logs_a_warning_and_the_cluster_starts(tmp_path, monkeypatch,
                                                                       caplog):
    blocker = tmp_path / "a-file"
    blocker.write_text("")  # its "nbcluster/" cannot be made, even by root
    monkeypatch.setenv("JUPYTER_RUNTIME_DIR", str(blocker))
    with caplog.at_level(logging.WARNING, logger="nbcluster.launch.records"):
        with Cluster.local(jobs={"worker": 1}, name="nowhere") as cluster:
            assert [s.state for s in cluster.status()] == ["up"]
            assert records.running() == []
    assert "could not write the record of cluster 'nowhere'" in caplog.text
    assert blocker.read_text() == ""


_MAIN_THREAD_GONE = """
import ctypes, os, sys, threading, time
def last():
    time.sleep(0.5)  # the main thread is gone by now
    print("main gone", flush=True)
    sys.stdin.readline()  # until the test says
    os._exit(0)
threading.Thread(target=last).start()
ctypes.CDLL(None).pthread_exit(None)
"""


@pytest.mark.skipif(not os.path.exists("/proc/self/task"), reason="needs Linux's /proc")
def test_a_process_whose_main_thread_ended_runs_while_another_thread_does():
    # a server shutting down shows its main thread as a zombie while its other threads
    # finish: it is still running (the sidebar's stop waited for it by this rule)
    proc = subprocess.Popen([sys.executable, "-c", _MAIN_THREAD_GONE], text=True,
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    try:
        assert proc.stdout.readline().strip() == "main gone"
        stat = open(f"/proc/{proc.pid}/stat").read().rsplit(")", 1)[1].split()[0]
        assert stat == "Z"  # what the old rule read as gone
        assert records.alive(proc.pid)
        proc.stdin.write("end\n")
        proc.stdin.flush()
        assert proc.wait(timeout=30) == 0
        assert not records.alive(proc.pid)
    finally:
        proc.kill()
        proc.wait()
