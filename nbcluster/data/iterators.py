"""tf.compat.v1.data.Iterator: one-shot and initializable iterators over a dataset.

An iterator is a DT_RESOURCE on its task (IteratorV2, or OneShotIterator, which
remakes its dataset from a copy of the dataset's ops on first use);
`get_next()` is an IteratorGetNext op that raises OutOfRangeError at the end.

Example:
  >>> it = make_initializable_iterator(Dataset.range(3))
  >>> x = it.get_next()
  >>> # sess.run(it.initializer); sess.run(x) -> 0, 1, 2, then OutOfRangeError
"""
from __future__ import annotations

from typing import Optional

from nbcluster.data import structure
from nbcluster.data.functions import dataset_factory
from nbcluster.framework import dtypes
from nbcluster.framework.graph import get_default_graph
from nbcluster.framework.operation import Operation, Tensor
from nbcluster.framework.tensor_shape import TensorShape


class Iterator(structure.ElementSpecAttrs):
    """Reads a dataset's elements, one `get_next()` op per read.

    Args:
      iterator_resource: the iterator's DT_RESOURCE tensor.
      initializer: the op that (re)starts it on a dataset, or None (one-shot).
      element_spec: the structure of the elements it gives.
    """

    def __init__(self, iterator_resource: Tensor, initializer: Optional[Operation],
                 element_spec) -> None:
        self._resource = iterator_resource
        self._initializer = initializer
        self._element_spec = element_spec

    @property
    def initializer(self) -> Operation:
        """The op that (re)starts this iterator on its dataset; run it again with new
        feeds for the placeholders the dataset captured to start over on them.

        Raises:
          ValueError: a one-shot iterator, which has none.
        """
        if self._initializer is None:
            raise ValueError("The iterator does not have an initializer. This means it was "
                             "likely created using `tf.data.Dataset.make_one_shot_iterator()`"
                             ". For an initializable iterator, use "
                             "`tf.data.Dataset.make_initializable_iterator()` instead.")
        return self._initializer

    @staticmethod
    def from_structure(output_types, output_shapes=None, shared_name: Optional[str] = None,
                       output_classes=None) -> "Iterator":
        """An iterator of no dataset yet: `make_initializer(dataset)` gives the op that
        starts it on any dataset of that structure."""
        types = structure.nested_map(output_types, dtypes.as_dtype)
        leaves = structure.flatten(types)
        if output_shapes is None:
            shapes = [TensorShape(None)] * len(leaves)
        else:
            shapes = structure.shape_leaves(output_shapes)
            if len(shapes) != len(leaves):
                raise TypeError(f"output_shapes {output_shapes!r} do not match the structure "
                                f"of output_types {output_types!r}")
        spec = structure.pack_as(types, [structure.TensorSpec(s, t)
                                         for t, s in zip(leaves, shapes)])
        return Iterator(_iterator_op(spec, shared_name), None, spec)

    def make_initializer(self, dataset, name: Optional[str] = None) -> Operation:
        """The MakeIterator op that starts this iterator on `dataset`.

        Raises:
          TypeError: `dataset`'s elements have other dtypes or an incompatible
            shape than this iterator's (as TF, when the graph is built).
          ValueError: they have another structure.
        """
        mine, theirs = self._element_spec, dataset.element_spec
        if not structure.same_structure(mine, theirs):
            raise ValueError(f"The two structures don't have the same nested structure: "
                             f"the iterator's {mine} and the dataset's {theirs}")
        if structure.dtypes_of(mine) != structure.dtypes_of(theirs):
            raise TypeError(f"Expected output types {self.output_types!r} but got dataset "
                            f"with output types {dataset.output_types!r}.")
        for a, b in zip(structure.shapes_of(mine), structure.shapes_of(theirs)):
            if not a.is_compatible_with(b):
                raise TypeError(f"Expected output shapes compatible with "
                                f"{self.output_shapes!r} but got dataset with output shapes "
                                f"{dataset.output_shapes!r}.")
        graph = get_default_graph()
        return graph.create_op("MakeIterator", [dataset._variant, self._resource], {},
                               name=name or "MakeIterator")

    def get_next(self, name: Optional[str] = None):
        """The next element, as the dataset's structure of tensors; running it past the
        end raises OutOfRangeError."""
        graph = get_default_graph()
        spec = self._element_spec
        op = graph.create_op("IteratorGetNext", [self._resource],
                             {"output_types": structure.dtypes_of(spec),
                              "output_shapes": structure.shapes_of(spec)},
                             name=name or "IteratorGetNext")
        return structure.pack_as(spec, list(op.outputs))

    def string_handle(self, name: Optional[str] = None):
        raise NotImplementedError("Iterator.string_handle (feedable iterators) is not "
                                  "supported; use make_initializer to switch datasets")

    def __iter__(self):
        raise RuntimeError("iter() of a graph-mode iterator is not supported: run "
                           "`get_next()` in a session")


def _iterator_op(spec, shared_name: Optional[str], op_type: str = "IteratorV2",
                 extra: Optional[dict] = None) -> Tensor:
    attrs = {"output_types": structure.dtypes_of(spec),
             "output_shapes": structure.shapes_of(spec),
             "container": "", "shared_name": shared_name or "", **(extra or {})}
    name = "Iterator" if op_type == "IteratorV2" else op_type
    return get_default_graph().create_op(op_type, [], attrs, name=name).outputs[0]


def make_one_shot_iterator(dataset) -> Iterator:
    """An iterator that starts itself on first use (tf.compat.v1.data.make_one_shot_iterator).

    Raises:
      ValueError: the dataset captures a placeholder or variable (use an
        initializable iterator).
    """
    factory = dataset_factory(dataset._variant)
    resource = _iterator_op(dataset.element_spec, None, "OneShotIterator",
                            {"dataset_factory": factory})
    return Iterator(resource, None, dataset.element_spec)


def make_initializable_iterator(dataset, shared_name: Optional[str] = None) -> Iterator:
    """An iterator whose `initializer` starts (and restarts) it on `dataset`."""
    resource = _iterator_op(dataset.element_spec, shared_name)
    iterator = Iterator(resource, None, dataset.element_spec)
    iterator._initializer = iterator.make_initializer(dataset)
    return iterator
