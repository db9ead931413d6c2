"""The tasks one master session may use: its worker cache, its device
filters, and each task's devices, asked for only when needed and cached.

Rule: no grpc import. A session on the server's own cluster uses the
server's WorkerCache; a session with its own ClusterDef (TF's ClusterSpec
propagation) uses a `PropagatedWorkerCache`, whose remote clients come from
the `connect(address)` the master was given.
"""
from __future__ import annotations

import dataclasses
import logging
import threading
import time
from typing import Callable, Iterable, Optional

from nbcluster import errors
from nbcluster.framework.cluster_spec import ClusterSpec
from nbcluster.framework.device_spec import DeviceSpec
from nbcluster.proto import config_pb2

DEFAULT_STATUS_TIMEOUT = 10.0  # seconds for GetStatus when the session sets none
# Seconds a session waits for a task it never reached to come up, when its
# operation_timeout_in_ms is unset (TF's master waits far longer, by default
# for ever in CreateSession; a bounded wait turns a typo'd address into an
# error within a minute).
DEFAULT_FIRST_CONTACT_WAIT = 60.0
_RETRY_S = 0.2  # between GetStatus attempts (gRPC's reconnect backoff is capped at 1 s)
_FIRST_LOG_S, _WAIT_LOG_S = 1.0, 5.0  # when the wait is first logged, then how often
log = logging.getLogger("nbcluster.master_worker")


def task_name(task: tuple) -> str:
    return f"/job:{task[0]}/replica:0/task:{task[1]}"


def parse_filters(filters: Iterable[str]) -> list:
    """DeviceSpecs for ConfigProto.device_filters; a malformed one is an error."""
    specs = []
    for text in filters:
        try:
            specs.append(DeviceSpec.from_string(text))
        except errors.InvalidArgumentError as e:
            raise errors.InvalidArgumentError(
                None, None, f"Invalid device filter {text!r}: {e.message}") from None
    return specs


def intersects(a: DeviceSpec, b: DeviceSpec) -> bool:
    """TF's DeviceFinder::Intersects: no part that both set differs."""
    return all(x is None or y is None or x == y
               for x, y in zip(dataclasses.astuple(a), dataclasses.astuple(b)))


def match_target(spec: ClusterSpec, target: Optional[str]) -> tuple:
    """The (job, task) of `spec` whose address is `target` without "grpc://".

    As TF's master: an exact string match, so "localhost:2222" and
    "127.0.0.1:2222" are different tasks.
    Raises:
      InvalidArgumentError: no task or several tasks match.
    """
    address = (target or "")[len("grpc://"):] if (target or "").startswith("grpc://") \
        else (target or "")
    matches = [(job, task) for job in spec.jobs for task in spec.task_indices(job)
               if spec.task_address(job, task) == address]
    if len(matches) == 1:
        return matches[0]
    if matches:
        raise errors.InvalidArgumentError(
            None, None, f"Found multiple matching tasks that correspond to the master "
                        f"({', '.join(task_name(m) for m in matches)}). Master target: "
                        f"{target!r}. ClusterDef: {spec}")
    raise errors.InvalidArgumentError(
        None, None, f"The master (target {target!r}) is not included in the session's "
                    f"cluster_def: no task has the address {address!r} (addresses are "
                    f"compared as written: 'localhost' and '127.0.0.1' differ). "
                    f"ClusterDef: {spec}")


class PropagatedWorkerCache:
    """A session's own cluster: the master's task is its in-process worker,
    every other task a client `connect(address)` makes (shared by address)."""

    def __init__(self, spec: ClusterSpec, local_task: tuple, local_client,
                 connect: Callable, clients: dict, lock: threading.Lock) -> None:
        self.spec = spec
        self.local_task = local_task
        self._local = local_client
        self._connect = connect
        self._clients = clients  # address -> client, owned by the master
        self._lock = lock

    def tasks(self) -> list:
        return [(job, t) for job in self.spec.jobs for t in self.spec.task_indices(job)]

    def address(self, job: str, task: int) -> str:
        try:
            return self.spec.task_address(job, task)
        except ValueError:
            raise errors.InvalidArgumentError(
                None, None, f"Unknown task {task_name((job, task))} (the session's cluster "
                            f"has jobs {self.spec.jobs})") from None

    def get(self, job: str, task: int):
        if (job, task) == self.local_task:
            return self._local
        address = self.address(job, task)
        with self._lock:
            client = self._clients.get(address)
            if client is None:
                client = self._clients[address] = self._connect(address)
            return client


class DeviceDirectory:
    """Device lists from GetStatus, by worker (a task, or an address), for one
    session; `forget` drops one after a restart.

    A worker the master never reached may not be up yet (cluster managers
    start tasks in any order): as TF's master does at CreateSession, the
    first listing retries while it refuses connections, for up to
    `first_contact_wait` seconds, logging (after `_FIRST_LOG_S`, then every
    `_WAIT_LOG_S`) which task it waits for. A worker in `contacted` (reached once by this master, in any
    session) that stops answering has died or restarted: it fails at once,
    so fault-tolerant programs notice it without a wait.

    Args:
      contacted: the master's keys of workers it has reached; shared by its
        sessions (set membership and add are atomic, no lock needed).
      first_contact_wait: seconds to wait for a worker never reached.
    """

    def __init__(self, contacted: Optional[set] = None,
                 first_contact_wait: float = DEFAULT_FIRST_CONTACT_WAIT) -> None:
        self._lock = threading.Lock()
        self._found: dict = {}
        self._contacted = set() if contacted is None else contacted
        self._first_contact_wait = first_contact_wait

    def get(self, key, client, timeout: float, describe: str) -> list:
        with self._lock:
            found = self._found.get(key)
        if found is not None:
            return found
        wait = 0.0 if key in self._contacted else self._first_contact_wait
        try:
            status = _first_status(client, timeout, wait, describe)
        except errors.OpError as e:
            cls = errors.exception_type_from_error_code(e.error_code)
            waited = f" (waited {wait:g}s for it to come up; the session's " \
                     f"operation_timeout_in_ms sets that wait)" if wait else ""
            raise cls(None, None, f"{describe} did not report its devices within "
                                  f"{timeout:g}s: {e.message}"
                      if e.error_code == errors.DEADLINE_EXCEEDED else
                      f"Cannot reach {describe} to list its devices{waited}: "
                      f"{e.message}") from None
        self._contacted.add(key)
        found = list(status.device_attributes)
        with self._lock:
            self._found[key] = found
        return found

    def forget(self, key) -> None:
        with self._lock:
            self._found.pop(key, None)


def _first_status(client, timeout: float, wait: float, describe: str):
    """client.get_status(), asked again while the worker refuses connections
    (UnavailableError), until `wait` seconds have passed."""
    start = time.monotonic()
    deadline, next_log = start + wait, start + _FIRST_LOG_S
    while True:
        left = deadline - time.monotonic()
        try:
            return client.get_status(min(timeout, left) if left > 0 else timeout)
        except errors.UnavailableError:
            now = time.monotonic()
            if now + _RETRY_S >= deadline:
                raise
            if now >= next_log:
                next_log = now + _WAIT_LOG_S
                log.warning("Session still waiting for response from worker: %s "
                            "(%.0fs of %gs)", describe, now - start, wait)
        time.sleep(_RETRY_S)


class SessionCluster:
    """The tasks and devices one session may use.

    Args:
      local_task: the master's task in this cluster; always used, all devices.
      cache: a WorkerCache (`tasks()`, `get(job, task)`).
      filters: ConfigProto.device_filters.
      directory: the master's DeviceDirectory.
      timeout: seconds a GetStatus may take.
      key_of: task -> the directory key of its worker.
    """

    def __init__(self, local_task: tuple, cache, filters: Iterable[str],
                 directory: DeviceDirectory, timeout: float,
                 key_of: Optional[Callable] = None, describe: Optional[Callable] = None):
        self.local_task = local_task
        self.cache = cache
        self.filters = parse_filters(filters)
        self.directory = directory
        self.timeout = timeout
        self._key_of = key_of or (lambda task: task)
        self._describe = describe or task_name

    def tasks(self) -> list:
        """The master's task first, then every task some filter could match."""
        return [self.local_task] + [t for t in self.cache.tasks()
                                    if t != self.local_task and self._task_passes(t)]

    def _task_passes(self, task: tuple) -> bool:
        spec = DeviceSpec(job=task[0], replica=0, task=task[1])
        return not self.filters or any(intersects(spec, f) for f in self.filters)

    def client(self, task: tuple):
        return self.cache.get(*task)

    def devices(self, task: tuple) -> list:
        """DeviceAttributes of `task` under its name in this cluster, filtered."""
        found = self.directory.get(self._key_of(task), self.client(task), self.timeout,
                                   self._describe(task))
        out = []
        for attrs in found:
            spec = DeviceSpec.from_string(attrs.name)
            if (spec.job, spec.task) != task:  # the worker renames them too, for this session
                attrs = _renamed(attrs, spec.replace(job=task[0], replica=0, task=task[1]))
            if task == self.local_task or not self.filters or \
                    any(intersects(spec.replace(job=task[0], task=task[1]), f)
                        for f in self.filters):
                out.append(attrs)
        return out

    def forget(self, task: tuple) -> None:
        self.directory.forget(self._key_of(task))


def _renamed(attrs, spec: DeviceSpec):
    # As TF's NewRemoteDevices: a task found through ClusterSpec propagation
    # shows its devices under the session's name for it.
    out = config_pb2.DeviceAttributes()
    out.CopyFrom(attrs)
    out.name = spec.to_string()
    return out
