"""TensorProto's field numbers and dtype table, and TF's small-tensor value forms
(the typed `*_val` fields, strings in `tensor_content`) read into arrays.

Shared by `tensor_encoding` and `tensor_decoding`. Rule: a size a peer
announced is only allocated under `allocating`, so a few bytes on the wire
asking for a huge tensor give an OpError, not a MemoryError.
"""
from __future__ import annotations

import contextlib

import numpy as np

from nbcluster.errors import DataLossError, InvalidArgumentError, ResourceExhaustedError
from nbcluster.framework import dtypes
from nbcluster.framework.tensor_size import check_expansion
from nbcluster.rpc.codec import wire

# Field numbers of TensorFlow's tensor.proto, tensor_shape.proto and
# NamedTensorProto.
DTYPE_FIELD, SHAPE_FIELD, CONTENT_FIELD, STRING_VAL_FIELD = 1, 2, 4, 8
DIM_FIELD, DIM_SIZE_FIELD, UNKNOWN_RANK_FIELD = 2, 1, 3
NAME_FIELD, TENSOR_FIELD = 1, 2

# Value field of each dtype and how to read it: "fixed" (packed little-endian
# floats), "signed"/"unsigned" (varints), "half" (float16 bits in a varint),
# "bool", "string".
VALUE_FIELDS = {
    dtypes.float16: (13, "half"), dtypes.float32: (5, "fixed"),
    dtypes.float64: (6, "fixed"), dtypes.complex64: (9, "fixed"),
    dtypes.complex128: (12, "fixed"), dtypes.int8: (7, "signed"),
    dtypes.int16: (7, "signed"), dtypes.int32: (7, "signed"),
    dtypes.uint8: (7, "signed"), dtypes.uint16: (7, "signed"),
    dtypes.int64: (10, "signed"), dtypes.uint32: (16, "unsigned"),
    dtypes.uint64: (17, "unsigned"), dtypes.bool: (11, "bool"),
    dtypes.string: (STRING_VAL_FIELD, "string"),
}
# enum -> (DType, value field, kind, little-endian numpy dtype or None)
BY_ENUM = {d.as_datatype_enum: (d, field, kind, None if kind == "string" else
                                np.dtype(d.as_numpy_dtype).newbyteorder("<"))
           for d, (field, kind) in VALUE_FIELDS.items()}
ENUM_BY_NP = {np.dtype(d.as_numpy_dtype): d.as_datatype_enum
              for d in VALUE_FIELDS if d is not dtypes.string}
STRING_ENUM = dtypes.string.as_datatype_enum


def typed_values(chunks, kind: str, npd: np.dtype) -> np.ndarray:
    """Decodes the *_val chunks (packed slices or single unpacked values).

    Args:
      chunks: (wire type, value) of each occurrence of the dtype's value field.
      kind: the dtype's reading from `VALUE_FIELDS` (not "string").
      npd: the little-endian numpy dtype of the result.

    Returns:
      A flat array of every value, in order (maybe fewer than the shape holds).

    Raises:
      DataLossError: a wire type the field cannot have, or a ragged packed slice.
      InvalidArgumentError: complex values that do not come in pairs.
    """
    if not chunks:
        return np.zeros(0, npd)
    parts = []
    if kind == "fixed":
        base = np.dtype(f"<f{npd.itemsize // 2}") if npd.kind == "c" else npd
        bits = np.dtype(f"<u{base.itemsize}")
        single = wire.FIXED32 if base.itemsize == 4 else wire.FIXED64
        for wire_type, value in chunks:
            if wire_type == wire.LENGTH_DELIMITED:
                if len(value) % base.itemsize:
                    raise DataLossError(None, None, "packed float values of ragged length")
                parts.append(np.frombuffer(value, base))
            elif wire_type == single:
                parts.append(np.array([value], bits).view(base))
            else:
                raise DataLossError(None, None, f"float values with wire type {wire_type}")
        flat = np.concatenate(parts)
        if npd.kind == "c":
            if flat.size % 2:
                raise InvalidArgumentError(None, None, "complex values need real/imag pairs")
            flat = flat.view(npd)
        return flat
    for wire_type, value in chunks:
        if wire_type == wire.LENGTH_DELIMITED:
            parts.append(wire.decode_packed_varints(value))
        elif wire_type == wire.VARINT:
            parts.append(np.array([value], np.uint64))
        else:
            raise DataLossError(None, None, f"integer values with wire type {wire_type}")
    raw = np.concatenate(parts)
    if kind == "bool":
        return raw != 0
    if kind == "half":
        return raw.astype(np.uint16).view(np.float16)
    if kind == "signed":
        raw = raw.view(np.int64)
    return raw.astype(npd)


def fill_to_shape(flat: np.ndarray, shape: tuple, count: int, dtype, zero) -> np.ndarray:
    """Applies TF's rule: no values is zeros, fewer repeat the last value.

    Args:
      flat: the values read; shape, count: the tensor's shape and element
        count; dtype: its DType (for messages); zero: what no values means.

    Returns:
      An array of `shape`.

    Raises:
      InvalidArgumentError: more values than the shape holds, or a shape too
        large to allocate.
      ResourceExhaustedError: the array cannot be allocated. (Making up missing
        values past `tensor_size.max_expanded_bytes()` is InvalidArgumentError.)
    """
    n = flat.size
    if n > count:
        raise InvalidArgumentError(
            None, None, f"TensorProto has {n} values for shape {list(shape)} of {dtype.name}")
    check_expansion(shape, count, flat.dtype.itemsize, dtype.name, n)  # before any allocation
    with allocating(dtype, shape):  # a few bytes on the wire can ask for a huge tensor
        if n == count:
            return flat.reshape(shape)
        if n == 0 and zero == 0:
            return np.zeros(shape, flat.dtype)  # calloc: no page touched yet
        out = np.full(count, flat[-1] if n else zero, flat.dtype)
        out[:n] = flat
        return out.reshape(shape)


@contextlib.contextmanager
def allocating(dtype, shape):
    """Maps a failed allocation for a tensor a peer described to an OpError."""
    try:
        yield
    except MemoryError:
        raise ResourceExhaustedError(
            None, None, f"cannot allocate a {dtype.name} tensor of shape {list(shape)}") from None
    except (ValueError, OverflowError):
        raise InvalidArgumentError(
            None, None, f"TensorProto shape {list(shape)} is too large") from None


def strings_from_content(content: memoryview, shape: tuple, count: int) -> np.ndarray:
    """Reads TF's string list encoding: `count` varint lengths, then the bytes.

    Returns:
      An object array of bytes of `shape`.

    Raises:
      InvalidArgumentError: the lengths do not add up to the content.
    """
    lengths, pos = [], 0
    for _ in range(count):
        size, pos = wire.read_varint(content, pos)
        lengths.append(size)
    if pos + sum(lengths) != len(content):
        raise InvalidArgumentError(None, None, "string tensor_content does not match its lengths")
    out = np.empty(count, object)
    for i, size in enumerate(lengths):
        out[i] = bytes(content[pos:pos + size])
        pos += size
    return out.reshape(shape)
