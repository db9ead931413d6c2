"""What JupyterLab's sidebar shows of the clusters on this machine: their records, each task's
live GetStatus, per-cluster totals, failure reasons, logs and the code that connects to one.

Rule: blocking (GetStatus calls with a short deadline, file reads), so the
server extension runs these in a worker thread; nothing here starts or stops
a task (lab_launch.py and launch/record_stop.py do).

A cluster (JSON):
  {"id": "4242-demo", "name": "demo", "owner_pid": 4242, "started": 1764496211.5,
   "launcher": "local", "notebook": "train.ipynb", "slurm_job": null, "owner": "kernel",
   "can_restart": false, "restart_hint": "...",
   "summary": {"tasks": 3, "up": 3, "cpus": 3, "gpus": 0, "rss_bytes": 312000000,
               "cpu_percent": 4.0, "gpu_bytes_in_use": 0},
   "tasks": [{"job": "worker", "index": 0, "address": "127.0.0.1:40123",
     "target": "grpc://127.0.0.1:40123", "host": "127.0.0.1", "state": "up",
     "pid": 4250, "steps_run": 3, "bytes_sent": 120, "bytes_received": 96,
     "last_error": "", "failure": "", "cpu_percent": 3.0, "rss_bytes": 104857600,
     "devices": ["CPU:0"], "gpu_memory": [], "has_log": true}]}
("owner": "server" for a cluster the "New cluster" form started, "kernel" when
a notebook's kernel owns it, else "process"; cpu_percent is of one core.)
"""
from __future__ import annotations

import pathlib
import re

__all__ = ["STATUS_DEADLINE_S", "clusters", "cluster", "connect_code", "notebook_path",
           "owner", "task_log"]

STATUS_DEADLINE_S = 1.0  # the sidebar polls every 2 s: an answer must come well within
LOG_LINES = 200


def _task_view(task: dict, response) -> dict:
    """A record's task plus what its GetStatus said ("down": no answer, or another
    task's server now answers at that address)."""
    view = {key: value for key, value in task.items() if key != "log"}
    view.update(state="down", steps_run=0, bytes_sent=0, bytes_received=0, last_error="",
                failure="", cpu_percent=None, rss_bytes=0, devices=[], gpu_memory=[],
                has_log=bool(task.get("log")))
    if response is None or (response.job_name and (response.job_name, response.task_index)
                            != (task.get("job"), task.get("index"))):
        view["failure"] = _failure(task)
        return view
    view.update(state="up", pid=response.pid or task.get("pid"), steps_run=response.steps_run,
                bytes_sent=response.bytes_sent, bytes_received=response.bytes_received,
                last_error=response.last_error, cpu_percent=response.cpu_percent,
                rss_bytes=response.rss_bytes,
                devices=[d.name.rsplit("/device:", 1)[-1] for d in response.device_attributes],
                gpu_memory=[{"device": g.device.rsplit("/device:", 1)[-1],
                             "bytes_in_use": g.bytes_in_use, "bytes_reserved": g.bytes_reserved,
                             "device_bytes_total": g.device_bytes_total}
                            for g in response.gpu_memory])
    return view


def _failure(task: dict) -> str:
    """Why a silent task is down, in one line: its log's exit line ("[nbcluster]
    /job:worker/task:1 was killed by SIGKILL"), else its log's last line."""
    from nbcluster.launch.launcher import log_tail
    lines = [line for line in log_tail(task.get("log") or "", 20).splitlines() if line.strip()]
    for line in reversed(lines):
        if line.startswith("[nbcluster] "):
            return line[len("[nbcluster] "):]
    if lines:
        return lines[-1][:300]
    return f"no answer from {task.get('address') or 'its address'}"


def _mark_pending(record: dict, tasks: list) -> None:
    """A Slurm cluster's tasks with no address yet wait for their allocation: "pending",
    with squeue's reason as their last error."""
    waiting = [t for t in tasks if not t.get("address")]
    if waiting and record.get("slurm_job"):
        from nbcluster.launch.slurm_jobs import pending_reason
        why = pending_reason(record["slurm_job"])
        for task in waiting:
            task.update(state="pending", last_error=why, failure="")


def _summary(tasks: list) -> dict:
    up = [t for t in tasks if t["state"] == "up"]
    return {"tasks": len(tasks), "up": len(up),
            "cpus": sum(d.startswith("CPU") for t in up for d in t["devices"]),
            "gpus": sum(d.startswith("GPU") for t in up for d in t["devices"]),
            "rss_bytes": sum(t["rss_bytes"] for t in up),
            "cpu_percent": sum(t["cpu_percent"] or 0.0 for t in up),
            "gpu_bytes_in_use": sum(g["bytes_in_use"] for t in up for g in t["gpu_memory"])}


def owner(record: dict, record_id: str) -> dict:
    from nbcluster.jupyter import lab_launch
    if lab_launch.owned(record_id) is not None:
        return {"owner": "server", "can_restart": True, "restart_hint": ""}
    where = f"the kernel of {record['notebook']}" if record.get("notebook") else \
        f"process {record.get('owner_pid')}"
    return {"owner": "kernel" if record.get("notebook") else "process", "can_restart": False,
            "restart_hint": f"Its tasks belong to {where}, which alone can restart them: run "
                            f"%tfserver restart {record.get('name')} JOB:INDEX there (or "
                            f"cluster.restart('JOB', INDEX) on its Cluster)"}


def notebook_path(path, root) -> str | None:
    """A kernel's JPY_SESSION_NAME as JupyterLab names the notebook: relative to the
    server's root (`root`) when it lies under it."""
    if not path or not root or not pathlib.PurePath(path).is_absolute():
        return path or None
    try:
        return pathlib.Path(path).resolve().relative_to(pathlib.Path(root).resolve()).as_posix()
    except ValueError:  # relative already, or outside the root
        return path


def clusters(timeout: float = STATUS_DEADLINE_S, root: str | None = None) -> list:
    """The running clusters (their records) with each task's live state, oldest first.

    Args:
      timeout: each GetStatus call's deadline, in seconds (all asked at once).
      root: the Jupyter server's root dir, for the owner notebooks' paths.
    Returns:
      A list of dicts, the layout above.
    """
    # grpc loads here, on the first request, not when the server starts
    from nbcluster.launch import records
    from nbcluster.launch.status import StatusClient
    from nbcluster.rpc.grpc_transport import tokens
    found = records.running()
    for record in found:  # each cluster's tasks want its own token
        for task in record.get("tasks", []):
            if record.get("token") and task.get("address"):
                tokens.register(task["address"], record["token"])
    addresses = {(i, j): task.get("address") for i, record in enumerate(found)
                 for j, task in enumerate(record.get("tasks", [])) if task.get("address")}
    client = StatusClient()
    try:
        answers = client.get_many(addresses, timeout)
    finally:
        client.close()
    out = []
    for i, record in enumerate(found):
        record_id = pathlib.Path(record["path"]).stem
        record["notebook"] = notebook_path(record.get("notebook"), root)
        tasks = [_task_view(task, answers.get((i, j)))
                 for j, task in enumerate(record.get("tasks", []))]
        _mark_pending(record, tasks)
        out.append({"id": record_id} |
                   {key: record.get(key) for key in ("name", "owner_pid", "started", "launcher",
                                                     "notebook", "slurm_job")}
                   | owner(record, record_id) | {"summary": _summary(tasks), "tasks": tasks})
    return out


def cluster(record_id: str, timeout: float = STATUS_DEADLINE_S, root: str | None = None) -> dict:
    """One running cluster, as `clusters()` lists it.

    Raises:
      KeyError: no running cluster `record_id`.
    """
    for entry in clusters(timeout, root):
        if entry["id"] == record_id:
            return entry
    raise KeyError(record_id)


def _record(record_id: str) -> dict:
    from nbcluster.launch import record_stop
    return record_stop.find(record_id)  # KeyError: not running


def _identifier(name: str) -> str:
    word = re.sub(r"\W", "_", name).strip("_").lower()
    return word if word.isidentifier() and not word[0].isdigit() and \
        word not in ("tf", "sess") else "cluster"


def connect_code(record_id: str) -> str:
    """A notebook cell that connects to cluster `record_id` and opens a session on it.

    The cluster's token stays in its record: `Cluster.connect(record=...)` reads it,
    so the saved notebook holds no secret.

    Raises:
      KeyError: no running cluster `record_id`.
    """
    record = _record(record_id)
    jobs: dict = {}
    for task in record.get("tasks", []):
        jobs[task["job"]] = jobs.get(task["job"], 0) + 1
    job = next((j for j in ("chief", "master", "worker") if j in jobs), sorted(jobs)[0])
    var = _identifier(record.get("name") or "cluster")
    counts = ", ".join(f"{j}: {n}" for j, n in sorted(jobs.items()))
    return (f"import nbcluster as tf\n\n"
            f"# cluster {record.get('name')!r} ({counts}), started by pid {record['owner_pid']}\n"
            f"{var} = tf.Cluster.connect(record={record_id!r})\n"
            f"sess = tf.Session({var}.target({job!r}, 0))\n"
            f"{var}")


def task_log(record_id: str, job: str, index: int, lines: int = LOG_LINES) -> dict:
    """{"task", "text", "lines"}: the last `lines` lines of a task's stdout+stderr log.

    Raises:
      KeyError: no running cluster `record_id`, or no such task in it.
      LookupError: the task has no log on this host (connected, or not started here).
    """
    from nbcluster.launch.launcher import log_tail
    record = _record(record_id)
    task = next((t for t in record.get("tasks", [])
                 if t.get("job") == job and t.get("index") == index), None)
    name = f"/job:{job}/task:{index}"
    if task is None:
        raise KeyError(f"cluster {record_id!r} has no task {name}")
    path = task.get("log")
    if not path or not str(path).endswith(".log"):
        raise LookupError(f"{name} of cluster {record_id!r} has no log on this host: its "
                          f"owner did not start it")
    return {"task": name, "text": log_tail(path, lines), "lines": lines}
