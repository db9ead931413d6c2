"""Graph: the append-only set of Operations, and the scopes ops are built in.

Ops are only ever appended, so a session extends its remote copy of a graph
by sending the ops past the count it has already sent.
"""
from __future__ import annotations

import contextlib
import re
import threading
from typing import Optional

from nbcluster import errors
from nbcluster.framework.device_spec import DeviceSpec
from nbcluster.framework.op_registry import get_op_def
from nbcluster.framework.operation import Operation, Tensor

# How an input that is not yet a Tensor becomes one (a Const op): `constant.py`
# builds on this module (the default graph), so it hands its converter over when
# it loads (framework/__init__.py loads it) rather than this module importing it.
_converters: list = []


def register_tensor_converter(convert) -> None:
    """Sets `convert(value, graph=...) -> Tensor` for op inputs that are not Tensors."""
    if _converters:
        raise KeyError("a tensor converter is already registered")
    _converters.append(convert)


_VALID_NAME = re.compile(r"^[A-Za-z0-9.][A-Za-z0-9_.\\/>-]*$")


class _BuildScopes(threading.local):
    """The scopes new ops are built under.

    Per thread, as in TF: threads building into one graph (a coordinator
    tracing functions while the user builds ops) never see each other's
    name, device, colocation, control-dependency or container scopes.
    """

    def __init__(self) -> None:
        self.name_stack = ""
        self.device_stack: list = []
        self.colocation_stack: list = []
        self.control_stack: list = []
        self.container = ""


def _per_thread(field: str) -> property:
    return property(lambda self: getattr(self._scopes, field),
                    lambda self, value: setattr(self._scopes, field, value))


class Graph:
    """A TF1 dataflow graph; use `as_default()` to build ops into it.

    Ops and names are shared by every thread; scopes are each thread's own.
    """

    _name_stack = _per_thread("name_stack")
    _device_stack = _per_thread("device_stack")
    _colocation_stack = _per_thread("colocation_stack")
    _control_stack = _per_thread("control_stack")
    _container = _per_thread("container")

    def __init__(self) -> None:
        self._ops: list[Operation] = []
        self._by_name: dict[str, Operation] = {}
        self._names_in_use: dict[str, int] = {}
        self._scopes = _BuildScopes()
        self._finalized = False
        self._collections: dict[str, list] = {}
        self._lock = threading.RLock()  # create_op holds it while naming the op
        self.seed: Optional[int] = None

    # -- building ---------------------------------------------------------
    def create_op(self, op_type: str, inputs, attrs: Optional[dict] = None,
                  name: Optional[str] = None) -> Operation:
        """Adds an op; runs its shape function; returns the Operation."""
        if self._finalized:
            raise RuntimeError("Graph is finalized and cannot be modified.")
        op_def = get_op_def(op_type)
        inputs = [self._own(t) for t in inputs]
        attrs = dict(attrs or {})
        if op_def.stateful and "container" in attrs and not attrs["container"]:
            attrs["container"] = self._container
        with self._lock:
            full_name = self.unique_name(name or op_type)
            op = Operation(self, len(self._ops), full_name, op_type, inputs,
                           self._current_control_inputs(inputs), attrs, "")
            self._place(op)
            op._outputs = tuple(Tensor(op, i, dt, shape)
                                for i, (dt, shape) in enumerate(op_def.shape_fn(op)))
            self._ops.append(op)
            self._by_name[full_name] = op
            for _, built in self._control_stack:
                built.add(id(op))
        return op

    def _own(self, value) -> Tensor:
        t = _converters[0](value, graph=self)
        if t.graph is not self:
            raise ValueError(f"Tensor {t.name} must be from the same graph as the op "
                             f"being created.")
        return t

    def _current_control_inputs(self, inputs) -> list:
        # TF's rule: a frame is skipped when an input was built inside it (that
        # input already waits for the frame's ops), and data inputs are not
        # repeated as control inputs.
        input_ops = {id(t.op) for t in inputs}
        seen, out = set(), []
        for controls, built in self._control_stack:
            if input_ops & built:
                continue
            for op in controls:
                if id(op) not in seen and id(op) not in input_ops:
                    seen.add(id(op))
                    out.append(op)
        return out

    def _place(self, op: Operation) -> None:
        # TF's order: innermost scope first, each outer string merged under
        # what is already set; a device function sees the op as set so far.
        for entry in reversed(self._device_stack):
            if entry is None:
                break
            if isinstance(entry, DeviceSpec):
                current = DeviceSpec.from_string(op.device)
                op._set_device(entry.make_merged_spec(current).to_string())
            else:
                op._set_device(_device_string(entry(op)))
        if self._colocation_stack:
            groups = sorted({g for c in self._colocation_stack for g in c.colocation_groups()})
            op._set_attr("_class", groups)
            device = next((c.device for c in self._colocation_stack if c.device), "")
            if device:
                op._set_device(device)

    def unique_name(self, name: str, mark_as_used: bool = True) -> str:
        """`name` under the current name scope, suffixed _1, _2... if taken.

        A name ending in '/' is taken as the exact full name (TF's convention).
        """
        with self._lock:
            return self._unique_name(name, mark_as_used)

    def _unique_name(self, name: str, mark_as_used: bool) -> str:
        if name.endswith("/"):  # an exact name, made unique by the scope that yielded it
            name = name[:-1]
            if mark_as_used:
                self._names_in_use.setdefault(name.lower(), 1)
            return name
        if self._name_stack:
            name = self._name_stack + "/" + name
        key = name.lower()
        count = self._names_in_use.get(key, 0)
        if mark_as_used:
            self._names_in_use[key] = count + 1
        if count:
            base = name
            while name.lower() in self._names_in_use:
                name = f"{base}_{count}"
                count += 1
            if mark_as_used:
                self._names_in_use[name.lower()] = 1
        return name

    # -- scopes -----------------------------------------------------------
    @contextlib.contextmanager
    def as_default(self):
        _graph_stack().append(self)
        try:
            yield self
        finally:
            _graph_stack().pop()

    @contextlib.contextmanager
    def name_scope(self, name: Optional[str]):
        """Pushes a name scope; yields it with a trailing '/' (TF1 semantics)."""
        old = self._name_stack
        if not name:
            new = ""
        elif name.endswith("/"):
            new = name[:-1]
        else:
            if not _VALID_NAME.match(name):
                raise ValueError(f"'{name}' is not a valid scope name")
            new = self.unique_name(name)
        self._name_stack = new
        try:
            yield new + "/" if new else ""
        finally:
            self._name_stack = old

    def get_name_scope(self) -> str:
        return self._name_stack

    @contextlib.contextmanager
    def device(self, device_name_or_function):
        """Pins ops built inside to a device (string, DeviceSpec or function)."""
        entry = device_name_or_function
        if isinstance(entry, str):
            entry = DeviceSpec.from_string(entry)
        elif entry is not None and not isinstance(entry, DeviceSpec) and not callable(entry):
            raise errors.InvalidArgumentError(
                None, None, f"Invalid device specification: {device_name_or_function!r}")
        self._device_stack.append(entry)
        try:
            yield
        finally:
            self._device_stack.pop()

    @contextlib.contextmanager
    def colocate_with(self, op, ignore_existing: bool = False):
        if op is None and not ignore_existing:
            raise ValueError("Trying to reset colocation (op is None) but "
                             "ignore_existing is not True")
        old_stack, old_devices = self._colocation_stack, self._device_stack
        if ignore_existing:
            self._colocation_stack = []
        if op is not None:
            self._colocation_stack = self._colocation_stack + [_as_op(op)]
        self._device_stack = []  # colocation wins over enclosing device scopes
        try:
            yield
        finally:
            self._colocation_stack, self._device_stack = old_stack, old_devices

    @contextlib.contextmanager
    def control_dependencies(self, control_inputs):
        if control_inputs is None:
            old, self._control_stack = self._control_stack, []
            try:
                yield
            finally:
                self._control_stack = old
            return
        frame = ([_as_op(self.as_graph_element(c)) for c in control_inputs], set())
        self._control_stack.append(frame)
        try:
            yield
        finally:
            self._control_stack.pop()

    @contextlib.contextmanager
    def container(self, container_name: str):
        old, self._container = self._container, container_name
        try:
            yield container_name
        finally:
            self._container = old

    def finalize(self) -> None:
        self._finalized = True

    def _unsafe_unfinalize(self) -> None:
        """Makes a finalized graph editable again (TF's name: MonitoredSession undoes
        the finalize it did once it closes)."""
        self._finalized = False

    @property
    def finalized(self) -> bool:
        return self._finalized

    # -- lookup -----------------------------------------------------------
    def get_operations(self) -> list:
        return list(self._ops)

    def operations_since(self, version: int) -> list:
        """The ops added after the graph was at `version` (its `version` then), in
        the order they were made: what a session sends to extend its graph, what
        a control-flow branch built. An op is listed only once whole (create_op
        appends it last)."""
        return self._ops[version:]

    def get_operation_by_name(self, name: str) -> Operation:
        if not isinstance(name, str):
            raise TypeError(f"Operation names are strings (or similar), not {name!r}")
        if ":" in name:
            raise ValueError(f"Name '{name}' looks like a Tensor name; operation names "
                             "have no ':'")
        try:
            return self._by_name[name]
        except KeyError:
            raise KeyError(f"The name '{name}' refers to an Operation not in the graph.") \
                from None

    def get_tensor_by_name(self, name: str) -> Tensor:
        if not isinstance(name, str):
            raise TypeError(f"Tensor names are strings (or similar), not {name!r}")
        op_name, sep, index = name.rpartition(":")
        if not sep or not index.isdigit():
            raise ValueError(f"The name '{name}' looks a like an Operation name, not a "
                             "Tensor name; tensor names must be of the form "
                             "\"<op_name>:<output_index>\".")
        op = self._by_name.get(op_name)
        if op is None:
            raise KeyError(f"The name '{name}' refers to a Tensor which does not exist. "
                           f"The operation, '{op_name}', does not exist in the graph.")
        if int(index) >= len(op.outputs):
            raise KeyError(f"The name '{name}' refers to a Tensor which does not exist. "
                           f"The operation, '{op_name}', exists but only has "
                           f"{len(op.outputs)} outputs.")
        return op.outputs[int(index)]

    def as_graph_element(self, obj, allow_tensor: bool = True, allow_operation: bool = True):
        """Resolves a Tensor, Operation, Variable or name to an element of this graph."""
        unwrap = getattr(obj, "_as_graph_element", None)
        if unwrap is not None:
            obj = unwrap()
        if isinstance(obj, str):
            if ":" in obj and allow_tensor:
                return self.get_tensor_by_name(obj)
            if allow_operation:
                return self.get_operation_by_name(obj)
            return self.get_tensor_by_name(obj)
        if isinstance(obj, (Tensor, Operation)):
            if obj.graph is not self:
                raise ValueError(f"{obj!r} is not an element of this graph.")
            if isinstance(obj, Tensor) and not allow_tensor:
                raise ValueError(f"Can not convert a Tensor into an Operation: {obj.name}")
            if isinstance(obj, Operation) and not allow_operation:
                raise ValueError(f"Can not convert an Operation into a Tensor: {obj.name}")
            return obj
        raise TypeError(f"Can not convert a {type(obj).__name__} into a Tensor or "
                        f"Operation: {obj!r}")

    # -- collections ------------------------------------------------------
    def add_to_collection(self, name: str, value) -> None:
        self._collections.setdefault(name, []).append(value)

    def get_collection(self, name: str) -> list:
        return list(self._collections.get(name, []))

    # -- serialization ----------------------------------------------------
    @property
    def version(self) -> int:
        return len(self._ops)

    def as_graph_def(self, from_version: Optional[int] = None, add_shapes: bool = False):
        from nbcluster.framework import graph_def

        ops = self._ops[from_version or 0:]
        return graph_def.nodes_to_proto([op.to_node() for op in ops])


def _as_op(value) -> Operation:
    unwrap = getattr(value, "_as_graph_element", None)
    if unwrap is not None:
        value = unwrap()
    if isinstance(value, Tensor):
        return value.op
    if isinstance(value, Operation):
        return value
    raise TypeError(f"Expected an Operation or Tensor, got {value!r}")


def _device_string(value) -> str:
    if value is None:
        return ""
    if isinstance(value, DeviceSpec):
        return value.to_string()
    if isinstance(value, str):
        return value
    raise errors.InvalidArgumentError(None, None,
                                      f"A device function returned {value!r}, not a string")


# -- the default graph ------------------------------------------------------
_local = threading.local()
_global_default: list = [Graph()]


def _graph_stack() -> list:
    if not hasattr(_local, "stack"):
        _local.stack = []
    return _local.stack


def get_default_graph() -> Graph:
    stack = _graph_stack()
    return stack[-1] if stack else _global_default[0]


def reset_default_graph() -> None:
    if _graph_stack():
        raise AssertionError("Do not use tf.reset_default_graph() to clear nested graphs. "
                             "If you need a cleared graph, exit the nesting and create a "
                             "new graph.")
    _global_default[0] = Graph()


def graph_of(*values) -> Graph:
    """The graph of the first Tensor/Operation/Variable among `values`, else the default."""
    found = _find_graph(values)
    default = get_default_graph()
    if found is None:
        return default
    # Inside a function's graph (a tf.data map), ops on an enclosing graph's tensor
    # are built in the function, which captures that tensor (data/functions.py).
    encloses = getattr(default, "encloses", None)
    return default if encloses is not None and encloses(found) else found


def _find_graph(values) -> Optional[Graph]:
    for value in values:
        unwrap = getattr(value, "_as_graph_element", None)
        if unwrap is not None:
            value = unwrap()
        if isinstance(value, (Tensor, Operation)):
            return value.graph
        if isinstance(value, (list, tuple)):
            found = _find_graph(value)
            if found is not None:
                return found
    return None
