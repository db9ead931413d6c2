"""The structure of a dataset's elements: nested tuples, dicts and namedtuples whose
leaves are tensors; flat lists of dtypes and shapes for the ops' attrs.

Rules (tf.data's): a Python list is a value, not a structure, so
`from_tensor_slices([1, 2, 3])` has one int32 component; tuples, dicts and
namedtuples nest; a dict's components go in the order of its sorted keys, so
two dicts with the same keys are the same structure whatever their order.
"""
from __future__ import annotations

import numpy as np

from nbcluster.framework.constant import convert_to_tensor
from nbcluster.framework.operation import Tensor
from nbcluster.framework.tensor_shape import TensorShape
from nbcluster.function.structure import TensorSpec, flatten, pack_as

__all__ = ["TensorSpec", "flatten", "pack_as", "to_tensors", "spec_of", "dtypes_of",
           "shapes_of", "with_leaves", "same_structure", "merged_shapes", "flatten_element",
           "shape_leaves", "nested_map", "ElementSpecAttrs"]


class ElementSpecAttrs:
    """`element_spec` and TF1's `output_types` / `output_shapes` / `output_classes`, from
    `_element_spec`: what a dataset and an iterator both answer."""

    element_spec = property(lambda self: self._element_spec)
    output_types = property(lambda self: with_leaves(self._element_spec, lambda s: s.dtype))
    output_shapes = property(lambda self: with_leaves(self._element_spec, lambda s: s.shape))
    output_classes = property(lambda self: with_leaves(self._element_spec, lambda s: Tensor))


def to_tensors(value, what: str, graph=None):
    """`value` with each leaf converted to a Tensor of `graph` (the default graph).

    Raises:
      TypeError: a leaf that is no tensor value (None, an object), naming `what`.
    """
    if isinstance(value, dict):
        return type(value)((k, to_tensors(value[k], what, graph)) for k in sorted(value))
    if isinstance(value, tuple) and hasattr(value, "_fields"):
        return type(value)(*(to_tensors(v, what, graph) for v in value))
    if isinstance(value, tuple):
        return tuple(to_tensors(v, what, graph) for v in value)
    if value is None:
        raise TypeError(f"{what} holds None, which is not a tensor value; tf.data elements "
                        f"are tensors nested in tuples, dicts and namedtuples")
    try:
        return convert_to_tensor(value, graph=graph)
    except (TypeError, ValueError) as e:
        raise TypeError(f"{what} holds {value!r} of type {type(value).__name__}, which does "
                        f"not convert to a tensor ({e})") from None


def spec_of(tensors):
    """The TensorSpec structure of a structure of tensors."""
    return pack_as(tensors, [TensorSpec(t.shape, t.dtype) for t in flatten(tensors)])


def dtypes_of(spec) -> list:
    return [s.dtype for s in flatten(spec)]


def shapes_of(spec) -> list:
    return [s.shape for s in flatten(spec)]


def with_leaves(spec, fn):
    """`spec` with each TensorSpec `s` replaced by `fn(s)` (output_types, output_shapes)."""
    return pack_as(spec, [fn(s) for s in flatten(spec)])


def same_structure(a, b) -> bool:
    n = len(flatten(a))
    return len(flatten(b)) == n and repr(pack_as(a, [0] * n)) == repr(pack_as(b, [0] * n))


def merged_shapes(a: TensorShape, b: TensorShape) -> TensorShape:
    """The most specific shape compatible with both (concatenate's, zip's result)."""
    if a.rank is None or b.rank is None or a.rank != b.rank:
        return TensorShape(None)
    return TensorShape([x if x == y else None for x, y in zip(a.as_list(), b.as_list())])


def flatten_element(value) -> list:
    """The leaves of a Python element (tf.data's rule: a list is one leaf)."""
    if isinstance(value, dict):
        return [leaf for k in sorted(value) for leaf in flatten_element(value[k])]
    if isinstance(value, tuple):
        return [leaf for v in value for leaf in flatten_element(v)]
    return [value]


def shape_leaves(shapes) -> list:
    """The TensorShapes of a nest of shapes (a shape: a TensorShape, None, or a list of
    dims, -1 or None for unknown ones)."""
    if isinstance(shapes, TensorShape) or shapes is None:
        return [TensorShape(shapes)]
    if isinstance(shapes, dict):
        return [x for k in sorted(shapes) for x in shape_leaves(shapes[k])]
    if isinstance(shapes, (list, tuple)) and all(d is None or isinstance(d, (int, np.integer))
                                                 for d in shapes):
        return [TensorShape([None if d is None or d < 0 else int(d) for d in shapes])]
    return [x for v in shapes for x in shape_leaves(v)]


def nested_map(value, fn):
    """`value` (dicts, namedtuples, tuples, lists: tuples) with `fn` applied to each leaf,
    dicts in sorted key order."""
    if isinstance(value, dict):
        return type(value)((k, nested_map(value[k], fn)) for k in sorted(value))
    if isinstance(value, tuple) and hasattr(value, "_fields"):
        return type(value)(*(nested_map(v, fn) for v in value))
    if isinstance(value, (tuple, list)):
        return tuple(nested_map(v, fn) for v in value)
    return fn(value)
