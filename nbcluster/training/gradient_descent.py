"""GradientDescentOptimizer: var -= learning_rate * grad (op ApplyGradientDescent)."""
from __future__ import annotations

from nbcluster.ops import training as training_ops
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
