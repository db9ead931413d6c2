"""A tf.data Dataset recipe (the value every dataset kernel outputs) and the decorator that
registers a dataset kernel: the part of kernels/data*.py that all of them share.

Rule: a Dataset value is a recipe, never a running pipeline: `iterate(env)`
starts a fresh pass over it as a Python generator of element tuples (numpy
arrays, one per component), so a repeat or a re-initialised iterator starts
over, and closing the generator stops what it started (prefetch threads).
"""
from __future__ import annotations

from typing import Callable, Iterator

import numpy as np

from nbcluster import errors
from nbcluster.framework import dtypes as dtypes_lib
from nbcluster.framework.tensor_shape import TensorShape
from nbcluster.runtime.kernel_table import register_kernel


class Dataset:
    """A dataset value: its element signature and how to start a pass over it."""

    def __init__(self, types: list, shapes: list, passes: Callable[[object], Iterator]):
        self.types = [dtypes_lib.as_dtype(t) for t in types]
        self.shapes = [TensorShape(s) for s in shapes]
        self._passes = passes

    def iterate(self, env) -> Iterator[tuple]:
        return self._passes(env)


# Readers' ops have no signature attrs: their elements are scalar strings.
_FIXED = {"TFRecordDataset": ([dtypes_lib.string], [TensorShape([])]),
          "TextLineDataset": ([dtypes_lib.string], [TensorShape([])])}


def signature(node) -> tuple:
    if node.op in _FIXED:
        return _FIXED[node.op]
    types = node.attrs.get("output_types") or node.attrs.get("Toutput_types") or []
    return list(types), list(node.attrs.get("output_shapes") or [])


def dataset_kernel(op_type: str):
    """Registers `make(node, device, *inputs) -> passes` as `op_type`'s kernel."""

    def wrap(make: Callable) -> Callable:
        @register_kernel(op_type, "CPU")
        def factory(node, device):
            types, shapes = signature(node)

            def compute(ctx, *inputs):
                return (Dataset(types, shapes, make(node, device, *inputs)),)
            return compute
        return make
    return wrap


def scalar_int(value, what: str, node) -> int:
    array = np.asarray(value)
    if array.ndim != 0 or array.dtype.kind not in "iu":
        raise errors.InvalidArgumentError(
            None, None, f"{what} must be an integer scalar, got {array!r}", node_name=node.name)
    return int(array)
