"""Dataset.padded_batch: batches of elements padded to a common shape (PaddedBatchDatasetV2),
as the (variant, element_spec) pair of its op."""
from __future__ import annotations

from typing import Optional

import numpy as np

from nbcluster.data import structure
from nbcluster.data.dataset_value import add_dataset_op, batched, int64_input, static_rows
from nbcluster.framework import dtypes
from nbcluster.framework.constant import convert_to_tensor


def padded_batch(dataset, batch_size, padded_shapes=None, padding_values=None,
                 drop_remainder: bool = False, name: Optional[str] = None):
    """Each component padded (with `padding_values`, default 0 or b"") to
    `padded_shapes` (default: its own shape, unknown dims to the batch's longest).

    Raises:
      ValueError: no padded shape for a component of unknown rank, or a padded
        shape of the wrong rank or smaller than the component's.
    """
    spec = dataset.element_spec
    specs = structure.flatten(spec)
    shapes = _padded_shapes(padded_shapes, specs)
    values = _padding_values(padding_values, specs)
    size = int64_input(batch_size, "batch_size")
    drop = convert_to_tensor(drop_remainder, dtype=dtypes.bool, name="drop_remainder")
    rows = static_rows(size, drop)
    shape_tensors = [convert_to_tensor(np.asarray([-1 if d is None else d for d in s.as_list()],
                                                  dtype=np.int64), name="padded_shapes")
                     for s in shapes]
    out = structure.pack_as(spec, [structure.TensorSpec(batched(s, rows), c.dtype)
                                   for s, c in zip(shapes, specs)])
    inputs = [dataset._variant, size] + shape_tensors + values + [drop]
    return add_dataset_op("PaddedBatchDatasetV2", inputs, out,
                        {"parallel_copy": False, "N": len(specs)}, name,
                        types_attr="Toutput_types")


def _padded_shapes(padded_shapes, specs: list) -> list:
    if padded_shapes is None:
        for s in specs:
            if s.shape.rank is None:
                raise ValueError("You must provide `padded_shapes` argument because component "
                                 f"{s} has unknown rank.")
        return [s.shape for s in specs]
    leaves = structure.shape_leaves(padded_shapes)
    if len(leaves) != len(specs):
        raise ValueError(f"The padded_shapes {padded_shapes!r} do not match the structure "
                         f"of the elements, {len(specs)} component(s)")
    out = []
    for s, padded in zip(specs, leaves):
        if s.shape.rank is not None and padded.rank != s.shape.rank:
            raise ValueError(f"The padded shape {padded} is not compatible with the shape "
                             f"{s.shape} of the corresponding input component.")
        for want, have in zip(padded.as_list(), s.shape.as_list() if s.shape.rank else []):
            if want is not None and have is not None and want < have:
                raise ValueError(f"The padded shape {padded} is not compatible with the "
                                 f"shape {s.shape} of the corresponding input component.")
        out.append(padded)
    return out


def _padding_values(padding_values, specs: list) -> list:
    if padding_values is None:
        leaves = [None] * len(specs)
    else:
        leaves = structure.flatten_element(padding_values)
        if len(leaves) == 1 and len(specs) > 1:
            leaves = leaves * len(specs)
        if len(leaves) != len(specs):
            raise ValueError(f"The padding_values {padding_values!r} do not match the "
                             f"structure of the elements, {len(specs)} component(s)")
    out = []
    for s, value in zip(specs, leaves):
        if value is None:
            value = b"" if s.dtype == dtypes.string else np.zeros((), s.dtype.as_numpy_dtype)
        t = convert_to_tensor(value, dtype=s.dtype, name="padding_value")
        if t.shape.rank not in (None, 0):
            raise ValueError(f"Padding value {value!r} must be a scalar")
        out.append(t)
    return out
