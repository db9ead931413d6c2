"""Stopping a cluster from its record, outside the process that owns it (JupyterLab's sidebar).

Rule: only processes that are still the recorded tasks are signalled: a pid
is taken to be task /job:J/task:I only while its command line is `python -m
nbcluster.server ... --job J --task I`, so a pid the system has given to
another process since is never touched. Only local clusters: an SSH task's
pid is on another host.
"""
from __future__ import annotations

import os
import pathlib
import signal
import time

from nbcluster.launch.errors import LaunchError
from nbcluster.launch.records import alive, running, unlink

_POLL_S = 0.05


def _is_task(pid: int, job: str, index: int) -> bool:
    try:
        words = pathlib.Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
    except OSError:
        return False
    args = [w.decode("utf-8", "replace") for w in words]
    if "nbcluster.server" not in args:
        return False
    pairs = set(zip(args, args[1:]))
    return ("--job", job) in pairs and ("--task", str(index)) in pairs


def find(record_id: str) -> dict:
    """The running record whose file is `<record_id>.json`.

    Raises:
      KeyError: no such running cluster.
    """
    for record in running():
        if pathlib.Path(record["path"]).stem == record_id:
            return record
    raise KeyError(record_id)


def stop_recorded(record: dict, grace: float = 5.0) -> list:
    """Stops the task processes of `record` (SIGTERM, SIGKILL after `grace` s) and
    removes the record.

    The owning kernel's Cluster then reports these tasks as stopped.

    Args:
      record: a record from `records.running()` (with its "path").
    Returns:
      The names (/job:J/task:I) of the tasks that were signalled.
    Raises:
      LaunchError: the cluster is not a local one.
    """
    if record.get("launcher") != "local":
        raise LaunchError(f"Cluster {record.get('name')!r} runs on other hosts "
                          f"({record.get('launcher')}): only its owner can stop it")
    tasks = [(t["pid"], f"/job:{t['job']}/task:{t['index']}") for t in record["tasks"]
             if isinstance(t.get("pid"), int) and _is_task(t["pid"], t["job"], t["index"])]
    for pid, _ in tasks:
        _signal(pid, signal.SIGTERM)
    deadline = time.monotonic() + grace
    while any(alive(pid) for pid, _ in tasks) and time.monotonic() < deadline:
        time.sleep(_POLL_S)
    for pid, _ in tasks:
        if alive(pid):
            _signal(pid, signal.SIGKILL)
    unlink(pathlib.Path(record["path"]))
    return [name for _, name in tasks]


def _signal(pid: int, sig: int) -> None:
    try:
        os.kill(pid, sig)
    except ProcessLookupError:
        pass
