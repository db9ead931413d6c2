"""Values a tf.function takes and returns: nested structures, TensorSpecs, element iterators.

Rule: pure Python over numpy values and graph Tensors; builds no ops.
"""
from __future__ import annotations

import collections
import threading
from typing import Optional

import numpy as np

from nbcluster import errors
from nbcluster.framework import dtypes
from nbcluster.framework.operation import Tensor
from nbcluster.framework.tensor_shape import TensorShape
from nbcluster.framework.values import to_numpy


class TensorSpec:
    """The dtype and (partial) shape a tf.function argument must have.

    Args:
      shape: a TensorShape or list (None for unknown dims or rank).
      dtype: the element type (default float32).
      name: a name for the placeholder the trace makes.
    """

    def __init__(self, shape, dtype=dtypes.float32, name: Optional[str] = None) -> None:
        self.shape = TensorShape(shape)
        self.dtype = dtypes.as_dtype(dtype)
        self.name = name

    def is_compatible_with(self, value) -> bool:
        """Whether `value` may be passed for this spec: a tensor or array of its
        dtype, or Python values convertible to it, of a compatible shape."""
        if isinstance(value, (Tensor, np.ndarray, np.generic)):
            dtype, shape = dtype_and_shape(value)
        else:
            try:
                array = to_numpy(value, self.dtype)
            except (TypeError, ValueError):
                return False
            dtype, shape = self.dtype, TensorShape(array.shape)
        return dtype == self.dtype and self.shape.is_compatible_with(shape)

    def __eq__(self, other) -> bool:
        return isinstance(other, TensorSpec) and (self.shape, self.dtype, self.name) == \
            (other.shape, other.dtype, other.name)

    def __hash__(self) -> int:
        return hash((str(self.shape), self.dtype, self.name))

    def __repr__(self) -> str:
        return f"TensorSpec(shape={self.shape}, dtype=tf.{self.dtype.name}, name={self.name!r})"


class ElementIterator:
    """An iterator of numpy structures that a traced function calls `next()` on.

    The trace sees placeholders shaped like the elements; each run feeds the
    elements pulled for it. Elements a run pulled but did not use go back.
    """

    def __init__(self, iterable) -> None:
        self._iterator = iter(iterable)
        self._back: collections.deque = collections.deque()
        self._lock = threading.Lock()

    def pull(self):
        with self._lock:
            if self._back:
                return self._back.popleft()
            try:
                element = next(self._iterator)
            except StopIteration:
                raise errors.OutOfRangeError(None, None, "End of sequence") from None
        return pack_as(element, [_as_array(x) for x in flatten(element)])

    def push_back(self, elements: list) -> None:
        with self._lock:
            self._back.extendleft(reversed(elements))


# -- nested structures (lists, tuples, namedtuples, dicts) --------------------
def flatten(structure) -> list:
    """The leaves of `structure`, depth first (dicts in insertion order)."""
    if isinstance(structure, dict):
        return [leaf for value in structure.values() for leaf in flatten(value)]
    if isinstance(structure, (list, tuple)):
        return [leaf for item in structure for leaf in flatten(item)]
    return [structure]


def pack_as(structure, leaves: list):
    """`structure` with its leaves replaced, in order, by `leaves`."""
    it = iter(leaves)

    def pack(s):
        if isinstance(s, dict):
            return type(s)((k, pack(v)) for k, v in s.items())
        if isinstance(s, tuple) and hasattr(s, "_fields"):
            return type(s)(*(pack(v) for v in s))
        if isinstance(s, (list, tuple)):
            return type(s)(pack(v) for v in s)
        return next(it)
    return pack(structure)


def treedef(structure, n: int) -> str:
    return repr(pack_as(structure, [0] * n))


def _as_array(value) -> np.ndarray:
    if isinstance(value, Tensor):
        raise TypeError(f"A dataset element must hold numpy values, not the graph tensor "
                        f"{value.name}")
    return value if isinstance(value, np.ndarray) else to_numpy(value)


def dtype_and_shape(value) -> tuple:
    if isinstance(value, (Tensor, TensorSpec)):
        return value.dtype, value.shape
    array = _as_array(value)
    return dtypes.as_dtype(array.dtype), TensorShape(array.shape)


def leaf_kind(leaf) -> str:
    if isinstance(leaf, (Tensor, TensorSpec, np.ndarray, np.generic)):
        return "tensor"
    if isinstance(leaf, ElementIterator):
        return "iterator"
    if leaf is None or isinstance(leaf, (bool, int, float, complex, str, bytes)):
        return "value"
    return "object"


def tensor_key(value) -> tuple:
    dtype, shape = dtype_and_shape(value)
    return ("tensor", dtype.name, None if shape.rank is None else tuple(shape.as_list()))


def element_key(element) -> tuple:
    leaves = flatten(element)
    return (treedef(element, len(leaves)),) + tuple(tensor_key(x) for x in leaves)
