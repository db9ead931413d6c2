"""ResourceVariable: a variable reached through a DT_RESOURCE handle (VarHandleOp),
read by ReadVariableOp and written by AssignVariableOp and friends, as TF2 makes
them. The switch that makes `tf.Variable` / `get_variable` build them is
`ops/variable_kinds.py`, which this module registers the class into.

Rule: a ResourceVariable is a Variable (every isinstance check, Saver,
optimizers, device setters take it) whose op is its VarHandleOp, so it is
placed, named and checkpointed as a ref variable of the same name (the
checkpoint key is the op name; a checkpoint of ref variables restores into
resource ones and back). Unlike a ref variable, every use as a tensor reads
afresh (a ReadVariableOp made there, under the control dependencies open
there), so a read after an assign in program order sees the assign.
"""
from __future__ import annotations

from typing import Optional

from nbcluster.framework.constant import convert_to_tensor
from nbcluster.framework.graph import get_default_graph, graph_of
from nbcluster.framework.operation import Tensor
from nbcluster.framework.tensor_shape import TensorShape
from nbcluster.ops import resource_variables as rv
from nbcluster.ops.state import Variable
from nbcluster.ops.variable_kinds import register_resource_kind

# a ref variable's update op -> its resource twin
_RESOURCE_TWINS = {"Assign": "AssignVariableOp", "AssignAdd": "AssignAddVariableOp",
                   "AssignSub": "AssignSubVariableOp"}


@register_resource_kind
class ResourceVariable(Variable):
    """A variable whose state is reached through a resource handle (TF2's kind).

    Args: as Variable's; `use_resource` is accepted and ignored.
    Example:
      >>> v = ResourceVariable([1.0, 2.0], name="v")
      >>> v.op.type, v.handle.dtype.name
      ('VarHandleOp', 'resource')
    """

    _is_resource = True

    def __init__(self, initial_value=None, trainable: bool = True, collections=None,
                 validate_shape: bool = True, caching_device=None, name: Optional[str] = None,
                 dtype=None, expected_shape=None, shape=None, use_resource=None,
                 **unused) -> None:
        if initial_value is None:
            raise ValueError("initial_value must be specified.")
        graph = graph_of(initial_value) if not callable(initial_value) else get_default_graph()
        with graph.as_default(), graph.control_dependencies(None), \
                graph.name_scope(name or "Variable") as scope:
            handle_name = scope[:-1]
            with graph.name_scope("Initializer"):
                value = convert_to_tensor(initial_value() if callable(initial_value)
                                          else initial_value, dtype=dtype,
                                          name="initial_value")
            var_shape = value.shape if validate_shape else TensorShape(None)
            if shape is not None:
                var_shape = TensorShape(shape)
            self._handle = rv.var_handle_op(value.dtype, var_shape, shared_name=handle_name,
                                            name=handle_name + "/", graph=graph)
            self._dtype, self._shape = value.dtype, var_shape
            with graph.name_scope("IsInitialized"):
                self._is_initialized_op = rv.var_is_initialized_op(self._handle)
            with graph.name_scope("Assign") as assign_scope:
                self._initializer = rv.assign_variable_op(self._handle, value,
                                                          name=assign_scope)
            with graph.name_scope("Read"):
                self._snapshot = rv.read_variable_op(self._handle, value.dtype)
        self._variable = self._handle
        self._initial_value = value
        self._trainable = trainable
        self._add_to_collections(graph, collections, trainable)

    # -- what it stands for ------------------------------------------------
    def _as_graph_element(self) -> Tensor:
        return self._snapshot  # what sess.run(v) fetches: the value

    def _as_tensor(self) -> Tensor:
        return self._fresh_read()

    handle = property(lambda self: self._handle)
    dtype = property(lambda self: self._dtype)
    shape = property(lambda self: self._shape)

    def value(self) -> Tensor:
        return self._snapshot

    def read_value(self) -> Tensor:
        with self.graph.name_scope("Read"):
            return self._fresh_read()

    def _fresh_read(self) -> Tensor:
        return rv.read_variable_op(self._handle, self._dtype)

    def sparse_read(self, indices, name: Optional[str] = None) -> Tensor:
        """The rows `indices` of the variable (op ResourceGather); its gradient
        is an IndexedSlices of those rows."""
        graph = self.graph
        with graph.as_default(), graph.name_scope("Gather" if name is None else name):
            idx = convert_to_tensor(indices, name="indices", graph=graph)
            return rv.resource_gather(self._handle, idx, self._dtype)

    def is_initialized(self, name: Optional[str] = None) -> Tensor:
        return rv.var_is_initialized_op(self._handle, name=name)

    def eval(self, session=None):
        return self._snapshot.eval(session=session)

    # -- updates -----------------------------------------------------------
    def _update(self, op_type: str, value, use_locking: bool, name, read_value: bool,
                validate_shape: bool = True):
        graph = self.graph
        with graph.as_default():
            value = convert_to_tensor(value, dtype=self._dtype, graph=graph)
            if not self._shape.is_compatible_with(value.shape):
                raise ValueError(f"Cannot assign value to variable '{self.op.name}': Shape "
                                 f"mismatch. The variable shape {self._shape}, and the "
                                 f"assigned value shape {value.shape} are incompatible.")
            resource_type = _RESOURCE_TWINS[op_type]
            op = rv.assign_variable_op(self._handle, value, name=name or resource_type,
                                       op_type=resource_type)
            return self._read_after(op) if read_value else op

    def _read_after(self, op) -> Tensor:
        with self.graph.control_dependencies([op]):
            return self._fresh_read()

    def _scatter(self, op_type: str, sparse_delta, name):
        if not hasattr(sparse_delta, "indices") or not hasattr(sparse_delta, "values"):
            raise TypeError(f"sparse_delta is not IndexedSlices: {sparse_delta!r}")
        return self._read_after(self._scatter_rows(op_type, sparse_delta.indices,
                                                   sparse_delta.values, name))

    def _scatter_rows(self, op_type: str, indices, updates, name):
        graph = self.graph
        with graph.as_default(), graph.name_scope(name or op_type):
            idx = convert_to_tensor(indices, name="indices", graph=graph)
            values = convert_to_tensor(updates, dtype=self._dtype, name="updates",
                                       graph=graph)
            return rv.resource_scatter(op_type, self._handle, idx, values)

    def scatter_update(self, sparse_delta, use_locking: bool = False, name=None):
        return self._scatter("ResourceScatterUpdate", sparse_delta, name)

    def scatter_add(self, sparse_delta, use_locking: bool = False, name=None):
        return self._scatter("ResourceScatterAdd", sparse_delta, name)

    def scatter_sub(self, sparse_delta, use_locking: bool = False, name=None):
        return self._scatter("ResourceScatterSub", sparse_delta, name)

    def scatter_mul(self, sparse_delta, use_locking: bool = False, name=None):
        return self._scatter("ResourceScatterMul", sparse_delta, name)

    def scatter_div(self, sparse_delta, use_locking: bool = False, name=None):
        return self._scatter("ResourceScatterDiv", sparse_delta, name)

    def scatter_min(self, sparse_delta, use_locking: bool = False, name=None):
        return self._scatter("ResourceScatterMin", sparse_delta, name)

    def scatter_max(self, sparse_delta, use_locking: bool = False, name=None):
        return self._scatter("ResourceScatterMax", sparse_delta, name)

    def count_up_to(self, limit: int):
        """Adds 1 and gives the value before, until `limit` (op ResourceCountUpTo)."""
        with self.graph.colocate_with(self._handle.op):
            return self.graph.create_op("ResourceCountUpTo", [self._handle],
                                        {"T": self._dtype, "limit": int(limit)},
                                        name="ResourceCountUpTo").outputs[0]


def _fresh(name: str):
    def method(self, *args):
        return getattr(self._fresh_read(), name)(*args)
    method.__name__ = name
    return method


for _name in ("__add__", "__radd__", "__sub__", "__rsub__", "__mul__", "__rmul__",
              "__truediv__", "__rtruediv__", "__neg__", "__matmul__", "__rmatmul__",
              "__pow__", "__getitem__", "__lt__", "__le__", "__gt__", "__ge__", "__abs__",
              "__and__", "__rand__", "__or__", "__ror__", "__xor__", "__rxor__", "__invert__",
              "__floordiv__", "__rfloordiv__", "__mod__", "__rmod__"):
    setattr(ResourceVariable, _name, _fresh(_name))
