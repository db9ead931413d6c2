"""AdamOptimizer (Kingma & Ba): op ApplyAdam with slots "m" and "v" per variable and
two beta-power accumulators, colocated with the first variable by name, as TF does.

A sparse gradient takes TF 1.15's composite path: m and v decay on every row
(Assign), the gradient's rows are added (ScatterAdd), and the variable moves
on every row whose m is nonzero (AssignSub): the same numbers as the dense
update with the gradient made dense, without shipping a dense gradient. (Only
contrib's LazyAdamOptimizer leaves untouched rows' m and v alone.)
"""
from __future__ import annotations

from nbcluster.ops import control as control_ops
from nbcluster.ops import math as math_ops
from nbcluster.ops import training as training_ops
from nbcluster.ops.state import scatter_add
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

    def _apply_sparse(self, grad, var):
        beta1_power, beta2_power = self._get_beta_accumulators(var.graph)
        cast = self._cast_like
        beta1_t, beta2_t = cast(self._beta1_t, var), cast(self._beta2_t, var)
        lr = (cast(self._lr_t, var) * math_ops.sqrt(1 - cast(beta2_power.value(), var))
              / (1 - cast(beta1_power.value(), var)))
        graph, locking = var.graph, self._use_locking
        m, v = self.get_slot(var, "m"), self.get_slot(var, "v")
        m_decayed = m.assign(m * beta1_t, use_locking=locking)
        with graph.control_dependencies([m_decayed]):
            m_t = scatter_add(m, grad.indices, grad.values * (1 - beta1_t),
                              use_locking=locking)
        v_decayed = v.assign(v * beta2_t, use_locking=locking)
        with graph.control_dependencies([v_decayed]):
            v_t = scatter_add(v, grad.indices, (grad.values * grad.values) * (1 - beta2_t),
                              use_locking=locking)
        step = lr * m_t / (math_ops.sqrt(v_t) + cast(self._epsilon_t, var))
        var_update = var.assign_sub(step, use_locking=locking)
        return control_ops.group(var_update, m_t, v_t)

    def _finish(self, update_ops, name_scope):
        graph = update_ops[0].graph
        beta1_power, beta2_power = self._get_beta_accumulators(graph)
        with graph.control_dependencies(update_ops), graph.colocate_with(beta1_power.op):
            update_beta1 = beta1_power.assign(beta1_power * self._beta1_t,
                                              use_locking=self._use_locking)
            update_beta2 = beta2_power.assign(beta2_power * self._beta2_t,
                                              use_locking=self._use_locking)
        return super()._finish(list(update_ops) + [update_beta1, update_beta2], name_scope)
