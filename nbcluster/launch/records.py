"""Records of the clusters this machine started: one JSON file each, for the JupyterLab sidebar.

Rules: a `Cluster` that starts tasks writes `<jupyter runtime dir>/nbcluster/<owner
pid>-<name>.json`, rewrites it when a task restarts (its pid changes) and removes
it on `stop()`, garbage collection or exit. A write is atomic (a temp file, then a
rename), so a reader never sees half a record, and never fatal: a cluster starts
even where its record cannot be written (a warning is logged). `running()` drops
the records whose owner process is gone (killed before it could remove them).

A record:
  {"version": 1, "name": "cluster-1", "owner_pid": 4242, "started": 1764496211.5,
   "launcher": "local", "notebook": "work/train.ipynb", "token": "...",
   "tasks": [{"job": "worker", "index": 0, "address": "127.0.0.1:40123",
   "target": "grpc://127.0.0.1:40123", "pid": 4250, "host": "127.0.0.1",
   "log": "/tmp/nbcluster-4242-x/worker-0.log"}]}
"notebook" is the path of the notebook whose kernel owns the cluster (jupyter-server
gives a kernel JPY_SESSION_NAME), null elsewhere; "log" the task's stdout+stderr
file on this host, null for a task this process did not start.
A Slurm cluster's record also has "slurm_job": "<job id>"; its tasks have address ""
until the allocation is granted.
"""
from __future__ import annotations

import json
import logging
import os
import pathlib
import re
import tempfile
import threading
import time
import weakref
from typing import Optional

__all__ = ["alive", "directory", "lookup", "record_id", "record_of", "write", "remove",
           "running", "unlink"]

VERSION = 1
_log = logging.getLogger(__name__)
_lock = threading.Lock()  # guards _paths: which live Cluster owns which record file
_paths: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()  # Cluster -> (path, finalizer)
_started: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()  # Cluster -> start time


def directory() -> pathlib.Path:
    """The folder of the records: `nbcluster/` in Jupyter's runtime dir.

    Returns:
      The path (it may not exist yet). `JUPYTER_RUNTIME_DIR` overrides the
      runtime dir, as for every Jupyter tool.
    """
    from jupyter_core.paths import jupyter_runtime_dir  # jupyter-server's dependency
    return pathlib.Path(jupyter_runtime_dir()) / "nbcluster"


def make_private_dir(folder: pathlib.Path) -> None:
    """Makes `folder` and the runtime dir above it, 0700 where this is first to make
    them (as Jupyter makes its runtime dir): records name every task's address."""
    folder.parent.parent.mkdir(parents=True, exist_ok=True)
    for path in (folder.parent, folder):
        try:
            path.mkdir(mode=0o700)
        except FileExistsError:
            continue  # someone else's choice of mode stands
        path.chmod(0o700)  # whatever the umask let through


def record_of(cluster) -> dict:
    """The record of `cluster` as it stands now (a JSON-ready dict, the layout above).

    Args:
      cluster: a started `nbcluster.launch.Cluster`.
    Returns:
      The record.
    """
    tasks = []
    for (job, index), t in sorted(cluster._tasks.items()):
        pid = t.process.server_pid if t.process is not None else None
        tasks.append({"job": job, "index": index, "address": t.address,
                      "target": f"grpc://{t.address}", "pid": pid,
                      "host": t.host_name or t.host,
                      "log": (t.log_path or None) if t.process is not None else None})
    launcher = cluster._launcher
    record = {"version": VERSION, "name": cluster.name, "owner_pid": os.getpid(),
              "started": _started.setdefault(cluster, time.time()),
              "launcher": launcher.kind if launcher is not None else "connected",
              "notebook": os.environ.get("JPY_SESSION_NAME") or None,
              # the sidebar's server (this user's, reading this 0600 file) sends it
              "token": cluster._token, "tasks": tasks}
    if getattr(cluster, "_ca", None) is not None:  # its clients verify the tasks with it
        record["tls_ca"] = cluster._ca.cert_pem.decode("ascii")
    if getattr(launcher, "job_id", None):  # Slurm: the sidebar asks squeue while it pends
        record["slurm_job"] = launcher.job_id
    return record


def _file_name(name: str) -> str:
    # a cluster's name is the user's free text: keep it to characters every filesystem takes
    return f"{os.getpid()}-{re.sub(r'[^A-Za-z0-9_.-]', '_', name)[:100]}"


def _claim(cluster, folder: pathlib.Path) -> pathlib.Path:
    """The record path of `cluster`: its own from before, else a fresh one (two live
    clusters of the same name get `-2`, `-3`, ...)."""
    with _lock:
        if cluster in _paths:
            return _paths[cluster][0]
        taken = {path for path, _ in _paths.values()}
        stem = _file_name(cluster.name)
        path, n = folder / f"{stem}.json", 1
        while path in taken:
            n += 1
            path = folder / f"{stem}-{n}.json"
        # removes the file when the cluster is collected or at exit, if stop() did not
        _paths[cluster] = (path, weakref.finalize(cluster, unlink, path))
        return path


def record_id(cluster) -> Optional[str]:
    """The id of `cluster`'s record (its file name without .json), None if it has none."""
    with _lock:
        entry = _paths.get(cluster)
    return entry[0].stem if entry is not None else None


def unlink(path: pathlib.Path) -> None:
    """Removes the record file `path` if it is there; never raises OSError (logs it)."""
    try:
        path.unlink()
    except FileNotFoundError:
        pass
    except OSError as e:
        _log.warning("nbcluster: could not remove the cluster record %s: %s", path, e)


def write(cluster) -> Optional[pathlib.Path]:
    """Writes (or rewrites) the record of `cluster`, atomically; never raises OSError.

    Args:
      cluster: a `Cluster` that started its tasks.
    Returns:
      The record's path, or None where it could not be written (logged as a warning).
    """
    folder = directory()
    path = _claim(cluster, folder)
    text = json.dumps(record_of(cluster), indent=1)
    tmp = None
    try:
        make_private_dir(folder)
        fd, tmp = tempfile.mkstemp(dir=folder, prefix=f".{path.stem}.", suffix=".tmp")
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
        os.replace(tmp, path)
        return path
    except OSError as e:
        _log.warning("nbcluster: could not write the record of cluster %r in %s: %s "
                     "(the cluster runs, but Jupyter's sidebar will not list it)",
                     cluster.name, folder, e)
        if tmp is not None:
            unlink(pathlib.Path(tmp))
        return None


def remove(cluster) -> None:
    """Removes the record of `cluster` (nothing if it has none); never raises OSError.

    Args:
      cluster: a `Cluster`.
    """
    with _lock:
        entry = _paths.pop(cluster, None)
    if entry is not None:
        entry[1]()  # the finalizer: unlinks now, and never again


def alive(pid: int) -> bool:
    """Whether process `pid` runs here (a zombie, killed but not yet reaped, does not).

    A main thread that has exited shows "Z" while the process's other threads still
    run (a server shutting down): the process is gone only once every thread is,
    which is also when its parent can reap it and see its exit status.
    """
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # someone else's process: it exists
    try:
        stat = pathlib.Path(f"/proc/{pid}/stat").read_text()
    except FileNotFoundError:
        return False
    except OSError:
        return True  # no /proc (macOS): kill(0) is all we know
    if stat.rsplit(")", 1)[-1].split()[0] != "Z":
        return True
    try:
        threads = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return False
    return any(_thread_runs(pid, tid) for tid in threads)


def _thread_runs(pid: int, tid: str) -> bool:
    try:
        stat = pathlib.Path(f"/proc/{pid}/task/{tid}/stat").read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[-1].split()[0] not in ("Z", "X")


def running() -> list:
    """The records of the clusters whose owner process still runs, oldest first.

    A record whose owner is gone is deleted; a file that is not a record
    (unreadable, not JSON, no owner pid or task list) is skipped and left alone.

    Returns:
      A list of record dicts (the layout above), each with its "path" added.
    """
    folder = directory()
    out = []
    for path in sorted(folder.glob("*.json")) if folder.is_dir() else ():
        try:
            record = json.loads(path.read_text(encoding="utf-8"))
            owner = record["owner_pid"]
        except (OSError, ValueError, KeyError, TypeError):
            continue
        tasks = record.get("tasks")
        if not isinstance(owner, int) or owner <= 0 or not isinstance(tasks, list) \
                or not all(isinstance(t, dict) for t in tasks):
            continue
        if not alive(owner):
            unlink(path)
            continue
        record["path"] = str(path)
        out.append(record)
    return sorted(out, key=lambda r: (r.get("started") or 0, r["path"]))


def lookup(key: str) -> dict:
    """The running record whose id (file name without .json) or cluster name is `key`.

    Raises:
      KeyError: none, or `key` names several clusters (the message says which).
    """
    found = running()
    for record in found:
        if pathlib.Path(record["path"]).stem == key:
            return record
    named = [r for r in found if r.get("name") == key]
    if len(named) == 1:
        return named[0]
    if named:
        ids = ", ".join(pathlib.Path(r["path"]).stem for r in named)
        raise KeyError(f"{len(named)} running clusters are named {key!r} ({ids}): give an id")
    raise KeyError(f"no running cluster {key!r} on this machine (records in {directory()})")
