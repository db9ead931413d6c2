"""Traces a dataset's Python function (map, filter, interleave) into a function body,
and copies a dataset's ops into a one-shot iterator's factory.

Rule: a body is a separate graph whose `_Arg` ops are the function's
arguments followed by its captures: each tensor of an enclosing graph the
function uses becomes one more `_Arg`, and the dataset op takes the captured
tensor as an input (TF's `other_arguments`), so a captured placeholder is
fed per step like any other input.
"""
from __future__ import annotations

import itertools
from typing import Callable, Optional

from nbcluster.data import structure
from nbcluster.data.dataset_value import DatasetValue
from nbcluster.framework import dtypes
from nbcluster.framework.func_attr import FuncAttr
from nbcluster.framework.graph import Graph, get_default_graph
from nbcluster.framework.operation import Tensor

_NAMES = itertools.count()
_METHODS = {"map_func": "map", "predicate": "filter"}


class FuncGraph(Graph):
    """The graph a function is traced into; tensors of enclosing graphs become captures."""

    def __init__(self, name: str, outer: Graph) -> None:
        super().__init__()
        self.name = name
        self.outer = outer
        self.seed = outer.seed
        self.args: list = []
        self.captures: list = []  # (outer tensor, its _Arg here)
        self._by_outer: dict = {}

    def add_arg(self, dtype, shape, name: str) -> Tensor:
        arg = self.create_op("_Arg", [], {"T": dtypes.as_dtype(dtype), "index": len(self.args),
                                          "_shape": shape}, name=name).outputs[0]
        self.args.append(arg)
        return arg

    def _own(self, value) -> Tensor:
        unwrap = getattr(value, "_as_graph_element", None)
        if isinstance(value, Tensor) or unwrap is not None:
            t = unwrap() if unwrap is not None and not isinstance(value, Tensor) else value
            if isinstance(t, Tensor) and t.graph is not self:
                return self.capture(t)
        return super()._own(value)

    def capture(self, tensor: Tensor) -> Tensor:
        found = self._by_outer.get(id(tensor))
        if found is not None:
            return found
        if isinstance(self.outer, FuncGraph) and tensor.graph is not self.outer:
            outer_tensor = self.outer.capture(tensor)
        else:
            outer_tensor = tensor
        index = len(self.args) + len(self.captures)
        inner = self.create_op("_Arg", [], {"T": tensor.dtype.base_dtype, "index": index,
                                            "_shape": tensor.shape}, name="capture").outputs[0]
        self.captures.append((outer_tensor, inner))
        self._by_outer[id(tensor)] = inner
        return inner

    def encloses(self, graph: Graph) -> bool:
        """Whether `graph` is one this function's tensors may be captured from."""
        return graph is self.outer or (isinstance(self.outer, FuncGraph)
                                       and self.outer.encloses(graph))

    def function(self, outputs: list) -> FuncAttr:
        """The traced body as a FuncAttr returning `outputs` (tensors of this graph)."""
        nodes = tuple(op.to_node() for op in self.get_operations())
        arg_types = tuple(a.dtype for a in self.args) + tuple(i.dtype for _, i in self.captures)
        return FuncAttr(self.name, nodes, tuple(t.name for t in outputs), arg_types,
                        tuple(t.dtype for t in outputs))


class Traced:
    """A traced function: its FuncAttr, the outer tensors it captured, what it returns."""

    def __init__(self, func: FuncAttr, captured: list, output_spec, returns_dataset: bool):
        self.func = func
        self.captured = captured
        self.output_spec = output_spec
        self.returns_dataset = returns_dataset


def trace(fn: Callable, element_spec, what: str, returns: str = "tensors") -> Traced:
    """Calls `fn` on placeholders for one element of `element_spec`, as tf.data does:
    a tuple element is passed as positional arguments, anything else as one.

    Args:
      returns: "tensors" (map), "bool" (filter) or "dataset" (interleave).
    Raises:
      TypeError: `fn` returned a structure tf.data cannot hold, or (for a
        filter) something other than a scalar bool tensor; ValueError for an
        interleave function returning no dataset.
    """
    outer = get_default_graph()
    name = f"{what}_{next(_NAMES)}"
    graph = FuncGraph(name, outer)
    with graph.as_default():
        leaves = [graph.add_arg(s.dtype, s.shape, f"arg{i}")
                  for i, s in enumerate(structure.flatten(element_spec))]
        element = structure.pack_as(element_spec, leaves)
        if isinstance(element, tuple) and not hasattr(element, "_fields"):
            result = fn(*element)
        else:
            result = fn(element)
        if returns == "dataset":
            if not isinstance(result, DatasetValue):
                raise TypeError(f"`{what}` must return a `tf.data.Dataset` object, got "
                                f"{type(result).__name__}: {result!r}")
            outputs, spec = [result._variant], result.element_spec
        else:
            if isinstance(result, list):
                result = tuple(result) if returns != "bool" else result
            if result is None:
                raise ValueError(f"`{what}` returned None: a tf.data function must return "
                                 f"tensors (nested in tuples, dicts or namedtuples)")
            try:
                tensors = structure.to_tensors(result, f"The value returned by `{what}`", graph)
            except TypeError as e:
                raise TypeError(f"Unsupported return value from function passed to "
                                f"Dataset.{_METHODS.get(what, what)}(): {result!r}. {e}") \
                    from None
            tensors = structure.pack_as(tensors, [t if t.graph is graph else graph.capture(t)
                                                  for t in structure.flatten(tensors)])
            outputs, spec = structure.flatten(tensors), structure.spec_of(tensors)
            if returns == "bool" and (len(outputs) != 1 or outputs[0].dtype != dtypes.bool
                                      or outputs[0].shape.rank not in (None, 0)):
                raise ValueError(f"Invalid `predicate`. `predicate` must return a `tf.bool` "
                                 f"scalar tensor, but its return type was {spec}.")
    return Traced(graph.function(outputs), [t for t, _ in graph.captures], spec,
                  returns == "dataset")


# -- one-shot iterators ---------------------------------------------------------------
def _forbidden(op) -> Optional[str]:
    if op.type.startswith("Placeholder"):
        return f"Cannot capture a placeholder (name:{op.name}, type:{op.type}) by value."
    if op.type in ("VariableV2", "VarHandleOp") or any(
            getattr(t.dtype, "is_ref_dtype", False) for t in op.outputs):
        return f"Cannot capture the stateful object {op.name} ({op.type}) by value."
    return None


def dataset_factory(variant: Tensor) -> FuncAttr:
    """A function with no arguments that remakes `variant`'s dataset: its ops copied
    by value (TF1's one-shot iterator rule).

    Raises:
      ValueError: the dataset depends on a placeholder or a variable.
    """
    graph = variant.graph
    seen: dict = {}
    stack = [variant.op]
    while stack:
        op = stack.pop()
        if op.name in seen:
            continue
        reason = _forbidden(op)
        if reason is not None:
            raise ValueError(
                f"Failed to create a one-shot iterator for a dataset. "
                f"`Dataset.make_one_shot_iterator()` does not support datasets that capture "
                f"stateful objects, such as a `Variable` or `LookupTable`. In these cases, "
                f"use `Dataset.make_initializable_iterator()`. (Original error: {reason})")
        seen[op.name] = op
        stack.extend(t.op for t in op.inputs)
        stack.extend(op.control_inputs)
    ops = sorted(seen.values(), key=lambda o: o._id)
    nodes = tuple(op.to_node().with_changes(device="") for op in ops)
    name = graph.unique_name("_make_dataset", mark_as_used=False)
    return FuncAttr(f"{name}_{next(_NAMES)}", nodes, (variant.name,), (), (dtypes.variant,))
