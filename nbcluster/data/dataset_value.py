"""A tf.data dataset as a value (its DT_VARIANT tensor and element spec) and the
one function that adds a dataset op: what data/dataset.py's Dataset shares with
the modules that build its ops (sources, padding, readers) or check for one
(functions, iterators).

Rule: a builder returns the (variant, element_spec) pair of the op it added;
only dataset.py wraps it as a Dataset, so no builder imports the class whose
methods call it.
"""
from __future__ import annotations

from typing import Optional

import numpy as np

from nbcluster.data import structure
from nbcluster.framework import dtypes
from nbcluster.framework.constant import convert_to_tensor
from nbcluster.framework.graph import get_default_graph
from nbcluster.framework.operation import Tensor
from nbcluster.framework.tensor_shape import TensorShape
from nbcluster.ops.shape_inference import constant_value

AUTOTUNE = -1


def int64_input(value, name: str) -> Tensor:
    """`value` as an int64 scalar input of a dataset op (a tensor passes as it is)."""
    return convert_to_tensor(np.int64(value) if isinstance(value, (int, np.integer))
                             else value, dtype=dtypes.int64, name=name)


def add_dataset_op(op_type: str, inputs: list, spec, attrs: Optional[dict] = None,
                   name: Optional[str] = None, types_attr: str = "output_types") -> tuple:
    """Adds one dataset op producing elements of `spec`; returns (its variant, `spec`)."""
    graph = get_default_graph()
    full = dict(attrs or {})
    full[types_attr] = structure.dtypes_of(spec)
    full["output_shapes"] = structure.shapes_of(spec)
    op = graph.create_op(op_type, inputs, full, name=name or op_type)
    return op.outputs[0], spec


def static_rows(size: Tensor, drop: Tensor) -> Optional[int]:
    """A batch's row count when the graph knows it: a constant size, remainder dropped."""
    rows, dropped = constant_value(size), constant_value(drop)
    return int(rows) if rows is not None and dropped is not None and bool(dropped) else None


def batched(shape: TensorShape, rows: Optional[int]) -> TensorShape:
    return TensorShape([rows] + shape.as_list()) if shape.rank is not None \
        else TensorShape(None)


class DatasetValue(structure.ElementSpecAttrs):
    """What a dataset is: the DT_VARIANT tensor of its last op and the structure of
    TensorSpecs of one element (data/dataset.py's Dataset adds the methods).

    Args:
      variant: the DT_VARIANT tensor of its last op.
      element_spec: the structure of TensorSpecs of one element.
    """

    def __init__(self, variant: Tensor, element_spec) -> None:
        self._variant = variant
        self._element_spec = element_spec

    def _as_variant_tensor(self) -> Tensor:
        return self._variant

    def __iter__(self):
        raise RuntimeError("`tf.data.Dataset` only supports Python-style iteration in eager "
                           "mode or within tf.function; in a graph, make an iterator: "
                           "`tf.compat.v1.data.make_one_shot_iterator(dataset)`")

    def __repr__(self) -> str:
        return f"<{type(self).__name__} element_spec={self._element_spec}>"
