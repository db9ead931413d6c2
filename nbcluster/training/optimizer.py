"""Optimizer: the base of tf.train's optimizers (compute, then apply, gradients).

Rule: an update is one fused op per variable (ops/training.py), built under
`colocate_with(var.op)` so it runs where the variable lives; slots and the
optimizer's other variables (Adam's beta powers) are colocated the same way.
Subclasses fill in `_create_slots`, `_prepare`, `_apply_dense`, `_apply_sparse`
and maybe `_finish`, as in TF. An IndexedSlices gradient (a gather's) is applied
sparsely: only its rows cross to the variable's task and only they change.
"""
from __future__ import annotations

from typing import Optional

from nbcluster.framework import dtypes
from nbcluster.framework.constant import convert_to_tensor
from nbcluster.framework.graph import get_default_graph, graph_of
from nbcluster.framework.indexed_slices import IndexedSlices
from nbcluster.framework.operation import Operation, Tensor
from nbcluster.ops import control as control_ops
from nbcluster.ops import math as math_ops
from nbcluster.ops.indexing import unique, unsorted_segment_sum
from nbcluster.ops.shapes import shape
from nbcluster.ops.state import GLOBAL_VARIABLES, TRAINABLE_VARIABLES, Variable
from nbcluster.training import slot_creator

TRAIN_OP = "train_op"
_VALID_DTYPES = (dtypes.float16, dtypes.float32, dtypes.float64)


def _check_dtypes(values, what: str) -> None:
    for t in values:
        if t.dtype.base_dtype not in _VALID_DTYPES:
            raise ValueError(f"Invalid type {t.dtype!r} for {t.name}, expected: "
                             f"{[d.name for d in _VALID_DTYPES]} ({what}).")


class Optimizer:
    """Base class: `minimize` = `compute_gradients` + `apply_gradients`.

    Args:
      use_locking: updates hold the variables' locks (see kernels/training.py).
      name: the name scope of the ops `apply_gradients` builds.
    Raises:
      ValueError: name is empty.
    Example:
      >>> opt = GradientDescentOptimizer(0.1)          # a subclass
      >>> train_op = opt.minimize(loss, global_step=get_or_create_global_step())
      >>> sess.run(train_op)                            # one step: every variable updated
    """

    GATE_NONE, GATE_OP, GATE_GRAPH = 0, 1, 2

    def __init__(self, use_locking: bool, name: str) -> None:
        if not name:
            raise ValueError("Must specify the optimizer name")
        self._use_locking = use_locking
        self._name = name
        self._slots: dict = {}      # slot name -> {(graph, var op name): slot Variable}
        self._non_slots: dict = {}  # (name, graph) -> Variable

    def get_name(self) -> str:
        return self._name

    # -- the public three ----------------------------------------------------
    def compute_gradients(self, loss, var_list=None, gate_gradients: int = GATE_OP,
                          aggregation_method=None, colocate_gradients_with_ops: bool = False,
                          grad_loss=None) -> list:
        """[(gradient or None, variable)] of `loss` for `var_list` (default: trainable).

        Args:
          loss: a float Tensor to minimize.
          var_list: Variables to differentiate for (default: the graph's trainable ones).
          gate_gradients: GATE_NONE, GATE_OP or GATE_GRAPH (all gradients gated together).
          aggregation_method, colocate_gradients_with_ops: passed to `gradients`.
          grad_loss: the gradient to start from instead of ones.
        Returns: a list of (gradient, variable) pairs; the gradient is an
          IndexedSlices where the loss reads the variable only through gathers,
          None where the loss does not depend on the variable.
        Raises:
          ValueError: bad gate_gradients, no variables, or a non-float dtype.
          TypeError: a var_list entry is not a Variable.
        """
        from nbcluster.grad.gradients import gradients
        if gate_gradients not in (self.GATE_NONE, self.GATE_OP, self.GATE_GRAPH):
            raise ValueError(f"gate_gradients must be one of: Optimizer.GATE_NONE, "
                             f"Optimizer.GATE_OP, Optimizer.GATE_GRAPH.  Not {gate_gradients}")
        loss = convert_to_tensor(loss)
        _check_dtypes([loss], "loss")
        if var_list is None:
            var_list = loss.graph.get_collection(TRAINABLE_VARIABLES)
        var_list = list(var_list)
        if not var_list:
            raise ValueError("No variables to optimize.")
        for v in var_list:
            if not isinstance(v, Variable):
                raise TypeError(f"Variable must be a tf.Variable: {v!r}")
        _check_dtypes(var_list, "variable")
        grads = gradients(loss, var_list, grad_ys=grad_loss,
                          gate_gradients=(gate_gradients == self.GATE_OP),
                          aggregation_method=aggregation_method,
                          colocate_gradients_with_ops=colocate_gradients_with_ops)
        if gate_gradients == self.GATE_GRAPH and any(g is not None for g in grads):
            grads = _gated(grads)
        return list(zip(grads, var_list))

    def apply_gradients(self, grads_and_vars, global_step=None,
                        name: Optional[str] = None) -> Operation:
        """Builds the update of every variable that has a gradient; returns the train op.

        Args:
          grads_and_vars: (gradient, Variable) pairs, as compute_gradients gives;
            an IndexedSlices gradient updates only its rows.
          global_step: a Variable incremented by one once every update ran.
          name: the name of the returned op (default: the optimizer's name).
        Returns: the Operation to run for one training step.
        Raises:
          TypeError: a gradient is not tensor-like or a variable is not a Variable.
          ValueError: no pairs, or no variable has a gradient.
        """
        pairs = []
        for g, v in tuple(grads_and_vars):
            if not isinstance(v, Variable):
                raise TypeError(f"Variable must be a tf.Variable: {v!r}")
            if isinstance(g, IndexedSlices):
                if g.dtype != v.dtype.base_dtype:
                    raise TypeError(f"Gradient of {v.name} has dtype {g.dtype.name}, but the "
                                    f"variable is {v.dtype.name}: {g!r}")
            elif g is not None:
                try:
                    g = convert_to_tensor(g, dtype=v.dtype, graph=v.graph)
                except (TypeError, ValueError) as e:
                    raise TypeError(f"Gradient must be convertible to a Tensor or None: "
                                    f"{g!r} ({e})") from None
            pairs.append((g, v))
        if not pairs:
            raise ValueError("No variables provided.")
        var_list = [v for g, v in pairs if g is not None]
        if not var_list:
            raise ValueError(f"No gradients provided for any variable: "
                             f"{[v.name for _, v in pairs]}.")
        graph = var_list[0].graph
        with graph.as_default():
            self._create_slots(var_list)
            with graph.name_scope(name or self._name) as scope:
                self._prepare()
                update_ops = []
                for g, v in pairs:
                    if g is None:
                        continue
                    with graph.name_scope("update_" + v.op.name), \
                            graph.colocate_with(v.op):
                        update = self._apply_sparse_duplicate_indices(g, v) \
                            if isinstance(g, IndexedSlices) else self._apply_dense(g, v)
                        update_ops.append(_as_op(update))
                if global_step is None:
                    train_op = self._finish(update_ops, scope)
                else:
                    with graph.control_dependencies([self._finish(update_ops, "update")]), \
                            graph.colocate_with(global_step.op):
                        train_op = _as_op(global_step.assign_add(1, name=scope,
                                                                 read_value=False))
        if train_op not in graph.get_collection(TRAIN_OP):
            graph.add_to_collection(TRAIN_OP, train_op)
        return train_op

    def minimize(self, loss, global_step=None, var_list=None, gate_gradients: int = GATE_OP,
                 aggregation_method=None, colocate_gradients_with_ops: bool = False,
                 name: Optional[str] = None, grad_loss=None) -> Operation:
        """compute_gradients then apply_gradients; returns the train op.

        Raises:
          ValueError: no variable gets a gradient from `loss` (and as the two above).
        """
        grads_and_vars = self.compute_gradients(
            loss, var_list=var_list, gate_gradients=gate_gradients,
            aggregation_method=aggregation_method,
            colocate_gradients_with_ops=colocate_gradients_with_ops, grad_loss=grad_loss)
        if not any(g is not None for g, _ in grads_and_vars):
            raise ValueError(f"No gradients provided for any variable, check your graph for "
                             f"ops that do not support gradients, between variables "
                             f"{[str(v) for _, v in grads_and_vars]} and loss {loss}.")
        return self.apply_gradients(grads_and_vars, global_step=global_step, name=name)

    # -- slots and other state -------------------------------------------------
    def get_slot_names(self) -> list:
        """The names of the slots this optimizer creates ("momentum", "m", ...)."""
        return sorted(self._slots)

    def get_slot(self, var: Variable, name: str) -> Optional[Variable]:
        """The slot `name` of `var`, or None if it has none."""
        return self._slots.get(name, {}).get(_var_key(var))

    def variables(self) -> list:
        """Slots and other variables of this optimizer in the default graph, by name."""
        graph = get_default_graph()
        found = [v for (_, g), v in self._non_slots.items() if g is graph]
        found += [v for slots in self._slots.values() for v in slots.values()
                  if v.graph is graph]
        return sorted(found, key=lambda v: v.name)

    def _slot_dict(self, slot_name: str) -> dict:
        return self._slots.setdefault(slot_name, {})

    def _zeros_slot(self, var: Variable, slot_name: str, op_name: str) -> Variable:
        slots = self._slot_dict(slot_name)
        if _var_key(var) not in slots:
            slots[_var_key(var)] = slot_creator.create_zeros_slot(var, op_name)
        return slots[_var_key(var)]

    def _get_or_make_slot_with_initializer(self, var, initializer, shape, dtype, slot_name,
                                           op_name) -> Variable:
        slots = self._slot_dict(slot_name)
        if _var_key(var) not in slots:
            slots[_var_key(var)] = slot_creator.create_slot_with_initializer(
                var, initializer, shape, dtype, op_name)
        return slots[_var_key(var)]

    def _create_non_slot_variable(self, initial_value, name: str,
                                  colocate_with: Variable) -> Variable:
        graph = colocate_with.graph
        key = (name, graph)
        if key not in self._non_slots:
            with graph.as_default(), graph.name_scope(None), \
                    graph.control_dependencies(None), \
                    graph.colocate_with(colocate_with.op, ignore_existing=True):
                self._non_slots[key] = Variable(initial_value, trainable=False, name=name,
                                                collections=[GLOBAL_VARIABLES],
                                                use_resource=colocate_with._is_resource)
        return self._non_slots[key]

    def _get_non_slot_variable(self, name: str, graph=None) -> Optional[Variable]:
        return self._non_slots.get((name, graph or get_default_graph()))

    # -- what subclasses fill in -------------------------------------------------
    def _create_slots(self, var_list: list) -> None:
        pass

    def _prepare(self) -> None:
        pass

    def _apply_dense(self, grad: Tensor, var: Variable):
        raise NotImplementedError(f"{type(self).__name__} does not implement _apply_dense")

    def _apply_sparse_duplicate_indices(self, grad: IndexedSlices, var: Variable):
        # As TF: a row named more than once is summed first, so the sparse update
        # (Momentum's, Adagrad's, Adam's) sees each row once, as the dense one would.
        rows, positions = unique(grad.indices)
        summed = unsorted_segment_sum(grad.values, positions, shape(rows)[0])
        return self._apply_sparse(IndexedSlices(summed, rows, grad.dense_shape), var)

    def _apply_sparse(self, grad: IndexedSlices, var: Variable):
        raise NotImplementedError(f"{type(self).__name__} does not implement _apply_sparse "
                                  f"(an IndexedSlices gradient for {var.name})")

    def _finish(self, update_ops: list, name_scope: str) -> Operation:
        return control_ops.group(*update_ops, name=name_scope)

    @staticmethod
    def _call_if_callable(param):
        return param() if callable(param) else param

    @staticmethod
    def _cast_like(value: Tensor, var: Variable) -> Tensor:
        """`value` in `var`'s dtype (hyperparameters are float32 by default)."""
        return math_ops.cast(value, var.dtype.base_dtype)


def _gated(grads: list) -> list:
    """GATE_GRAPH: every gradient (an IndexedSlices' values and indices too)
    comes out only once all are computed."""
    flat = []
    for g in grads:
        flat.extend([g.values, g.indices] if isinstance(g, IndexedSlices) else [g])
    gated = iter(control_ops.tuple(flat))
    out = []
    for g in grads:
        if isinstance(g, IndexedSlices):
            out.append(IndexedSlices(next(gated), next(gated), g.dense_shape))
        else:
            out.append(next(gated))
    return out


def _var_key(var: Variable) -> tuple:
    return (var.graph, var.op.name)


def _as_op(value) -> Operation:
    return value.op if isinstance(value, Tensor) else value


def hyperparameter(value, name: str) -> Tensor:
    """A hyperparameter as a tensor: a callable is called, a number becomes a Const."""
    value = value() if callable(value) else value
    return convert_to_tensor(value, name=name, graph=graph_of(value))
