"""Waiting for started tasks: ready once each answers GetStatus as itself, else why not.

Each task is watched by its own thread until it answers, its process exits,
or the deadline passes; the first failure stops the others' wait, so a task
that cannot start is reported at once, quoting its log.
"""
from __future__ import annotations

import textwrap
import threading
import time
from concurrent.futures import ThreadPoolExecutor, as_completed
from typing import Optional

import grpc

from nbcluster.framework.cluster_spec import join_address
from nbcluster.launch.errors import LaunchError
from nbcluster.launch.launcher import log_tail, signal_name
from nbcluster.launch.status import StatusClient

BIND_FAILURE = "failed to bind"  # what the server logs when its port is taken
_TAIL_LINES = 20


class Task:
    """One task of a Cluster: where it should run and what runs it."""

    def __init__(self, job: str, index: int, host: str, port: int) -> None:
        self.job, self.index, self.host = job, index, host
        self.requested_port = port  # 0: the cluster picks one
        self.address = join_address(host, port)
        self.process = None  # a launcher's TaskProcess; None when not ours
        self.log_path = ""
        self.state = "starting"  # our last word on it: starting | up | stopped
        self.host_name = ""  # the host name its GetStatus reported

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
        except grpc.RpcError:
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
    with ThreadPoolExecutor(max_workers=max(1, min(64, len(tasks)))) as pool:
        futures = {pool.submit(_await_one, t, status, deadline, abort): t for t in tasks}
        for future in as_completed(futures):
            task = futures[future]
            outcome, value = results[task] = future.result()
            if outcome == "up":
                task.state = "up"
                task.host_name = value.host
                if task.process is not None and value.pid:
                    task.process.server_pid = value.pid
            elif raise_on_failure:
                abort.set()
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
