"""Iterator kernels: an IteratorResource per (container, name) on its task, made into
a pass over a dataset by MakeIterator (or, once, by OneShotIterator's factory)
and read by IteratorGetNext.

Rule: one get_next at a time per iterator (its lock), as TF serializes them,
so concurrent steps never split one element.
"""
from __future__ import annotations

import threading
from typing import Optional

import numpy as np

from nbcluster import errors
from nbcluster.framework import dtypes as dtypes_lib
from nbcluster.framework.tensor_shape import TensorShape
from nbcluster.kernels.data_functions import FunctionRunner, PipelineEnv
from nbcluster.kernels.dataset_recipe import Dataset
from nbcluster.runtime.kernel_table import register_kernel


class IteratorResource:
    """The current pass of one iterator over a dataset, or none before it is made."""

    def __init__(self, name: str, types: list, shapes: list) -> None:
        self.name = name
        self.types = [dtypes_lib.as_dtype(t) for t in types]
        self.shapes = [TensorShape(s) for s in shapes]
        self.lock = threading.Lock()
        self._pass = None
        self._made = False

    def check(self, dataset: Dataset, node_name: str) -> None:
        if [t.name for t in dataset.types] != [t.name for t in self.types]:
            raise errors.InvalidArgumentError(
                None, None, f"The iterator {self.name} has type list "
                            f"{[t.name for t in self.types]}, which does not match the "
                            f"dataset's {[t.name for t in dataset.types]}",
                node_name=node_name)

    def make(self, dataset: Dataset, env: PipelineEnv, node_name: str) -> None:
        self.check(dataset, node_name)
        fresh = dataset.iterate(env)
        with self.lock:
            old, self._pass, self._made = self._pass, fresh, True
        if old is not None:
            old.close()  # stops what the old pass started (prefetch threads)

    def get_next(self, node_name: str) -> tuple:
        with self.lock:
            if not self._made:
                raise errors.FailedPreconditionError(
                    None, None, "GetNext() failed because the iterator has not been "
                                "initialized. Ensure that you have run the initializer "
                                "operation for this iterator before getting the next "
                                "element.", node_name=node_name)
            if self._pass is None:
                raise errors.OutOfRangeError(None, None, "End of sequence",
                                             node_name=node_name)
            try:
                element = next(self._pass)
            except StopIteration:
                self._pass = None
                raise errors.OutOfRangeError(None, None, "End of sequence",
                                             node_name=node_name) from None
        return self._checked(element, node_name)

    def _checked(self, element: tuple, node_name: str) -> tuple:
        out = []
        for i, (value, dtype, shape) in enumerate(zip(element, self.types, self.shapes)):
            array = np.asarray(value)
            if not shape.is_compatible_with(array.shape):
                raise errors.InvalidArgumentError(
                    None, None, f"An element of iterator {self.name} has shape "
                                f"{list(array.shape)} in component {i}, which is not "
                                f"compatible with its shape {shape}", node_name=node_name)
            if dtype.as_numpy_dtype is not object and array.dtype != dtype.as_numpy_dtype:
                array = array.astype(dtype.as_numpy_dtype)
            out.append(array)
        return tuple(out)

    def cancel_all(self) -> None:
        with self.lock:
            old, self._pass = self._pass, None
        if old is not None:
            old.close()


def _resource_name(node) -> tuple:
    return node.attrs.get("container") or None, node.attrs.get("shared_name") or node.name


@register_kernel("IteratorV2", "CPU")
def _iterator(node, device):
    container, name = _resource_name(node)
    types, shapes = list(node.attrs["output_types"]), list(node.attrs["output_shapes"])

    def iterator(ctx):
        return (ctx.resources.lookup_or_create(
            container or ctx.default_container, name,
            lambda: IteratorResource(name, types, shapes), IteratorResource),)
    return iterator


@register_kernel("MakeIterator", "CPU")
def _make_iterator(node, device):
    def make(ctx, dataset, iterator):
        iterator.make(dataset, PipelineEnv.of(ctx, device), node.name)
        return ()
    return make


@register_kernel("OneShotIterator", "CPU")
def _one_shot(node, device):
    container, name = _resource_name(node)
    types, shapes = list(node.attrs["output_types"]), list(node.attrs["output_shapes"])
    factory = FunctionRunner(node.attrs["dataset_factory"], device, node.name)
    once = threading.Lock()

    def one_shot(ctx):
        iterator = ctx.resources.lookup_or_create(
            container or ctx.default_container, name,
            lambda: IteratorResource(name, types, shapes), IteratorResource)
        # Made outside the resource table's lock: the factory's body makes resources too.
        with once:
            if not iterator._made:
                env = PipelineEnv.of(ctx, device)
                (dataset,) = factory.call(env, ())
                iterator.make(dataset, env, node.name)
        return (iterator,)
    return one_shot


@register_kernel("IteratorGetNext", "CPU")
def _get_next(node, device):
    def get_next(ctx, iterator: Optional[IteratorResource]):
        return iterator.get_next(node.name)
    return get_next


@register_kernel("IteratorToStringHandle", "CPU")
def _to_string_handle(node, device):
    # TF's make_initializable_iterator adds one; a handle names the iterator on its
    # device (feedable iterators, which would take it back, are not supported).
    def to_string_handle(ctx, iterator: IteratorResource):
        return (np.asarray(f"{device.name}/{iterator.name}".encode(), dtype=object),)
    return to_string_handle
