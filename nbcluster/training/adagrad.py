"""AdagradOptimizer: accum += grad ** 2, var -= lr * grad / sqrt(accum) (op
ApplyAdagrad, or SparseApplyAdagrad on a sparse gradient's rows); one "accumulator"
slot per variable, starting at a positive value."""
from __future__ import annotations

from nbcluster.framework.constant import constant
from nbcluster.ops import fill as fill_ops
from nbcluster.ops import training as training_ops
from nbcluster.training.optimizer import Optimizer, hyperparameter


class AdagradOptimizer(Optimizer):
    """Adagrad: per-coordinate learning rates from the sum of squared gradients.

    Args:
      learning_rate: a float, a Tensor, or a callable giving one.
      initial_accumulator_value: the accumulators' start value; must be positive.
      use_locking: hold the variable's and slot's locks during each update.
      name: the name scope of the update ops and the slots' suffix ("w/Adagrad").
    Raises:
      ValueError: initial_accumulator_value is not positive.
    """

    def __init__(self, learning_rate, initial_accumulator_value: float = 0.1,
                 use_locking: bool = False, name: str = "Adagrad") -> None:
        if initial_accumulator_value <= 0.0:
            raise ValueError(f"initial_accumulator_value must be positive: "
                             f"{initial_accumulator_value}")
        super().__init__(use_locking, name)
        self._learning_rate = learning_rate
        self._initial_accumulator_value = initial_accumulator_value
        self._learning_rate_tensor = None

    def _create_slots(self, var_list) -> None:
        start = self._initial_accumulator_value
        for v in var_list:
            self._get_or_make_slot_with_initializer(
                v, lambda shape, dtype: fill_ops.fill(shape, constant(start, dtype=dtype)),
                v.shape, v.dtype, "accumulator", self._name)

    def _prepare(self) -> None:
        self._learning_rate_tensor = hyperparameter(self._learning_rate, "learning_rate")

    def _apply_dense(self, grad, var):
        return training_ops.apply_adagrad(
            var, self.get_slot(var, "accumulator"),
            self._cast_like(self._learning_rate_tensor, var), grad,
            use_locking=self._use_locking)

    def _apply_sparse(self, grad, var):
        return training_ops.sparse_apply_adagrad(
            var, self.get_slot(var, "accumulator"),
            self._cast_like(self._learning_rate_tensor, var), grad.values, grad.indices,
            use_locking=self._use_locking)
