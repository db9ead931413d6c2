"""GradientDescentOptimizer: var -= learning_rate * grad (op ApplyGradientDescent; a
sparse gradient: ScatterSub of learning_rate * its rows, repeated rows adding up)."""
from __future__ import annotations

from nbcluster.ops import math as math_ops
from nbcluster.ops import training as training_ops
from nbcluster.ops.state import scatter_sub
from nbcluster.training.optimizer import Optimizer, hyperparameter


class GradientDescentOptimizer(Optimizer):
    """Plain gradient descent.

    Args:
      learning_rate: a float, a Tensor, or a callable giving one.
      use_locking: hold the variable's lock during each update.
      name: the name scope of the update ops.
    Example:
      >>> train_op = GradientDescentOptimizer(0.1).minimize(loss)
    """

    def __init__(self, learning_rate, use_locking: bool = False,
                 name: str = "GradientDescent") -> None:
        super().__init__(use_locking, name)
        self._learning_rate = learning_rate
        self._learning_rate_tensor = None

    def _prepare(self) -> None:
        self._learning_rate_tensor = hyperparameter(self._learning_rate, "learning_rate")

    def _apply_dense(self, grad, var):
        return training_ops.apply_gradient_descent(
            var, self._cast_like(self._learning_rate_tensor, var), grad,
            use_locking=self._use_locking)

    def _apply_sparse_duplicate_indices(self, grad, var):
        # ScatterSub adds up repeated rows itself, so no deduplication is needed.
        delta = math_ops.multiply(grad.values, self._cast_like(self._learning_rate_tensor, var))
        return scatter_sub(var, grad.indices, delta, use_locking=self._use_locking)

    def _apply_sparse(self, grad, var):
        return self._apply_sparse_duplicate_indices(grad, var)
