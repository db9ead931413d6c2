"""ConcreteFunction: one trace of a tf.function, and the copies of its ops that run.

Rule: a trace is a template, never run itself. Each call builds a copy of the
template's ops: inlined into the caller's graph with the call's tensors in
place of the placeholders, or (for the coordinator) onto one worker's device
with placeholders of its own. State the template created (variables, queues)
is shared by every copy, never copied.
"""
from __future__ import annotations

import collections
from typing import Optional

from nbcluster.framework import dtypes
from nbcluster.framework.constant import convert_to_tensor
from nbcluster.framework.device_spec import DeviceSpec
from nbcluster.framework.op_registry import get_op_def
from nbcluster.framework.operation import Operation, Tensor
from nbcluster.function.ordering import StatefulOrder, is_state, state_read
from nbcluster.function.structure import ElementIterator, flatten, pack_as
from nbcluster.ops.array import identity, placeholder
from nbcluster.ops.control import group


class TracingIterator:
    """What a traced function gets for an iterator argument: `next()` gives
    placeholders shaped like the next element the run will feed."""

    def __init__(self, elements: list, source: ElementIterator, name: str) -> None:
        self._elements = elements  # the call's pulled elements; a trace may pull more
        self._source = source
        self._name = name
        self.calls = 0
        self.placeholders: list = []

    def __iter__(self) -> "TracingIterator":
        return self

    def __next__(self):
        if self.calls == len(self._elements):
            self._elements.append(self._source.pull())
        element = self._elements[self.calls]
        leaves = flatten(element)
        held = [placeholder(dtypes.as_dtype(x.dtype), x.shape,
                            name=f"{self._name}_next{self.calls}_{j}")
                for j, x in enumerate(leaves)]
        self.calls += 1
        self.placeholders.extend(held)
        return pack_as(element, held)

    get_next = __next__


def _closure(roots: list, within: set) -> set:
    """Ids of the ops of `within` that `roots` reach through data and control inputs."""
    seen, stack = set(), [op for op in roots if id(op) in within]
    while stack:
        op = stack.pop()
        if id(op) in seen:
            continue
        seen.add(id(op))
        stack.extend(x for x in [t.op for t in op.inputs] + op.control_inputs
                     if id(x) in within and id(x) not in seen)
    return seen


Instance = collections.namedtuple("Instance", ["inputs", "outputs", "side_effects"])


class ConcreteFunction:
    """One trace: its placeholders, its outputs and the ops between them.

    `side_effects` are the stateful ops a run must execute even when no
    output needs them (as TF runs every stateful op of a function), except
    the initializers of variables the trace created.
    """

    def __init__(self, graph, ops: list, inputs: list, outputs, new_variables: list,
                 scope: str, keep=()) -> None:
        self.graph = graph
        self.inputs = inputs
        self.structured_outputs = outputs
        self._ops = ops
        self._scope = scope
        self._keep = list(keep)  # objects keyed by id must outlive the cache entry
        in_trace = self._in_trace = {id(op) for op in ops}
        self._by_name = {op.name: op for op in ops}
        self._state = {id(op) for op in ops if is_state(op)}
        init_only = _closure([v.initializer for v in new_variables], in_trace)
        fed = {id(t.op) for t in inputs}
        self._side_effects = [op for op in ops if get_op_def(op.type).stateful and
                              id(op) not in self._state | init_only | fed]
        roots = [x.op if isinstance(x, Tensor) else x for x in flatten(outputs)
                 if isinstance(x, (Tensor, Operation))] + self._side_effects
        needed = _closure(roots, in_trace) | fed
        self._copied = [op for op in ops if id(op) in needed and id(op) not in self._state]

    @property
    def name(self) -> str:
        return self._scope.rstrip("/")

    def __repr__(self) -> str:
        inputs = ", ".join(f"{t.dtype.name}{t.shape}" for t in self.inputs)
        return f"<ConcreteFunction {self.name}({inputs}): {len(self._copied)} ops a copy>"

    def __call__(self, *tensors):
        return self.inline([convert_to_tensor(t) for t in tensors])

    def instantiate(self, inputs: Optional[list] = None, device: Optional[str] = None,
                    name: Optional[str] = None) -> Instance:
        """Builds a copy of the trace's ops into its graph.

        Args:
          inputs: tensors standing for the placeholders, or None for new
            placeholders (to be fed).
          device: where the copy's ops go unless the trace pinned them to a
            job (variables' updates stay with their variables); None keeps
            the trace's devices.
          name: the copy's name scope (default: the function's name, uniqued).
        Returns: Instance(inputs, outputs, side_effects) of the copy.
        Raises:
          ValueError: `inputs` has the wrong length or a wrong dtype.
        """
        mapped = {}
        if inputs is not None:
            if len(inputs) != len(self.inputs):
                raise ValueError(f"{self.name} takes {len(self.inputs)} tensor input(s), "
                                 f"got {len(inputs)}")
            for ph, value in zip(self.inputs, inputs):
                if value.dtype != ph.dtype or not ph.shape.is_compatible_with(value.shape):
                    raise ValueError(f"{self.name}: input {value.name} ({value.dtype.name}, "
                                     f"{value.shape}) does not fit {ph.name} "
                                     f"({ph.dtype.name}, {ph.shape})")
                mapped[id(ph)] = value
        copies: dict = {}

        def lookup(t):
            if id(t) in mapped:
                return mapped[id(t)]
            op = copies.get(id(t.op))
            return t if op is None else op.outputs[t.value_index]

        graph = self.graph
        with graph.as_default(), graph.colocate_with(None, ignore_existing=True), \
                graph.name_scope(name or self.name):
            refresh = self._copy_ops(graph, mapped, copies, lookup, device)
            outputs = pack_as(self.structured_outputs, [
                lookup(refresh(x)) if isinstance(x, Tensor) else copies.get(id(x), x)
                if isinstance(x, Operation) else x for x in flatten(self.structured_outputs)])
        return Instance([lookup(t) for t in self.inputs], outputs,
                        [copies[id(op)] for op in self._side_effects])

    def _copy_ops(self, graph, mapped: dict, copies: dict, lookup, device):
        """Copies the trace's ops in program order, each after the stateful
        ops it must follow (`ordering.py`). A read of a variable made outside
        the trace (the snapshot `v` converts to) is made again in the copy,
        where that order holds. Returns `refresh(t)`: `t`, or a read made now
        if `t` is such a snapshot (for the copy's outputs)."""
        order = StatefulOrder()
        fresh: dict = {}  # id(outer snapshot op) -> its latest copy

        def copy(op, op_device):
            controls = [copies.get(id(c), c) for c in op.control_inputs]
            wait, accesses = order.controls(op)
            node = op.to_node()
            attrs = {k: v for k, v in node.attrs.items() if k != "_output_types"}
            if "_class" in attrs:
                attrs["_class"] = [self._colocation(g, copies) for g in attrs["_class"]]
            relative = op.name[len(self._scope):] if op.name.startswith(self._scope) \
                else op.name
            with graph.device(op_device), graph.control_dependencies(controls + wait):
                new = graph.create_op(op.type, [lookup(t) for t in op.inputs], attrs,
                                      name=relative)
            order.record(new, accesses)
            return new

        def refresh(t):
            state = state_read(t.op) if id(t.op) not in self._in_trace else None
            if state is None or id(t) in mapped:
                return t
            made = fresh.get(id(t.op))
            if made is None or order.written_since(id(state), made):
                made = copy(t.op, t.op.device)
                fresh[id(t.op)] = made
                copies[id(t.op)] = made
            return made.outputs[t.value_index]

        for op in self._copied:
            if op.outputs and id(op.outputs[0]) in mapped:
                continue
            for t in op.inputs:
                refresh(t)
            copies[id(op)] = copy(op, _device_for(op, device))
        return refresh

    def _colocation(self, group_name: str, copies: dict) -> str:
        """A colocation group naming a copied op names its copy instead."""
        op = self._by_name.get(group_name[len("loc:@"):])
        return group_name if op is None or id(op) not in copies else \
            "loc:@" + copies[id(op)].name

    def inline(self, inputs: list):
        """A copy fed by `inputs`; its outputs wait for its side effects."""
        instance = self.instantiate(inputs)
        if not instance.side_effects:
            return instance.outputs
        if instance.outputs is None:
            return group(*instance.side_effects)
        with self.graph.as_default(), self.graph.control_dependencies(instance.side_effects):
            wrapped = [identity(x) if isinstance(x, Tensor) else
                       group(x, *instance.side_effects) if isinstance(x, Operation) else x
                       for x in flatten(instance.outputs)]
        return pack_as(instance.outputs, wrapped)


def _device_for(op: Operation, device: Optional[str]) -> str:
    if device is None:
        return op.device
    spec = DeviceSpec.from_string(op.device)
    if spec.job is not None:
        return op.device
    return DeviceSpec.from_string(device).make_merged_spec(spec).to_string()
