"""Launchers start task processes; the local one runs `python -m nbcluster.server` here.

A launcher knows how to find free ports on a host and how to start, signal
and stop one task process whose output goes to a log file. `Cluster` does the
rest (ports, readiness, retries) the same way for every launcher.

Rule: a task process dies with its owner. Each task gets `--exit-with-parent`
(the server then sets Linux's parent-death signal and also polls its parent),
and is spawned by `process.spawn` (see why there).
"""
from __future__ import annotations

import copy
import os
import re
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from typing import Optional, Protocol

from google.protobuf import json_format

from nbcluster.launch.errors import LaunchError
from nbcluster.launch.process import share_blas_threads, child_env, free_ports, spawn
from nbcluster.proto import config_pb2

_LOG_TAIL_BYTES = 256 * 1024


class TaskProcess(Protocol):
    """One started task, as its launcher sees it."""
    pid: Optional[int]         # the local process (the task itself, or its ssh client)
    server_pid: Optional[int]  # the task's own pid (from GetStatus when remote)

    def poll(self) -> Optional[int]: ...

    def signal(self, sig: int) -> None: ...

    def terminate(self) -> None: ...  # asks the task to stop; does not wait

    def wait_until(self, deadline: float) -> bool: ...  # ended by time.monotonic() deadline?

    def force(self) -> None: ...  # SIGKILL and reap

    def stop(self, grace: float) -> None: ...


class Launcher(Protocol):
    kind: str

    def free_ports(self, host: str, count: int, timeout: float) -> list: ...

    def start(self, host: str, args: list, log_path: str, tasks_on_host: int) -> TaskProcess: ...

    def close(self) -> None: ...


def log_tail(path: str, lines: int = 50) -> str:
    """The last `lines` lines of the log at `path` ("" if there is none)."""
    try:
        with open(path, "rb") as f:
            f.seek(0, os.SEEK_END)
            size = f.tell()
            f.seek(max(0, size - _LOG_TAIL_BYTES))
            data = f.read()
    except OSError:
        return ""
    text = data.decode("utf-8", errors="replace")
    return "\n".join(text.splitlines()[-lines:]) if lines > 0 else ""


def stop_all(processes: list, grace: float) -> None:
    """Asks every TaskProcess to stop, SIGKILLs those still alive after `grace` s.

    No threads: this also runs from atexit, when no new thread may start.
    """
    for process in processes:
        process.terminate()
    deadline = time.monotonic() + grace
    for process in processes:
        if not process.wait_until(deadline):
            process.force()


def wait_until(proc: subprocess.Popen, deadline: float) -> bool:
    try:
        proc.wait(max(0.0, deadline - time.monotonic()))
    except subprocess.TimeoutExpired:
        return False
    return True


class LocalProcess:
    """A task process on this host."""

    def __init__(self, proc: subprocess.Popen) -> None:
        self.proc = proc
        self.pid: Optional[int] = proc.pid
        self.server_pid: Optional[int] = proc.pid

    def poll(self) -> Optional[int]:
        return self.proc.poll()

    def signal(self, sig: int) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(sig)

    def terminate(self) -> None:
        self.signal(signal.SIGTERM)

    def wait_until(self, deadline: float) -> bool:
        return wait_until(self.proc, deadline)

    def force(self) -> None:
        self.signal(signal.SIGKILL)
        self.proc.wait()

    def stop(self, grace: float) -> None:
        stop_all([self], grace)


class LocalLauncher:
    """Runs each task as `python -m nbcluster.server` on this host.

    Args:
      python: the interpreter (default: this one).
      env: extra environment variables for the tasks; this checkout of
        nbcluster comes first on their PYTHONPATH, and tasks on one host share
        its cores among their BLAS threads unless `env` sets a thread count.
    """

    kind = "local"

    def __init__(self, python: Optional[str] = None, env: Optional[dict] = None) -> None:
        self.python = python or sys.executable
        self.env = dict(env or {})

    def free_ports(self, host: str, count: int, timeout: float) -> list:
        """`count` ports free on `host` (a local address).

        Raises:
          LaunchError: `host` is not an address of this machine.
        """
        try:
            return free_ports(count, host) if count else []
        except OSError as e:
            raise LaunchError(f"Cannot pick a port on host {host!r}: {e.strerror or e} (a "
                              f"local cluster's host must be an address of this machine)") \
                from None

    def start(self, host: str, args: list, log_path: str, tasks_on_host: int) -> LocalProcess:
        env = child_env(self.env)
        share_blas_threads(env, tasks_on_host)
        # The pid of this process, not "whoever is my parent when I look": a
        # task that starts slowly may find itself orphaned before it looks.
        argv = [self.python, "-m", "nbcluster.server", *args,
                f"--exit-with-parent={os.getpid()}"]
        try:
            with open(log_path, "ab") as log:
                proc = spawn(argv, env=env, stdin=subprocess.DEVNULL, stdout=log,
                             stderr=subprocess.STDOUT)
        except OSError as e:
            raise LaunchError(f"Cannot run {self.python!r}: {e.strerror or e}") from None
        return LocalProcess(proc)

    def close(self) -> None:
        pass


_GPU_LIST_RE = re.compile(r"\d+(,\d+)*")


@dataclass(frozen=True)
class TaskDevices:
    """The devices one task offers.

    cpus: its CPU devices (ConfigProto.device_count["CPU"]); None: the default, 1.
    gpus: "0,1" sets CUDA_VISIBLE_DEVICES (the task sees those GPUs, as GPU:0,
      GPU:1); "none": no GPU; "": not set (it sees every GPU of its host).
    """
    cpus: Optional[int] = None
    gpus: str = ""


def per_task(what: str, value, count: int) -> list:
    """`value` for each of `count` tasks: a list or tuple as it is, one value repeated.

    Raises:
      ValueError: a list whose length is not `count` (the message names `what`).
    """
    if isinstance(value, (list, tuple)):
        if len(value) != count:
            raise ValueError(f"{what} {list(value)!r} has {len(value)} entries for {count} "
                             f"tasks")
        return list(value)
    return [value] * count


def _task_device(job: str, index: int, cpus, gpus) -> TaskDevices:
    where = f"/job:{job}/task:{index}"
    if cpus is not None and (not isinstance(cpus, int) or isinstance(cpus, bool) or cpus < 1):
        raise ValueError(f"{where}: the CPU count must be a whole number >= 1, not {cpus!r}")
    gpus = "" if gpus is None else gpus
    if not isinstance(gpus, str):
        raise TypeError(f"{where}: the GPU list must be a string such as '0,1', not {gpus!r}")
    gpus = gpus.replace(" ", "")
    if gpus not in ("", "none") and not _GPU_LIST_RE.fullmatch(gpus):
        raise ValueError(f"{where}: bad GPU list {gpus!r}: give GPU ids such as '0,1', "
                         f"'none' or ''")
    return TaskDevices(cpus, gpus)


def task_devices(devices: Optional[dict], jobs: dict) -> dict:
    """{(job, index): TaskDevices} from `devices` = {job: {"cpus": ..., "gpus": ...}}.

    Args:
      devices: per job, "cpus" (an int, or a list with one entry per task, None
        for "default") and "gpus" (a string, or a list of them); see TaskDevices.
      jobs: {job: its task indices} of the cluster.
    Returns:
      The tasks that have a device setting.
    Raises:
      ValueError, TypeError: an unknown job or key, a list of the wrong length,
        a CPU count < 1, or a malformed GPU list (each naming the value).
    """
    if devices is None:
        return {}
    if not isinstance(devices, dict):
        raise TypeError(f"devices must map job names to {{'cpus': ..., 'gpus': ...}}, not "
                        f"{devices!r}")
    out = {}
    for job, wanted in devices.items():
        if job not in jobs:
            raise ValueError(f"devices name job {job!r}, which the cluster does not have "
                             f"(jobs: {', '.join(jobs)})")
        if not isinstance(wanted, dict) or set(wanted) - {"cpus", "gpus"}:
            raise ValueError(f"devices of job {job!r} must be a dict with keys 'cpus' and/or "
                             f"'gpus', not {wanted!r}")
        indices = list(jobs[job])
        cpus = per_task(f"devices of job {job!r}: cpus", wanted.get("cpus"), len(indices))
        gpus = per_task(f"devices of job {job!r}: gpus", wanted.get("gpus"), len(indices))
        for index, c, g in zip(indices, cpus, gpus):
            device = _task_device(job, index, c, g)
            if device != TaskDevices():
                out[(job, index)] = device
    return out


class DeviceLauncher:
    """Wraps a launcher so that each task starts with its own devices (TaskDevices).

    The CPU count goes into the task's `--config` (merged over the cluster's);
    the GPU list into its CUDA_VISIBLE_DEVICES, through a copy of the wrapped
    launcher with that variable added to its `env`, which both launchers give
    every task they start.
    """

    def __init__(self, launcher, devices: dict) -> None:
        if any(d.gpus for d in devices.values()) and not isinstance(
                getattr(launcher, "env", None), dict):
            raise TypeError(f"{type(launcher).__name__} has no `env`: it cannot give a task "
                            f"its GPU list")
        self.launcher, self.devices = launcher, devices
        self.kind = launcher.kind

    def free_ports(self, host: str, count: int, timeout: float) -> list:
        return self.launcher.free_ports(host, count, timeout)

    def start(self, host: str, args: list, log_path: str, tasks_on_host: int):
        task = (args[args.index("--job") + 1], int(args[args.index("--task") + 1]))
        device = self.devices.get(task)
        if device is None:
            return self.launcher.start(host, args, log_path, tasks_on_host)
        launcher = self.launcher
        if device.gpus:
            launcher = copy.copy(launcher)
            launcher.env = {**launcher.env, "CUDA_VISIBLE_DEVICES":
                            "" if device.gpus == "none" else device.gpus}
        return launcher.start(host, _with_config(args, device), log_path, tasks_on_host)

    def close(self) -> None:
        self.launcher.close()


def _with_config(args: list, device: TaskDevices) -> list:
    """`args` whose --config also sets the task's device counts."""
    args = list(args)
    config = config_pb2.ConfigProto()
    if "--config" in args:
        at = args.index("--config")
        json_format.Parse(args.pop(at + 1), config)
        args.pop(at)
    if device.cpus is not None:
        config.device_count["CPU"] = device.cpus
    if device.gpus == "none":  # not even CuPy gets imported
        config.device_count["GPU"] = 0
    return args + ["--config", json_format.MessageToJson(config, indent=None)]


def signal_name(sig: int) -> str:
    try:
        return signal.Signals(sig).name
    except ValueError:
        return str(sig)
