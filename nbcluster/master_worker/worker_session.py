"""WorkerSession: what one master session sees of a worker — the name the
worker goes by, its devices under that name, the resources its graphs use,
and how it reaches the session's other tasks.

Rule: no grpc import. A session on the server's own cluster uses the
worker's own names, resources and peers. A session that brought its own
cluster (TF's ClusterSpec propagation: CreateWorkerSession carries a
ServerDef) may call this worker, say, /job:ps/task:0 although it booted as
/job:localhost/task:0: its devices are the worker's own renamed (TF's
RenamedDevice, same incarnation), and its peers are found by the
addresses in that session's cluster.
"""
from __future__ import annotations

import dataclasses
from typing import Callable, Optional

from nbcluster import errors
from nbcluster.framework.cluster_spec import ClusterSpec
from nbcluster.framework.device_spec import DeviceSpec
from nbcluster.runtime.resources import ResourceMgr


@dataclasses.dataclass
class WorkerSession:
    """Args:
      task: (job, task) this worker is called in the session.
      devices: device name (in the session's naming) -> runtime Device.
      resources: the ResourceMgr the session's graphs use.
      owns_resources: whether `resources` is private to the session (cleared
        when it is deleted) rather than the worker's shared one.
      peer: (job, task) -> WorkerClient of another task of the session.
    """
    task: tuple
    devices: dict
    resources: ResourceMgr
    owns_resources: bool
    peer: Optional[Callable]


def propagated_session(server_def, devices: dict, resources: ResourceMgr, isolate: bool,
                       connect: Optional[Callable]) -> WorkerSession:
    """The WorkerSession for a session that brought its own cluster.

    Args:
      server_def: the session's cluster; job_name/task_index name this worker.
      devices: the worker's own devices, by name.
      resources: the worker's shared ResourceMgr (used unless `isolate`).
      connect: address -> WorkerClient, to reach the session's other tasks.
    Raises:
      InvalidArgumentError: a malformed cluster, or a job/task not in it.
    """
    try:
        spec = ClusterSpec(server_def.cluster)
        spec.task_address(server_def.job_name, server_def.task_index)
    except (TypeError, ValueError) as e:
        raise errors.InvalidArgumentError(
            None, None, f"CreateWorkerSession: the session's ServerDef does not name a task "
                        f"of its cluster (/job:{server_def.job_name}/task:"
                        f"{server_def.task_index}): {e}") from None
    task = (server_def.job_name, server_def.task_index)
    renamed = {}
    for device in devices.values():
        name = DeviceSpec.from_string(device.name).replace(
            job=task[0], replica=0, task=task[1]).to_string()
        renamed[name] = dataclasses.replace(device, name=name)

    def peer(job: str, index: int):
        try:
            address = spec.task_address(job, index)
        except ValueError:
            raise errors.InvalidArgumentError(
                None, None, f"Task /job:{job}/task:{index} is not in the session's cluster "
                            f"(jobs {spec.jobs})") from None
        if connect is None:
            raise errors.UnimplementedError(
                None, None, f"This worker has no way to reach tasks by address, so it "
                            f"cannot fetch tensors from /job:{job}/task:{index} at {address}")
        return connect(address)

    return WorkerSession(task, renamed, ResourceMgr() if isolate else resources, isolate, peer)
