"""MomentumOptimizer: accum = momentum * accum + grad, then var -= lr * accum
(or TF's Nesterov form), op ApplyMomentum (SparseApplyMomentum for a sparse
gradient: only its rows' accumulators decay); one "momentum" slot per variable."""
from __future__ import annotations

from nbcluster.ops import training as training_ops
from nbcluster.training.optimizer import Optimizer, hyperparameter


class MomentumOptimizer(Optimizer):
    """Gradient descent with momentum.

    Args:
      learning_rate: a float, a Tensor, or a callable giving one.
      momentum: the accumulator's decay (a float, Tensor or callable).
      use_locking: hold the variable's and slot's locks during each update.
      name: the name scope of the update ops and the slots' suffix ("w/Momentum").
      use_nesterov: use Nesterov momentum: var -= lr * grad + lr * momentum * accum.
    Example:
      >>> train_op = MomentumOptimizer(0.1, 0.9, use_nesterov=True).minimize(loss)
    """

    def __init__(self, learning_rate, momentum, use_locking: bool = False,
                 name: str = "Momentum", use_nesterov: bool = False) -> None:
        super().__init__(use_locking, name)
        self._learning_rate = learning_rate
        self._momentum = momentum
        self._use_nesterov = use_nesterov
        self._learning_rate_tensor = self._momentum_tensor = None

    def _create_slots(self, var_list) -> None:
        for v in var_list:
            self._zeros_slot(v, "momentum", self._name)

    def _prepare(self) -> None:
        self._learning_rate_tensor = hyperparameter(self._learning_rate, "learning_rate")
        self._momentum_tensor = hyperparameter(self._momentum, "momentum")

    def _apply_dense(self, grad, var):
        return training_ops.apply_momentum(
            var, self.get_slot(var, "momentum"),
            self._cast_like(self._learning_rate_tensor, var), grad,
            self._cast_like(self._momentum_tensor, var), use_locking=self._use_locking,
            use_nesterov=self._use_nesterov)

    def _apply_sparse(self, grad, var):
        return training_ops.sparse_apply_momentum(
            var, self.get_slot(var, "momentum"),
            self._cast_like(self._learning_rate_tensor, var), grad.values, grad.indices,
            self._cast_like(self._momentum_tensor, var), use_locking=self._use_locking,
            use_nesterov=self._use_nesterov)
