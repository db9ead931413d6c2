"""Checks the size a TensorProto claims before anything is allocated for it.

A TensorProto may hold fewer values than its shape (TF's rule: none means
zeros, fewer repeat the last one), so a few bytes on the wire can claim a
tensor of any size: one `float_val` with shape [4e8] would make a 1.6 GB
array. Every decoder of such protos (graph constants, feeds, RunGraph
tensors) asks `check_expansion` first. Only tensors whose values must be
made up are bounded; a tensor whose bytes all arrive (`tensor_content`, a
stream) costs its sender as much as it costs us.
"""
from __future__ import annotations

import math
import os

from nbcluster import errors

ENV = "NBCLUSTER_MAX_EXPANDED_TENSOR_BYTES"
DEFAULT_MAX_EXPANDED_BYTES = 256 << 20
_NUMPY_LIMIT = 2 ** 63 // 16  # numpy's bound on an array's bytes, for the widest dtype


def max_expanded_bytes() -> int:
    """The most bytes a tensor made up from fewer values may take (the env var, else 256 MiB)."""
    raw = os.environ.get(ENV)
    if not raw:
        return DEFAULT_MAX_EXPANDED_BYTES
    try:
        return max(0, int(raw))
    except ValueError:
        return DEFAULT_MAX_EXPANDED_BYTES


def check_shape(shape, what: str = "TensorProto") -> int:
    """The element count of `shape` (a sequence of ints).

    Raises:
      InvalidArgumentError: a negative dimension, or more than 2**63-1 elements
        (TF's limit for a tensor's element count).
    """
    for d in shape:
        if d < 0:
            raise errors.InvalidArgumentError(
                None, None, f"{what} shape {list(shape)} has dimension {d}")
    count = math.prod(shape)
    if count >= 2 ** 63:
        raise errors.InvalidArgumentError(
            None, None, f"{what} shape {list(shape)} has {count} elements, more than a "
                        f"tensor can hold (2**63-1)")
    # An empty tensor may have huge other dimensions, which numpy cannot represent
    # (it bounds the product of the nonzero ones, in bytes).
    if math.prod(d for d in shape if d) >= _NUMPY_LIMIT:
        raise errors.InvalidArgumentError(
            None, None, f"{what} shape {list(shape)} cannot be represented: its nonzero "
                        f"dimensions multiply to 2**59 or more")
    return count


def check_expansion(shape, count: int, itemsize: int, dtype_name: str, given: int) -> None:
    """Refuses to make up a tensor of `count` elements from `given` values when
    its size passes `max_expanded_bytes()`.

    Raises:
      InvalidArgumentError: naming the shape, its size and the limit (TF
        answers a TensorProto it cannot parse into a tensor with that class).
    """
    if given >= count:
        return
    nbytes = count * itemsize
    limit = max_expanded_bytes()
    if nbytes > limit:
        raise errors.InvalidArgumentError(
            None, None, f"TensorProto of {dtype_name} with shape {list(shape)} ({nbytes} "
                        f"bytes) gives {given} value(s); making up the rest would pass the "
                        f"limit of {limit} bytes ({ENV})")
