"""Cluster: the task servers of one cluster, started by a launcher (or connected to).

Rules: a task is ready when it answers GetStatus as itself, never after a
sleep (`startup.py`, which also retries a start whose picked port was
taken); every process started is stopped by `stop()`, by garbage collection
or at exit, and dies by itself when this process dies (`launcher.py`). A
connected cluster owns nothing.
"""
from __future__ import annotations

import itertools
import os
import shutil
import signal
import tempfile
import weakref
from typing import Optional

from nbcluster.framework.cluster_spec import ClusterSpec
from nbcluster.launch import records, table
from nbcluster.launch.cluster_args import config_json, job_counts, make_launcher, spec_tasks
from nbcluster.launch.errors import LaunchError
from nbcluster.launch.launcher import LocalLauncher, log_tail, signal_name, stop_all
from nbcluster.launch.startup import Task, await_tasks, spec_of, start_task, start_tasks
from nbcluster.launch.status import StatusClient, TaskStatus, task_status
from nbcluster.launch.task_devices import task_devices

__all__ = ["Cluster", "TaskStatus", "LaunchError"]

_names = itertools.count(1)


def _shutdown(tasks: dict, launcher, status: StatusClient, logdir: list, grace: float) -> None:
    """Closes the status channels (before their servers go: no GOAWAY noise), stops
    every task process (all asked at once), then removes the logs."""
    status.close()
    stop_all([t.process for t in tasks.values() if t.process is not None], grace)
    for t in tasks.values():
        t.state = "stopped"
    if launcher is not None:
        launcher.close()
    if logdir:
        shutil.rmtree(logdir.pop(), ignore_errors=True)


class Cluster:
    """The tasks of one cluster, each a `python -m nbcluster.server` process.

    Build one with `Cluster.local`, `Cluster.ssh`, `Cluster.from_spec` or
    `Cluster.connect`, not with the constructor.

    Example:
      >>> with Cluster.local(ps=1, worker=2) as cluster:
      ...     cluster.target("worker", 0).startswith("grpc://127.0.0.1:")
      True
    """

    def __init__(self, tasks: list, launcher, name: Optional[str], config=None) -> None:
        self.name = name or f"cluster-{next(_names)}"
        self._tasks = {(t.job, t.index): t for t in tasks}
        self._token: Optional[str] = None  # the tasks' token (rpc/grpc_transport/tokens.py), if any
        self._tls: Optional[bool] = None  # TLS asked for (None: off loopback only)
        self._ca = None  # the cluster's certificates.ClusterCA once its tasks use TLS
        self._launcher = launcher  # None: connected, owns no process
        self._config = config_json(config)
        self._status = StatusClient()
        self._logdir: list = []
        self._stopped = False
        self._finalizer = weakref.finalize(self, _shutdown, self._tasks, launcher,
                                           self._status, self._logdir, 2.0)

    # -- construction --------------------------------------------------------
    @classmethod
    def local(cls, ps: int = 1, worker: int = 2, *, jobs: Optional[dict] = None, config=None,
              env: Optional[dict] = None, host: str = "127.0.0.1", timeout: float = 60.0,
              name: Optional[str] = None, devices: Optional[dict] = None,
              checkpoint_dir=None, server: str = "nbcluster",
              tls: Optional[bool] = None) -> "Cluster":
        """Starts `ps` + `worker` tasks (or `jobs`, e.g. {"chief": 1, "worker": 3}) here.

        Args:
          config: a ConfigProto, every task's default session config.
          env: extra environment variables for the task processes.
          host: the address every task binds.
          timeout: seconds for every task to answer GetStatus.
          devices: per job, the devices of its tasks: {"worker": {"cpus": 2,
            "gpus": "0"}}; a list gives one value per task ({"gpus": ["0", "1"]}).
            "cpus" is the task's CPU device count; "gpus" its CUDA_VISIBLE_DEVICES
            ("none": no GPU). See task_devices.py.
          checkpoint_dir: the only directory the tasks' checkpoint ops may touch
            (NBCLUSTER_CHECKPOINT_DIR for them); default: theirs, else this
            process's working directory.
          server: "tensorflow" starts real `tf.distribute.Server` tasks instead
            (TensorFlow installed: the `interop` extra); they check no token.
          tls: serve TLS, each task with a certificate from a CA made for this
            cluster (docs/security.md); default: only where a task is off
            loopback (True forces it on loopback too). Every launcher takes it.
        Returns:
          A started Cluster.
        Raises:
          LaunchError: a task did not start (its log tail is quoted).
          TypeError, ValueError: bad job counts or devices.
        """
        jobs = job_counts(ps, worker, jobs)
        tasks = [Task(job, i, host, 0) for job, n in jobs.items() for i in range(n)]
        if checkpoint_dir is not None:
            env = {**(env or {}), "NBCLUSTER_CHECKPOINT_DIR": os.path.abspath(checkpoint_dir)}
        return cls._started(tasks, LocalLauncher(env=env, server=server), name, config, timeout,
                            devices, tls)

    @classmethod
    def ssh(cls, hosts, ps: int = 1, worker: int = 2, *, jobs: Optional[dict] = None,
            python: str = "python3", user: Optional[str] = None, key: Optional[str] = None,
            port: int = 22, ssh_options=(), config=None, env: Optional[dict] = None,
            timeout: float = 60.0, name: Optional[str] = None,
            devices: Optional[dict] = None, tls: Optional[bool] = None) -> "Cluster":
        """Starts tasks over SSH on `hosts`, assigned round robin, ps tasks first.

        Args:
          hosts: host names (or one); each task binds its host's name.
          python: the remote interpreter that can import nbcluster.
          user, key, port, ssh_options: for the `ssh` client (see ssh.py).
          env: environment variables for the remote tasks (PYTHONPATH, say).
          devices: each task's devices, as for `local`.
        Raises:
          LaunchError: a host cannot be reached (one line naming it) or a task
            did not start (its log tail is quoted).
        """
        from nbcluster.launch.ssh import SSHLauncher, check_host
        hosts = [hosts] if isinstance(hosts, str) else list(hosts)
        if not hosts or not all(isinstance(h, str) and h for h in hosts):
            raise ValueError(f"hosts must be a non-empty list of host names, not {hosts!r}")
        for host in hosts:  # before anything runs: "-o..." would be an ssh option
            check_host(host)
        jobs = job_counts(ps, worker, jobs)
        slots = itertools.cycle(hosts)
        tasks = [Task(job, i, next(slots), 0) for job, n in jobs.items() for i in range(n)]
        launcher = SSHLauncher(python=python, user=user, key=key, port=port,
                               ssh_options=ssh_options, env=env)
        return cls._started(tasks, launcher, name, config, timeout, devices, tls)

    @classmethod
    def slurm(cls, ps: int = 1, worker: int = 2, *, jobs: Optional[dict] = None,
              partition: Optional[str] = None, time=None, nodes: Optional[int] = None,
              cpus_per_task: Optional[int] = None, gpus_per_task: Optional[int] = None,
              sbatch_options=(), python: Optional[str] = None, env: Optional[dict] = None,
              config=None, timeout: float = 60.0, wait: bool = True,
              name: Optional[str] = None, tls: Optional[bool] = None) -> "Cluster":
        """Asks Slurm for one allocation holding every task; each task is an srun step in it.

        Args:
          partition, time, nodes, cpus_per_task, gpus_per_task: sbatch's options
            (time: minutes, or "HH:MM:SS"); cpus and gpus are per task.
          sbatch_options: more sbatch options, e.g. ("--mem-per-cpu=2G",).
          python: the nodes' interpreter that imports nbcluster (default: this one).
          env: environment variables for the tasks (never on a command line).
          timeout: seconds for the allocation and every task (with `wait`).
          wait: wait for the allocation and the tasks; False: return at once
            (status() shows the job id and why it pends; wait_ready() starts it).
        Returns:
          A SlurmCluster (`job_id`, `job_script()`, `job_state()`).
        Raises:
          LaunchError: Slurm refused or can never satisfy the request (naming
            why), the allocation still pends after `timeout` (naming squeue's
            reason), or a task did not start. The job is cancelled then.
        """
        from nbcluster.launch.slurm_cluster import SlurmCluster
        options = dict(partition=partition, time=time, nodes=nodes,
                       cpus_per_task=cpus_per_task, gpus_per_task=gpus_per_task,
                       sbatch_options=sbatch_options, python=python, env=env)
        return SlurmCluster.submit(job_counts(ps, worker, jobs), options, config=config,
                                   timeout=timeout, wait=wait, name=name, tls=tls)

    @classmethod
    def dask(cls, client, ps: int = 1, worker: int = 2, *, jobs: Optional[dict] = None,
             python: Optional[str] = None, env: Optional[dict] = None, config=None,
             timeout: float = 60.0, name: Optional[str] = None,
             tls: Optional[bool] = None) -> "Cluster":
        """Starts one task per worker of a Dask cluster (extra `dask`), by a WorkerPlugin.

        A Dask worker that restarts (same name) brings its task back at the same
        address. Tasks bind the host each worker reports.

        Args:
          client: a `distributed.Client` with at least as many workers as tasks.
          python: the workers' interpreter that imports nbcluster (default: this one).
          env: environment variables for the task servers.
        Raises:
          LaunchError: too few workers, or a task did not start.
        """
        from nbcluster.launch.dask import DaskLauncher
        launcher = DaskLauncher(client, python=python, env=env)
        tasks = launcher.assign(job_counts(ps, worker, jobs), timeout)
        return cls._started(tasks, launcher, name, config, timeout, tls=tls)

    @classmethod
    def ray(cls, address: Optional[str] = None, ps: int = 1, worker: int = 2, *,
            jobs: Optional[dict] = None, resources_per_task: Optional[dict] = None,
            max_restarts: int = -1, python: Optional[str] = None, env: Optional[dict] = None,
            config=None, timeout: float = 60.0, name: Optional[str] = None,
            tls: Optional[bool] = None) -> "Cluster":
        """Starts each task as a Ray actor, all in one placement group (extra `ray`).

        An actor whose worker process dies is restarted by Ray (`max_restarts`)
        and brings its task back at the same address.

        Args:
          address: the Ray cluster for `ray.init` when this process has not
            connected yet (None: RAY_ADDRESS, a local one, or a new local one).
          resources_per_task: each task's bundle, e.g. {"CPU": 2, "GPU": 1}
            (default {"CPU": 1}).
        Raises:
          LaunchError: Ray cannot place the tasks in `timeout`, or one did not start.
        """
        import ray

        from nbcluster.launch.ray import RayLauncher
        if not ray.is_initialized():
            ray.init(address=address)
        launcher = RayLauncher(resources_per_task, python=python, env=env,
                               max_restarts=max_restarts)
        try:
            tasks = launcher.assign(job_counts(ps, worker, jobs), timeout)
        except BaseException:
            launcher.close()
            raise
        return cls._started(tasks, launcher, name, config, timeout, tls=tls)

    @classmethod
    def from_spec(cls, spec, launcher="local", *, config=None, timeout: float = 60.0,
                  name: Optional[str] = None, devices: Optional[dict] = None,
                  tls: Optional[bool] = None, **launcher_options) -> "Cluster":
        """Starts one task per address of `spec` (port 0: a free port is picked).

        Args:
          spec: a ClusterSpec or dict.
          launcher: "local", "ssh" or a launcher object; `launcher_options` go
            to the named one (env=, python=, user=, ...).
          devices: each task's devices, as for `local`.
        """
        tasks = spec_tasks(spec)
        return cls._started(tasks, make_launcher(launcher, launcher_options), name, config,
                            timeout, devices, tls)

    @classmethod
    def connect(cls, spec=None, *, record: Optional[str] = None, timeout: float = 10.0,
                name: Optional[str] = None, token: Optional[str] = None,
                tls_ca=None) -> "Cluster":
        """The servers of `spec`, which someone else started: `stop()` kills none.

        Args:
          spec: a ClusterSpec or dict of the tasks' addresses.
          record: instead of `spec`, the id or name of a cluster started on this
            machine (as JupyterLab's sidebar lists it): its addresses, name and
            token come from its record (launch/records.py), never from the cell.
          token: the cluster's token, sent on every call to its tasks from this
            process (Session(target) too); default the record's, else
            NBCLUSTER_TOKEN, else the file NBCLUSTER_TOKEN_FILE names.
          tls_ca: the cluster CA's certificate (PEM bytes, or a file's path):
            calls from this process to its tasks use TLS and verify them
            against it; default the record's, else as every client finds one
            (the CA of a record on this host for those addresses, else
            NBCLUSTER_TLS_CA, a path), else plaintext.
        Raises:
          TimeoutError: some task did not answer GetStatus within `timeout`.
          ValueError: both or neither of `spec` and `record`, or no running
            cluster `record` here.
        """
        from nbcluster.rpc.grpc_transport import tls_material, tokens
        if (spec is None) == (record is None):
            raise ValueError("Cluster.connect takes a spec or record=, exactly one of them")
        if record is not None:
            try:
                found = records.lookup(record)
            except KeyError as e:
                raise ValueError(f"Cluster.connect(record={record!r}): {e.args[0]}") from None
            spec = {}
            for t in sorted(found["tasks"], key=lambda t: (t["job"], t["index"])):
                spec.setdefault(t["job"], {})[t["index"]] = t["address"]
            name, token = name or found.get("name"), token or found.get("token")
            if tls_ca is None and found.get(tls_material.RECORD_FIELD):
                tls_ca = found[tls_material.RECORD_FIELD].encode("ascii")
        tasks = spec_tasks(spec)
        token = token or tokens.from_environment()
        if isinstance(tls_ca, (str, os.PathLike)):
            with open(tls_ca, "rb") as f:
                tls_ca = f.read()
        for task in tasks:
            task.state = "up"
            if token:
                tokens.register(task.address, token)
            if tls_ca:
                tls_material.register_ca(task.address, tls_ca)
        cluster = cls(tasks, None, name)
        cluster._token = token
        try:
            cluster.wait_ready(timeout)
        except BaseException:
            cluster.stop()
            raise
        return cluster

    @classmethod
    def _started(cls, tasks: list, launcher, name, config, timeout: float,
                 devices: Optional[dict] = None, tls: Optional[bool] = None) -> "Cluster":
        indices: dict = {}
        for t in tasks:
            indices.setdefault(t.job, []).append(t.index)
        per_task = task_devices(devices, indices)  # bad devices: raised before any start
        for t in tasks:
            t.devices = per_task.get((t.job, t.index), t.devices)
        cluster = cls(tasks, launcher, name, config)
        cluster._tls = tls
        try:
            cluster._launch(timeout)
        except BaseException:
            cluster.stop()
            raise
        records.write(cluster)  # for Jupyter's sidebar (never fatal)
        return cluster

    def _launch(self, timeout: float) -> None:
        from nbcluster.launch import task_secrets
        from nbcluster.rpc.grpc_transport import tokens
        self._logdir.append(tempfile.mkdtemp(prefix=f"nbcluster-{os.getpid()}-"))
        secured = getattr(self._launcher, "authenticates", True)  # not TF's own servers
        if secured:
            self._token = self._token or tokens.new_token()  # one per cluster, never on argv
        if secured and self._ca is None and task_secrets.wants_tls(
                self._tls, (t.host for t in self._tasks.values())):
            self._ca = task_secrets.new_ca(self.name)
        launch = getattr(self._launcher, "launch", None)  # an engine that starts all at once
        if launch is not None:
            launch(list(self._tasks.values()), self._status, self._logdir[0], self._config,
                   timeout, token=self._token, ca=self._ca)
            return
        start_tasks(list(self._tasks.values()), self._launcher, self._status, self._logdir[0],
                    self._config, timeout, self._token, self._ca)

    # -- queries ---------------------------------------------------------------
    @property
    def spec(self) -> ClusterSpec:
        return spec_of(self._tasks.values())

    @property
    def targets(self) -> dict:
        return {key: f"grpc://{t.address}" for key, t in self._tasks.items()}

    def _task(self, job: str, index: int) -> Task:
        task = self._tasks.get((job, index))
        if task is None:
            raise ValueError(f"Cluster {self.name!r} has no task /job:{job}/task:{index} "
                             f"(tasks: {', '.join(t.name for t in self._tasks.values())})")
        return task

    def target(self, job: str = "worker", index: int = 0) -> str:
        """"grpc://host:port" of task /job:`job`/task:`index` (ValueError if none)."""
        return f"grpc://{self._task(job, index).address}"

    def pid(self, job: str, index: int) -> int:
        """The process id of task /job:`job`/task:`index`'s server (on its own host).

        Raises:
          ValueError: no such task.
          LaunchError: this cluster was connected to, so it knows no process
            (`status()` has each task's own word on its pid).
        """
        task = self._task(job, index)
        if task.process is None or task.process.server_pid is None:
            raise LaunchError(f"Cluster {self.name!r} did not start {task.name}: it knows no "
                              f"pid for it (status() reports what the task says)")
        return task.process.server_pid

    @property
    def pids(self) -> dict:
        """{(job, index): server pid} of every task this cluster started, stopped ones
        included (to check that they are gone); {} for a connected cluster."""
        return {key: t.process.server_pid for key, t in sorted(self._tasks.items())
                if t.process is not None and t.process.server_pid is not None}

    @property
    def stopped(self) -> bool:
        """Whether `stop()` was called (then no task of it runs, and none can restart)."""
        return self._stopped

    def exit_code(self, job: str, index: int) -> Optional[int]:
        """How task /job:`job`/task:`index`'s process ended, if this cluster knows.

        Returns:
          None while its process runs, for a task this cluster did not start,
          and for a remote task whose own status is unknown; else the return
          code (negative: killed by that signal). An ssh session passes on its
          server's status (the server replaces the remote shell), except 255:
          ssh's own failure or a remote signal.
        Raises:
          ValueError: no such task.
        """
        task = self._task(job, index)
        if self._launcher is None or task.process is None:
            return None
        code = task.process.poll()
        if self._launcher.kind != "local" and code is not None:
            # ssh passes on its server's status except 255; srun too, below 128 (128+N: N)
            limit = {"ssh": 255, "slurm": 128}.get(self._launcher.kind, 0)
            code = code if 0 <= code < limit else None
        if code is not None:
            self._log_exit(task, code)
        return code

    def _log_exit(self, task: Task, code: int) -> None:
        """Ends the task's log with how its process ended, once per run: a SIGKILLed
        task writes nothing itself, and its log must still say why it stopped."""
        if task.exit_logged or self._stopped or not task.log_path:
            return
        task.exit_logged = True
        how = f"was killed by {signal_name(-code)}" if code < 0 else \
            f"exited with status {code}"
        try:
            with open(task.log_path, "a", encoding="utf-8") as log:
                log.write(f"[nbcluster] {task.name} {how}\n")
        except OSError:  # its log folder is gone (the cluster is being stopped)
            pass

    def status(self, timeout: float = 2.0) -> list:
        """A TaskStatus per task, from each one's GetStatus (asked concurrently).

        A task whose process ended is "failed" (a nonzero status or a signal,
        `kill()` included) or "stopped" (status 0); all are "stopped" after `stop()`.
        """
        asked = {key: t.address for key, t in self._tasks.items()
                 if not self._stopped and (t.process is None or t.process.poll() is None)}
        answers = self._status.get_many(asked, timeout) if asked else {}
        out = []
        for key, t in sorted(self._tasks.items()):
            response = answers.get(key)
            code = t.process.poll() if t.process is not None else None
            if self._stopped:
                state = "stopped"
            elif code is not None:  # killed by `kill()` too: a signal is a failure
                state = "stopped" if code == 0 else "failed"
            elif response is not None:
                state = t.state = "up"
            else:
                state = "starting" if t.state == "starting" else "down"
            pid = t.process.server_pid if t.process is not None else None
            out.append(task_status(t.job, t.index, t.address, response, state, pid,
                                   t.host_name or t.host))
        return out

    def logs(self, job: str, index: int, tail: int = 50) -> str:
        """The last `tail` lines of the task's stdout+stderr, ending with how its process
        ended if it did ("" once stopped or if this cluster did not start it)."""
        self.exit_code(job, index)  # notes an exit in the log
        return log_tail(self._task(job, index).log_path, tail) if self._logdir else ""

    def wait_ready(self, timeout: float = 30.0) -> None:
        """Returns once every task answers GetStatus.

        Raises:
          TimeoutError: naming the tasks that did not answer within `timeout`.
        """
        silent = await_tasks(list(self._tasks.values()), self._status, timeout,
                             raise_on_failure=False)
        if silent:
            raise TimeoutError(f"Cluster {self.name!r}: no GetStatus answer within {timeout:g}s "
                               f"from {', '.join(t.name + ' at ' + t.address for t in silent)}")

    # -- control ------------------------------------------------------------
    def _owned(self, job: str, index: int, what: str) -> Task:
        task = self._task(job, index)
        if self._launcher is None:
            raise LaunchError(f"Cluster {self.name!r} was connected to, not started: it "
                              f"cannot {what} {task.name}")
        if self._stopped:
            raise LaunchError(f"Cluster {self.name!r} is stopped: it cannot {what} {task.name}")
        return task

    def kill(self, job: str, index: int, sig: int = signal.SIGKILL) -> None:
        """Sends `sig` to the task's server process; waits for it to end if `sig` ends it."""
        task = self._owned(job, index, "kill")
        if task.process is None:
            return
        task.process.signal(sig)
        if sig in (signal.SIGKILL, signal.SIGTERM, signal.SIGINT):
            task.process.stop(10.0)
            task.state = "stopped"

    def restart(self, job: str, index: int) -> str:
        """Kills the task (if alive) and starts it again at its address; its target.

        Raises:
          LaunchError: it did not come back (its log tail is quoted).
        """
        task = self._owned(job, index, "restart")
        if task.process is not None:
            task.process.signal(signal.SIGKILL)
            task.process.stop(10.0)
        start_task(task, list(self._tasks.values()), self._launcher, self._status,
                   self._logdir[0], self._config, self._token, self._ca)
        await_tasks([task], self._status, 60.0, raise_on_bind=True)
        records.write(self)  # its new pid
        return f"grpc://{task.address}"

    def stop(self, grace: float = 5.0) -> None:
        """SIGTERM every task started, SIGKILL after `grace` s; reaps all. Idempotent."""
        if self._stopped:
            return
        self._stopped = True
        self._finalizer.detach()
        records.remove(self)
        _shutdown(self._tasks, self._launcher, self._status, self._logdir, grace)
        if self._ca is not None:
            from nbcluster.launch import task_secrets
            task_secrets.forget(self._tasks.values(), self._ca)

    def __enter__(self) -> "Cluster":
        return self

    def __exit__(self, *exc) -> None:
        self.stop()

    # -- display ----------------------------------------------------------------
    def _title(self) -> str:
        kind = "connected" if self._launcher is None else self._launcher.kind
        return (f"Cluster {self.name!r} ({kind}, {len(self._tasks)} tasks"
                f"{', stopped' if self._stopped else ''})")

    def __repr__(self) -> str:
        return table.text_table(self._title(), self.status(timeout=1.0))

    def _repr_html_(self) -> str:
        return table.html_table(self._title(), self.status(timeout=1.0))
