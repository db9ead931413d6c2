"""Partitioned variables: one large variable as shards along an axis (`get_variable(partitioner=)`).

Rule: each shard is an ordinary Variable named "<name>/part_<i>", built in the
caller's device scope, so `replica_device_setter` spreads the shards over the
ps tasks (an embedding table too big for one ps lives on several). Shard
sizes follow TF: the axis is cut into equal parts, the first `size % n`
shards one row larger. Reading the whole variable concatenates the shards.
"""
from __future__ import annotations

import math
from typing import Callable, NamedTuple, Optional

from nbcluster.framework import dtypes
from nbcluster.framework.tensor_shape import TensorShape
from nbcluster.ops.array import concat


class PartitionInfo(NamedTuple):
    """What an initializer learns about the shard it initializes (TF's _PartitionInfo)."""
    full_shape: list
    var_offset: list


def fixed_size_partitioner(num_shards: int, axis: int = 0) -> Callable:
    """A partitioner cutting `axis` into `num_shards` shards (fewer if it is shorter).

    Raises:
      ValueError: num_shards < 1 or axis < 0 (named).
    """
    if isinstance(num_shards, bool) or not isinstance(num_shards, int) or num_shards < 1:
        raise ValueError(f"num_shards must be a positive integer, not {num_shards!r}")
    if isinstance(axis, bool) or not isinstance(axis, int) or axis < 0:
        raise ValueError(f"axis must be a non-negative integer, not {axis!r}")

    def partitioner(shape, dtype=None) -> list:
        dims = TensorShape(shape).as_list()
        if axis >= len(dims):
            raise ValueError(f"Cannot partition a variable of shape {dims} along axis {axis}")
        parts = [1] * len(dims)
        parts[axis] = max(1, min(num_shards, dims[axis]))
        return parts
    return partitioner


def _element_bytes(dtype, bytes_per_string_element: int) -> int:
    dtype = dtypes.as_dtype(dtype)
    return bytes_per_string_element if dtype == dtypes.string else dtype.itemsize


def variable_axis_size_partitioner(max_shard_bytes: int, axis: int = 0,
                                   bytes_per_string_element: int = 16,
                                   max_shards: Optional[int] = None) -> Callable:
    """A partitioner keeping each shard under `max_shard_bytes` (TF's rule).

    Whole slices along `axis` go to a shard, at least one, so a single slice
    larger than `max_shard_bytes` still makes a shard; `max_shards` caps the
    count, and wins over the byte bound.

    Raises:
      ValueError: a byte count or `max_shards` that is not positive; from the
        partitioner, a shape that is not a fully defined TensorShape.
    Example:
      >>> variable_axis_size_partitioner(4096)(TensorShape([1024, 4]), float32)
      [4, 1]
    """
    if max_shard_bytes < 1 or bytes_per_string_element < 1:
        raise ValueError("Both max_shard_bytes and bytes_per_string_element must be "
                         f"positive, got {max_shard_bytes} and {bytes_per_string_element}")
    if max_shards and max_shards < 1:
        raise ValueError(f"max_shards must be positive, got {max_shards}")

    def partitioner(shape, dtype) -> list:
        if not isinstance(shape, TensorShape):
            raise ValueError(f"shape is not a TensorShape: {shape}")
        if not shape.is_fully_defined():
            raise ValueError(f"shape is not fully defined: {shape}")
        if not isinstance(dtype, dtypes.DType):
            raise ValueError(f"dtype is not a DType: {dtype}")
        dims = shape.as_list()
        slice_bytes = shape.num_elements() / dims[axis] * _element_bytes(
            dtype, bytes_per_string_element)
        per_shard = max(1, math.floor(max_shard_bytes / slice_bytes))
        shards = int(math.ceil(dims[axis] / per_shard))
        parts = [1] * len(dims)
        parts[axis] = min(max_shards, shards) if max_shards else shards
        return parts
    return partitioner


def min_max_variable_partitioner(max_partitions: int = 1, axis: int = 0,
                                 min_slice_size: int = 256 << 10,
                                 bytes_per_string_element: int = 16) -> Callable:
    """A partitioner giving each shard at least `min_slice_size` bytes, in at most
    `max_partitions` shards (and no more than the axis is long), as TF's.

    Raises (from the partitioner):
      ValueError: `axis` is not a dimension of the shape.
    Example:
      >>> min_max_variable_partitioner(16)(TensorShape([1024, 1024]), float32)
      [16, 1]
    """
    def partitioner(shape, dtype) -> list:
        dims = TensorShape(shape).as_list()
        if axis >= len(dims):
            raise ValueError(f"Can not partition variable along axis {axis} when shape is "
                             f"only {TensorShape(shape)}")
        total = TensorShape(shape).num_elements() * _element_bytes(
            dtype, bytes_per_string_element)
        parts = [1] * len(dims)
        parts[axis] = max(1, min(dims[axis], max_partitions,
                                 int(math.ceil(total / min_slice_size))))
        return parts
    return partitioner


def shard_sizes(size: int, shards: int) -> list:
    """TF's split: equal parts, the first `size % shards` one larger."""
    base, extra = divmod(size, shards)
    return [base + (1 if i < extra else 0) for i in range(shards)]


class PartitionedVariable:
    """The shards of one variable, used as the whole where a Tensor is needed.

    Iterating gives the shard Variables (as `embedding_lookup` and savers want
    them); `as_tensor()` (and any op taking it) concatenates them.
    """

    def __init__(self, name: str, shape: TensorShape, dtype, variables: list,
                 axis: int) -> None:
        self.name, self._shape, self._dtype = name, shape, dtype
        self._variables, self._axis = list(variables), axis

    shape = property(lambda self: self._shape)
    dtype = property(lambda self: self._dtype)
    axis = property(lambda self: self._axis)

    def get_shape(self) -> TensorShape:
        return self._shape

    def __iter__(self):
        return iter(self._variables)

    def __len__(self) -> int:
        return len(self._variables)

    def _get_variable_list(self) -> list:
        return list(self._variables)

    def as_tensor(self):
        """The whole variable: the shards' values concatenated along the axis."""
        graph = self._variables[0].graph
        scope = f"{self.name.split('/')[-1]}/ConcatPartitions"
        with graph.as_default(), graph.name_scope(scope):
            return concat([v.value() for v in self._variables], self._axis)

    _as_tensor = as_tensor

    def __repr__(self) -> str:
        return (f"<PartitionedVariable {self.name!r} shape={self._shape} "
                f"{len(self._variables)} shards along axis {self._axis}>")


def create_partitioned(full: str, shape: TensorShape, dtype, partitions: list,
                       make: Callable) -> PartitionedVariable:
    """Builds the shards of variable `full` with `make(name, shard_shape, partition_info)`.

    Raises:
      ValueError: `partitions` does not match the shape, or cuts more than one axis.
    """
    dims = shape.as_list()
    if not isinstance(partitions, (list, tuple)) or len(partitions) != len(dims) or \
            any(not isinstance(p, int) or p < 1 for p in partitions):
        raise ValueError(f"The partitioner of {full} returned {partitions!r}: it needs one "
                         f"positive int per dimension of {dims}")
    cut = [i for i, p in enumerate(partitions) if p > 1]
    if len(cut) > 1:
        raise ValueError(f"The partitioner of {full} cuts axes {cut}: only one may be cut")
    axis = cut[0] if cut else 0
    variables, offset = [], 0
    for i, size in enumerate(shard_sizes(dims[axis], partitions[axis])):
        shard = list(dims)
        shard[axis] = size
        start = [0] * len(dims)
        start[axis] = offset
        variables.append(make(f"{full}/part_{i}", shard, PartitionInfo(dims, start)))
        offset += size
    return PartitionedVariable(full, shape, dtype, variables, axis)


def shards_of(params) -> list:
    """The shard list of `params`: a PartitionedVariable, a list, or one table."""
    if isinstance(params, PartitionedVariable):
        return list(params)
    if isinstance(params, (list, tuple)):
        return list(params)
    return [params]


__all__ = ["PartitionInfo", "PartitionedVariable", "create_partitioned",
           "fixed_size_partitioner", "min_max_variable_partitioner", "shard_sizes", "shards_of",
           "variable_axis_size_partitioner"]
