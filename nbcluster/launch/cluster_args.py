"""What Cluster's constructors accept: job counts, a session config, a launcher by name."""
from __future__ import annotations

from typing import Optional

from google.protobuf import json_format

from nbcluster.framework.cluster_spec import ClusterSpec, parse_address
from nbcluster.launch.launcher import LocalLauncher
from nbcluster.launch.startup import Task
from nbcluster.proto import config_pb2


def job_counts(ps, worker, jobs) -> dict:
    """{job: task count} from `ps` and `worker`, or from `jobs` when given; jobs of 0 dropped.

    Raises:
      TypeError: a count that is not an int (naming the job).
      ValueError: a negative count, or no task at all.
    """
    jobs = dict(jobs) if jobs is not None else {"ps": ps, "worker": worker}
    for job, n in jobs.items():
        if not isinstance(n, int) or isinstance(n, bool):
            raise TypeError(f"The task count of job {job!r} must be an int, not {n!r}")
        if n < 0:
            raise ValueError(f"The task count of job {job!r} must be >= 0, not {n}")
    jobs = {job: n for job, n in jobs.items() if n}
    if not jobs:
        raise ValueError("A cluster needs at least one task; every job count is 0")
    return jobs


def config_json(config) -> Optional[str]:
    """`config` (a ConfigProto, or None) as the JSON a task's `--config` takes.

    Raises:
      TypeError: `config` is not a protobuf message.
    """
    if config is None:
        return None
    if not isinstance(config, config_pb2.ConfigProto):
        if not hasattr(config, "SerializeToString"):
            raise TypeError(f"config must be a ConfigProto, not {type(config).__name__}")
        config = config_pb2.ConfigProto.FromString(config.SerializeToString())
    return json_format.MessageToJson(config, indent=None)


def make_launcher(launcher, options: dict):
    """The launcher `launcher` names ("local", "ssh") built with `options`, or `launcher`
    itself when it is a launcher object.

    Raises:
      ValueError: an unknown launcher name.
      TypeError: options given with a launcher object.
    """
    if launcher == "local":
        return LocalLauncher(**options)
    if launcher == "ssh":
        from nbcluster.launch.ssh import SSHLauncher
        return SSHLauncher(**options)
    if isinstance(launcher, str):
        raise ValueError(f"Unknown launcher {launcher!r}: use 'local', 'ssh' or a launcher "
                         f"object")
    if options:
        raise TypeError(f"Launcher options {sorted(options)} go to the launcher object itself")
    return launcher


def spec_tasks(spec) -> list:
    """A Task per address of `spec` (a ClusterSpec or dict), at that address."""
    spec = ClusterSpec(spec)
    return [Task(job, i, *parse_address(spec.task_address(job, i)))
            for job in spec.jobs for i in spec.task_indices(job)]
