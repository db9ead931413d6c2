"""Fault tolerance: which task failed, what becomes of its closure, when a worker is back.

Rule: a task is judged by asking it (GetStatus), never by an error's text.
A task that does not answer, or answers with another incarnation than the
one first seen, has failed. A failed ps is fatal to the closures that need
it (its variables are gone); a failed worker is not: its closures run
again elsewhere, and the worker is used again once it answers.
"""
from __future__ import annotations

import sys
import threading
import time
from dataclasses import dataclass
from typing import Optional

from nbcluster import errors
from nbcluster.framework.cluster_spec import ClusterSpec
from nbcluster.rpc.grpc_transport.worker_client import GrpcWorkerClient

# Errors a probe may not explain at once (a task restarting between the
# failed run and the probe); such a closure runs again, this many times.
TRANSIENT_CODES = (errors.UNAVAILABLE, errors.ABORTED)
MAX_TRANSIENT_RETRIES = 3
PROBE_TIMEOUT_S = 5.0  # a dead task refuses at once; this bounds a hung one
# A task waited for (at the start, or a failed worker until it is back) is asked
# with calls that wait this long for it to accept (wait_for_ready), so it is
# reached as soon as it binds: a call that fails at once leaves the channel's
# connection attempts unpolled in a process that serves nothing, and gRPC's
# backup poller notices their outcome only every 5 s (measured: a task up 3.2 s
# after the first probe was reached at 10.0 s by fail-fast probes every 0.1 s).
WAIT_PROBE_S = 1.0
# Tasks start in any order (Kubernetes, Slurm): a ps not up yet is waited for
# this long at the start, as TF's master waits for its workers, then it is fatal.
START_WAIT_S = 60.0
START_LOG_EVERY_S = 10.0


def probe(address: str, timeout: float = PROBE_TIMEOUT_S,
          wait: bool = False) -> Optional[tuple]:
    """The incarnations of the task at `address`, or None if it does not answer.

    The probe uses the channel this process shares with the task's sessions:
    its reconnect backoff is capped at 1 s (`rpc.channels`), so a task back
    up is reached within about a second, with no channel closed under them.
    `wait`: wait up to `timeout` for the task to accept connections, instead of
    failing at once where it refuses them.
    """
    try:
        status = GrpcWorkerClient(address).get_status(timeout, wait_for_ready=wait)
    except errors.OpError:
        return None
    return tuple(sorted(d.incarnation for d in status.device_attributes))


def probe_waiting(address: str, seconds: float,
                  stopped: Optional[threading.Event] = None) -> Optional[tuple]:
    """`probe` that waits up to `seconds` for the task to accept; when it fails, it
    returns no sooner than `seconds` (or `stopped`), so a loop of them never spins
    on a port that fails calls at once."""
    began = time.monotonic()
    found = probe(address, max(seconds, 1e-3), wait=True)
    if found is None:
        rest = seconds - (time.monotonic() - began)
        if rest > 0 and stopped is not None:
            stopped.wait(rest)
        elif rest > 0:
            time.sleep(rest)
    return found


@dataclass(frozen=True)
class Diagnosis:
    """`kind`: "ps" (fatal), "worker" (retry elsewhere) or "none" (the error stands)."""

    kind: str
    error: errors.OpError


def task_name(job: str, index: int) -> str:
    return f"/job:{job}/replica:0/task:{index}"


class ClusterHealth:
    """What the coordinator knows of each ps and worker task's liveness.

    Args:
      spec: the cluster (jobs "ps" and "worker").
      probe_timeout: seconds one GetStatus may take.
      start_wait: seconds to wait at the start for every ps task to answer.
    Raises:
      UnavailableError: a ps task has not answered within `start_wait`.
    """

    def __init__(self, spec: ClusterSpec, probe_timeout: float = PROBE_TIMEOUT_S,
                 start_wait: Optional[float] = None) -> None:
        self._address = {(job, i): spec.task_address(job, i)
                         for job in ("ps", "worker") for i in spec.task_indices(job)}
        self._timeout = probe_timeout
        self._lock = threading.Lock()
        self._incarnation = {task: probe(address, probe_timeout)
                             for task, address in self._address.items()}
        self._wait_for_ps(START_WAIT_S if start_wait is None else start_wait)

    def _wait_for_ps(self, start_wait: float) -> None:
        """Asks the ps tasks that did not answer again until they do or `start_wait` ends;
        workers need no wait (a worker that comes up later is used from then on)."""
        began = time.monotonic()
        logged = began
        while True:
            missing = [t for t in sorted(self._address)
                       if t[0] == "ps" and self._incarnation[t] is None]
            if not missing:
                return
            now = time.monotonic()
            if now - began >= start_wait:
                task = missing[0]
                raise errors.UnavailableError(
                    None, None, f"Parameter server {task_name(*task)} at "
                                f"{self._address[task]} is not reachable (no answer to "
                                f"GetStatus within {start_wait:g}s of the start)")
            if now - logged >= START_LOG_EVERY_S:
                logged = now
                print(f"ClusterCoordinator still waiting for "
                      f"{', '.join(task_name(*t) for t in missing)}", file=sys.stderr)
            left = start_wait - (now - began)
            for task in missing:
                self._incarnation[task] = probe_waiting(
                    self._address[task], min(WAIT_PROBE_S, left / len(missing)))

    def is_up(self, worker: int) -> bool:
        with self._lock:
            return self._incarnation[("worker", worker)] is not None

    def diagnose(self, worker: int, error: errors.OpError) -> Diagnosis:
        """Which task `error`, from a closure on `worker`, is due to.

        The ps tasks are asked first: a closure on a live worker fails when
        its ps is gone, and that must not be mistaken for the worker failing.
        """
        ps = sorted(t for t in self._address if t[0] == "ps")
        for task in ps + [("worker", worker)]:
            why = self._check(task)
            if why is None:
                continue
            cls = errors.UnavailableError if task[0] == "ps" else type(error)
            return Diagnosis(task[0], cls(
                None, None, f"{'Parameter server' if task[0] == 'ps' else 'Worker'} "
                            f"{task_name(*task)} at {self._address[task]} {why}: "
                            f"{error.message}"))
        return Diagnosis("none", error)

    def _check(self, task: tuple) -> Optional[str]:
        found = probe(self._address[task], self._timeout)
        with self._lock:
            known = self._incarnation[task]
            if found is None:
                if task[0] == "worker":
                    self._incarnation[task] = None
                return "does not answer"
            if known is not None and found != known:
                if task[0] == "worker":
                    self._incarnation[task] = None
                return "restarted (a new incarnation)"
        return None

    def wait_until_up(self, worker: int, stopped: threading.Event) -> bool:
        """Probes `worker`, each probe waiting a second for it to accept, until it answers.

        Returns: True once it answers (its incarnation is recorded), False
          if `stopped` was set first.
        """
        task = ("worker", worker)
        while not stopped.is_set():
            found = probe_waiting(self._address[task], WAIT_PROBE_S, stopped)
            if found is not None:
                with self._lock:
                    self._incarnation[task] = found
                return True
        return False


def handle_closure_error(health: ClusterHealth, queue, worker: int, closure,
                         error: errors.OpError) -> bool:
    """Settles a closure that failed on `worker` with `error`.

    A failed worker: the closure is queued again (first in line) for another
    worker. A failed ps: the closure fails with an UnavailableError naming
    it. An error no task explains stands, except that an UNAVAILABLE or
    ABORTED one is retried a few times.
    Returns: True if `worker` failed (its thread must wait for it to be back).
    """
    try:
        diagnosis = health.diagnose(worker, error)
    except Exception:  # noqa: BLE001 - a probe must never kill a worker thread
        diagnosis = Diagnosis("none", error)
    if diagnosis.kind == "worker":
        queue.put_back(closure)
        return True
    if diagnosis.kind == "none" and error.error_code in TRANSIENT_CODES and \
            closure.transient_retries < MAX_TRANSIENT_RETRIES:
        closure.transient_retries += 1
        queue.put_back(closure)
        return False
    queue.mark_failed(closure, diagnosis.error)
    return False
