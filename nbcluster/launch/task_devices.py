"""The devices each task of a cluster offers: its CPU device count and its GPU list.

A task's CPU count goes into its own session config (merged over the
cluster's), its GPU list into its CUDA_VISIBLE_DEVICES; `startup.start_task`
gives the task both, whatever launcher runs it.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Optional

from google.protobuf import json_format

from nbcluster.proto import config_pb2

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

    def config(self, base: Optional[str]) -> Optional[str]:
        """The task's ConfigProto JSON: `base` (the cluster's, or None) with these devices."""
        if self.cpus is None and self.gpus != "none":
            return base
        config = config_pb2.ConfigProto()
        if base:
            json_format.Parse(base, config)
        if self.cpus is not None:
            config.device_count["CPU"] = self.cpus
        if self.gpus == "none":  # not even CuPy gets imported
            config.device_count["GPU"] = 0
        return json_format.MessageToJson(config, indent=None)

    def env(self) -> dict:
        """The environment variables the task needs on top of its launcher's."""
        if not self.gpus:
            return {}
        return {"CUDA_VISIBLE_DEVICES": "" if self.gpus == "none" else self.gpus}


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
