"""SyncReplicasOptimizer: synchronous training, gradients averaged on the ps per step.

Rule: one global step = `replicas_to_aggregate` gradients per variable. Each
worker's train op pushes its gradients into a ConditionalAccumulator beside
each variable (stale ones, older than the accumulator's step, are dropped),
then waits for a token from the sync token queue beside the global step. The
chief's queue runner takes the averaged gradients, applies them with the
wrapped optimizer (one global step increment) and enqueues one token per
replica carrying the new global step, which becomes each worker's local step.
"""
from __future__ import annotations

from typing import Optional

from nbcluster.framework.graph import graph_of
from nbcluster.framework.operation import Operation
from nbcluster.ops import control as control_ops
from nbcluster.ops.accumulator import ConditionalAccumulator
from nbcluster.ops.fill import fill
from nbcluster.ops.queue import FIFOQueue
from nbcluster.ops.readiness import report_uninitialized_variables
from nbcluster.ops.state import LOCAL_VARIABLES, Variable, global_variables
from nbcluster.training.optimizer import Optimizer
from nbcluster.training.queue_runner import QueueRunner
from nbcluster.training.sync_replicas_hook import SyncReplicasOptimizerHook


# The hook class lives in monitored/ (L4, which owns SessionRunHook, where L1
# may not import from); that module registers it here when it is imported.
def _positive_int(value, what: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ValueError(f"{what} must be a positive integer, got {value!r}")
    return value


class SyncReplicasOptimizer(Optimizer):
    """Wraps an optimizer so that replicas apply averaged gradients in lockstep.

    Args:
      opt: the Optimizer that applies the averaged gradients.
      replicas_to_aggregate: gradients averaged per variable for one step.
      total_num_replicas: workers training (default replicas_to_aggregate);
        each step hands out max(this, replicas_to_aggregate) tokens.
      variable_averages: an ExponentialMovingAverage the chief applies to
        `variables_to_average` after each aggregated update (before the
        step's tokens go out, so a worker's next step sees both).
      use_locking: passed to Optimizer.
      name: the name scope of the optimizer's ops.
    Raises:
      TypeError: opt is not an Optimizer.
      ValueError: a replica count is not a positive integer.
      ValueError: variables_to_average without variable_averages.
    Example:
      >>> opt = SyncReplicasOptimizer(GradientDescentOptimizer(0.1), replicas_to_aggregate=2)
      >>> train_op = opt.minimize(loss, global_step=global_step)
      >>> hook = opt.make_session_run_hook(is_chief=(task == 0))
      >>> with MonitoredTrainingSession(master, is_chief=(task == 0), hooks=[hook]) as sess:
      ...     sess.run(train_op)
    """

    def __init__(self, opt, replicas_to_aggregate: int, total_num_replicas=None,
                 variable_averages=None, variables_to_average=None,
                 use_locking: bool = False, name: str = "sync_replicas") -> None:
        super().__init__(use_locking, name)
        if not isinstance(opt, Optimizer):
            raise TypeError(f"opt must be a tf.train.Optimizer, got {opt!r}")
        if variables_to_average is not None and variable_averages is None:
            raise ValueError("variables_to_average needs variable_averages (an "
                             "ExponentialMovingAverage)")
        self._opt = opt
        self._variable_averages = variable_averages
        self._variables_to_average = variables_to_average
        self._replicas_to_aggregate = _positive_int(replicas_to_aggregate,
                                                    "replicas_to_aggregate")
        if total_num_replicas is None:
            total_num_replicas = replicas_to_aggregate
        self._total_num_replicas = _positive_int(total_num_replicas, "total_num_replicas")
        self._tokens_per_step = max(self._total_num_replicas, self._replicas_to_aggregate)
        self._gradients_applied = False
        self._global_step = None
        self._local_step: Optional[Variable] = None
        self._sync_token_queue: Optional[FIFOQueue] = None
        self._chief_queue_runner: Optional[QueueRunner] = None
        self._accumulators: list = []  # (ConditionalAccumulator, variable)
        self.local_step_init_op = None
        self.chief_init_op = None
        self.ready_for_local_init_op = None

    def compute_gradients(self, *args, **kwargs) -> list:
        """The wrapped optimizer's compute_gradients (same arguments and result)."""
        return self._opt.compute_gradients(*args, **kwargs)

    def apply_gradients(self, grads_and_vars, global_step=None,
                        name: Optional[str] = None) -> Operation:
        """Builds the worker's train op and the chief's aggregation step.

        Args:
          grads_and_vars: (gradient, Variable) pairs from compute_gradients.
          global_step: the global step Variable (required: it checks staleness).
          name: accepted for TF's signature.
        Returns: the train op: push the gradients, wait for a token, take its step.
        Raises:
          ValueError: no pairs, no global_step, or apply_gradients called twice.
          TypeError: a variable is not a Variable.
        """
        grads_and_vars = list(grads_and_vars)
        if not grads_and_vars:
            raise ValueError("Must supply at least one variable")
        if global_step is None:
            raise ValueError("Global step is required to check staleness")
        if self._gradients_applied:
            raise ValueError("SyncReplicasOptimizer.apply_gradients was already called")
        for _, v in grads_and_vars:
            if not isinstance(v, Variable):
                raise TypeError(f"Variable must be a tf.Variable: {v!r}")
        graph = graph_of(global_step.op)
        self._global_step = global_step
        with graph.as_default(), graph.name_scope(None):
            self._build_local_step(graph, global_step)
            with graph.name_scope(self._name):
                pushes, aggregated = self._accumulate(graph, grads_and_vars)
            # The wrapped optimizer colocates each update with its variable.
            update_op = self._opt.apply_gradients(aggregated, global_step)
            if self._variable_averages is not None:
                with graph.control_dependencies([update_op]):
                    update_op = self._variable_averages.apply(self._variables_to_average)
            train_op = self._build_tokens(graph, global_step, pushes, update_op)
            self.chief_init_op = control_ops.group(
                self.local_step_init_op,
                *[acc.set_global_step(global_step, name="SetGlobalStep")
                  for acc, _ in self._accumulators])
        self._gradients_applied = True
        return train_op

    def _build_local_step(self, graph, global_step) -> None:
        # The local step stays on this worker: an anchor op the device setter
        # puts on the worker keeps the variable off the ps.
        anchor = control_ops.no_op(name="sync_rep_local_anchor")
        with graph.colocate_with(anchor):
            self._local_step = Variable(0, trainable=False, collections=[LOCAL_VARIABLES],
                                        dtype=global_step.dtype.base_dtype,
                                        name="sync_rep_local_step")
        self.local_step_init_op = self._local_step.assign(global_step)
        self.ready_for_local_init_op = report_uninitialized_variables(global_variables())

    def _accumulate(self, graph, grads_and_vars) -> tuple:
        pushes, aggregated = [], []
        for grad, var in grads_and_vars:
            if grad is None:
                aggregated.append((None, var))
                continue
            with graph.colocate_with(var.op):
                acc = ConditionalAccumulator(grad.dtype, shape=var.shape,
                                             shared_name=var.name + "/grad_accum")
                pushes.append(acc.apply_grad(grad, local_step=self._local_step))
                aggregated.append((acc.take_grad(self._replicas_to_aggregate), var))
            self._accumulators.append((acc, var))
        return pushes, aggregated

    def _build_tokens(self, graph, global_step, pushes, update_op) -> Operation:
        with graph.colocate_with(global_step.op):
            self._sync_token_queue = FIFOQueue(-1, global_step.dtype.base_dtype, shapes=[[]],
                                               name="sync_token_q", shared_name="sync_token_q")
            with graph.control_dependencies(pushes):
                token = self._sync_token_queue.dequeue()
            with graph.control_dependencies([update_op]):
                # Read after the update: the tokens carry the step just reached.
                tokens = fill([self._tokens_per_step], global_step.read_value())
                sync_op = self._sync_token_queue.enqueue_many([tokens])
        train_op = self._local_step.assign(token)
        self._chief_queue_runner = QueueRunner(self._sync_token_queue, [sync_op])
        return train_op.op

    # -- what the chief and the hook use ---------------------------------------
    def _check_applied(self, what: str) -> None:
        if not self._gradients_applied:
            raise ValueError(f"{what} should be called after apply_gradients().")

    def get_chief_queue_runner(self) -> QueueRunner:
        """The QueueRunner the chief runs: aggregate, apply, hand out tokens.

        Raises:
          ValueError: apply_gradients was not called yet.
        """
        self._check_applied("get_chief_queue_runner()")
        return self._chief_queue_runner

    def get_init_tokens_op(self, num_tokens: int = -1) -> Operation:
        """An op that puts `num_tokens` tokens (default replicas_to_aggregate) in the
        queue, so the first step's workers can finish before any update.

        Raises:
          ValueError: apply_gradients was not called yet, or too few tokens.
        """
        self._check_applied("get_init_tokens_op()")
        needed = self._replicas_to_aggregate - self._total_num_replicas
        if num_tokens == -1:
            num_tokens = self._replicas_to_aggregate
        elif num_tokens < needed:
            raise ValueError(f"Too few tokens to finish the first step: {num_tokens} (given) "
                             f"vs {needed} (needed)")
        graph = graph_of(self._global_step.op)
        with graph.as_default(), graph.name_scope(None), \
                graph.colocate_with(self._global_step.op):
            if num_tokens <= 0:
                return control_ops.no_op(name="no_init_tokens")
            tokens = fill([num_tokens], self._global_step)
            return self._sync_token_queue.enqueue_many([tokens])

    def make_session_run_hook(self, is_chief: bool, num_tokens: int = -1):
        """The SessionRunHook that readies this worker (and, on the chief, starts
        the queue runner and puts the initial tokens) once its session exists."""
        return SyncReplicasOptimizerHook(self, is_chief, num_tokens)

    def get_slot(self, *args, **kwargs):
        """The wrapped optimizer's get_slot."""
        return self._opt.get_slot(*args, **kwargs)

    def get_slot_names(self, *args, **kwargs) -> list:
        """The wrapped optimizer's get_slot_names."""
        return self._opt.get_slot_names(*args, **kwargs)

    def variables(self) -> list:
        """The wrapped optimizer's variables."""
        return self._opt.variables()
