"""Build-time shape reasoning shared by op families: reading constant inputs,
merging shapes, and wording shape errors as TF's shape functions do."""
from __future__ import annotations

from typing import Optional

import numpy as np

from nbcluster.framework import dtypes
from nbcluster.framework.constant import convert_to_tensor
from nbcluster.framework.operation import Tensor
from nbcluster.framework.tensor_shape import TensorShape, list_str, unknown_shape

INDEX_TYPES = (dtypes.int32, dtypes.int64)


def shape_error(op, message: str) -> ValueError:
    """A ValueError worded as TF's shape functions word theirs."""
    shapes = ", ".join(list_str(t.shape) for t in op.inputs)
    return ValueError(f"{message} for '{op.name}' (op: '{op.type}') with input shapes: "
                      f"{shapes}.")


def check_rank(op, index: int, rank: int) -> None:
    shape = op.inputs[index].shape
    if shape.rank is not None and shape.rank != rank:
        raise shape_error(op, f"Shape must be rank {rank} but is rank {shape.rank}")


def per_dimension_rank(op) -> Optional[int]:
    """The rank of input 0 as input 1 (a vector with one entry per dimension of
    input 0: Tile's multiples, Transpose's perm) and input 0 agree on it, if known.

    Raises: TF's shape error when input 1 is not a vector or its length is not the rank.
    """
    check_rank(op, 1, 1)
    rank = op.inputs[0].shape.rank
    vector = op.inputs[1].shape
    length = vector[0] if vector.rank == 1 else None
    if rank is not None and length is not None and rank != length:
        raise shape_error(op, f"Dimension must be {rank} but is {length}")
    return rank if rank is not None else length


def merge_shapes(op, a: TensorShape, b: TensorShape, where: str = "") -> TensorShape:
    """The most specific shape compatible with both, or TF's merge error."""
    if a.rank is None:
        return b
    if b.rank is None:
        return a
    if a.rank != b.rank:
        raise shape_error(op, f"Shapes must be equal rank, but are {a.rank} and {b.rank}{where}")
    dims = []
    for i, (x, y) in enumerate(zip(a, b)):
        if x is not None and y is not None and x != y:
            raise shape_error(op, f"Dimension {i} in both shapes must be equal, but are {x} "
                                  f"and {y}. Shapes are {list_str(a)} and {list_str(b)}.{where}")
        dims.append(x if x is not None else y)
    return TensorShape(dims)


def constant_value(tensor: Tensor) -> Optional[np.ndarray]:
    """The value of `tensor` if it is known when the graph is built, else None."""
    op = tensor.op
    if op.type == "Const":
        return op.get_attr("value")
    if op.type == "Identity":
        return constant_value(op.inputs[0])
    if op.type in ("Shape", "Size", "Rank"):
        shape = op.inputs[0].shape
        if op.type == "Rank":
            value = shape.rank
        elif shape.is_fully_defined():
            value = shape.as_list() if op.type == "Shape" else shape.num_elements()
        else:
            value = None
        return None if value is None else np.array(value, tensor.dtype.as_numpy_dtype)
    if op.type in ("Pack", "ConcatV2"):
        parts = [constant_value(t) for t in op.inputs]
        if any(p is None for p in parts):
            return None
        if op.type == "Pack":
            return np.stack(parts, axis=op.get_attr("axis"))
        return np.concatenate(parts[:-1], axis=int(parts[-1]))
    return None


def constant_value_as_shape(tensor: Tensor) -> TensorShape:
    """The partial shape a 1-D int tensor describes; -1 and unknown entries are None."""
    op = tensor.op
    if op.type == "Shape":
        return op.inputs[0].shape
    if op.type == "Pack" and op.get_attr("axis") == 0:
        return TensorShape([_static_dim(t) for t in op.inputs])
    if op.type == "ConcatV2" and _is_zero(constant_value(op.inputs[-1])):
        dims: list = []
        for part in op.inputs[:-1]:
            part_shape = constant_value_as_shape(part)
            if part_shape.rank is None:
                return unknown_shape()
            dims += part_shape.dims
        return TensorShape(dims)
    value = constant_value(tensor)
    if value is not None and value.ndim == 1:
        return TensorShape([None if v < 0 else int(v) for v in value])
    return unknown_shape(tensor.shape[0] if tensor.shape.rank == 1 else None)


def _is_zero(value) -> bool:
    return value is not None and value.size == 1 and int(value.reshape(-1)[0]) == 0


def _static_dim(t: Tensor) -> Optional[int]:
    value = constant_value(t)
    if value is not None:
        return int(value) if value.ndim == 0 and value >= 0 else None
    op = t.op  # tf.shape(x)[i]: a StridedSlice taking one entry of a shape vector
    if op.type != "StridedSlice" or op.inputs[0].shape.rank != 1:
        return None
    masks = [_attr(op, k) for k in ("begin_mask", "end_mask", "ellipsis_mask",
                                    "new_axis_mask")]
    begin = constant_value(op.inputs[1])
    source = constant_value_as_shape(op.inputs[0])
    if any(masks) or _attr(op, "shrink_axis_mask") != 1 or begin is None \
            or begin.shape != (1,) or source.rank is None:
        return None
    index = int(begin[0])
    return source[index] if -source.rank <= index < source.rank else None


def _attr(op, name: str, default=0):
    try:
        return op.get_attr(name)
    except ValueError:
        return default


def shape_from_input(op, index: int) -> TensorShape:
    """The static shape that input `index` (a 1-D int shape tensor) describes."""
    check_rank(op, index, 1)
    value = constant_value(op.inputs[index])
    if value is not None and value.ndim == 1:
        for v in value:
            if v < -1:
                raise shape_error(op, f"Dimension {int(v)} must be >= -1")
    return constant_value_as_shape(op.inputs[index])


# -- converting arguments ---------------------------------------------------
def _is_tensor_like(value) -> bool:
    return isinstance(value, Tensor) or hasattr(value, "_as_graph_element")


def _contains_tensor(value) -> bool:
    if isinstance(value, (list, tuple)):
        return any(_contains_tensor(v) for v in value)
    return _is_tensor_like(value)


def tensor_list(values, name: str, graph, op_type: str) -> list:
    """A list argument (TF's N * T): Python values take the first tensor's dtype."""
    dtype = next((convert_to_tensor(v, graph=graph).dtype for v in values
                  if _is_tensor_like(v)), None)
    tensors = []
    for i, v in enumerate(values):
        try:
            tensors.append(convert_to_tensor(v, dtype=dtype, name=f"{name}_{i}", graph=graph))
        except (TypeError, ValueError):
            tensors.append(convert_to_tensor(v, name=f"{name}_{i}", graph=graph))
    kinds = [t.dtype for t in tensors]
    if any(k != kinds[0] for k in kinds):
        raise TypeError(f"Tensors in list passed to '{name}' of '{op_type}' Op have types "
                        f"[{', '.join(k.name for k in kinds)}] that don't all match.")
    return tensors


# -- placeholders and identity -------------------------------------------
