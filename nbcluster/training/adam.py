"""AdamOptimizer (Kingma & Ba): op ApplyAdam with slots "m" and "v" per variable and
two beta-power accumulators, colocated with the first variable by name, as TF does."""
from __future__ import annotations

from nbcluster.ops import training as training_ops
from nbcluster.training.optimizer import Optimizer, hyperparameter


class AdamOptimizer(Optimizer):
    """Adam: bias-corrected moment estimates of the gradient and its square.

    Per step t: lr_t = lr * sqrt(1 - beta2^t) / (1 - beta1^t);
    m = beta1 * m + (1 - beta1) * g; v = beta2 * v + (1 - beta2) * g^2;
    var -= lr_t * m / (sqrt(v) + epsilon).

    Args:
      learning_rate, beta1, beta2, epsilon: floats, Tensors or callables.
      use_locking: hold the variable's and slots' locks during each update.
      name: the name scope of the update ops and the slots' suffix ("w/Adam",
        "w/Adam_1").
    """

    def __init__(self, learning_rate=0.001, beta1=0.9, beta2=0.999, epsilon=1e-8,
                 use_locking: bool = False, name: str = "Adam") -> None:
        super().__init__(use_locking, name)
        self._lr, self._beta1, self._beta2, self._epsilon = learning_rate, beta1, beta2, epsilon
        self._lr_t = self._beta1_t = self._beta2_t = self._epsilon_t = None

    def _get_beta_accumulators(self, graph=None) -> tuple:
        return (self._get_non_slot_variable("beta1_power", graph),
                self._get_non_slot_variable("beta2_power", graph))

    def _create_slots(self, var_list) -> None:
        first = min(var_list, key=lambda v: v.name)
        self._create_non_slot_variable(self._call_if_callable(self._beta1), "beta1_power",
                                       first)
        self._create_non_slot_variable(self._call_if_callable(self._beta2), "beta2_power",
                                       first)
        for v in var_list:
            self._zeros_slot(v, "m", self._name)
            self._zeros_slot(v, "v", self._name)

    def _prepare(self) -> None:
        self._lr_t = hyperparameter(self._lr, "learning_rate")
        self._beta1_t = hyperparameter(self._beta1, "beta1")
        self._beta2_t = hyperparameter(self._beta2, "beta2")
        self._epsilon_t = hyperparameter(self._epsilon, "epsilon")

    def _apply_dense(self, grad, var):
        beta1_power, beta2_power = self._get_beta_accumulators(var.graph)
        cast = self._cast_like
        return training_ops.apply_adam(
            var, self.get_slot(var, "m"), self.get_slot(var, "v"),
            cast(beta1_power.value(), var), cast(beta2_power.value(), var),
            cast(self._lr_t, var), cast(self._beta1_t, var), cast(self._beta2_t, var),
            cast(self._epsilon_t, var), grad, use_locking=self._use_locking)

    def _finish(self, update_ops, name_scope):
        graph = update_ops[0].graph
        beta1_power, beta2_power = self._get_beta_accumulators(graph)
        with graph.control_dependencies(update_ops), graph.colocate_with(beta1_power.op):
            update_beta1 = beta1_power.assign(beta1_power * self._beta1_t,
                                              use_locking=self._use_locking)
            update_beta2 = beta2_power.assign(beta2_power * self._beta2_t,
                                              use_locking=self._use_locking)
        return super()._finish(list(update_ops) + [update_beta1, update_beta2], name_scope)
