"""Cluster resolvers (tf.distribute.cluster_resolver's names): a ClusterSpec and a task.

`SimpleClusterResolver` holds what it is given; `TFConfigClusterResolver` reads
TF_CONFIG; `SlurmClusterResolver` reads a Slurm job step's variables. The
parsing lives in `nbcluster.server.environment`, shared with `python -m
nbcluster.server --from-env`, so a resolver and a server read alike.
"""
from __future__ import annotations

import os
import shutil
import subprocess
from typing import Optional

from nbcluster.framework.cluster_spec import ClusterSpec
from nbcluster.server.environment import (
    DEFAULT_SLURM_PORT_BASE,
    expand_hostlist,
    from_slurm,
    from_tf_config,
)

__all__ = ["ClusterResolver", "SimpleClusterResolver", "TFConfigClusterResolver",
           "SlurmClusterResolver", "expand_hostlist", "format_master_url"]


def format_master_url(master: str, rpc_layer: Optional[str] = None) -> str:
    """"grpc://host:port" from "host:port" and "grpc"; `master` itself without a layer."""
    return f"{rpc_layer}://{master}" if rpc_layer else master


class ClusterResolver:
    """The interface: `cluster_spec()`, `master()`, task_type / task_id / rpc_layer."""

    _task_type: Optional[str] = None
    _task_id: Optional[int] = None
    _rpc_layer: Optional[str] = None
    _environment: str = ""

    def cluster_spec(self) -> ClusterSpec:
        raise NotImplementedError

    def master(self, task_type: Optional[str] = None, task_id: Optional[int] = None,
               rpc_layer: Optional[str] = None) -> str:
        """The address of task `task_type`:`task_id` (default: this task), "" if none.

        Raises:
          ValueError: the job or task is not in the cluster.
        """
        task_type = task_type if task_type is not None else self.task_type
        task_id = task_id if task_id is not None else self.task_id
        if task_type is None or task_id is None:
            return ""
        return format_master_url(self.cluster_spec().task_address(task_type, task_id),
                                 rpc_layer or self.rpc_layer)

    def num_accelerators(self, task_type: Optional[str] = None,
                         task_id: Optional[int] = None, config_proto=None) -> dict:
        """Accelerators of this host by type ({"GPU": 2}); CPUs are not counted."""
        del task_type, task_id, config_proto
        from nbcluster.runtime.devices import local_devices
        counts: dict = {}
        for device in local_devices("localhost", 0):
            if device.device_type != "CPU":
                counts[device.device_type] = counts.get(device.device_type, 0) + 1
        return counts

    @property
    def environment(self) -> str:
        return self._environment

    @property
    def task_type(self) -> Optional[str]:
        return self._task_type

    @task_type.setter
    def task_type(self, value: Optional[str]) -> None:
        self._task_type = value

    @property
    def task_id(self) -> Optional[int]:
        return self._task_id

    @task_id.setter
    def task_id(self, value: Optional[int]) -> None:
        self._task_id = value

    @property
    def rpc_layer(self) -> Optional[str]:
        return self._rpc_layer

    @rpc_layer.setter
    def rpc_layer(self, value: Optional[str]) -> None:
        self._rpc_layer = value


class SimpleClusterResolver(ClusterResolver):
    """A resolver that returns what it was given.

    Args:
      cluster_spec: a ClusterSpec, dict or ClusterDef.
      master: returned by `master()` when no task is asked for.
      num_accelerators: e.g. {"GPU": 2}; default {}.
    Example:
      >>> r = SimpleClusterResolver({"worker": ["h:1"]}, rpc_layer="grpc")
      >>> r.master("worker", 0)
      'grpc://h:1'
    """

    def __init__(self, cluster_spec, master: str = "", task_type: Optional[str] = None,
                 task_id: Optional[int] = None, environment: str = "",
                 num_accelerators: Optional[dict] = None,
                 rpc_layer: Optional[str] = None) -> None:
        self._spec = ClusterSpec(cluster_spec)
        if not isinstance(master, str):
            raise TypeError(f"master must be a string, not {type(master).__name__}")
        self._master = master
        self._task_type, self._task_id = task_type, task_id
        self._environment = environment
        self._num_accelerators = dict(num_accelerators or {})
        self._rpc_layer = rpc_layer

    def cluster_spec(self) -> ClusterSpec:
        return self._spec

    def master(self, task_type: Optional[str] = None, task_id: Optional[int] = None,
               rpc_layer: Optional[str] = None) -> str:
        if task_type is not None and task_id is not None:
            address = self._spec.task_address(task_type, task_id)
        else:
            address = self._master
        return format_master_url(address, rpc_layer or self._rpc_layer)

    def num_accelerators(self, task_type=None, task_id=None, config_proto=None) -> dict:
        del task_type, task_id, config_proto
        return dict(self._num_accelerators)


class TFConfigClusterResolver(ClusterResolver):
    """Reads the TF_CONFIG environment variable (on every call, as TF does).

    Arguments given here win over TF_CONFIG's own task and rpc_layer.
    Raises (from its methods):
      ValueError: TF_CONFIG is malformed.
    """

    def __init__(self, task_type: Optional[str] = None, task_id: Optional[int] = None,
                 rpc_layer: Optional[str] = None, environment: Optional[str] = None) -> None:
        self._task_type, self._task_id = task_type, task_id
        self._rpc_layer, self._env_override = rpc_layer, environment

    def _config(self):
        return from_tf_config(os.environ)

    def cluster_spec(self) -> ClusterSpec:
        return ClusterSpec(self._config().cluster)

    def master(self, task_type: Optional[str] = None, task_id: Optional[int] = None,
               rpc_layer: Optional[str] = None) -> str:
        """The TF1 session target, in TF's order: TF_CONFIG's `session_master` when set;
        "" for a cluster of no job or of one job with one task; else the task's
        address (default: this task) with the rpc layer.

        Raises:
          ValueError: the job or task is not in the cluster.
        """
        config = self._config()
        if config.session_master is not None:
            return config.session_master
        spec = ClusterSpec(config.cluster)
        if not spec.jobs or (len(spec.jobs) == 1 and spec.num_tasks(spec.jobs[0]) == 1):
            return ""
        task_type = task_type if task_type is not None else self.task_type
        task_id = task_id if task_id is not None else self.task_id
        return format_master_url(spec.task_address(task_type, task_id),
                                 rpc_layer if rpc_layer is not None else self.rpc_layer)

    @property
    def task_type(self) -> Optional[str]:
        # TF casts to str, so an integer task type (given or in TF_CONFIG) names its job
        return str(self._task_type) if self._task_type is not None else self._config().job

    @task_type.setter
    def task_type(self, value: Optional[str]) -> None:
        self._task_type = value

    @property
    def task_id(self) -> Optional[int]:
        # TF's resolver: None where TF_CONFIG's task names no index
        return int(self._task_id) if self._task_id is not None else self._config().given_index

    @task_id.setter
    def task_id(self, value: Optional[int]) -> None:
        self._task_id = value

    @property
    def rpc_layer(self) -> Optional[str]:
        return self._rpc_layer if self._rpc_layer is not None else self._config().rpc_layer

    @rpc_layer.setter
    def rpc_layer(self, value: Optional[str]) -> None:
        self._rpc_layer = value

    @property
    def environment(self) -> str:
        return self._env_override if self._env_override is not None \
            else self._config().environment


def _gpus_on_this_node() -> int:
    visible = os.environ.get("CUDA_VISIBLE_DEVICES")
    if visible is not None:
        return len([d for d in visible.split(",") if d.strip()])
    if os.environ.get("SLURM_GPUS_ON_NODE", "").isdigit():
        return int(os.environ["SLURM_GPUS_ON_NODE"])
    if shutil.which("nvidia-smi"):
        try:
            out = subprocess.run(["nvidia-smi", "--list-gpus"], capture_output=True,
                                 text=True, timeout=30).stdout
        except (OSError, subprocess.SubprocessError):
            return 0
        return sum(line.startswith("GPU ") for line in out.splitlines())
    return 0


class SlurmClusterResolver(ClusterResolver):
    """The cluster of the Slurm job step this process runs in, read when built.

    Args:
      jobs: job name -> number of tasks, filled by rank in this order; default
        {"worker": every task of the step}.
      port_base: each node's tasks listen on port_base, port_base + 1, ...
      gpus_per_node: default: CUDA_VISIBLE_DEVICES's count, SLURM_GPUS_ON_NODE,
        or `nvidia-smi --list-gpus`.
      gpus_per_task: default gpus_per_node // the most tasks on one node.
      tasks_per_node: host -> number of tasks, instead of Slurm's counts.
      auto_set_gpu: set CUDA_VISIBLE_DEVICES to this task's share of the GPUs.
    Raises:
      ValueError: not in a Slurm step (SLURM_PROCID unset), malformed variables,
        jobs that do not add up, or more GPUs per task than the node holds.
    """

    def __init__(self, jobs: Optional[dict] = None, port_base: int = DEFAULT_SLURM_PORT_BASE,
                 gpus_per_node: Optional[int] = None, gpus_per_task: Optional[int] = None,
                 tasks_per_node: Optional[dict] = None, auto_set_gpu: bool = True,
                 rpc_layer: str = "grpc") -> None:
        task, local_rank, most = from_slurm(os.environ, jobs, port_base, tasks_per_node)
        self._spec = ClusterSpec(task.cluster)
        self._task_type, self._task_id = task.job, task.index
        self._rpc_layer = rpc_layer
        self._gpus_per_node = _gpus_on_this_node() if gpus_per_node is None else gpus_per_node
        self._gpus_per_task = (self._gpus_per_node // max(1, most)
                               if gpus_per_task is None else gpus_per_task)
        if self._gpus_per_task * most > self._gpus_per_node:
            raise ValueError(f"{most} tasks per node with {self._gpus_per_task} GPUs each need "
                             f"more than the node's {self._gpus_per_node} GPUs")
        if auto_set_gpu and self._gpus_per_task > 0:
            first = local_rank * self._gpus_per_task
            os.environ["CUDA_VISIBLE_DEVICES"] = ",".join(
                str(first + i) for i in range(self._gpus_per_task))

    def cluster_spec(self) -> ClusterSpec:
        return self._spec

    def num_accelerators(self, task_type=None, task_id=None, config_proto=None) -> dict:
        del task_type, task_id, config_proto
        return {"GPU": self._gpus_per_task}
