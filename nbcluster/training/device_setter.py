"""replica_device_setter: a device function that puts variables on ps tasks, the rest
on the worker, with round-robin or greedy-by-bytes choice among the ps tasks.

Rule: a pure function of the op and the setter's own state (the strategies
count what they have placed); it only ever returns device strings, merged
with whatever device the op already asked for (innermost scope wins).
"""
from __future__ import annotations

from typing import Callable, Optional

import numpy as np

from nbcluster.framework.cluster_spec import ClusterSpec
from nbcluster.framework.device_spec import DeviceSpec
from nbcluster.framework.tensor_shape import TensorShape

# Op types that hold state a ps serves (TF's STANDARD_PS_OPS, the ones that exist here
# and the names TF graphs may bring).
STANDARD_PS_OPS = ("Variable", "VariableV2", "AutoReloadVariable", "MutableHashTable",
                   "MutableHashTableV2", "MutableHashTableOfTensors",
                   "MutableHashTableOfTensorsV2", "MutableDenseHashTable",
                   "MutableDenseHashTableV2", "VarHandleOp")


class _RoundRobinStrategy:
    """Ps tasks in turn: 0, 1, ..., num_tasks - 1, 0, ..."""

    def __init__(self, num_tasks: int) -> None:
        if num_tasks < 1:
            raise ValueError(f"num_tasks must be positive, got {num_tasks}")
        self._num_tasks = num_tasks
        self._next_task = 0

    def __call__(self, unused_op) -> int:
        task = self._next_task
        self._next_task = (self._next_task + 1) % self._num_tasks
        return task


class GreedyLoadBalancingStrategy:
    """The ps task with the least load so far, where `load_fn(op)` is an op's load.

    Args:
      num_tasks: how many ps tasks to spread over.
      load_fn: op -> a number (e.g. `byte_size_load_fn`).
    Raises:
      ValueError: num_tasks is not positive.
    Example:
      >>> strategy = GreedyLoadBalancingStrategy(2, byte_size_load_fn)
    """

    def __init__(self, num_tasks: int, load_fn: Callable) -> None:
        if num_tasks < 1:
            raise ValueError(f"num_tasks must be positive, got {num_tasks}")
        self._num_tasks = num_tasks
        self._load_fn = load_fn
        self._ps_loads = np.zeros(num_tasks)

    def __call__(self, op) -> int:
        task = int(np.argmin(self._ps_loads))  # ties go to the lowest index
        self._ps_loads[task] += self._load_fn(op)
        return task


def byte_size_load_fn(op) -> int:
    """The byte size of a single-output op's output: its element count times item size.

    A device function sees an op before its outputs exist, so the shape and
    dtype come from the op's "shape" and "dtype" attrs (a variable's) then.

    Raises:
      ValueError: the op has several outputs, or its shape is not fully defined.
    """
    if len(op.outputs) > 1:
        raise ValueError(f"Op {op.name} must have a single output")
    if op.outputs and op.type != "VarHandleOp":  # a handle's size is its variable's
        dtype, shape = op.outputs[0].dtype, op.outputs[0].shape
        if not shape.is_fully_defined():
            shape = TensorShape(op.get_attr("shape"))
    else:
        dtype, shape = op.get_attr("dtype"), TensorShape(op.get_attr("shape"))
    if not shape.is_fully_defined():
        raise ValueError(f"Shape {shape} of op {op.name} is not fully defined")
    return int(shape.num_elements()) * dtype.itemsize


class _ReplicaDeviceChooser:
    """The device function replica_device_setter returns (state: the ps strategy)."""

    def __init__(self, ps_tasks: int, ps_device: str, worker_device: str,
                 merge_devices: bool, ps_ops, ps_strategy: Callable) -> None:
        self._ps_tasks = ps_tasks
        self._ps_device = ps_device
        self._worker_device = worker_device
        self._merge_devices = merge_devices
        self._ps_ops = frozenset(ps_ops)
        self._ps_strategy = ps_strategy

    def device_function(self, op) -> str:
        if not self._merge_devices and op.device:
            return op.device
        current = DeviceSpec.from_string(op.device or "")
        if self._ps_tasks and self._ps_device and op.type in self._ps_ops:
            ps = DeviceSpec.from_string(self._ps_device)
            # A task is chosen only where the op's own job (if any) is the ps job.
            if ps.job and (not current.job or current.job == ps.job):
                ps = ps.replace(task=int(self._ps_strategy(op)))
            return ps.make_merged_spec(current).to_string()
        worker = DeviceSpec.from_string(self._worker_device or "")
        return worker.make_merged_spec(current).to_string()


def replica_device_setter(ps_tasks: int = 0, ps_device: str = "/job:ps",
                          worker_device: str = "/job:worker", merge_devices: bool = True,
                          cluster=None, ps_ops=None,
                          ps_strategy: Optional[Callable] = None) -> Optional[Callable]:
    """A device function for `tf.device`: variables to ps tasks, other ops to the worker.

    Args:
      ps_tasks: number of ps tasks (ignored when `cluster` is given).
      ps_device: the ps job's device ("/job:ps"); each variable gets a task of it.
      worker_device: where every other op goes ("/job:worker/task:0", say).
      merge_devices: merge with the devices ops already ask for (True), or
        leave any op that asks for one alone (False).
      cluster: a ClusterSpec (or its dict / ClusterDef); its ps job's size
        is `ps_tasks`.
      ps_ops: op types placed on the ps (default STANDARD_PS_OPS).
      ps_strategy: op -> ps task index; default round robin. Use
        `GreedyLoadBalancingStrategy(n, byte_size_load_fn)` to balance bytes.
    Returns: the device function, or None when there are no ps tasks (so
      `tf.device(None)` leaves placement alone).
    Raises:
      TypeError: ps_strategy is not callable.
    Example:
      >>> with tf.device(replica_device_setter(ps_tasks=2)):
      ...     v = tf.Variable(1.0)   # /job:ps/task:0
      ...     w = tf.Variable(2.0)   # /job:ps/task:1
      ...     y = v + w              # /job:worker
    """
    if cluster is not None:
        spec = cluster if isinstance(cluster, ClusterSpec) else ClusterSpec(cluster)
        ps_job = DeviceSpec.from_string(ps_device).job
        if ps_job not in spec.jobs:
            return None
        ps_tasks = spec.num_tasks(ps_job)
    if not ps_tasks:
        return None
    if ps_strategy is None:
        ps_strategy = _RoundRobinStrategy(ps_tasks)
    if not callable(ps_strategy):
        raise TypeError(f"ps_strategy must be callable, got {ps_strategy!r}")
    chooser = _ReplicaDeviceChooser(ps_tasks, ps_device, worker_device, merge_devices,
                                    STANDARD_PS_OPS if ps_ops is None else ps_ops,
                                    ps_strategy)
    return chooser.device_function
