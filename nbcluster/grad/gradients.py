"""tf.gradients: builds the backward graph of `ys` with respect to `xs`, symbolically.

Rule: only ops on a path from an x to a y are differentiated, each once,
in reverse topological order (a pending count per op, as TF's builder keeps);
every gradient op is built in the forward op's `<name>_grad` name scope and,
by default, colocated with it, so it runs where the forward op ran. A sparse
gradient (IndexedSlices, from a gather) passes through Identity ops as it is;
other rules get it as a dense Tensor.
"""
from __future__ import annotations

import collections
import contextlib
import contextvars

from nbcluster.framework import dtypes
from nbcluster.framework.constant import convert_to_tensor
from nbcluster.framework.graph import graph_of
from nbcluster.framework.indexed_slices import IndexedSlices
from nbcluster.framework.operation import Operation, Tensor, as_tensor_or_op
from nbcluster.grad.gradient_table import get_gradient_rule, get_unit_gradient_rule
from nbcluster.ops.array import concat
from nbcluster.ops.control import tuple as gate_tuple
from nbcluster.ops.control_flow_while import loop_unit
from nbcluster.ops.fill import ones_like
from nbcluster.ops.math import add_n, cast

# Op types whose rule takes an IndexedSlices gradient as it is (TF's Identity
# rule returns it unchanged, so a variable's `read` keeps the gradient sparse).
_SPARSE_PASS_THROUGH = frozenset({"Identity", "ReadVariableOp"})

# The stop_gradients of the backward pass whose unit rule (a while loop's) runs now:
# the rule rebuilds the loop's body and must stop at the same tensors in it.
_STOPS: contextvars.ContextVar = contextvars.ContextVar("stop_gradients", default=())


def stops_in_effect() -> tuple:
    """The stop_gradients tensors of the backward pass calling a unit rule now."""
    return _STOPS.get()


# TF's AggregationMethod values; every one of them sums with AddN here.
AGGREGATION_METHODS = (None, 0, 1, 2)


def gradients(ys, xs, grad_ys=None, name: str = "gradients",
              colocate_gradients_with_ops: bool = True, gate_gradients: bool = False,
              aggregation_method=None, stop_gradients=None) -> list:
    """The symbolic partial derivatives of sum(ys) with respect to each of `xs`.

    Args:
      ys: a Tensor or a list of Tensors to differentiate.
      xs: a Tensor or Variable, or a list of them. A Variable's gradient flows
        through its `read` Identity into the variable's own output.
      grad_ys: None, or one gradient per y (None entries mean ones), the
        upstream gradients d(loss)/d(y).
      name: the name scope of every op built (default "gradients").
      colocate_gradients_with_ops: build each gradient op colocated with its
        forward op, so it is placed on the forward op's device.
      gate_gradients: join the gradients of each op's inputs with a tuple,
        so none is used before all are computed.
      aggregation_method: None or one of TF's AggregationMethod values; several
        gradients of one tensor are always summed with AddN.
      stop_gradients: Tensors (or one) treated as constants: no gradient flows
        back through them.
    Returns: a list with one entry per x: its gradient Tensor (of the x's dtype
      and shape), an IndexedSlices where only gathers (through Identity ops)
      read the x, or None when no x-to-y path carries a gradient.
    Raises:
      LookupError: an op on a path has neither a gradient nor a
        NotDifferentiable declaration.
      TypeError: a grad_y's dtype differs from its y's, or an x is no Tensor.
      NotImplementedError: an x is complex (complex gradients, which need
        conjugates, are not implemented; complex tensors carry no gradient).
      ValueError: the lengths of ys and grad_ys differ, or an unknown
        aggregation_method.

    Example:
      >>> x = constant(3.0)
      >>> (dx,) = gradients(x * x, [x])   # evaluates to 6.0
    """
    ys, xs = _tensor_list(ys, "ys"), _tensor_list(xs, "xs")
    for x in xs:
        if x.dtype in (dtypes.complex64, dtypes.complex128):
            raise NotImplementedError(f"Gradients with respect to complex tensors are not "
                                      f"implemented: {x.name} is {x.dtype.name}")
    stops = _tensor_list(stop_gradients, "stop_gradients") if stop_gradients is not None else []
    grad_ys = _grad_y_list(grad_ys, len(ys))
    if aggregation_method not in AGGREGATION_METHODS:
        raise ValueError(f"Invalid aggregation_method specified {aggregation_method}.")
    graph = graph_of(ys, xs)
    with graph.as_default(), graph.name_scope(name or "gradients"):
        builder = _Builder(graph, colocate_gradients_with_ops, gate_gradients)
        return builder.run(ys, xs, grad_ys, stops)


class _Builder:
    """One backward pass: the pending counts, and the gradients collected per tensor."""

    def __init__(self, graph, colocate: bool, gate: bool) -> None:
        self.graph, self.colocate, self.gate = graph, colocate, gate
        self.grads: dict = {}  # Tensor -> [gradient tensors]; summed when first read
        self.between: set = set()  # the ops on a path from some x to some y
        self.stops: tuple = ()     # the stop_gradients tensors
        self.stopped: set = set()  # every output of their ops: no gradient leaves them

    def run(self, ys: list, xs: list, grad_ys: list, stops: list) -> list:
        # A while loop's ops count as one unit (its WhileContext): a loop is
        # differentiated whole (grad/control_flow_while.py).
        between = self.between = {loop_unit(op) for op in _ops_between(ys, xs)}
        # TF stops at the op of each stop tensor; a loop is walked as one unit, so
        # a stopped Exit stops its own gradient, and a stopped body tensor is
        # handed to the loop's rule
        stop_ops = {t.op for t in stops}
        self.stops = tuple(stops)
        self.stopped = {out for op in stop_ops for out in op.outputs}
        for i, (y, gy) in enumerate(zip(ys, grad_ys)):
            self.grads.setdefault(y, []).append(self._initial_grad(y, gy, i))
        pending = collections.Counter()
        for op in between:
            for t in op.inputs:
                if loop_unit(t.op) in between:
                    pending[loop_unit(t.op)] += 1
        ready = collections.deque(_unique(loop_unit(y.op) for y in ys
                                          if loop_unit(y.op) in between
                                          and pending[loop_unit(y.op)] == 0))
        while ready:
            op = ready.popleft()
            if op not in stop_ops:
                self._backprop(op)
            for t in op.inputs:
                unit = loop_unit(t.op)
                if unit in between:
                    pending[unit] -= 1
                    if pending[unit] == 0:
                        ready.append(unit)
        return [self._summed(x) for x in xs]

    def _initial_grad(self, y: Tensor, gy, index: int) -> Tensor:
        if gy is None:
            with self._near(y.op):
                return ones_like(y, name=f"grad_ys_{index}")
        if not isinstance(gy, Tensor):
            gy = convert_to_tensor(gy, dtype=y.dtype, name=f"grad_ys_{index}",
                                   graph=self.graph)
        if gy.dtype != y.dtype:
            raise TypeError(f"Gradient type {gy.dtype.name} generated for tensor {y.name} "
                            f"of type {y.dtype.name}: grad_ys must match ys' dtypes")
        return gy

    def _backprop(self, op: Operation) -> None:
        with self._near(op), self.graph.name_scope(op.name + "_grad"):
            out_grads = [None if t in self.stopped else self._summed(t) for t in op.outputs]
            if not op.inputs or all(g is None for g in out_grads):
                return
            if op.type not in _SPARSE_PASS_THROUGH:
                out_grads = [convert_to_tensor(g) if isinstance(g, IndexedSlices) else g
                             for g in out_grads]
            try:
                rule = get_gradient_rule(op.type) if isinstance(op, Operation) \
                    else get_unit_gradient_rule(op.type)
            except LookupError:
                raise LookupError(f"No gradient defined for operation '{op.name}' "
                                  f"(op type: {op.type})") from None
            if rule is None:  # NotDifferentiable
                return
            token = _STOPS.set(self.stops)
            try:
                in_grads = list(rule(op, *out_grads))
            finally:
                _STOPS.reset(token)
            if len(in_grads) != len(op.inputs):
                raise ValueError(f"The gradient of op '{op.name}' ({op.type}) has "
                                 f"{len(in_grads)} entries for {len(op.inputs)} inputs")
            # An input off every path from xs (a placeholder's feed) needs no
            # gradient: left out of the gate, its branch (MatMul's dx) never runs.
            in_grads = [g if loop_unit(t.op) in self.between else None
                        for t, g in zip(op.inputs, in_grads)]
            if self.gate and sum(g is not None for g in in_grads) > 1:
                in_grads = gate_tuple(in_grads)
        for t, g in zip(op.inputs, in_grads):
            if g is not None and _trainable(t):
                if isinstance(g, IndexedSlices):
                    self.grads.setdefault(t, []).append(g)
                    continue
                g = as_tensor_or_op(g)
                if g.shape.is_compatible_with(t.shape):
                    g.set_shape(t.shape)
                self.grads.setdefault(t, []).append(g)

    def _summed(self, t: Tensor):
        parts = self.grads.get(t)
        if not parts:
            return None
        if len(parts) > 1:
            with self._near(t.op):
                if all(isinstance(p, IndexedSlices) for p in parts):
                    parts[:] = [_concat_slices(parts)]
                else:
                    dense = [convert_to_tensor(p) if isinstance(p, IndexedSlices) else p
                             for p in parts]
                    parts[:] = [add_n(dense, name=f"AddN_{t.value_index}" if t.value_index
                                      else "AddN")]
        return parts[0]

    def _near(self, op: Operation):
        if self.colocate and isinstance(op, Operation):
            return self.graph.colocate_with(op)
        return contextlib.nullcontext()


def _concat_slices(parts: list) -> IndexedSlices:
    """Sums IndexedSlices gradients by concatenating their rows (repeats add up
    when applied or densified), as TF's _AggregateIndexedSlicesGradients does."""
    index_dtype = dtypes.int64 if any(p.indices.dtype == dtypes.int64 for p in parts) \
        else dtypes.int32
    indices = [p.indices if p.indices.dtype == index_dtype else cast(p.indices, index_dtype)
               for p in parts]
    return IndexedSlices(concat([p.values for p in parts], 0), concat(indices, 0),
                         parts[0].dense_shape)


def _ops_between(ys: list, xs: list) -> set:
    """Ops reached forward from xs that also lead back to some y."""
    reached, stack = set(), [x.op for x in xs]
    while stack:
        op = stack.pop()
        if op in reached:
            continue
        reached.add(op)
        for out in op.outputs:
            stack.extend(out.consumers())
    between, stack = set(), [y.op for y in ys]
    while stack:
        op = stack.pop()
        if op in between or op not in reached:
            continue
        between.add(op)
        stack.extend(t.op for t in op.inputs)
    return between


# Real floats only: the rules do not conjugate, so complex tensors carry no gradient.
# A resource handle too: a resource variable's gradient arrives at its handle.
_TRAINABLE = {dtypes.float16, dtypes.float32, dtypes.float64, dtypes.resource}


def _trainable(t: Tensor) -> bool:
    return t.dtype in _TRAINABLE


def _unique(items) -> list:
    seen, out = set(), []
    for item in items:
        if item not in seen:
            seen.add(item)
            out.append(item)
    return out


def _tensor_list(values, what: str) -> list:
    if not isinstance(values, (list, tuple)):
        values = [values]
    out = []
    for v in values:
        # As TF: a resource variable is differentiated for through its handle,
        # which every read of it (and every gather from it) reaches.
        t = v.handle if what == "xs" and getattr(v, "_is_resource", False) else \
            as_tensor_or_op(v)
        if not isinstance(t, Tensor):
            raise TypeError(f"{what} must hold Tensors or Variables, got {v!r}")
        out.append(t)
    return out


def _grad_y_list(grad_ys, count: int) -> list:
    if grad_ys is None:
        return [None] * count
    if not isinstance(grad_ys, (list, tuple)):
        grad_ys = [grad_ys]
    if len(grad_ys) != count:
        raise ValueError(f"Passed {len(grad_ys)} grad_ys for {count} ys")
    return [None if g is None else as_tensor_or_op(g) for g in grad_ys]
