"""The jupyter-server extension: REST routes under <base_url>/nbcluster/ for JupyterLab's
sidebar, a URL table plus thin handlers.

  GET  clusters                                the running clusters, live (lab_clusters.py)
  POST clusters                                start one from the "New cluster" form (201)
  GET  clusters/<id>                           one cluster
  POST clusters/<id>/stop                      stop it (a local one, or one this server started)
  GET  clusters/<id>/connect                   a notebook cell that connects to it
  POST clusters/<id>/tasks/<job>/<i>/restart   restart a task (only of a cluster this
                                               server started: a kernel's are its own)
  GET  clusters/<id>/tasks/<job>/<i>/log       the tail of a task's log

Rules: every route needs a login (tornado.web.authenticated) and the
authorizer's word on resource "nbcluster" (@authorized: "read" for GETs,
"write" to stop, "execute" to start or restart processes); every answer is
JSON, errors too ({"message": ...}: 400 bad form, 403 refused, 404 unknown
cluster or task, 409 not possible here, 500 failed to start). Blocking work
(GetStatus calls, starting tasks) runs in a worker thread, so a silent task
never blocks the server's event loop. Enabled by
`jupyter-config/server-config/nbcluster.json`, which names `nbcluster.jupyter`.
"""
from __future__ import annotations

import asyncio
import json

import tornado.web
from jupyter_server.auth.decorator import authorized
from jupyter_server.base.handlers import APIHandler
from jupyter_server.utils import url_path_join

from nbcluster.jupyter.lab_clusters import STATUS_DEADLINE_S, clusters

__all__ = ["AUTH_RESOURCE", "ClustersHandler", "ClusterStopHandler", "clusters", "stop",
           "STATUS_DEADLINE_S"]

AUTH_RESOURCE = "nbcluster"


class _Handler(APIHandler):
    auth_resource = AUTH_RESOURCE

    @property
    def root(self):
        return self.settings.get("server_root_dir")

    async def blocking(self, fn, *args):
        return await asyncio.get_running_loop().run_in_executor(None, fn, *args)

    def answer(self, status: int, body) -> None:
        self.set_status(status)
        self.set_header("Content-Type", "application/json")
        # finish(list) is refused by tornado (only dicts are encoded): encode it here
        self.finish(json.dumps(body))


class ClustersHandler(_Handler):
    """`GET /nbcluster/clusters`: the running clusters; `POST`: start one from a form."""

    @tornado.web.authenticated
    @authorized
    async def get(self) -> None:
        self.answer(200, await self.blocking(clusters, STATUS_DEADLINE_S, self.root))

    @tornado.web.authenticated
    @authorized("execute")
    async def post(self) -> None:
        from nbcluster.jupyter import lab_launch
        try:
            form = lab_launch.parse_form(json.loads(self.request.body or b"null"))
        except ValueError as e:  # FormError, or not JSON at all
            self.answer(400, {"message": f"Bad new-cluster form: {e}"})
            return
        self.answer(*await self.blocking(_start, form, self.root))


def _start(form: dict, root=None) -> tuple:
    from nbcluster.jupyter import lab_clusters, lab_launch
    from nbcluster.launch import LaunchError
    try:
        record_id, _ = lab_launch.start(form)
    except (LaunchError, TimeoutError, OSError) as e:
        return 500, {"message": f"The cluster did not start: {e}"}
    except (TypeError, ValueError) as e:
        return 400, {"message": f"Bad new-cluster form: {e}"}
    return 201, lab_clusters.cluster(record_id, root=root)


class ClusterHandler(_Handler):
    """`GET /nbcluster/clusters/<id>`: one running cluster."""

    @tornado.web.authenticated
    @authorized
    async def get(self, record_id: str) -> None:
        from nbcluster.jupyter import lab_clusters
        try:
            self.answer(200, await self.blocking(lab_clusters.cluster, record_id,
                                                 STATUS_DEADLINE_S, self.root))
        except KeyError:
            self.answer(404, {"message": f"No running cluster {record_id!r}"})


def stop(record_id: str) -> tuple:
    """(HTTP status, answer) for stopping the cluster whose record is `record_id`.

    Blocking (waits for the tasks to end): the handler runs it in a thread.
    """
    from nbcluster.jupyter import lab_launch
    from nbcluster.launch import LaunchError, record_stop
    if lab_launch.owned(record_id) is not None:
        return 200, {"stopped": lab_launch.stop(record_id)}
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


class ClusterStopHandler(_Handler):
    """`POST /nbcluster/clusters/<id>/stop`: stops that cluster's tasks."""

    @tornado.web.authenticated
    @authorized
    async def post(self, record_id: str) -> None:
        self.answer(*await self.blocking(stop, record_id))


class ConnectCodeHandler(_Handler):
    """`GET /nbcluster/clusters/<id>/connect`: {"code": a cell that connects to it}."""

    @tornado.web.authenticated
    @authorized
    async def get(self, record_id: str) -> None:
        from nbcluster.jupyter import lab_clusters
        try:
            self.answer(200, {"code": await self.blocking(lab_clusters.connect_code,
                                                          record_id)})
        except KeyError:
            self.answer(404, {"message": f"No running cluster {record_id!r}"})


def restart(record_id: str, job: str, index: int, root=None) -> tuple:
    """(HTTP status, answer) for restarting task /job:`job`/task:`index` of `record_id`."""
    from nbcluster.jupyter import lab_clusters, lab_launch
    from nbcluster.launch import LaunchError, record_stop
    name = f"/job:{job}/task:{index}"
    if lab_launch.owned(record_id) is None:
        try:
            record = record_stop.find(record_id)
        except KeyError:
            return 404, {"message": f"No running cluster {record_id!r}"}
        record["notebook"] = lab_clusters.notebook_path(record.get("notebook"), root)
        hint = lab_clusters.owner(record, record_id)["restart_hint"]
        hint = hint.replace("JOB:INDEX", f"{job}:{index}").replace("'JOB', INDEX",
                                                                   f"{job!r}, {index}")
        return 409, {"message": f"Cannot restart {name} of {record.get('name')!r} from "
                                f"JupyterLab. {hint}"}
    try:
        return 200, {"task": name, "target": lab_launch.restart(record_id, job, index)}
    except KeyError:
        return 404, {"message": f"No running cluster {record_id!r}"}
    except ValueError as e:  # no such task
        return 404, {"message": str(e)}
    except LaunchError as e:
        return 500, {"message": f"{name} did not come back: {e}"}


class TaskRestartHandler(_Handler):
    """`POST /nbcluster/clusters/<id>/tasks/<job>/<index>/restart`."""

    @tornado.web.authenticated
    @authorized("execute")
    async def post(self, record_id: str, job: str, index: str) -> None:
        self.answer(*await self.blocking(restart, record_id, job, int(index), self.root))


class TaskLogHandler(_Handler):
    """`GET /nbcluster/clusters/<id>/tasks/<job>/<index>/log[?lines=N]`: its log's tail."""

    @tornado.web.authenticated
    @authorized
    async def get(self, record_id: str, job: str, index: str) -> None:
        from nbcluster.jupyter import lab_clusters
        lines = self.get_argument("lines", str(lab_clusters.LOG_LINES))
        if not lines.isdigit() or not 1 <= int(lines) <= 10_000:
            self.answer(400, {"message": f"lines: a whole number from 1 to 10000, not "
                                         f"{lines!r}"})
            return
        try:
            self.answer(200, await self.blocking(lab_clusters.task_log, record_id, job,
                                                 int(index), int(lines)))
        except KeyError as e:
            self.answer(404, {"message": f"No running cluster {record_id!r}" if
                              e.args[0] == record_id else str(e.args[0])})
        except LookupError as e:
            self.answer(409, {"message": str(e)})


_ID = r"([A-Za-z0-9_.-]+)"
_TASK = r"tasks/([A-Za-z][A-Za-z0-9_]*)/([0-9]{1,6})"


def _load_jupyter_server_extension(serverapp) -> None:
    """Adds the routes to the server (jupyter-server calls it once, at start-up).

    Args:
      serverapp: the running `jupyter_server.serverapp.ServerApp`.
    """
    base = url_path_join(serverapp.web_app.settings["base_url"], "nbcluster", "clusters")
    serverapp.web_app.add_handlers(".*$", [
        (base, ClustersHandler),
        (url_path_join(base, _ID), ClusterHandler),
        (url_path_join(base, _ID, "stop"), ClusterStopHandler),
        (url_path_join(base, _ID, "connect"), ConnectCodeHandler),
        (url_path_join(base, _ID, _TASK, "restart"), TaskRestartHandler),
        (url_path_join(base, _ID, _TASK, "log"), TaskLogHandler)])
    serverapp.log.info("nbcluster: serving the running clusters at %s", base)
