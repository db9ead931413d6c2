"""tf.distribute.experimental.partitioners: how ParameterServerStrategy shards a variable.

A partitioner is called as `partitioner(shape, dtype, axis=0)` with the
variable's TensorShape and DType and returns one shard count per dimension;
only `axis` is cut. The byte rules are TF1's size-based partitioners'
(`ops/partitioned_variables.py`), as TF2 builds them.
"""
from __future__ import annotations

from typing import Optional

from nbcluster.framework.tensor_shape import TensorShape
from nbcluster.ops.partitioned_variables import (
    min_max_variable_partitioner,
    variable_axis_size_partitioner,
)


class Partitioner:
    """The interface: `__call__(shape, dtype, axis=0) -> list of shard counts`."""

    def __call__(self, shape: TensorShape, dtype, axis: int = 0) -> list:
        raise NotImplementedError


def _positive(name: str, value) -> None:
    if value < 1:
        raise ValueError(f"Argument `{name}` must be positive. Received: {value}")


class FixedShardsPartitioner(Partitioner):
    """`num_shards` shards (fewer when the axis is shorter).

    Example:
      >>> FixedShardsPartitioner(2)(TensorShape([10, 3]), float32)
      [2, 1]
    """

    def __init__(self, num_shards: int) -> None:
        self._num_shards = num_shards

    def __call__(self, shape, dtype, axis: int = 0) -> list:
        del dtype
        dims = TensorShape(shape).as_list()
        parts = [1] * len(dims)
        parts[axis] = min(self._num_shards, dims[axis])
        return parts


class MinSizePartitioner(Partitioner):
    """Shards of at least `min_shard_bytes` each, at most `max_shards` of them.

    Example:
      >>> MinSizePartitioner(min_shard_bytes=4, max_shards=2)(TensorShape([6, 1]), float32)
      [2, 1]
    Raises:
      ValueError: an argument that is not positive.
    """

    def __init__(self, min_shard_bytes: int = 256 << 10, max_shards: int = 1,
                 bytes_per_string: int = 16) -> None:
        _positive("min_shard_bytes", min_shard_bytes)
        _positive("max_shards", max_shards)
        _positive("bytes_per_string", bytes_per_string)
        self._min_shard_bytes = min_shard_bytes
        self._max_shards = max_shards
        self._bytes_per_string = bytes_per_string

    def __call__(self, shape, dtype, axis: int = 0) -> list:
        return min_max_variable_partitioner(
            max_partitions=self._max_shards, axis=axis, min_slice_size=self._min_shard_bytes,
            bytes_per_string_element=self._bytes_per_string)(TensorShape(shape), dtype)


class MaxSizePartitioner(Partitioner):
    """Shards of at most `max_shard_bytes` each (a slice is never cut), at most
    `max_shards` of them when given.

    Example:
      >>> MaxSizePartitioner(max_shard_bytes=4)(TensorShape([6, 1]), float32)
      [6, 1]
    Raises:
      ValueError: an argument that is not positive.
    """

    def __init__(self, max_shard_bytes: int, max_shards: Optional[int] = None,
                 bytes_per_string: int = 16) -> None:
        _positive("max_shard_bytes", max_shard_bytes)
        if max_shards is not None and max_shards:
            _positive("max_shards", max_shards)
        _positive("bytes_per_string", bytes_per_string)
        self._max_shard_bytes = max_shard_bytes
        self._max_shards = max_shards
        self._bytes_per_string = bytes_per_string

    def __call__(self, shape, dtype, axis: int = 0) -> list:
        return variable_axis_size_partitioner(
            max_shard_bytes=self._max_shard_bytes, axis=axis,
            bytes_per_string_element=self._bytes_per_string,
            max_shards=self._max_shards)(TensorShape(shape), dtype)


__all__ = ["FixedShardsPartitioner", "MaxSizePartitioner", "MinSizePartitioner", "Partitioner"]
