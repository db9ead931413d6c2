"""ShardedVariable: one variable of ParameterServerStrategy as shards on the ps tasks.

Rule: a shard is an ordinary Variable holding a contiguous block of rows (axis
0; the first `rows % n` shards one row larger, as TF's "div" split), placed
round robin over the ps tasks like any variable of the strategy. Reading the
whole concatenates the shards where it is read (inside a traced function: on
the worker), `embedding_lookup` gathers from each shard next to it, and
optimizers update the shards, which are what `trainable_variables` lists.
"""
from __future__ import annotations

from typing import Callable, Optional

from nbcluster.framework.constant import convert_to_tensor
from nbcluster.framework.tensor_shape import TensorShape
from nbcluster.ops.array import concat
from nbcluster.ops.control import group
from nbcluster.ops.partitioned_variables import PartitionedVariable, shard_sizes
from nbcluster.ops.slicing import slice as slice_


class ShardedVariable(PartitionedVariable):
    """What `Variable(...)` gives under a ParameterServerStrategy with a partitioner.

    Args:
      variables: the shards, in row order; they must agree on dtype and on
        every dimension but the first.
      name: the whole variable's name.
    Raises:
      ValueError: no shards, or shards that do not fit together.
    Example:
      >>> with strategy.scope():                      # doctest: +SKIP
      ...     table = Variable(np.zeros([10, 4]))      # 2 shards: 5 rows each
      >>> rows = embedding_lookup(table, ids)          # doctest: +SKIP
    """

    # TF2's embedding_lookup on a ShardedVariable: shards hold contiguous rows
    _lookup_partition_strategy = "div"

    def __init__(self, variables: list, name: str = "ShardedVariable") -> None:
        variables = list(variables)
        if not variables:
            raise ValueError("A ShardedVariable needs at least one shard")
        first = variables[0]
        for v in variables[1:]:
            if v.dtype != first.dtype or v.shape[1:].as_list() != first.shape[1:].as_list():
                raise ValueError(f"Shards of {name} must have one dtype and the same shape "
                                 f"past axis 0: {first.name} is {first.dtype.name} "
                                 f"{first.shape}, {v.name} is {v.dtype.name} {v.shape}")
        rows = sum(v.shape.as_list()[0] for v in variables)
        shape = TensorShape([rows] + first.shape[1:].as_list())
        super().__init__(name, shape, first.dtype, variables, 0)

    variables = property(lambda self: tuple(self._variables))
    graph = property(lambda self: self._variables[0].graph)
    trainable = property(lambda self: self._variables[0].trainable)

    @property
    def initializer(self):
        return group(*[v.initializer for v in self._variables])

    def value(self):
        return self.as_tensor()

    def read_value(self):
        return self.as_tensor()

    # a fetchable graph element, so coordinator.fetch(v) and Session.run(v) read it whole
    _as_graph_element = PartitionedVariable.as_tensor

    def _update(self, method: str, value, use_locking: bool, name: Optional[str],
                read_value: bool):
        value = convert_to_tensor(value, dtype=self.dtype)
        updates, start = [], 0
        tail = [-1] * (self._shape.rank - 1)
        for v in self._variables:
            rows = v.shape.as_list()[0]
            part = slice_(value, [start] + [0] * len(tail), [rows] + tail)
            updates.append(getattr(v, method)(part, use_locking=use_locking))
            start += rows
        if not read_value:
            return group(*[u.op for u in updates], name=name)
        return concat(updates, 0, name=name or "concat")

    def assign(self, value, use_locking: bool = False, name=None, read_value: bool = True):
        """Assigns each shard its rows of `value` (the whole variable's shape)."""
        return self._update("assign", value, use_locking, name, read_value)

    def assign_add(self, delta, use_locking: bool = False, name=None, read_value: bool = True):
        return self._update("assign_add", delta, use_locking, name, read_value)

    def assign_sub(self, delta, use_locking: bool = False, name=None, read_value: bool = True):
        return self._update("assign_sub", delta, use_locking, name, read_value)

    def __repr__(self) -> str:
        return (f"<ShardedVariable {self.name!r} shape={self._shape} dtype="
                f"{self._dtype.name} {len(self._variables)} shards>")


for _name in ("__add__", "__radd__", "__sub__", "__rsub__", "__mul__", "__rmul__",
              "__truediv__", "__rtruediv__", "__neg__", "__matmul__", "__rmatmul__",
              "__getitem__"):
    setattr(ShardedVariable, _name,
            (lambda n: lambda self, *args: getattr(self.as_tensor(), n)(*args))(_name))


def create_sharded(next_creator: Callable, partitioner: Callable, kwargs: dict):
    """`Variable(**kwargs)` as TF2's ParameterServerStrategy makes it with a
    `partitioner`: a ShardedVariable when the partitioner cuts axis 0 in two or
    more, else one variable.

    Raises:
      ValueError: the partitioner cuts another axis or returns no shards.
    """
    initial = kwargs.get("initial_value")
    dtype, shape = kwargs.get("dtype"), kwargs.get("shape")
    from_fn = callable(initial) and shape is not None and dtype is not None
    if callable(initial) and not from_fn:
        initial = initial()
    if not from_fn:
        initial = convert_to_tensor(initial, dtype=dtype)
        dtype, shape = initial.dtype, initial.shape
    shape = TensorShape(shape)
    if not from_fn:
        kwargs = dict(kwargs, initial_value=initial)
    if shape.rank == 0:  # a scalar is never cut
        return next_creator(**kwargs)
    parts = partitioner(shape=shape, dtype=dtype)
    if not parts or parts[0] == 0 or any(p != 1 for p in parts[1:]):
        raise ValueError(f"variable_partitioner must return a list/tuple whose elements are "
                         f"1 besides the first element (non-zero), got: {parts!r}")
    if parts[0] == 1:
        return next_creator(**kwargs)
    dims = shape.as_list()
    sizes = shard_sizes(dims[0], min(parts[0], dims[0]))
    name = kwargs.get("name")
    shards, start = [], 0
    for i, rows in enumerate(sizes):
        value = _shard_value(initial, from_fn, start, rows, dims)
        shard_kwargs = dict(kwargs, initial_value=value, shape=[rows] + dims[1:],
                            dtype=dtype)
        if name is not None:
            shard_kwargs["name"] = f"{name}/part_{i}"
        shards.append(next_creator(**shard_kwargs))
        start += rows
    return ShardedVariable(shards, name=name or shards[0].op.name)


def _shard_value(initial, from_fn: bool, start: int, rows: int, dims: list):
    if not from_fn:
        return slice_(initial, [start] + [0] * (len(dims) - 1), [rows] + dims[1:])

    def value():  # an initializer function: its whole value, then this shard's rows
        whole = convert_to_tensor(initial())
        return slice_(whole, [start] + [0] * (len(dims) - 1), [rows] + dims[1:])
    return value


__all__ = ["ShardedVariable", "create_sharded"]
