"""Function: a Python function traced once per input signature (tf.function).

The signature of a call is the dtype and shape of each tensor argument
(numpy arrays, graph tensors), the value of each Python scalar, the identity
of any other object, and the element shapes an iterator argument yields.
"""
from __future__ import annotations

import inspect
import threading
import weakref
from typing import Any, Callable, Optional

from nbcluster import errors
from nbcluster.framework.constant import convert_to_tensor
from nbcluster.framework.graph import get_default_graph
from nbcluster.framework.operation import Tensor
from nbcluster.function.concrete import ConcreteFunction, TracingIterator
from nbcluster.function.structure import (
    ElementIterator,
    TensorSpec,
    dtype_and_shape,
    element_key,
    flatten,
    leaf_kind,
    pack_as,
    tensor_key,
    treedef,
)
from nbcluster.ops.array import placeholder
from nbcluster.ops.state import GLOBAL_VARIABLES
from nbcluster.ops.variable_kinds import resource_variables_in


class _Call:
    """One call's arguments: flattened, keyed, with iterator elements pulled."""

    def __init__(self, structure, leaves: list, signature: Optional[list] = None) -> None:
        self.structure = structure
        self.leaves = leaves
        self.signature = signature
        self.kinds = ["tensor"] * len(leaves) if signature is not None else \
            [leaf_kind(x) for x in leaves]
        self.elements: dict = {}

    def pull(self, counts: dict) -> None:
        """Takes from each iterator argument as many elements as its trace used."""
        for i, (leaf, kind) in enumerate(zip(self.leaves, self.kinds)):
            if kind == "iterator":
                self.elements[i] = []
                for _ in range(counts.get(i, 1)):
                    try:
                        self.elements[i].append(leaf.pull())
                    except errors.OutOfRangeError:
                        self.release()
                        raise

    def base_key(self) -> tuple:
        if self.signature is not None:  # one trace, whatever fits it
            return ("signature",)
        parts = []
        for leaf, kind in zip(self.leaves, self.kinds):
            parts.append(tensor_key(leaf) if kind == "tensor" else ("iterator",)
                         if kind == "iterator" else ("value", type(leaf).__name__, leaf)
                         if kind == "value" else ("object", id(leaf)))
        return (treedef(self.structure, len(self.leaves)),) + tuple(parts)

    def key(self) -> tuple:
        return self.base_key() + tuple((i, tuple(element_key(e) for e in elements))
                                       for i, elements in sorted(self.elements.items()))

    def flat_values(self) -> list:
        """Tensor-like values in the order of the concrete function's inputs."""
        out = []
        for i, (leaf, kind) in enumerate(zip(self.leaves, self.kinds)):
            if kind == "tensor":
                out.append(leaf)
            elif kind == "iterator":
                out.extend(x for e in self.elements[i] for x in flatten(e))
        return out

    def release(self) -> None:
        """Gives back the elements this call pulled (its run did not happen)."""
        for i, elements in self.elements.items():
            self.leaves[i].push_back(elements)
        self.elements = {i: [] for i in self.elements}


class Function:
    """A Python function traced into graph ops once per input signature.

    Calling it builds its ops into the default graph (TF1 graph mode: a
    call is inlined) and returns the outputs there; a function that returns
    None but changes state returns the op that runs those changes.
    """

    def __init__(self, python_function: Callable, input_signature=None,
                 name: Optional[str] = None) -> None:
        if not callable(python_function):
            raise TypeError(f"tf.function needs a callable, got {python_function!r}")
        self.python_function = python_function
        self.input_signature = None if input_signature is None else _specs(input_signature)
        self._signature_structure = None if input_signature is None else list(input_signature)
        self._name = name or getattr(python_function, "__name__", "function").strip("<>")
        self._signature = inspect.signature(python_function)
        self._traces: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()
        self._next_counts: dict = {}
        self._tracing_count = 0
        self._lock = threading.RLock()
        self._bound: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()

    def __get__(self, instance, owner):
        # A decorated method: one Function per instance, `self` bound in.
        if instance is None:
            return self
        with self._lock:
            bound = self._bound.get(instance)
            if bound is None:
                bound = Function(self.python_function.__get__(instance, owner),
                                 self.input_signature, self._name)
                self._bound[instance] = bound
            return bound

    def __repr__(self) -> str:
        return f"<tf.function {self._name}: {self._tracing_count} trace(s)>"

    def experimental_get_tracing_count(self) -> int:
        """How many times the Python function has been traced."""
        return self._tracing_count

    def __call__(self, *args, **kwargs):
        concrete, values = self.trace_for_call(get_default_graph(), args, kwargs)
        return concrete.inline([v if isinstance(v, Tensor) else
                                convert_to_tensor(v, dtype=ph.dtype)
                                for v, ph in zip(values, concrete.inputs)])

    def get_concrete_function(self, *args, **kwargs) -> ConcreteFunction:
        """The trace (in the default graph) for these arguments' signature."""
        concrete, call = self._concrete(get_default_graph(), args, kwargs)
        call.release()
        return concrete

    def trace_for_call(self, graph, args: tuple, kwargs: dict) -> tuple:
        """(ConcreteFunction in `graph`, its input values for this call).

        Iterator arguments give up the elements the call consumes.
        Raises:
          TypeError / ValueError: arguments that do not fit `input_signature`.
          OutOfRangeError: an iterator argument is exhausted.
        """
        concrete, call = self._concrete(graph, args, kwargs)
        return concrete, call.flat_values()

    def _concrete(self, graph, args: tuple, kwargs: dict) -> tuple:
        with self._lock:
            call = _Call(*self._flatten_args(args, kwargs), self.input_signature)
            call.pull(self._next_counts.get(call.base_key(), {}))
            traces = self._traces.setdefault(graph, {})
            try:
                concrete = traces.get(call.key())
                if concrete is None:
                    concrete = self._trace(graph, call)
                    traces[call.key()] = concrete
            except BaseException:
                call.release()
                raise
            return concrete, call

    def _flatten_args(self, args: tuple, kwargs: dict) -> tuple:
        try:
            bound = self._signature.bind(*args, **kwargs)
        except TypeError as e:
            raise TypeError(f"{self._name}() got arguments it does not take: {e}") from None
        bound.apply_defaults()
        if self.input_signature is None:
            structure = (tuple(bound.args), dict(bound.kwargs))
            return structure, flatten(structure)
        if bound.kwargs:
            raise TypeError(f"{self._name}() has an input_signature and takes no keyword-only "
                            f"arguments, got {sorted(bound.kwargs)}")
        sig = self._signature_structure
        if len(bound.args) != len(sig):
            raise ValueError(f"{self._name}() takes {len(sig)} argument(s) by its "
                             f"input_signature, got {len(bound.args)}")
        leaves = _flatten_up_to(sig, list(bound.args))
        for i, (leaf, spec) in enumerate(zip(leaves, self.input_signature)):
            if isinstance(leaf, ElementIterator) or not spec.is_compatible_with(leaf):
                raise ValueError(f"Argument {i} of {self._name}() ({leaf!r}) is not "
                                 f"compatible with {spec}")
        return (tuple(sig), {}), leaves

    def _trace(self, graph, call: _Call) -> ConcreteFunction:
        self._tracing_count += 1
        start, var_start = graph.version, len(graph.get_collection(GLOBAL_VARIABLES))
        signature = self.input_signature
        slots: list = []
        traced = []
        with graph.as_default(), graph.name_scope(self._name) as scope:
            for i, (leaf, kind) in enumerate(zip(call.leaves, call.kinds)):
                if kind == "tensor":
                    spec = signature[i] if signature is not None else None
                    dtype, shape = (spec.dtype, spec.shape) if spec else dtype_and_shape(leaf)
                    ph = placeholder(dtype, shape, name=(spec and spec.name) or f"arg{i}")
                    slots.append([ph])
                    traced.append(ph)
                elif kind == "iterator":
                    it = TracingIterator(call.elements[i], call.leaves[i], f"arg{i}")
                    slots.append(it.placeholders)
                    traced.append(it)
                else:
                    traced.append(leaf)
            args, kwargs = pack_as(call.structure, traced)
            with resource_variables_in(graph):  # TF2: a function's variables are resource ones
                outputs = self.python_function(*args, **kwargs)
        self._record_next_counts(call, traced)
        inputs = [ph for slot in slots for ph in slot]
        new_vars = graph.get_collection(GLOBAL_VARIABLES)[var_start:]
        return ConcreteFunction(graph, graph.get_operations()[start:], inputs, outputs,
                                new_vars, scope, keep=call.leaves)

    def _record_next_counts(self, call: _Call, traced: list) -> None:
        counts = {}
        for i, item in enumerate(traced):
            if isinstance(item, TracingIterator):
                counts[i] = item.calls
                extra = call.elements[i][item.calls:]
                call.leaves[i].push_back(extra)
                call.elements[i] = call.elements[i][:item.calls]
        self._next_counts[call.base_key()] = counts


def _flatten_up_to(shallow, value) -> list:
    """The parts of `value` where `shallow` (an input_signature) has TensorSpecs."""
    if isinstance(shallow, TensorSpec):
        return [value]
    if isinstance(shallow, dict) and isinstance(value, dict) and set(shallow) == set(value):
        return [x for k in shallow for x in _flatten_up_to(shallow[k], value[k])]
    if isinstance(shallow, (list, tuple)) and isinstance(value, (list, tuple)) and \
            len(shallow) == len(value):
        return [x for s, v in zip(shallow, value) for x in _flatten_up_to(s, v)]
    raise ValueError(f"{value!r} does not have the structure of the input_signature "
                     f"part {shallow!r}")


def _specs(signature) -> list:
    specs = flatten(list(signature))
    for spec in specs:
        if not isinstance(spec, TensorSpec):
            raise TypeError(f"input_signature must hold TensorSpecs, got {spec!r}")
    return specs


def function(func: Optional[Callable] = None, input_signature=None, autograph: bool = True,
             jit_compile=None, reduce_retracing: bool = False,
             experimental_relax_shapes=None, name: Optional[str] = None, **unused) -> Any:
    """tf.function: a Python function traced into graph ops once per input signature.

    Args:
      func: the function (omit it to use `function(...)` as a decorator).
      input_signature: TensorSpecs for every tensor argument: one trace for
        all calls, which must match it.
      autograph, jit_compile, reduce_retracing, experimental_relax_shapes:
        accepted for TF's signature; Python control flow runs at trace time.
    Returns: a `Function` (or a decorator making one).
    Raises:
      TypeError: `func` is not callable or `input_signature` holds no TensorSpecs.
    Example:
      >>> @function
      ... def double(x):
      ...     return x * 2.0
    """
    def wrap(fn):
        return Function(fn, input_signature, name)
    return wrap if func is None else wrap(func)
