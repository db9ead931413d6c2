"""Starting a cluster's tasks and waiting for them: ready once each answers GetStatus as itself.

Each task is watched by its own thread until it answers, its process exits,
or the deadline passes; the first failure stops the others' wait, so a task
that cannot start is reported at once, quoting its log. Ports the cluster
picked are picked again (the whole start retried) when one was taken before
its task bound it.
"""
from __future__ import annotations

import json
import os
import textwrap
import threading
import time
from concurrent.futures import FIRST_COMPLETED, ThreadPoolExecutor, wait
from typing import Optional

from nbcluster import errors
from nbcluster.framework.cluster_spec import ClusterSpec, join_address
from nbcluster.launch import task_secrets
from nbcluster.launch.errors import LaunchError
from nbcluster.launch.launcher import log_tail, signal_name, stop_all
from nbcluster.launch.status import StatusClient
from nbcluster.launch.task_devices import TaskDevices
from nbcluster.progress import Progress

BIND_FAILURE = "failed to bind"  # what the server logs when its port is taken
_TAIL_LINES = 20
_ATTEMPTS = 3  # whole starts tried when a picked port was taken meanwhile
_PROGRESS_DELAY_S = 0.5  # a start quicker than this shows no progress bar
_PROGRESS_TICK_S = 0.1


class Task:
    """One task of a Cluster: where it should run and what runs it."""

    def __init__(self, job: str, index: int, host: str, port: int,
                 devices: TaskDevices = TaskDevices()) -> None:
        self.job, self.index, self.host = job, index, host
        self.devices = devices
        self.requested_port = port  # 0: the cluster picks one
        self.address = join_address(host, port)
        self.process = None  # a launcher's TaskProcess; None when not ours
        self.log_path = ""
        self.state = "starting"  # our last word on it: starting | up | stopped
        self.host_name = ""  # the host name its GetStatus reported
        self.exit_logged = False  # its log ends with how its current process ended

    @property
    def name(self) -> str:
        return f"/job:{self.job}/task:{self.index}"


def _await_one(task: Task, status: StatusClient, deadline: float,
               abort: threading.Event) -> tuple:
    """(outcome, value): ("up", response), ("exited", code), ("silent", None),
    ("foreign", response) for another task's server at its address, or ("aborted", None)."""
    while not abort.is_set():
        if task.process is not None and task.process.poll() is not None:
            return "exited", task.process.poll()
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            return "silent", None
        try:
            response = status.get(task.address, min(1.0, remaining), wait=True)
        except errors.OpError:
            abort.wait(0.05)  # a refused connection fails at once: do not spin
            continue
        if task.process is not None and \
                (response.job_name, response.task_index) != (task.job, task.index):
            return "foreign", response
        return "up", response
    return "aborted", None


def _why(task: Task, outcome: str, value, timeout: float) -> str:
    if outcome == "exited":
        how = f"was killed by {signal_name(-value)}" if value < 0 else \
            f"exited with status {value}"
        return f"{how} before it served"
    if outcome == "foreign":
        return (f"found another server (/job:{value.job_name}/task:{value.task_index}, pid "
                f"{value.pid}) at its address")
    return f"did not answer GetStatus within {timeout:g}s"


def describe_failure(task: Task, outcome: str, value, timeout: float) -> str:
    """'task /job:w/task:0 at host:port <why>; its log ends:' and the log's tail."""
    where = f"task {task.name} at {task.address}"
    pid = getattr(task.process, "pid", None)
    if pid:
        where += f" (local pid {pid})"
    tail = log_tail(task.log_path, _TAIL_LINES) if task.log_path else ""
    end = f"; its log ends:\n{textwrap.indent(tail, '    ')}" if tail.strip() else \
        ("; its log is empty" if task.log_path else "")
    return f"{where} {_why(task, outcome, value, timeout)}{end}"


def _bind_failed(task: Task) -> bool:
    return BIND_FAILURE in log_tail(task.log_path, _TAIL_LINES)


def _mark_up(task: Task, response) -> None:
    task.state = "up"
    task.host_name = response.host
    if task.process is not None and response.pid:
        task.process.server_pid = response.pid


def await_tasks(tasks: list, status: StatusClient, timeout: float,
                raise_on_failure: bool = True, raise_on_bind: bool = False) -> list:
    """Waits until every task in `tasks` answers GetStatus (as itself, if ours).

    Args:
      timeout: seconds, for all of them together.
      raise_on_failure: raise on a task that exits or stays silent; False: just
        return the tasks that did not answer.
      raise_on_bind: also raise when the only failures are taken ports.
    Returns:
      The tasks whose port was taken by someone else (retry with new ports),
      or with raise_on_failure=False, the tasks that did not answer.
    Raises:
      LaunchError: a task exited, answered as another task, or stayed silent;
        the message quotes its log tail.
    """
    deadline = time.monotonic() + timeout
    abort = threading.Event()
    results: dict = {}
    progress = Progress(len(tasks), "starting cluster", "tasks up", delay=_PROGRESS_DELAY_S)
    with progress, ThreadPoolExecutor(max_workers=max(1, min(64, len(tasks)))) as pool:
        futures = {pool.submit(_await_one, t, status, deadline, abort): t for t in tasks}
        pending = set(futures)
        while pending:
            # ticks, not as_completed: the bar must appear while every task is still silent
            finished, pending = wait(pending, _PROGRESS_TICK_S, FIRST_COMPLETED)
            for future in finished:
                task = futures[future]
                outcome, value = results[task] = future.result()
                if outcome == "up":
                    _mark_up(task, value)
                elif raise_on_failure:
                    abort.set()
            progress.set(sum(r[0] == "up" for r in results.values()))
        progress.close(failed=progress.value < len(tasks))
    if not raise_on_failure:
        return [t for t in tasks if results[t][0] != "up"]
    failed = [t for t in tasks if results[t][0] not in ("up", "aborted")]
    taken = [t for t in failed if results[t][0] == "foreign" or
             (results[t][0] == "exited" and _bind_failed(t))]
    if not failed or (len(taken) == len(failed) and not raise_on_bind):
        return taken
    first: Optional[Task] = next(t for t in failed if t not in taken) if \
        len(taken) < len(failed) else failed[0]
    message = describe_failure(first, *results[first], timeout)
    others = [t.name for t in failed if t is not first]
    if others:
        message = message.replace("\n", f" (also failed: {', '.join(others)})\n", 1) \
            if "\n" in message else message + f" (also failed: {', '.join(others)})"
    raise LaunchError(message)


def spec_of(tasks) -> ClusterSpec:
    """The ClusterSpec of `tasks` (Task objects), at their current addresses."""
    jobs: dict = {}
    for task in sorted(tasks, key=lambda t: (t.job, t.index)):
        jobs.setdefault(task.job, {})[task.index] = task.address
    return ClusterSpec(jobs)


def start_task(task: Task, tasks: list, launcher, status: StatusClient, logdir: str,
               config: Optional[str], token: Optional[str] = None, ca=None) -> None:
    """Starts `task` (one of `tasks`, the whole cluster) with `launcher`; does not wait.

    Args:
      logdir: the folder of the tasks' logs.
      config: every task's default session config, as ConfigProto JSON (the
        task's own devices go over it).
      token: the cluster's token: the task gets it as NBCLUSTER_TOKEN in its
        environment (the launcher keeps it off every command line), and this
        process sends it to the task's address from now on.
      ca: the cluster's ClusterCA (TLS), or None: the task gets a certificate
        for its host (task_secrets.py), and this process trusts the CA there.
    """
    task.log_path = os.path.join(logdir, f"{task.job}-{task.index}.log")
    config = task.devices.config(config)
    args = ["--cluster", json.dumps(spec_of(tasks).as_dict()), "--job", task.job,
            "--task", str(task.index)] + (["--config", config] if config else [])
    on_host = sum(t.host == task.host for t in tasks)
    task.state, task.exit_logged = "starting", False
    status.forget(task.address)  # a fresh channel, no stale backoff
    folder = logdir if getattr(launcher, "shares_files", False) else None
    env = {**task.devices.env(), **task_secrets.task_env(task, token, ca, folder)}
    task.process = launcher.start(task.host, args, task.log_path, on_host, env)


def start_tasks(tasks: list, launcher, status: StatusClient, logdir: str,
                config: Optional[str], timeout: float, token: Optional[str] = None,
                ca=None) -> None:
    """Picks the ports of tasks at port 0, starts every task, waits until all answer.

    Raises:
      LaunchError: a task did not start (its log tail is quoted), or a port
        stayed taken through every try.
    """
    picked = [t for t in tasks if t.requested_port == 0]
    for attempt in range(1, _ATTEMPTS + 1):
        _pick_ports(tasks, picked, launcher, timeout)
        for task in tasks:
            start_task(task, tasks, launcher, status, logdir, config, token, ca)
        taken = await_tasks(tasks, status, timeout)
        if not taken:
            return
        stuck = [t for t in taken if t.requested_port != 0]
        if stuck or attempt == _ATTEMPTS:
            t = (stuck or taken)[0]
            raise LaunchError(f"task {t.name} could not bind {t.address} "
                              f"{'' if stuck else f'in {_ATTEMPTS} tries '}(the port is "
                              f"taken); its log ends:\n{log_tail(t.log_path, 20)}")
        # ports move, and every task must learn them: start all again
        stop_all([t.process for t in tasks], 1.0)


def _pick_ports(tasks: list, picked: list, launcher, timeout: float) -> None:
    hosts = list(dict.fromkeys(t.host for t in tasks))
    wanted = {h: [t for t in picked if t.host == h] for h in hosts}
    with ThreadPoolExecutor(max_workers=min(16, len(hosts))) as pool:
        ports = dict(zip(hosts, pool.map(
            lambda h: launcher.free_ports(h, len(wanted[h]), timeout), hosts)))
    for host, chosen in wanted.items():
        for task, port in zip(chosen, ports[host]):
            task.address = join_address(host, port)
