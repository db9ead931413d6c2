"""The Dask launcher: one nbcluster task per Dask worker, started by a WorkerPlugin (extra `dask`).

Rules:
- Tasks are keyed by worker *name*, which a restarted worker keeps (its
  address changes): the plugin's `setup()` runs again on the new worker and
  brings its task back at the same address.
- Ports are picked per host in one call on one worker there, all bound
  together, so tasks on one host never collide; each task binds the host
  its worker reports (loopback for a LocalCluster on 127.0.0.1).
- A task server is a child of its worker (`--exit-with-parent=<worker pid>`),
  spawned by nbcluster's process-long spawner thread, never by a submitted
  task's pool thread: the parent-death signal follows the forking thread.
- `close()` unregisters the plugin, whose `teardown()` stops what is left.
- Each task's token and TLS material travel in the plugin (Dask's own
  channel, as every task's arguments do), never on the task's command line:
  the worker hands the token to its task in the environment and writes the
  certificate and key as 0600 files (launch/task_secrets.py).
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import uuid
from typing import Optional

from distributed.diagnostics.plugin import WorkerPlugin

from nbcluster.launch import task_secrets
from nbcluster.launch.errors import LaunchError
from nbcluster.launch.launcher import EngineProcess
from nbcluster.launch.process import child_env, free_ports, spawn, wait_port_free
from nbcluster.launch.startup import Task, await_tasks

_PORT_FREE_S = 15.0  # a restarted worker waits this long for its dead task's port


class NBClusterTasks(WorkerPlugin):
    """Runs the nbcluster task assigned to this worker's name as the worker's child."""

    def __init__(self, name: str, assignment: dict, spec: dict, python: str, env: dict,
                 config: Optional[str], logdir: str, secrets: Optional[dict] = None) -> None:
        self.name = name
        self.assignment = assignment  # worker name -> [job, index, host, port]
        self.spec, self.python, self.env = spec, python, env
        self.config, self.logdir = config, logdir
        self.secrets = secrets or {}  # worker name -> its task's token and TLS entries
        self.proc: Optional[subprocess.Popen] = None
        self.tls_folder: Optional[str] = None

    def setup(self, worker) -> None:
        if str(worker.name) in self.assignment:
            self.start(worker)

    def start(self, worker) -> int:
        """(Re)starts this worker's task; its pid."""
        self.stop(5.0)
        job, index, host, port = self.assignment[str(worker.name)]
        wait_port_free(host, port, _PORT_FREE_S)  # else the server logs its bind failure
        argv = [self.python, "-m", "nbcluster.server", "--cluster", json.dumps(self.spec),
                "--job", job, "--task", str(index), f"--exit-with-parent={os.getpid()}"]
        if self.config:
            argv[-1:-1] = ["--config", self.config]
        os.makedirs(self.logdir, exist_ok=True)
        task_secrets.discard(self.tls_folder)
        env, self.tls_folder = task_secrets.materialize(
            {**self.env, **self.secrets.get(str(worker.name), {})})
        with open(os.path.join(self.logdir, f"{job}-{index}.log"), "ab") as log:
            self.proc = spawn(argv, env=child_env(env), stdin=subprocess.DEVNULL,
                              stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
        return self.proc.pid

    def stop(self, grace: float) -> Optional[int]:
        if self.proc is None:
            return None
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(grace)
            except subprocess.TimeoutExpired:
                self.proc.kill()
        return self.proc.wait()

    def teardown(self, worker) -> None:
        self.stop(5.0)
        task_secrets.discard(self.tls_folder)

    def __getstate__(self) -> dict:  # sent to every worker: never a Popen
        return {k: v for k, v in self.__dict__.items() if k != "proc"} | {"proc": None,
                                                                           "tls_folder": None}


# -- run on a worker by client.run ------------------------------------------------------
def _on_worker_signal(name: str, sig: int, dask_worker=None) -> Optional[int]:
    proc = dask_worker.plugins[name].proc
    if proc is not None and proc.poll() is None:
        proc.send_signal(sig)
    return proc.poll() if proc is not None else 0


def _on_worker_exit_code(name: str, dask_worker=None) -> Optional[int]:
    proc = dask_worker.plugins[name].proc
    return proc.poll() if proc is not None else 0


def _on_worker_restart(name: str, dask_worker=None) -> int:
    return dask_worker.plugins[name].start(dask_worker)


class DaskProcess(EngineProcess):
    """One task on a Dask worker, reached by the worker's name (its address may change)."""

    def __init__(self, launcher: "DaskLauncher", worker_name: str) -> None:
        super().__init__()
        self.launcher, self.worker_name = launcher, worker_name

    def _run(self, function, *args):
        """`function` on this task's worker; None where the worker cannot be reached."""
        address = self.launcher.address_of(self.worker_name)
        if address is None:
            return None
        try:
            return self.launcher.client.run(function, self.launcher.plugin_name, *args,
                                            workers=[address]).get(address)
        except Exception:  # noqa: BLE001 - a closed client or a dying worker: unreachable
            return None

    def _exit_code(self) -> Optional[int]:
        return self._run(_on_worker_exit_code)

    def _send(self, sig: int) -> None:
        self._run(_on_worker_signal, sig)

    def _gone(self) -> bool:
        return self.launcher.address_of(self.worker_name) is None


class DaskLauncher:
    """Starts a cluster's tasks on the workers of a `distributed.Client`.

    Args:
      client: a connected `distributed.Client`.
      python: the workers' interpreter for the task servers (default: this one).
      env: environment variables for the task servers.
    """

    kind = "dask"

    def __init__(self, client, python: Optional[str] = None,
                 env: Optional[dict] = None) -> None:
        self.client = client
        self.python = python or sys.executable
        self.env = {str(k): str(v) for k, v in (env or {}).items()}
        self.plugin_name = f"nbcluster-{os.getpid()}-{uuid.uuid4().hex[:8]}"
        self._names: dict = {}  # (job, index) -> worker name
        self._registered = False

    def address_of(self, worker_name: str) -> Optional[str]:
        """The current address of the worker called `worker_name` (None: not connected)."""
        for address, info in self.client.scheduler_info(n_workers=-1)["workers"].items():
            if str(info.get("name")) == worker_name:
                return address
        return None

    def assign(self, jobs: dict, timeout: float) -> list:
        """A Task per job slot, each on its own worker (by name), ports picked per host.

        Raises:
          LaunchError: fewer workers than tasks within `timeout`.
        """
        count = sum(jobs.values())
        try:
            self.client.wait_for_workers(count, timeout=timeout)
        except TimeoutError:
            have = len(self.client.scheduler_info(n_workers=-1)["workers"])
            raise LaunchError(f"The Dask cluster has {have} workers; {count} tasks need one "
                              f"each (scale it up, or ask for fewer tasks)") from None
        workers = sorted(self.client.scheduler_info(n_workers=-1)["workers"].items(),
                         key=lambda kv: str(kv[1].get("name")))[:count]
        by_host: dict = {}
        for address, info in workers:
            by_host.setdefault(info["host"], []).append(address)
        ports = {host: self.client.run(free_ports, len(addrs), host,
                                       workers=[addrs[0]])[addrs[0]]
                 for host, addrs in by_host.items()}
        slots = [(job, i) for job, n in jobs.items() for i in range(n)]
        tasks = []
        for (job, index), (address, info) in zip(slots, workers):
            task = Task(job, index, info["host"], ports[info["host"]].pop())
            self._names[(job, index)] = str(info.get("name"))
            tasks.append(task)
        return tasks

    def launch(self, tasks: list, status, logdir: str, config: Optional[str],
               timeout: float, token: Optional[str] = None, ca=None) -> None:
        """Registers the plugin (every worker starts its task), then waits for all.

        Args:
          token, ca: the cluster's token and ClusterCA (None: no TLS).
        """
        spec: dict = {}
        for task in sorted(tasks, key=lambda t: (t.job, t.index)):
            spec.setdefault(task.job, []).append(task.address)
        assignment = {self._names[(t.job, t.index)]: [t.job, t.index, t.host,
                                                      int(t.address.rsplit(":", 1)[1])]
                      for t in tasks}
        for task in tasks:
            task.log_path = os.path.join(logdir, f"{task.job}-{task.index}.log")
            task.process = DaskProcess(self, self._names[(task.job, task.index)])
        secrets = {self._names[(t.job, t.index)]: task_secrets.task_env(t, token, ca, None)
                   for t in tasks}
        plugin = NBClusterTasks(self.plugin_name, assignment, spec, self.python, self.env,
                                config, logdir, secrets)
        self.client.register_plugin(plugin, name=self.plugin_name)
        self._registered = True
        await_tasks(tasks, status, timeout, raise_on_bind=True)

    # -- the Launcher protocol (for Cluster.restart) ------------------------------------
    def free_ports(self, host: str, count: int, timeout: float) -> list:
        raise LaunchError("a Dask cluster's ports are picked when it starts")

    def start(self, host: str, args: list, log_path: str, tasks_on_host: int,
              env: dict) -> DaskProcess:
        """Restarts the task of `args` (its --job and --task) on its worker."""
        key = (args[args.index("--job") + 1], int(args[args.index("--task") + 1]))
        process = DaskProcess(self, self._names[key])
        if process._run(_on_worker_restart) is None:
            raise LaunchError(f"The Dask worker {self._names[key]!r} of /job:{key[0]}/task:"
                              f"{key[1]} is not connected")
        return process

    def close(self) -> None:
        """Unregisters the plugin: each worker's teardown stops its task."""
        if not self._registered:
            return
        self._registered = False
        try:
            self.client.unregister_worker_plugin(self.plugin_name)
        except Exception:  # noqa: BLE001 - the client or cluster closed first: tasks died
            pass
