"""A cluster of local task processes: each task is `python -m nbcluster.server`.

Rule: every process is started, signalled and reaped by its own pid (never
by name), and `stop()` leaves none behind, whatever happened before it.
Ports are picked up front (`free_ports`) so every task knows every address.
"""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
from typing import Optional

from google.protobuf import json_format

from nbcluster.framework.cluster_spec import ClusterSpec
from nbcluster.launch.process import share_blas_threads, child_env, free_ports, spawn
from nbcluster.server import parse_ready_line

__all__ = ["LocalCluster", "child_env", "free_ports"]


class _Task:
    def __init__(self, job: str, index: int) -> None:
        self.job, self.index = job, index
        self.proc: Optional[subprocess.Popen] = None
        self.target: Optional[str] = None
        self.stderr_path = ""


class LocalCluster:
    """Tasks of `jobs` (e.g. {"ps": 1, "worker": 2}) as processes on `host`.

    Args:
      jobs: job name -> number of tasks.
      host: the address every task binds ("127.0.0.1").
      config: a ConfigProto every task gets as its default session config.
      env: extra environment variables for the task processes.
      timeout: seconds to wait for all tasks to print their ready line.
    Raises:
      RuntimeError: a task exited or stayed silent past `timeout` (its stderr
        tail is quoted); every task started is stopped first.
    Example:
      >>> with LocalCluster({"ps": 1, "worker": 2}) as cluster:
      ...     cluster.target("worker", 0).startswith("grpc://")
      True
    """

    def __init__(self, jobs: dict, host: str = "127.0.0.1", config=None,
                 env: Optional[dict] = None, timeout: float = 30.0) -> None:
        ports = iter(free_ports(sum(jobs.values()), host))
        self.spec = ClusterSpec({job: [f"{host}:{next(ports)}" for _ in range(n)]
                                 for job, n in jobs.items()})
        self._config = None if config is None else json_format.MessageToJson(
            config, indent=None)
        self._env = child_env(env)
        share_blas_threads(self._env, sum(jobs.values()))
        self._timeout = timeout
        self._logs = tempfile.TemporaryDirectory(prefix="nbcluster-tasks-")
        self._tasks = {(job, i): _Task(job, i) for job in self.spec.jobs
                       for i in self.spec.task_indices(job)}
        try:
            for task in self._tasks.values():
                self._spawn(task)
            self._await(list(self._tasks.values()))
        except BaseException:
            self.stop()
            raise

    # -- queries -------------------------------------------------------------
    @property
    def tasks(self) -> list:
        return list(self._tasks)

    def target(self, job: str, index: int) -> str:
        return self._tasks[(job, index)].target

    def pid(self, job: str, index: int) -> int:
        return self._tasks[(job, index)].proc.pid

    @property
    def targets(self) -> dict:
        return {key: t.target for key, t in self._tasks.items()}

    @property
    def pids(self) -> dict:
        return {key: t.proc.pid for key, t in self._tasks.items() if t.proc is not None}

    def command(self, job: str, index: int) -> list:
        """The argv that runs task /job:`job`/task:`index`."""
        argv = [sys.executable, "-m", "nbcluster.server", "--cluster",
                json.dumps(self.spec.as_dict()), "--job", job, "--task", str(index),
                f"--exit-with-parent={os.getpid()}"]
        return argv + (["--config", self._config] if self._config else [])

    # -- processes -----------------------------------------------------------
    def _spawn(self, task: _Task) -> None:
        task.target = None
        task.stderr_path = os.path.join(self._logs.name, f"{task.job}-{task.index}.stderr")
        with open(task.stderr_path, "ab") as err:
            task.proc = spawn(self.command(task.job, task.index), env=self._env,
                              stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=err,
                              text=True)

    def _await(self, tasks: list) -> None:
        lines: dict = {}
        readers = []
        for task in tasks:
            reader = threading.Thread(target=lambda t=task: lines.__setitem__(
                t, t.proc.stdout.readline()), daemon=True)
            reader.start()
            readers.append(reader)
        deadline = time.monotonic() + self._timeout
        for reader in readers:
            reader.join(max(0.0, deadline - time.monotonic()))
        for task in tasks:
            ready = parse_ready_line(lines.get(task, ""))
            if ready is None:
                raise RuntimeError(self._failure(task, lines.get(task)))
            task.target = ready[2]

    def _failure(self, task: _Task, line: Optional[str]) -> str:
        rc = task.proc.poll()
        why = (f"exited with status {rc}" if rc is not None else
               f"printed no ready line within {self._timeout:g}s" if line is None else
               f"printed {line!r} instead of its ready line")
        with open(task.stderr_path, encoding="utf-8", errors="replace") as f:
            tail = f.read()[-2000:].strip()
        return f"task /job:{task.job}/task:{task.index} {why}" + \
            (f"; its stderr ends:\n{tail}" if tail else "")

    def kill(self, job: str, index: int, sig: int = signal.SIGKILL) -> None:
        """Sends `sig` to one task's process and reaps it (SIGKILL by default)."""
        proc = self._tasks[(job, index)].proc
        if proc is not None and proc.poll() is None:
            proc.send_signal(sig)
        if proc is not None:
            proc.wait(30)

    def restart(self, job: str, index: int) -> str:
        """Kills one task (if alive), starts it again on the same port; its new target."""
        self.kill(job, index)
        task = self._tasks[(job, index)]
        _close(task.proc)
        self._spawn(task)
        self._await([task])
        return task.target

    def stop(self, grace: float = 5.0) -> None:
        """SIGTERM every task, SIGKILL any still alive after `grace` seconds; reap all."""
        procs = [t.proc for t in self._tasks.values() if t.proc is not None]
        for proc in procs:
            if proc.poll() is None:
                proc.terminate()
        deadline = time.monotonic() + grace
        for proc in procs:
            try:
                proc.wait(max(0.0, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
            _close(proc)
        self._logs.cleanup()

    def __enter__(self) -> "LocalCluster":
        return self

    def __exit__(self, *exc) -> None:
        self.stop()


def _close(proc: Optional[subprocess.Popen]) -> None:
    if proc is not None and proc.stdout is not None:
        proc.stdout.close()
