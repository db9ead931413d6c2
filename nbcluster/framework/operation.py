"""Operation and Tensor: the symbolic values a Graph is built from."""
from __future__ import annotations

from typing import Any, Callable

from nbcluster.framework import default_session
from nbcluster.framework.dtypes import DType
from nbcluster.framework.node import Node, input_ref
from nbcluster.framework.tensor_shape import TensorShape

# Python operators on Tensors, filled by nbcluster.ops (a lower layer cannot
# import the op constructors, so they register themselves here).
_OPERATORS: dict[str, Callable] = {}


def register_operator(name: str, fn: Callable) -> None:
    _OPERATORS[name] = fn


class Tensor:
    """One output of an Operation: `op`, `value_index`, `dtype`, static `shape`."""

    __slots__ = ("_op", "_value_index", "_dtype", "_shape", "_consumers", "__weakref__")

    # numpy must defer to our reflected operators (ndarray + Tensor).
    __array_priority__ = 100

    def __init__(self, op: "Operation", value_index: int, dtype: DType, shape: TensorShape):
        self._op = op
        self._value_index = value_index
        self._dtype = dtype
        self._shape = shape
        self._consumers: list = []

    op = property(lambda self: self._op)
    value_index = property(lambda self: self._value_index)
    dtype = property(lambda self: self._dtype)
    shape = property(lambda self: self._shape)
    graph = property(lambda self: self._op.graph)
    device = property(lambda self: self._op.device)

    @property
    def name(self) -> str:
        return f"{self._op.name}:{self._value_index}"

    def get_shape(self) -> TensorShape:
        return self._shape

    def set_shape(self, shape) -> None:
        self._shape = self._shape.merge_with(shape)

    def consumers(self) -> list:
        return list(self._consumers)

    def eval(self, feed_dict=None, session=None):
        """Runs this tensor in `session` (default: the default session)."""
        return default_session.resolve(session, self.graph).run(self, feed_dict)

    def _ref(self) -> str:
        return input_ref(self._op.name, self._value_index)

    def __repr__(self) -> str:
        return f"<tf.Tensor '{self.name}' shape={self._shape} dtype={self._dtype.name}>"

    def __hash__(self) -> int:
        return id(self)

    def __eq__(self, other) -> bool:  # TF1: identity, so tensors key feed dicts
        return self is other

    def __ne__(self, other) -> bool:
        return self is not other

    def __bool__(self) -> bool:
        raise TypeError("Using a `tf.Tensor` as a Python `bool` is not allowed. "
                        "Use `if t is not None:` or run the tensor in a session.")

    def __iter__(self):
        raise TypeError("Tensor objects are only iterable when eager execution is enabled.")

    def __len__(self) -> int:
        raise TypeError(f"len is not well defined for symbolic Tensors ({self.name}).")


def _operator(name: str):
    def method(self, *args):
        try:
            fn = _OPERATORS[name]
        except KeyError:
            raise TypeError(f"operator {name} is not defined for Tensor") from None
        return fn(self, *args)

    method.__name__ = name
    return method


for _name in ("__add__", "__radd__", "__sub__", "__rsub__", "__mul__", "__rmul__",
              "__truediv__", "__rtruediv__", "__neg__", "__matmul__", "__rmatmul__",
              "__pow__", "__getitem__", "__lt__", "__le__", "__gt__", "__ge__",
              "__abs__", "__and__", "__rand__", "__or__", "__ror__", "__xor__", "__rxor__",
              "__invert__", "__floordiv__", "__rfloordiv__", "__mod__", "__rmod__"):
    setattr(Tensor, _name, _operator(_name))


class Operation:
    """A node of a Graph: type, inputs, attributes, device and its outputs."""

    def __init__(self, graph, node_id: int, name: str, op_type: str, inputs: list,
                 control_inputs: list, attrs: dict, device: str) -> None:
        self._graph = graph
        self._id = node_id
        self._name = name
        self._type = op_type
        self._inputs = tuple(inputs)
        self._control_inputs = list(control_inputs)
        self._attrs = attrs
        self._device = device
        self._outputs: tuple = ()
        for t in self._inputs:
            t._consumers.append(self)

    graph = property(lambda self: self._graph)
    name = property(lambda self: self._name)
    type = property(lambda self: self._type)
    inputs = property(lambda self: self._inputs)
    outputs = property(lambda self: self._outputs)
    control_inputs = property(lambda self: list(self._control_inputs))
    device = property(lambda self: self._device)

    def values(self) -> tuple:
        return self._outputs

    def get_attr(self, name: str) -> Any:
        try:
            return self._attrs[name]
        except KeyError:
            raise ValueError(f"Operation '{self._name}' has no attr named '{name}'.") from None

    def _set_attr(self, name: str, value: Any) -> None:
        self._attrs[name] = value

    def _update_input(self, index: int, tensor: "Tensor") -> None:
        """Rewires data input `index` to `tensor` (TF's name): how a loop's Merge gets
        its back edge from the NextIteration made after it (graph building and
        import_graph_def alike), and how a branch reads through its Switch."""
        old = self._inputs[index]
        if old is tensor:
            return
        old._consumers.remove(self)
        self._inputs = self._inputs[:index] + (tensor,) + self._inputs[index + 1:]
        tensor._consumers.append(self)

    def _set_device(self, device: str) -> None:
        self._device = device

    def colocation_groups(self) -> list:
        groups = [g for g in self._attrs.get("_class", []) if g.startswith("loc:@")]
        return groups or [f"loc:@{self._name}"]

    def to_node(self) -> Node:
        refs = [t._ref() for t in self._inputs]
        refs += ["^" + c.name for c in self._control_inputs]
        attrs = dict(self._attrs)
        attrs["_output_types"] = [t.dtype for t in self._outputs]
        return Node(self._name, self._type, tuple(refs), self._device, attrs)

    @property
    def node_def(self):
        from nbcluster.framework import graph_def

        return graph_def.node_to_proto(self.to_node())

    def run(self, feed_dict=None, session=None) -> None:
        default_session.resolve(session, self._graph).run(self, feed_dict)

    def __repr__(self) -> str:
        return f"<tf.Operation '{self._name}' type={self._type}>"



def as_tensor_or_op(value):
    """Unwraps objects that stand for a tensor (Variables) without converting."""
    convert = getattr(value, "_as_graph_element", None)
    return convert() if convert is not None else value
