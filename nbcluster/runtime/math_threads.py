"""How many threads the math libraries (BLAS, OpenMP) of a task may use: one rule for
every Server and for the launchers that start task processes.

Rule: a task's share is `ConfigProto.intra_op_parallelism_threads` when set;
else a thread count the user put in the environment (OMP_NUM_THREADS,
OPENBLAS_NUM_THREADS, MKL_NUM_THREADS); else this host's cores divided among
the cluster's tasks on this host (the ClusterSpec names them), at least 1.
A process's pools get the sum of the shares of its live servers (a notebook
may run several; a count from the environment stays the process's own), and go back to what the libraries chose (all cores) when
the last one stops: a process with no server uses every core. A sum of
every core is that same count, so the pools are left (or put back) as the
libraries chose, and threadpoolctl is not loaded for it.

Why: OpenBLAS starts one spinning thread per core in every process, so
three task processes on two cores fight over them and a 1 ms MatMul takes
10-40 ms. The environment variables act only before numpy loads, and a
user's own processes (scripts, Slurm steps, pods) get nothing from our
launcher; threadpoolctl changes the pools of libraries already loaded.

A one-thread share does not borrow a core another task leaves idle (the ps
of one worker, while the worker multiplies): a split over it, kept only where
it measured 20% faster than one thread, showed no gain above the host's noise
in four alternated 1-ps + 1-worker runs (178-238 steps/s without, 104-220
with; 2 vCPUs), and on a loaded host those cores are other processes'.
"""
from __future__ import annotations

import ipaddress
import itertools
import os
import socket
import threading
from typing import Optional

from nbcluster import errors

THREAD_VARS = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS")


def host_cores() -> int:
    """The cores this process may run on (its CPU affinity: Slurm and taskset narrow it)."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def environment_threads(environ=None) -> int:
    """The thread count the user set in the environment, or 0 when none is set."""
    environ = os.environ if environ is None else environ
    for name in THREAD_VARS:
        value = environ.get(name, "").strip()
        if value.isdigit() and int(value) > 0:
            return int(value)
    return 0


def _is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def _host_of(address: str) -> str:
    from nbcluster.framework.cluster_spec import parse_address
    try:
        return parse_address(address)[0].lower()
    except errors.InvalidArgumentError:
        return address.lower()


def tasks_on_host(addresses: list, own: str) -> int:
    """How many of `addresses` ("host:port") are on the host of `own`: the same host
    name, or loopback when `own` is loopback (or is this machine's name)."""
    own_host = _host_of(own)
    names = {own_host}
    if _is_loopback(own_host) or own_host in (socket.gethostname().lower(), "0.0.0.0", "::"):
        names.add(socket.gethostname().lower())
        local = True
    else:
        local = False
    count = sum(1 for a in addresses
                if _host_of(a) in names or (local and _is_loopback(_host_of(a))))
    return max(1, count)


def core_share(tasks: int) -> int:
    """This host's cores split among `tasks` task processes, at least 1 each."""
    return max(1, host_cores() // max(1, tasks))


def task_threads(cluster_spec, job: str, task: int, config=None, environ=None) -> int:
    """The math threads of task /job:`job`/task:`task` of `cluster_spec` (the rule above)."""
    intra = int(getattr(config, "intra_op_parallelism_threads", 0) or 0) if config else 0
    if intra > 0:
        return intra
    from_env = environment_threads(environ)
    if from_env:
        return from_env
    addresses = [a for j in cluster_spec.jobs for a in cluster_spec.job_tasks(j) if a]
    return core_share(tasks_on_host(addresses, cluster_spec.task_address(job, task)))


# -- this process's pools: the sum of its live servers' shares ---------------------
_lock = threading.Lock()
_claims: dict = {}  # token -> (threads, process_wide)
_tokens = itertools.count()
_controller = None  # threadpoolctl's ThreadpoolController, made on the first claim
_limiter = None  # the limits in force while any claim is live
_claimed = 0  # the pools' count while a claim is live, else 0 (read without the lock)
_unclaimed = 0  # the environment's count or every core, found on first use


def _total_locked() -> int:
    summed = [t for t, wide in _claims.values() if not wide]
    # Servers of unrelated clusters in one process may ask for more than the
    # host has; a single explicit claim above the cores is the user's word.
    total = min(sum(summed), max(host_cores(), max(summed))) if summed else 0
    # A count from the environment is the whole process's, however many servers.
    return max([total] + [t for t, wide in _claims.values() if wide])


def _apply() -> None:
    global _controller, _limiter, _claimed
    if _limiter is not None:
        _limiter.restore_original_limits()
        _limiter = None
    _claimed = _total_locked() if _claims else 0
    # Every core is the libraries' own count (OpenBLAS's and OpenMP's default,
    # what a process with no server runs with), so the pools stay as the
    # libraries chose; threadpoolctl's import and its scan of every loaded
    # library were a tenth of a warm process's server start.
    if not _claims or _claimed == host_cores():
        return
    if _controller is None:
        from threadpoolctl import ThreadpoolController
        _controller = ThreadpoolController()
    _limiter = _controller.limit(limits=_claimed)


def claim(threads: int, process_wide: bool = False) -> int:
    """Adds a server's share to this process's pools; returns the token to release it.

    `process_wide`: `threads` is the process's own count (the environment's),
    not a share that adds up with other servers'.
    """
    with _lock:
        token = next(_tokens)
        _claims[token] = (max(1, int(threads)), process_wide)
        _apply()
        return token


def release(token: Optional[int]) -> None:
    """Takes a server's share back; the last release restores the libraries' own limits."""
    with _lock:
        if _claims.pop(token, None) is not None:
            _apply()


def is_process_wide(config=None, environ=None) -> bool:
    """Whether the rule's count for a task comes from the environment (the process's own)."""
    intra = int(getattr(config, "intra_op_parallelism_threads", 0) or 0) if config else 0
    return intra <= 0 and environment_threads(environ) > 0


def process_threads() -> int:
    """The math threads this process now runs with: its servers' shares, else the
    user's environment setting, else every core."""
    with _lock:
        if _claims:
            return _total_locked()
    return environment_threads() or host_cores()


def current_threads() -> int:
    """`process_threads()` without its lock, for a kernel to read on every call."""
    global _unclaimed
    if _claimed:
        return _claimed
    if not _unclaimed:
        _unclaimed = environment_threads() or host_cores()
    return _unclaimed
