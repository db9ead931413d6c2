"""The jupyter-server extension: `GET <base_url>/nbcluster/clusters`, the running clusters
live, and `POST <base_url>/nbcluster/clusters/<id>/stop`, which stops one (local) cluster.

Rules: a URL table plus one handler. The list comes from the cluster records
(`nbcluster.launch.records`) and each task's GetStatus, asked concurrently with
a short deadline in a worker thread, so a silent task never blocks the
server's event loop. Enabled by `jupyter-config/server-config/nbcluster.json`
(installed to etc/jupyter/jupyter_server_config.d/), which names
`nbcluster.jupyter`; its `_jupyter_server_extension_points` points here.

Answer (JSON), one entry per cluster, oldest first ("id" names it in the stop URL):
  [{"id": "4242-cluster-1", "name": "cluster-1", "owner_pid": 4242, "started": 1764496211.5,
    "launcher": "local", "tasks": [{"job": "worker", "index": 0,
    "address": "127.0.0.1:40123", "target": "grpc://127.0.0.1:40123",
    "host": "127.0.0.1", "state": "up", "pid": 4250, "steps_run": 3,
    "bytes_sent": 120, "bytes_received": 96, "last_error": "", "cpu_percent": 3.0,
    "rss_bytes": 104857600}]}]  (cpu_percent: of one core; both the task process's own)
"""
from __future__ import annotations

import asyncio
import json
import pathlib

import tornado.web
from jupyter_server.auth.decorator import authorized
from jupyter_server.base.handlers import APIHandler
from jupyter_server.utils import url_path_join

__all__ = ["AUTH_RESOURCE", "ClustersHandler", "ClusterStopHandler", "clusters",
           "STATUS_DEADLINE_S"]

# What jupyter-server's authorizer is asked about: "read" to list, "write" to stop.
AUTH_RESOURCE = "nbcluster"

STATUS_DEADLINE_S = 1.0  # the sidebar polls every 2 s: an answer must come well within


def _task_view(task: dict, response) -> dict:
    """A record's task plus what its GetStatus said ("down": no answer, or another
    task's server now answers at that address)."""
    view = dict(task, state="down", steps_run=0, bytes_sent=0, bytes_received=0,
                last_error="", cpu_percent=None, rss_bytes=0)
    if response is None or (response.job_name and (response.job_name, response.task_index)
                            != (task.get("job"), task.get("index"))):
        return view
    view.update(state="up", pid=response.pid or task.get("pid"), steps_run=response.steps_run,
                bytes_sent=response.bytes_sent, bytes_received=response.bytes_received,
                last_error=response.last_error, cpu_percent=response.cpu_percent,
                rss_bytes=response.rss_bytes)
    return view


def _mark_pending(record: dict, tasks: list) -> None:
    """A Slurm cluster's tasks with no address yet wait for their allocation: "pending",
    with squeue's reason as their last error."""
    waiting = [t for t in tasks if not t.get("address")]
    if waiting and record.get("slurm_job"):
        from nbcluster.launch.slurm_jobs import pending_reason
        why = pending_reason(record["slurm_job"])
        for task in waiting:
            task.update(state="pending", last_error=why)


def clusters(timeout: float = STATUS_DEADLINE_S) -> list:
    """The running clusters (their records) with each task's live state.

    Blocking (GetStatus calls): the handler runs it in a thread.

    Args:
      timeout: each GetStatus call's deadline, in seconds (all asked at once).
    Returns:
      A list of dicts, the answer's layout (module docstring).
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
        tasks = [_task_view(task, answers.get((i, j)))
                 for j, task in enumerate(record.get("tasks", []))]
        _mark_pending(record, tasks)
        out.append({"id": pathlib.Path(record["path"]).stem} |
                   {key: record.get(key) for key in ("name", "owner_pid", "started", "launcher")}
                   | {"tasks": tasks})
    return out


class ClustersHandler(APIHandler):
    """`GET /nbcluster/clusters`: the running clusters as JSON (login required, and
    the authorizer's "read" on resource "nbcluster")."""

    auth_resource = AUTH_RESOURCE

    @tornado.web.authenticated
    @authorized
    async def get(self) -> None:
        loop = asyncio.get_running_loop()
        self.set_header("Content-Type", "application/json")
        # finish(list) is refused by tornado (only dicts are encoded): encode it here
        self.finish(json.dumps(await loop.run_in_executor(None, clusters)))


def stop(record_id: str) -> tuple:
    """(HTTP status, answer) for stopping the cluster whose record is `record_id`.

    Blocking (waits for the tasks to end): the handler runs it in a thread.
    """
    from nbcluster.launch import LaunchError, record_stop
    try:
        record = record_stop.find(record_id)
    except KeyError:
        return 404, {"message": f"No running cluster {record_id!r}"}
    try:
        return 200, {"stopped": record_stop.stop_recorded(record)}
    except LaunchError as e:
        return 409, {"message": str(e)}
    except PermissionError as e:  # its tasks belong to another user of this host
        return 403, {"message": f"Not allowed to stop cluster {record_id!r}: {e}"}


class ClusterStopHandler(APIHandler):
    """`POST /nbcluster/clusters/<id>/stop`: stops that cluster's tasks (login required,
    and the authorizer's "write" on resource "nbcluster")."""

    auth_resource = AUTH_RESOURCE

    @tornado.web.authenticated
    @authorized
    async def post(self, record_id: str) -> None:
        loop = asyncio.get_running_loop()
        status, answer = await loop.run_in_executor(None, stop, record_id)
        self.set_status(status)
        self.finish(answer)


def _load_jupyter_server_extension(serverapp) -> None:
    """Adds the handler to the server (jupyter-server calls it once, at start-up).

    Args:
      serverapp: the running `jupyter_server.serverapp.ServerApp`.
    """
    base = serverapp.web_app.settings["base_url"]
    route = url_path_join(base, "nbcluster", "clusters")
    serverapp.web_app.add_handlers(".*$", [
        (route, ClustersHandler),
        (url_path_join(route, r"([A-Za-z0-9_.-]+)", "stop"), ClusterStopHandler)])
    serverapp.log.info("nbcluster: serving the running clusters at %s", route)
