"""Variables (TF1 reference variables) and their initializers and updates."""
from __future__ import annotations

from typing import Optional

from nbcluster.framework import dtypes
from nbcluster.framework.constant import convert_to_tensor
from nbcluster.framework.graph import get_default_graph, graph_of
from nbcluster.framework.op_registry import get_op_def, register_op
from nbcluster.framework.operation import Tensor
from nbcluster.framework.tensor_shape import TensorShape, scalar
from nbcluster.ops.variable_creators import CreatedThroughScopes
from nbcluster.ops.variable_kinds import resource_kind, use_resource

GLOBAL_VARIABLES = "variables"
TRAINABLE_VARIABLES = "trainable_variables"
LOCAL_VARIABLES = "local_variables"  # per-task state (counters, metrics), never on a ps


@register_op("VariableV2", stateful=True, ref_outputs=(0,))
def _variable_shape(op):
    return [(op.get_attr("dtype"), op.get_attr("shape"))]


def _assign_shape(op):
    ref, value = op.inputs
    if op.get_attr("validate_shape") and not ref.shape.is_compatible_with(value.shape):
        raise ValueError(f"Shapes {ref.shape} and {value.shape} are incompatible for "
                         f"'{op.name}' (Assign requires shapes of both tensors to match)")
    if ref.dtype != value.dtype:
        raise TypeError(f"Cannot assign {value.dtype.name} to variable of type "
                        f"{ref.dtype.name} in '{op.name}'")
    shape = ref.shape if op.get_attr("validate_shape") else value.shape
    return [(ref.dtype, shape)]


register_op("Assign", stateful=True, ref_inputs=(0,), ref_outputs=(0,))(_assign_shape)


def _update_shape(op):
    ref, value = op.inputs
    if ref.dtype != value.dtype:
        raise TypeError(f"Update {op.type} of {ref.dtype.name} variable with "
                        f"{value.dtype.name} in '{op.name}'")
    if not ref.shape.is_compatible_with(value.shape):
        raise ValueError(f"Shapes {ref.shape} and {value.shape} are incompatible for "
                         f"'{op.name}'")
    return [(ref.dtype, ref.shape)]


register_op("AssignAdd", stateful=True, ref_inputs=(0,), ref_outputs=(0,))(_update_shape)
register_op("AssignSub", stateful=True, ref_inputs=(0,), ref_outputs=(0,))(_update_shape)


@register_op("CountUpTo", stateful=True, ref_inputs=(0,))
def _count_up_to_shape(op):
    ref = op.inputs[0]
    if ref.dtype not in (dtypes.int32, dtypes.int64):
        raise TypeError(f"Value passed to parameter 'ref' has DataType {ref.dtype.name} not "
                        f"in list of allowed values: int32, int64")
    if ref.shape.rank not in (None, 0):
        raise ValueError(f"Shape must be rank 0 but is rank {ref.shape.rank} for "
                         f"'{op.name}' (op: 'CountUpTo')")
    return [(ref.dtype, scalar())]


@register_op("IsVariableInitialized", ref_inputs=(0,))
def _is_initialized_shape(op):
    return [(dtypes.bool, scalar())]


class Variable(metaclass=CreatedThroughScopes):
    """A TF1 variable: state on its device's task, shared by every session there.

    Example:
      >>> v = Variable([1.0, 2.0], name="v")
      >>> v.name
      'v:0'

    With `use_resource=True`, or by default after `enable_resource_variables()`,
    it is a ResourceVariable (ops/resource_variable.py; the switch: ops/variable_kinds.py).
    """

    _is_resource = False

    def __new__(cls, *args, **kwargs):
        kind = cls
        if cls is Variable and use_resource(kwargs.get("use_resource")):
            kind = resource_kind()
        return super().__new__(kind)

    def __init__(self, initial_value=None, trainable: bool = True, collections=None,
                 validate_shape: bool = True, caching_device=None, name: Optional[str] = None,
                 dtype=None, expected_shape=None, shape=None, **unused) -> None:
        if initial_value is None:
            raise ValueError("initial_value must be specified.")
        graph = graph_of(initial_value) if not callable(initial_value) else get_default_graph()
        # As TF's init_scope: a variable never waits on the control block it is built in.
        with graph.as_default(), graph.control_dependencies(None), \
                graph.name_scope(name or "Variable") as scope:
            if callable(initial_value):
                with graph.name_scope("Initializer"):
                    value = convert_to_tensor(initial_value(), dtype=dtype,
                                              name="initial_value")
            else:
                value = convert_to_tensor(initial_value, dtype=dtype, name="initial_value")
            var_shape = value.shape if validate_shape else TensorShape(None)
            if shape is not None:
                var_shape = TensorShape(shape)
            self._variable = graph.create_op(
                "VariableV2", [], {"shape": var_shape, "dtype": value.dtype, "container": "",
                                   "shared_name": ""}, name=scope[:-1] + "/").outputs[0]
            with graph.colocate_with(self._variable.op):
                self._initializer = graph.create_op(
                    "Assign", [self._variable, value],
                    {"T": value.dtype, "validate_shape": validate_shape, "use_locking": True},
                    name="Assign")
                self._snapshot = graph.create_op("Identity", [self._variable],
                                                 {"T": value.dtype}, name="read").outputs[0]
        self._initial_value = value
        self._trainable = trainable
        self._add_to_collections(graph, collections, trainable)

    def _add_to_collections(self, graph, collections, trainable: bool) -> None:
        for key in collections or [GLOBAL_VARIABLES]:
            graph.add_to_collection(key, self)
        if trainable and TRAINABLE_VARIABLES not in (collections or []):
            graph.add_to_collection(TRAINABLE_VARIABLES, self)

    # -- what it stands for ------------------------------------------------
    def _as_graph_element(self) -> Tensor:
        return self._variable

    def _as_tensor(self) -> Tensor:
        return self._snapshot

    name = property(lambda self: self._variable.name)
    op = property(lambda self: self._variable.op)
    dtype = property(lambda self: self._variable.dtype)
    shape = property(lambda self: self._variable.shape)
    device = property(lambda self: self._variable.device)
    graph = property(lambda self: self._variable.graph)
    initializer = property(lambda self: self._initializer)
    initial_value = property(lambda self: self._initial_value)
    trainable = property(lambda self: self._trainable)

    def get_shape(self) -> TensorShape:
        return self.shape

    def value(self) -> Tensor:
        return self._snapshot

    def read_value(self) -> Tensor:
        with self.graph.colocate_with(self._variable.op):
            return self.graph.create_op("Identity", [self._variable], {"T": self.dtype},
                                        name="read").outputs[0]

    # -- updates -----------------------------------------------------------
    def _update(self, op_type: str, value, use_locking: bool, name, read_value: bool,
                validate_shape: bool = True):
        value = convert_to_tensor(value, dtype=self.dtype)
        attrs = {"T": self.dtype, "use_locking": bool(use_locking)}
        if op_type == "Assign":
            attrs["validate_shape"] = validate_shape
        with self.graph.colocate_with(self._variable.op):
            out = self.graph.create_op(op_type, [self._variable, value], attrs,
                                       name=name or op_type).outputs[0]
        return out if read_value else out.op

    def assign(self, value, use_locking: bool = False, name=None, read_value: bool = True):
        return self._update("Assign", value, use_locking, name, read_value)

    def assign_add(self, delta, use_locking: bool = False, name=None, read_value: bool = True):
        return self._update("AssignAdd", delta, use_locking, name, read_value)

    def assign_sub(self, delta, use_locking: bool = False, name=None, read_value: bool = True):
        return self._update("AssignSub", delta, use_locking, name, read_value)

    def count_up_to(self, limit: int):
        """Adds 1 and gives the value before, until `limit` (op CountUpTo); a run at
        the limit fails with OutOfRangeError."""
        return count_up_to(self, limit)

    def eval(self, session=None):
        return self._variable.eval(session=session)

    def load(self, value, session=None) -> None:
        from nbcluster.framework import default_session
        session = default_session.resolve(session, self.graph)
        session.run(self._initializer, {self._initializer.inputs[1]: value})

    def __repr__(self) -> str:
        return f"<tf.Variable '{self.name}' shape={self.shape} dtype={self.dtype.name}>"


def _delegate(name: str):
    def method(self, *args):
        return getattr(self._snapshot, name)(*args)
    method.__name__ = name
    return method


for _name in ("__add__", "__radd__", "__sub__", "__rsub__", "__mul__", "__rmul__",
              "__truediv__", "__rtruediv__", "__neg__", "__matmul__", "__rmatmul__",
              "__pow__", "__getitem__", "__lt__", "__le__", "__gt__", "__ge__", "__abs__",
              "__and__", "__rand__", "__or__", "__ror__", "__xor__", "__rxor__", "__invert__",
              "__floordiv__", "__rfloordiv__", "__mod__", "__rmod__"):
    setattr(Variable, _name, _delegate(_name))
Variable.__array_priority__ = 100


def _assign_fn(op_type: str):
    def fn(ref, value, use_locking=None, name=None, validate_shape=None):
        if isinstance(ref, Variable):
            return ref._update(op_type, value, bool(use_locking), name, True,
                               validate_shape is not False)
        graph = graph_of(ref)
        value = convert_to_tensor(value, dtype=ref.dtype, graph=graph)
        attrs = {"T": ref.dtype, "use_locking": bool(use_locking)}
        if op_type == "Assign":
            attrs["validate_shape"] = True if validate_shape is None else validate_shape
        with graph.colocate_with(ref.op):
            return graph.create_op(op_type, [ref, value], attrs, name=name or op_type).outputs[0]
    return fn


assign = _assign_fn("Assign")
assign_add = _assign_fn("AssignAdd")
assign_sub = _assign_fn("AssignSub")


def count_up_to(ref, limit: int, name: Optional[str] = None) -> Tensor:
    """The int32/int64 scalar variable `ref` counted up by one per run; its value
    before. At `limit` the run fails with OutOfRangeError, as TF's.

    Example:
      >>> count_up_to(Variable(0, name="n"), 3).op.type
      'CountUpTo'
    """
    if getattr(ref, "_is_resource", False):
        return ref.count_up_to(limit)
    var = ref._as_graph_element() if hasattr(ref, "_as_graph_element") else ref
    with var.graph.colocate_with(var.op):
        return var.graph.create_op("CountUpTo", [var], {"T": var.dtype, "limit": int(limit)},
                                   name=name or "CountUpTo").outputs[0]


def global_variables(scope: Optional[str] = None) -> list:
    return _filtered(get_default_graph().get_collection(GLOBAL_VARIABLES), scope)


def trainable_variables(scope: Optional[str] = None) -> list:
    return _filtered(get_default_graph().get_collection(TRAINABLE_VARIABLES), scope)


def local_variables(scope: Optional[str] = None) -> list:
    return _filtered(get_default_graph().get_collection(LOCAL_VARIABLES), scope)


def _filtered(variables: list, scope: Optional[str]) -> list:
    return [v for v in variables if not scope or v.op.name.startswith(scope)]


def variables_initializer(var_list, name: str = "init"):
    """One op that runs the initializers of `var_list`."""
    from nbcluster.ops.control import group, no_op
    var_list = list(var_list)
    if not var_list:
        return no_op(name=name)
    return group(*[v.initializer for v in var_list], name=name)


def global_variables_initializer():
    return variables_initializer(global_variables())


initialize_all_variables = global_variables_initializer


def local_variables_initializer():
    return variables_initializer(local_variables())


def is_variable_initialized(variable, name=None) -> Tensor:
    if getattr(variable, "_is_resource", False):
        return variable.is_initialized(name=name or "IsVariableInitialized")
    ref = variable._as_graph_element() if isinstance(variable, Variable) else variable
    graph = graph_of(ref)
    with graph.colocate_with(ref.op):
        return graph.create_op("IsVariableInitialized", [ref], {"dtype": ref.dtype},
                               name=name or "IsVariableInitialized").outputs[0]


# -- scatter updates ------------------------------------------------------------------
def _scatter_shape(op):
    ref, indices, updates = op.inputs
    if ref.value_index not in get_op_def(ref.op.type).ref_outputs:
        raise TypeError(f"'{op.type}' Op requires that input 'ref' be a mutable tensor "
                        f"(e.g.: a tf.Variable), got {ref.name} from a {ref.op.type}")
    if indices.dtype not in (dtypes.int32, dtypes.int64):
        raise TypeError(f"Value passed to parameter 'indices' has DataType "
                        f"{indices.dtype.name} not in list of allowed values: int32, int64")
    if ref.dtype != updates.dtype:
        raise TypeError(f"{op.type} of {ref.dtype.name} variable with {updates.dtype.name} "
                        f"updates in '{op.name}'")
    if ref.shape.rank == 0:
        raise ValueError(f"{op.type} '{op.name}': the variable must have rank >= 1, got a "
                         f"scalar")
    if updates.shape.rank != 0 and indices.shape.rank is not None \
            and ref.shape.rank is not None:
        expected = TensorShape(indices.shape.dims + ref.shape.dims[1:])
        if not updates.shape.is_compatible_with(expected):
            raise ValueError(f"Shapes {updates.shape} and {expected} are incompatible for "
                             f"'{op.name}': updates must have shape indices.shape + "
                             f"ref.shape[1:] or be a scalar")
    return [(ref.dtype, ref.shape)]


for _type in ("ScatterUpdate", "ScatterAdd", "ScatterSub"):
    register_op(_type, stateful=True, ref_inputs=(0,), ref_outputs=(0,))(_scatter_shape)


def _scatter_fn(op_type: str, locking_default: bool):
    def fn(ref, indices, updates, use_locking=locking_default, name=None) -> Tensor:
        if getattr(ref, "_is_resource", False):  # its Resource* twin, then a read
            return ref._read_after(ref._scatter_rows("Resource" + op_type, indices,
                                                     updates, name))
        ref = ref._as_graph_element() if isinstance(ref, Variable) else ref
        graph = graph_of(ref, indices, updates)
        with graph.as_default(), graph.colocate_with(ref.op), \
                graph.name_scope(name or op_type) as scope:
            idx = convert_to_tensor(indices, name="indices", graph=graph)
            values = convert_to_tensor(updates, dtype=ref.dtype, name="updates", graph=graph)
            attrs = {"T": ref.dtype, "Tindices": idx.dtype, "use_locking": bool(use_locking)}
            return graph.create_op(op_type, [ref, idx, values], attrs, name=scope).outputs[0]
    fn.__name__ = op_type
    fn.__doc__ = (f"Writes `updates` into the rows of variable `ref` named by `indices` "
                  f"(op {op_type}).\n\n"
                  f"Args: ref: a Variable (or its ref tensor) of rank >= 1. indices: int32/"
                  f"int64, each in [0, ref.shape[0]).\n  updates: indices.shape + "
                  f"ref.shape[1:], or a scalar.\n"
                  f"Returns: the variable's ref, updated when run.\n"
                  f"Raises: InvalidArgumentError at run time for an index out of range, "
                  f"naming it.\n")
    return fn


scatter_update = _scatter_fn("ScatterUpdate", True)
scatter_add = _scatter_fn("ScatterAdd", False)
scatter_sub = _scatter_fn("ScatterSub", False)


def _scatter_method(fn, name: str):
    def method(self, sparse_delta, use_locking: bool = False, name=None):
        if not hasattr(sparse_delta, "indices") or not hasattr(sparse_delta, "values"):
            raise TypeError(f"sparse_delta is not IndexedSlices: {sparse_delta!r}")
        return fn(self, sparse_delta.indices, sparse_delta.values, use_locking=use_locking,
                  name=name)
    method.__name__ = name
    method.__doc__ = (f"{fn.__name__} of an IndexedSlices' rows (values at indices) into "
                      f"this variable.\n\nRaises: TypeError: sparse_delta is not IndexedSlices.")
    return method


# TF1's RefVariable methods: the rows of an IndexedSlices (a sparse gradient, say)
Variable.scatter_update = _scatter_method(scatter_update, "scatter_update")
Variable.scatter_add = _scatter_method(scatter_add, "scatter_add")
Variable.scatter_sub = _scatter_method(scatter_sub, "scatter_sub")
