"""ndarray <-> TensorProto objects (TF's make_tensor_proto / make_ndarray).

This is the protobuf-object path for graph constants; the step path encodes
tensors by hand (`nbcluster.rpc.codec.tensor_encoding` / `tensor_decoding`).
"""
from __future__ import annotations

import numpy as np

from nbcluster import errors
from nbcluster.framework import dtypes
from nbcluster.framework.tensor_size import check_expansion, check_shape
from nbcluster.framework.values import to_numpy
from nbcluster.proto import graph_pb2

_VAL_FIELDS = {
    "float32": "float_val", "float64": "double_val", "int32": "int_val", "int16": "int_val",
    "int8": "int_val", "uint8": "int_val", "uint16": "int_val", "int64": "int64_val",
    "bool": "bool_val", "uint32": "uint32_val", "uint64": "uint64_val",
    "complex64": "scomplex_val", "complex128": "dcomplex_val",
}


def make_tensor_proto(values, dtype=None, shape=None) -> "graph_pb2.TensorProto":
    array = to_numpy(values, dtype)
    if shape is not None:
        array = np.broadcast_to(array, tuple(shape)) if array.size == 1 else \
            array.reshape(tuple(shape))
    proto = graph_pb2.TensorProto()
    proto.tensor_shape.dim.extend(graph_pb2.TensorShapeProto.Dim(size=d) for d in array.shape)
    if array.dtype == object:
        proto.dtype = dtypes.string.as_datatype_enum
        proto.string_val.extend(array.reshape(-1).tolist())
        return proto
    proto.dtype = dtypes.as_dtype(array.dtype).as_datatype_enum
    proto.tensor_content = np.ascontiguousarray(array).astype(
        array.dtype.newbyteorder("<"), copy=False).tobytes()
    return proto


def make_ndarray(proto) -> np.ndarray:
    """The array a TensorProto object holds.

    Raises:
      InvalidArgumentError: an unknown dtype, a bad shape, or contents that do
        not match the shape (the message names them).
      InvalidArgumentError: also a few values asking for a tensor past
        `tensor_size.max_expanded_bytes()`.
    """
    try:
        dtype = dtypes.as_dtype(proto.dtype)
    except TypeError:
        raise errors.InvalidArgumentError(
            None, None, f"TensorProto has unknown dtype enum {proto.dtype}") from None
    if proto.tensor_shape.unknown_rank:
        raise errors.InvalidArgumentError(None, None, "TensorProto shape has unknown rank")
    shape = tuple(d.size for d in proto.tensor_shape.dim)
    count = check_shape(shape)
    if dtype == dtypes.string:
        values = list(proto.string_val)
        _check_count(len(values), count, shape, dtype)
        check_expansion(shape, count, 8, dtype.name, len(values))
        out = np.empty(count, dtype=object)
        out[:] = values if len(values) == count else (values[-1:] * count if values else [b""] * count)
        return out.reshape(shape)
    if dtype != dtypes.float16 and dtype.name not in _VAL_FIELDS:
        raise errors.InvalidArgumentError(
            None, None, f"TensorProto of dtype {dtype.name} cannot be read as values")
    np_dtype = np.dtype(dtype.as_numpy_dtype)
    if proto.tensor_content:
        if len(proto.tensor_content) != count * np_dtype.itemsize:
            raise errors.InvalidArgumentError(
                None, None, f"TensorProto tensor_content holds {len(proto.tensor_content)} "
                            f"bytes; shape {list(shape)} of {dtype.name} needs "
                            f"{count * np_dtype.itemsize}")
        return np.frombuffer(proto.tensor_content, dtype=np_dtype.newbyteorder("<")) \
            .astype(np_dtype, copy=False).reshape(shape)
    if dtype == dtypes.float16:
        values = np.array(proto.half_val, dtype=np.uint16).view(np.float16)
    else:
        values = np.array(getattr(proto, _VAL_FIELDS[dtype.name]), dtype=np_dtype.type
                          if not dtype.name.startswith("complex") else np.float32)
        if dtype.name.startswith("complex"):
            if values.size % 2:
                raise errors.InvalidArgumentError(
                    None, None, f"TensorProto of {dtype.name} has {values.size} floats, not "
                                f"real/imaginary pairs")
            values = values[0::2] + 1j * values[1::2]
    _check_count(values.size, count, shape, dtype)
    if values.size == count:
        return values.astype(np_dtype).reshape(shape)
    check_expansion(shape, count, np_dtype.itemsize, dtype.name, values.size)
    fill = values[-1] if values.size else 0
    out = np.full(count, fill, dtype=np_dtype)
    out[:values.size] = values
    return out.reshape(shape)


def _check_count(given: int, count: int, shape: tuple, dtype) -> None:
    if given > count:
        raise errors.InvalidArgumentError(
            None, None, f"TensorProto has {given} values for shape {list(shape)} of "
                        f"{dtype.name}, which holds {count}")
