"""L0: ClusterSpec, the jobs and task addresses of a cluster, and address parsing.

A value module, no I/O. `ClusterSpec` behaves as `tf.train.ClusterSpec` does,
with two deliberate differences: `jobs` is sorted by name (TF keeps the input
order), and bad input is refused when the spec is built, naming the bad value
(TF accepts, for instance, job names that no device name can hold).
"""
from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from google.protobuf.message import DecodeError

from nbcluster import errors
from nbcluster.framework.device_spec import is_valid_job_name
from nbcluster.proto.config_pb2 import ClusterDef

_MAX_TASK_INDEX = 2**31 - 1  # JobDef.tasks is a map<int32, string>


class ClusterSpec:
    """A cluster: job names mapped to the network addresses of their tasks.

    Args:
      cluster: a dict of job name to a list of "host:port" addresses, or to a
        dict of task index to address (a sparse job; "0"-style string keys,
        as JSON gives, are read as integers); a ClusterDef (ours, TF's, or any
        message whose serialized bytes parse as one); or another ClusterSpec.

    Raises:
      TypeError: `cluster` or one of its parts has the wrong type.
      ValueError: a job name, task index or proto content is invalid.

    Example:
      >>> spec = ClusterSpec({"ps": ["localhost:2222"], "worker": {1: "localhost:2224"}})
      >>> spec
      ClusterSpec({'ps': ['localhost:2222'], 'worker': {1: 'localhost:2224'}})
      >>> spec.task_address("worker", 1)
      'localhost:2224'
    """

    def __init__(self, cluster: Any) -> None:
        if isinstance(cluster, ClusterSpec):
            self._jobs = {job: dict(tasks) for job, tasks in cluster._jobs.items()}
        elif isinstance(cluster, Mapping):
            self._jobs = {}
            for job_name, tasks in cluster.items():
                job_name = _job_name(job_name)
                if job_name in self._jobs:
                    raise ValueError("Job %r is given twice" % job_name)
                self._jobs[job_name] = _job_tasks(job_name, tasks)
        else:
            self._jobs = _jobs_from_cluster_def(_as_cluster_def(cluster))

    def __bool__(self) -> bool:
        return bool(self._jobs)

    def __eq__(self, other: object) -> bool:
        # As in TF, a plain dict compares against the {job: {index: address}} form.
        if isinstance(other, ClusterSpec):
            return self._jobs == other._jobs
        return self._jobs == other

    def __ne__(self, other: object) -> bool:
        return not self == other

    __hash__ = None  # mutable-looking and dict-equal, as in TF: not hashable

    def __repr__(self) -> str:
        items = self.as_dict()
        return "ClusterSpec({%s})" % ", ".join("%r: %r" % (job, items[job]) for job in items)

    def as_dict(self) -> dict:
        """Job name -> list of addresses when its indices are 0..n-1, else a dict
        index -> address (sparse job); a job with no tasks maps to {}."""
        out = {}
        for job in self.jobs:
            indices = self.task_indices(job)
            if not indices:
                out[job] = {}
            elif indices[-1] + 1 == len(indices):
                out[job] = self.job_tasks(job)
            else:
                out[job] = {i: self._jobs[job][i] for i in indices}
        return out

    def as_cluster_def(self) -> ClusterDef:
        """A new ClusterDef proto, jobs sorted by name (deterministic bytes)."""
        cluster_def = ClusterDef()
        for job in self.jobs:
            job_def = cluster_def.job.add(name=job)
            for index in sorted(self._jobs[job]):
                job_def.tasks[index] = self._jobs[job][index]
        return cluster_def

    @property
    def jobs(self) -> list[str]:
        """The job names, sorted."""
        return sorted(self._jobs)

    def num_tasks(self, job_name: str) -> int:
        """The number of tasks defined in `job_name`.

        Raises:
          ValueError: no such job.
        """
        return len(self._job(job_name))

    def task_indices(self, job_name: str) -> list[int]:
        """The sorted task indices defined in `job_name`.

        Raises:
          ValueError: no such job.
        """
        return sorted(self._job(job_name))

    def task_address(self, job_name: str, task_index: int) -> str:
        """The address of one task.

        Raises:
          ValueError: no such job, or no such task in it.
        """
        job = self._job(job_name)
        try:
            return job[task_index]
        except (KeyError, TypeError):
            raise ValueError("No task with index %r in job %r" % (task_index, job_name)) from None

    def job_tasks(self, job_name: str) -> list[str | None]:
        """The addresses of `job_name` as a list indexed by task; None fills the
        gaps of a sparse job (so len() may exceed num_tasks()).

        Raises:
          ValueError: no such job.
        """
        job = self._job(job_name)
        out: list[str | None] = [None] * (max(job) + 1 if job else 0)
        for index, address in job.items():
            out[index] = address
        return out

    def _job(self, job_name: str) -> dict[int, str]:
        try:
            return self._jobs[job_name]
        except (KeyError, TypeError):
            raise ValueError("No such job in cluster: %r" % (job_name,)) from None


def _job_name(job_name: object) -> str:
    if isinstance(job_name, bytes):
        job_name = job_name.decode("utf-8", errors="replace")
    if not isinstance(job_name, str):
        raise TypeError("Job name %r must be bytes or unicode" % (job_name,))
    if not is_valid_job_name(job_name):
        raise ValueError("Job name %r is not valid: it must start with a letter and "
                         "hold only letters, digits and '_'" % (job_name,))
    return job_name


def _job_tasks(job_name: str, tasks: object) -> dict[int, str]:
    if isinstance(tasks, (list, tuple)):
        items = list(enumerate(tasks))
    elif isinstance(tasks, Mapping):
        items = [(_task_index(job_name, key), address) for key, address in tasks.items()]
    else:
        raise TypeError("The tasks for job %r must be a list or a dictionary from "
                        "integers to strings, not %s %r" % (job_name, type(tasks).__name__, tasks))
    job: dict[int, str] = {}
    for index, address in items:
        if index in job:
            raise ValueError("Task index %d is given twice in job %r" % (index, job_name))
        job[index] = _task_address(job_name, index, address)
    return job


def _task_index(job_name: str, key: object) -> int:
    if isinstance(key, str) and re.fullmatch(r"\s*[+-]?\d+\s*", key):
        key = int(key)  # JSON object keys are strings
    if isinstance(key, str):
        raise ValueError("Task index %r in job %r is not an integer" % (key, job_name))
    if isinstance(key, bool) or not isinstance(key, int):
        raise TypeError("Task index %r in job %r must be an integer" % (key, job_name))
    if not 0 <= key <= _MAX_TASK_INDEX:
        raise ValueError("Task index %r in job %r is out of range [0, %d]"
                         % (key, job_name, _MAX_TASK_INDEX))
    return key


def _task_address(job_name: str, index: int, address: object) -> str:
    if isinstance(address, bytes):
        address = address.decode("utf-8", errors="replace")
    if not isinstance(address, str):
        raise TypeError("Task address %r (job %r, task %d) must be bytes or unicode"
                        % (address, job_name, index))
    return address


def _as_cluster_def(cluster: object) -> ClusterDef:
    """Our ClusterDef from ours or from any message that serializes as one."""
    if isinstance(cluster, ClusterDef):
        return cluster
    full_name = getattr(getattr(cluster, "DESCRIPTOR", None), "full_name", "ClusterDef")
    serialize = getattr(cluster, "SerializeToString", None)
    if callable(serialize) and full_name.split(".")[-1] == "ClusterDef":
        try:
            return ClusterDef.FromString(serialize())
        except DecodeError as e:
            raise TypeError("Cannot read %r as a ClusterDef: %s"
                            % (type(cluster).__name__, e)) from None
    raise TypeError("`cluster` must be a dictionary mapping one or more job names to lists "
                    "of network addresses, a ClusterDef or a ClusterSpec, not %s %r"
                    % (type(cluster).__name__, cluster))


def _jobs_from_cluster_def(cluster_def: ClusterDef) -> dict[str, dict[int, str]]:
    jobs: dict[str, dict[int, str]] = {}
    for job_def in cluster_def.job:
        name = _job_name(job_def.name)
        if name in jobs:
            raise ValueError("Job %r appears twice in the ClusterDef" % name)
        jobs[name] = {_task_index(name, i): address for i, address in job_def.tasks.items()}
    return jobs


def parse_address(address: str) -> tuple[str, int]:
    """Splits "host:port" (or "[v6 host]:port") into (host, port).

    IPv6 hosts come back without brackets; `join_address` puts them back.

    Raises:
      InvalidArgumentError: no host, no port, or a port that is not an
        integer in [0, 65535].

    Example:
      >>> parse_address("[::1]:2222")
      ('::1', 2222)
    """
    if not isinstance(address, str):
        raise _bad_address(address, "an address must be a string 'host:port'")
    match = re.fullmatch(r"\[([^\[\]]+)\]:(.*)|([^:\[\]]+):(.*)", address)
    if match is None:
        if re.fullmatch(r"\[[^\[\]]+\]|[^:\[\]]+", address):
            raise _bad_address(address, "it has no port")
        raise _bad_address(address, "expected 'host:port' with a port number "
                           "(bracket IPv6 hosts: '[::1]:2222')")
    host = match.group(1) or match.group(3)
    port = match.group(2) if match.group(1) else match.group(4)
    if not (port.isascii() and port.isdigit()) or int(port) > 65535:
        raise _bad_address(address, "port %r is not an integer in [0, 65535]" % port)
    return host, int(port)


def join_address(host: str, port: int) -> str:
    """The inverse of `parse_address`: brackets IPv6 hosts."""
    return "[%s]:%d" % (host, port) if ":" in host else "%s:%d" % (host, port)


def _bad_address(address: object, why: str) -> errors.InvalidArgumentError:
    return errors.InvalidArgumentError(None, None, "Invalid address %r: %s" % (address, why))
