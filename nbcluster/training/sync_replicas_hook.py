"""The SessionRunHook SyncReplicasOptimizer.make_session_run_hook returns.

Rule: nothing runs before the session exists; then every worker sets its local
step from the global step, and the chief also points the accumulators at the
global step, puts the initial tokens and starts the aggregating queue runner,
whose blocked step ends when the session closes.
"""
from __future__ import annotations

import numpy as np

from nbcluster.training.session_run_hook import SessionRunHook


class SyncReplicasOptimizerHook(SessionRunHook):
    """Readies one worker for synchronous training (TF's _SyncReplicasOptimizerHook).

    Args:
      sync_optimizer: a SyncReplicasOptimizer whose apply_gradients was called.
      is_chief: whether this worker runs the chief's queue runner.
      num_tokens: initial tokens the chief puts (-1: replicas_to_aggregate).
    Example:
      >>> hook = opt.make_session_run_hook(is_chief=True)
      >>> with MonitoredTrainingSession(master, is_chief=True, hooks=[hook]) as sess: ...
    """

    def __init__(self, sync_optimizer, is_chief: bool, num_tokens: int = -1) -> None:
        self._sync_optimizer = sync_optimizer
        self._is_chief = bool(is_chief)
        self._num_tokens = num_tokens
        self._threads: list = []

    def begin(self) -> None:
        """Picks the ops to run once the session exists.

        Raises:
          ValueError: the optimizer's apply_gradients was not called yet.
        """
        opt = self._sync_optimizer
        if not opt._gradients_applied:
            # TF's words (its tests match "apply_gradient should be called")
            raise ValueError("SyncReplicasOptimizer.apply_gradient should be called before "
                             "using the hook.")
        self._ready_for_local_init_op = opt.ready_for_local_init_op
        if self._is_chief:
            self._local_init_op = opt.chief_init_op
            self._q_runner = opt.get_chief_queue_runner()
            self._init_tokens_op = opt.get_init_tokens_op(self._num_tokens)
        else:
            self._local_init_op = opt.local_step_init_op
            self._q_runner = None
            self._init_tokens_op = None

    def after_create_session(self, session, coord) -> None:
        """Sets the local step; on the chief, tokens in and the queue runner started.

        Raises:
          RuntimeError: some global variable is still uninitialized (named).
        """
        missing = np.asarray(session.run(self._ready_for_local_init_op)).reshape(-1)
        if missing.size:
            names = [m.decode() if isinstance(m, bytes) else str(m) for m in missing]
            raise RuntimeError(f"Model is not ready for SyncReplicasOptimizerHook local_init; "
                               f"uninitialized variables: {names}")
        session.run(self._local_init_op)
        if self._init_tokens_op is not None:
            session.run(self._init_tokens_op)
        if self._q_runner is not None:
            self._threads = self._q_runner.create_threads(session, coord=coord, daemon=True,
                                                          start=True)
