"""`tf.variable_scope` and `tf.get_variable`: variables named by scope, created once, shared on reuse.

Rule: a graph's variable scopes and its store of variables made by
`get_variable` live in the graph (in a collection, as TF keeps them), so they
follow `with graph.as_default()`. A variable's name is its variable scope's
name plus its own, whatever name scope is open: that is what makes two
calls in the same scope find the same variable.
"""
from __future__ import annotations

import contextlib
from typing import Optional

from nbcluster.framework import dtypes
from nbcluster.framework.graph import get_default_graph
from nbcluster.framework.operation import Tensor
from nbcluster.framework.tensor_shape import TensorShape
from nbcluster.ops.init_ops import GlorotUniform, Zeros, as_initializer
from nbcluster.ops.partitioned_variables import create_partitioned
from nbcluster.ops.state import Variable


class _ReuseMode:
    def __repr__(self) -> str:
        return "tf.AUTO_REUSE"


AUTO_REUSE = _ReuseMode()  # reuse a variable that exists, create one that does not
_STATE_KEY = "__variable_scope_state"


class VariableScope:
    """One variable scope: its name and what it passes to `get_variable`.

    `reuse` is False, True or AUTO_REUSE; `initializer`, `dtype` and
    `partitioner` are the defaults of variables created in it.
    """

    def __init__(self, reuse, name: str = "", initializer=None, dtype=dtypes.float32,
                 name_scope: str = "", partitioner=None, use_resource=None) -> None:
        self.name, self.reuse, self.initializer = name, reuse, initializer
        self.partitioner = partitioner
        self.use_resource = use_resource  # None: the process default (variable_kinds.py)
        self.dtype = dtypes.as_dtype(dtype)
        self.original_name_scope = name_scope

    def reuse_variables(self) -> None:
        self.reuse = True

    def set_initializer(self, initializer) -> None:
        self.initializer = initializer

    def set_use_resource(self, use_resource) -> None:
        self.use_resource = use_resource

    def get_variable(self, name: str, **kwargs) -> Variable:
        with _entered(self):
            return get_variable(name, **kwargs)

    def __repr__(self) -> str:
        return f"<VariableScope {self.name!r} reuse={self.reuse!r}>"


class _State:
    """A graph's scope stack, its variables by full name, and the scope names taken."""

    def __init__(self) -> None:
        self.stack = [VariableScope(False)]
        self.variables: dict = {}
        self.used: dict = {}

    def unique(self, name: str) -> str:
        count = self.used.get(name, 0)
        self.used[name] = count + 1
        return name if count == 0 else f"{name}_{count}"


def _state(graph=None) -> _State:
    graph = graph or get_default_graph()
    found = graph.get_collection(_STATE_KEY)
    if found:
        return found[0]
    state = _State()
    graph.add_to_collection(_STATE_KEY, state)
    return state


def get_variable_scope() -> VariableScope:
    """The innermost variable scope of the default graph."""
    return _state().stack[-1]


@contextlib.contextmanager
def _entered(scope: VariableScope):
    stack = _state().stack
    stack.append(scope)
    try:
        yield scope
    finally:
        stack.pop()


@contextlib.contextmanager
def variable_scope(name_or_scope=None, default_name: Optional[str] = None, values=None,
                   initializer=None, regularizer=None, caching_device=None, partitioner=None,
                   custom_getter=None, reuse=None, dtype=None, use_resource=None,
                   constraint=None, auxiliary_name_scope: bool = True):
    """Opens a variable scope (and a name scope of the same name) for `get_variable`.

    Args:
      name_or_scope: a name, or a VariableScope to re-enter exactly.
      default_name: used, made unique (`name_1`, ...), when `name_or_scope` is None.
      initializer, dtype, partitioner: defaults for the variables created inside.
      reuse: True (only existing variables), AUTO_REUSE, or None to inherit;
        a scope inside a reusing scope reuses too.
      use_resource: True makes the variables created inside ResourceVariables,
        False ref variables; None inherits (at the top: the process default).
    Yields:
      The VariableScope.
    Raises:
      ValueError: neither a name nor a default name, or a bad `reuse`.
      NotImplementedError: a custom getter (not supported).
    """
    del values, regularizer, caching_device, constraint
    if custom_getter is not None:
        raise NotImplementedError(f"variable_scope does not support custom getters (got "
                                  f"custom_getter={custom_getter!r})")
    if reuse not in (None, True, False, AUTO_REUSE):
        raise ValueError(f"reuse must be True, False, None or tf.AUTO_REUSE, not {reuse!r}")
    graph = get_default_graph()
    state = _state(graph)
    parent = state.stack[-1]
    if isinstance(name_or_scope, VariableScope):
        full, name_scope = name_or_scope.name, name_or_scope.original_name_scope
        base = name_or_scope
    elif name_or_scope is None and default_name is None:
        raise ValueError("variable_scope needs a name_or_scope or a default_name")
    elif name_or_scope is not None and not isinstance(name_or_scope, str):
        raise TypeError(f"name_or_scope must be a string or a VariableScope, not "
                        f"{name_or_scope!r}")
    else:
        own = name_or_scope if name_or_scope is not None else default_name
        full = f"{parent.name}/{own}" if parent.name else own
        if name_or_scope is None:
            full = state.unique(full)
        else:
            state.used[full] = state.used.get(full, 0) + 1
        name_scope, base = None, parent
    reuse = reuse or base.reuse or False  # reusing is inherited, as in TF
    scope = VariableScope(reuse, full, initializer if initializer is not None
                          else base.initializer, dtype if dtype is not None else base.dtype,
                          partitioner=partitioner if partitioner is not None
                          else base.partitioner,
                          use_resource=use_resource if use_resource is not None
                          else base.use_resource)
    if not auxiliary_name_scope:
        scope.original_name_scope = name_scope or parent.original_name_scope
        with _entered(scope):
            yield scope
        return
    opened = name_scope if name_scope else \
        (name_or_scope if name_or_scope is not None else full.rsplit("/", 1)[-1])
    with graph.name_scope(opened) as entered, _entered(scope):
        scope.original_name_scope = entered
        yield scope


def get_variable(name: str, shape=None, dtype=None, initializer=None, regularizer=None,
                 trainable: Optional[bool] = None, collections=None, caching_device=None,
                 partitioner=None, validate_shape: bool = True, use_resource=None,
                 custom_getter=None, constraint=None, **unused) -> Variable:
    """The variable `<scope>/<name>`: created if new, the same object if shared.

    Args:
      shape: the variable's shape (needed unless `initializer` is a value).
      dtype: default: the scope's (float32).
      initializer: an initializer object or class, or a Tensor or value
        (then the variable has its dtype); default: the scope's, else Glorot
        uniform for floats and zeros for integers and bools.
      use_resource: a ResourceVariable (True) or a ref one (False); default:
        the scope's, else the process default.
    Returns:
      A Variable.
    Raises:
      ValueError: the variable exists and the scope does not reuse; it does
        not exist and the scope reuses (True); a shared variable's shape or
        dtype differs; a value initializer with a shape; no shape to build from.
      NotImplementedError: a partitioner or custom getter.
    """
    if custom_getter is not None:
        raise NotImplementedError(f"get_variable does not support custom getters (variable "
                                  f"{name!r})")
    if not isinstance(name, str) or not name:
        raise ValueError(f"A variable needs a non-empty string name, not {name!r}")
    graph = get_default_graph()
    state = _state(graph)
    scope = state.stack[-1]
    full = f"{scope.name}/{name}" if scope.name else name
    dtype = dtypes.as_dtype(dtype) if dtype is not None else scope.dtype
    found = state.variables.get(full)
    if found is not None:
        return _shared(found, full, scope, shape, dtype)
    if scope.reuse is True:
        raise ValueError(f"Variable {full} does not exist, or was not created with "
                         f"tf.get_variable(). Did you mean to set reuse=tf.AUTO_REUSE in "
                         f"VarScope?")
    initializer = as_initializer(
        initializer if initializer is not None else scope.initializer, dtype)
    partitioner = partitioner if partitioner is not None else scope.partitioner
    use_resource = use_resource if use_resource is not None else scope.use_resource
    if partitioner is not None:
        variable = _partitioned(full, shape, dtype, initializer, partitioner,
                                True if trainable is None else trainable, collections,
                                use_resource)
        state.variables[full] = variable
        return variable
    initial = _initial_value(full, shape, dtype, initializer)
    try:
        graph.get_operation_by_name(full)
    except KeyError:
        pass
    else:
        raise ValueError(f"Variable {full}: the graph already has an op of that name (a "
                         f"tf.Variable?); get_variable names must be free")
    from_value = not callable(initial)  # then, as TF, the value's own dtype
    variable = Variable(initial, trainable=True if trainable is None else trainable,
                        collections=collections, validate_shape=validate_shape,
                        name=full + "/", dtype=None if from_value else dtype, shape=shape,
                        use_resource=use_resource)
    state.variables[full] = variable
    return variable


def _partitioned(full: str, shape, dtype, initializer, partitioner, trainable: bool,
                 collections, use_resource=None):
    """The shards of a new partitioned variable `full` (partitioned_variables.py)."""
    if shape is None or not TensorShape(shape).is_fully_defined():
        raise ValueError(f"A partitioned variable ({full}) needs a fully defined shape, not "
                         f"{TensorShape(shape)}")
    initializer = initializer if initializer is not None else _default_initializer(full, dtype)
    if not callable(initializer) or isinstance(initializer, Tensor):
        raise ValueError(f"A partitioned variable ({full}) needs an initializer function "
                         f"(each shard initializes its own part), not {initializer!r}")
    shape = TensorShape(shape)
    partitions = partitioner(shape=shape, dtype=dtype)

    def make(name: str, shard_shape: list, info):
        return Variable(lambda: initializer(shard_shape, dtype=dtype, partition_info=info),
                        trainable=trainable, collections=collections, name=name + "/",
                        dtype=dtype, shape=shard_shape, use_resource=use_resource)
    return create_partitioned(full, shape, dtype, partitions, make)


def _default_initializer(full: str, dtype):
    if dtype.is_floating:
        return GlorotUniform()
    if dtype.is_integer or dtype.is_bool:
        return Zeros()
    raise ValueError(f"An initializer for variable {full} of type {dtype.name} is required")


def _shared(found: Variable, full: str, scope: VariableScope, shape, dtype) -> Variable:
    if scope.reuse is False:
        raise ValueError(f"Variable {full} already exists, disallowed. Did you mean to set "
                         f"reuse=True or reuse=tf.AUTO_REUSE in VarScope?")
    if shape is not None and not TensorShape(shape).is_compatible_with(found.shape):
        raise ValueError(f"Trying to share variable {full}, but specified shape "
                         f"{TensorShape(shape)} and found shape {found.shape}.")
    if dtype != found.dtype.base_dtype:
        raise ValueError(f"Trying to share variable {full}, but specified dtype {dtype.name} "
                         f"and found dtype {found.dtype.base_dtype.name}.")
    return found


def _initial_value(full: str, shape, dtype, initializer):
    """A Tensor, or a callable building one (run inside the variable's scope)."""
    if initializer is None:
        initializer = _default_initializer(full, dtype)
    if callable(initializer) and not isinstance(initializer, Tensor):
        if shape is None or not TensorShape(shape).is_fully_defined():
            raise ValueError(f"Shape of a new variable ({full}) must be fully defined, but "
                             f"instead was {TensorShape(shape)}.")
        return lambda: initializer(TensorShape(shape).as_list(), dtype=dtype)
    if shape is not None:
        raise ValueError(f"If initializer is a constant, do not specify shape (variable "
                         f"{full}).")
    return initializer

