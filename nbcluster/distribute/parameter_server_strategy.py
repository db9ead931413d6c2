"""ParameterServerStrategy: variables on the ps tasks, round robin; steps on workers.

TF2's parameter-server training over TF1-style graphs: one Graph holds the
variables (placed on ps tasks as they are created under `scope()`) and,
per traced function and worker, a copy of the function's ops on that
worker (built by the ClusterCoordinator, which runs them).
"""
from __future__ import annotations

import contextlib
import enum
import itertools
import threading
from typing import Callable, Optional

from nbcluster.distribute.input_context import InputContext
from nbcluster.distribute.sharded_variable import create_sharded
from nbcluster.framework.cluster_spec import ClusterSpec
from nbcluster.framework.device_spec import DeviceSpec
from nbcluster.framework.graph import get_default_graph
from nbcluster.ops import reduction
from nbcluster.ops.state import GLOBAL_VARIABLES, variables_initializer
from nbcluster.ops.variable_creators import variable_creator_scope
from nbcluster.ops.variable_kinds import resource_variables_in

VARIABLE_OP_TYPES = frozenset({"VariableV2", "VarHandleOp"})


class ReduceOp(enum.Enum):
    """How `strategy.reduce` combines values (tf.distribute.ReduceOp)."""

    SUM = "SUM"
    MEAN = "MEAN"


class ParameterServerStrategyExtended:
    """`strategy.extended`: the devices the strategy uses."""

    def __init__(self, strategy: "ParameterServerStrategy") -> None:
        self._strategy = strategy

    @property
    def parameter_devices(self) -> tuple:
        return tuple(self._strategy._ps_devices)

    @property
    def worker_devices(self) -> tuple:
        return tuple(self._strategy._worker_devices)

    def variable_created_in_scope(self, v) -> bool:
        return id(v.op) in self._strategy._placed

    def colocate_vars_with(self, colocate_with_variable):
        """Variables created inside go where `colocate_with_variable` is."""
        return self._strategy._graph.colocate_with(colocate_with_variable.op)


class ParameterServerStrategy:
    """Asynchronous parameter-server training (tf.distribute.experimental).

    Args:
      cluster_resolver: any object with `cluster_spec()` (a ClusterSpec or
        what ClusterSpec accepts) and `rpc_layer`; the cluster needs "ps"
        and "worker" jobs ("chief" and others are allowed and unused).
      variable_partitioner: None, or a callable `(shape, dtype) -> shard
        counts per dimension` (tf.distribute.experimental.partitioners):
        a variable it cuts along axis 0 becomes a ShardedVariable, its shards
        spread round robin over the ps tasks.
    Raises:
      ValueError: the cluster lacks a ps or worker job, or `rpc_layer` is
        not "grpc".
      TypeError: a `variable_partitioner` that is not callable.
    Example:
      >>> strategy = ParameterServerStrategy(resolver)  # doctest: +SKIP
      >>> with strategy.scope():  # doctest: +SKIP
      ...     v = Variable(0.0)   # on /job:ps/task:0
    """

    def __init__(self, cluster_resolver, variable_partitioner: Optional[Callable] = None):
        if not hasattr(cluster_resolver, "cluster_spec"):
            raise TypeError(f"cluster_resolver must have a cluster_spec() method, got "
                            f"{cluster_resolver!r}")
        spec = ClusterSpec(cluster_resolver.cluster_spec())
        missing = [job for job in ("ps", "worker") if job not in spec.jobs]
        if missing:
            raise ValueError(f"ParameterServerStrategy needs 'ps' and 'worker' jobs; the "
                             f"cluster has {spec.jobs} (missing {missing})")
        rpc_layer = getattr(cluster_resolver, "rpc_layer", None) or "grpc"
        if rpc_layer != "grpc":
            raise ValueError(f"rpc_layer {rpc_layer!r} is not supported; use 'grpc'")
        if variable_partitioner is not None and not callable(variable_partitioner):
            raise TypeError(f"variable_partitioner must be callable, got "
                            f"{variable_partitioner!r}")
        self._variable_partitioner = variable_partitioner
        self._cluster_resolver = cluster_resolver
        self._spec = spec
        self._graph = get_default_graph()
        self._ps_devices = [f"/job:ps/replica:0/task:{i}/device:CPU:0"
                            for i in spec.task_indices("ps")]
        self._worker_devices = [f"/job:worker/replica:0/task:{i}"
                                for i in spec.task_indices("worker")]
        self._next_ps = itertools.count()
        self._placed: set = set()
        self._initialized: set = set()
        self._lock = threading.Lock()
        self.build_lock = threading.RLock()  # one thread at a time builds into the graph
        self.init_lock = threading.Lock()
        self.extended = ParameterServerStrategyExtended(self)
        self._coordinator = None

    cluster_resolver = property(lambda self: self._cluster_resolver)
    graph = property(lambda self: self._graph)
    variable_partitioner = property(lambda self: self._variable_partitioner)

    @property
    def num_replicas_in_sync(self) -> int:
        """1: each worker runs one replica, asynchronously (as in TF)."""
        return 1

    def worker_targets(self) -> list:
        return [f"grpc://{self._spec.task_address('worker', i)}"
                for i in self._spec.task_indices("worker")]

    @contextlib.contextmanager
    def scope(self):
        """Builds into the strategy's graph; variables go to the ps tasks, round robin,
        and are resource variables, as TF2 makes every variable."""
        # A Graph's device stack is shared by threads: entering and leaving take
        # the build lock, so they never interleave with a worker thread's build.
        placing = self._graph.device(self._place_variable)
        with self._graph.as_default(), self._sharding(), \
                resource_variables_in(self._graph):
            with self.build_lock:
                placing.__enter__()
            try:
                yield self
            finally:
                with self.build_lock:
                    placing.__exit__(None, None, None)

    def _sharding(self):
        if self._variable_partitioner is None:
            return contextlib.nullcontext()
        partitioner = self._variable_partitioner
        return variable_creator_scope(
            lambda next_creator, **kwargs: create_sharded(next_creator, partitioner, kwargs))

    def distribute_datasets_from_function(self, dataset_fn: Callable, options=None):
        """`dataset_fn(input_context)`: a worker's dataset (call it in the function
        given to `coordinator.create_per_worker_dataset`). As TF's: each worker is
        its own input pipeline (num_input_pipelines 1, input_pipeline_id 0).

        Raises:
          TypeError: `dataset_fn` is not callable.
        """
        del options
        if not callable(dataset_fn):
            raise TypeError(f"dataset_fn must be callable, got {dataset_fn!r}")
        return dataset_fn(InputContext(1, 0, self.num_replicas_in_sync))

    experimental_distribute_datasets_from_function = distribute_datasets_from_function

    def _place_variable(self, op) -> str:
        if op.type not in VARIABLE_OP_TYPES:
            return op.device
        spec = DeviceSpec.from_string(op.device)
        if spec.job is not None:  # the user pinned it
            return op.device
        with self._lock:
            device = self._ps_devices[next(self._next_ps) % len(self._ps_devices)]
            self._placed.add(id(op))
        return DeviceSpec.from_string(device).make_merged_spec(spec).to_string()

    def run(self, fn: Callable, args=(), kwargs=None, options=None):
        """Calls `fn` once: one replica per worker (call it inside a tf.function)."""
        return fn(*(args or ()), **(kwargs or {}))

    def reduce(self, reduce_op, value, axis=None):
        """Combines `value` across replicas (one here), and over `axis` if given."""
        op = ReduceOp(reduce_op.value if isinstance(reduce_op, ReduceOp) else
                      str(reduce_op).upper())
        if axis is None:
            return value
        fn = reduction.reduce_sum if op is ReduceOp.SUM else reduction.reduce_mean
        return fn(value, axis=axis)

    def uninitialized_variables(self) -> tuple:
        """(initializer op or None, the variables it initializes): every variable
        of the graph not yet initialized by the coordinator. Call under build_lock."""
        new = [v for v in self._graph.get_collection(GLOBAL_VARIABLES)
               if id(v) not in self._initialized]
        if not new:
            return None, []
        with self._graph.as_default():
            return variables_initializer(new, name="coordinator_init"), new

    def mark_initialized(self, variables: list) -> None:
        self._initialized.update(id(v) for v in variables)
