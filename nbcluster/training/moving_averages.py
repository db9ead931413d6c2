"""`tf.train.ExponentialMovingAverage`: a shadow variable per variable, moved toward it on apply.

Rule: a shadow is a slot of its variable (`slot_creator`): colocated with it,
so on a ps the averaging runs there and no value crosses the network; named
"<variable>/<ema name>" as TF names it, so a Saver can restore averages into
the variables themselves (`variables_to_restore`).
"""
from __future__ import annotations

from typing import Optional

from nbcluster.framework.graph import get_default_graph
from nbcluster.ops import control as control_ops
from nbcluster.ops import math as math_ops
from nbcluster.ops.state import Variable, global_variables, trainable_variables
from nbcluster.training import slot_creator

MOVING_AVERAGE_VARIABLES = "moving_average_variables"  # TF's GraphKeys name


class ExponentialMovingAverage:
    """Keeps shadow[v] = decay * shadow[v] + (1 - decay) * v for the variables it applies to.

    Args:
      decay: in [0, 1]; higher keeps the average longer.
      num_updates: an optional step count (a Variable or Tensor); then the decay
        used is min(decay, (1 + num_updates) / (10 + num_updates)), so early
        averages follow the variables faster, as TF does.
      zero_debias: accepted for TF's signature; must be False (not supported).
      name: the shadow variables' suffix and the update op's name.
    Raises:
      ValueError: decay outside [0, 1].
      NotImplementedError: zero_debias=True.
    """

    def __init__(self, decay, num_updates=None, zero_debias: bool = False,
                 name: str = "ExponentialMovingAverage") -> None:
        if not isinstance(decay, (int, float)) or not 0.0 <= decay <= 1.0:
            raise ValueError(f"decay must be a number in [0, 1], not {decay!r}")
        if zero_debias:
            raise NotImplementedError("ExponentialMovingAverage(zero_debias=True) is not "
                                      "supported")
        self._decay, self._num_updates, self._name = float(decay), num_updates, name
        self._averages: dict = {}  # id(variable) -> (variable, its shadow)

    name = property(lambda self: self._name)

    def apply(self, var_list=None):
        """Creates the shadows of `var_list` (default: the trainable variables) and
        returns the op that moves each one toward its variable.

        Raises:
          TypeError: an entry is not a float Variable (named).
          ValueError: a variable was applied before.
        """
        var_list = list(trainable_variables() if var_list is None else var_list)
        for var in var_list:
            if not isinstance(var, Variable) or not var.dtype.base_dtype.is_floating:
                raise TypeError(f"ExponentialMovingAverage averages float Variables, not "
                                f"{var!r}")
            if id(var) in self._averages:
                raise ValueError(f"Moving average already computed for: {var.op.name}")
            shadow = slot_creator.create_slot(var, var.initial_value, self._name)
            get_default_graph().add_to_collection(MOVING_AVERAGE_VARIABLES, var)
            self._averages[id(var)] = (var, shadow)
        graph = get_default_graph()
        with graph.name_scope(self._name) as scope:
            decay = self._decay_tensor()
            updates = []
            for var in var_list:
                shadow = self._averages[id(var)][1]
                with graph.colocate_with(var.op):
                    rate = math_ops.subtract(1.0, math_ops.cast(decay, var.dtype.base_dtype))
                    # a fresh read: under the caller's control dependencies it sees their
                    # writes (the variable's own `read` may have run before them)
                    step = math_ops.multiply(math_ops.subtract(shadow, var.read_value()), rate)
                    updates.append(shadow.assign_sub(step).op)
            return control_ops.group(*updates, name=scope[:-1] + "/") if updates else \
                control_ops.no_op(name=scope[:-1] + "/")

    def _decay_tensor(self):
        if self._num_updates is None:
            return self._decay
        steps = math_ops.cast(self._num_updates, "float32")
        return math_ops.minimum(self._decay, math_ops.divide(1.0 + steps, 10.0 + steps))

    def average(self, var) -> Optional[Variable]:
        """The shadow of `var`, or None if `apply` did not cover it."""
        found = self._averages.get(id(var))
        return found[1] if found else None

    def average_name(self, var) -> str:
        """The name `var`'s shadow has (or would have): "<var op name>/<ema name>"."""
        return f"{var.op.name}/{self._name}"

    def variables_to_restore(self, moving_avg_variables=None) -> dict:
        """{checkpoint name: variable} that restores the averages into the variables:
        each averaged variable under its shadow's name, the others under their own.

        Args:
          moving_avg_variables: the averaged ones (default: the graph's
            moving-average collection, else the trainable variables).
        """
        graph = get_default_graph()
        averaged = moving_avg_variables
        if averaged is None:
            averaged = graph.get_collection(MOVING_AVERAGE_VARIABLES) or trainable_variables()
        averaged_ids = {id(v) for v in averaged}
        shadows = {id(shadow) for _, shadow in self._averages.values()}
        out = {}
        for var in global_variables():
            if id(var) in shadows:
                continue
            key = self.average_name(var) if id(var) in averaged_ids else var.op.name
            out[key] = var
        return out
