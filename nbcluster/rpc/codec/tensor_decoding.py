"""TensorProto wire bytes -> ndarray, by hand: the payload is never copied.

Rule: decoding returns `np.frombuffer` over the message's `tensor_content`
slice; protobuf is kept out of this path because it copies the payload.
Besides what `tensor_encoding` writes, it reads what TF writes for small
tensors (`tensor_values`): the typed `*_val` fields (packed or not, one value
broadcast over the whole shape, a short list padded with its last value) and
strings in `tensor_content` (TensorFlow's varint-lengths-then-bytes list).
For streamed tensors, `empty_for` allocates the array a content-less header
announces, for the content to be written straight into.
"""
from __future__ import annotations

import math

import numpy as np

from nbcluster.errors import DataLossError, InvalidArgumentError
from nbcluster.framework.tensor_size import check_shape
from nbcluster.rpc.codec import wire
from nbcluster.rpc.codec.tensor_values import (
    BY_ENUM,
    CONTENT_FIELD,
    DIM_FIELD,
    DIM_SIZE_FIELD,
    DTYPE_FIELD,
    NAME_FIELD,
    SHAPE_FIELD,
    TENSOR_FIELD,
    UNKNOWN_RANK_FIELD,
    allocating,
    fill_to_shape,
    strings_from_content,
    typed_values,
)


def decode_tensor(buf) -> np.ndarray:
    """Parses serialized TensorProto bytes into an ndarray.

    Args:
      buf: the message (bytes, bytearray, memoryview, or a uint8 ndarray).

    Returns:
      The array. When the message carries `tensor_content` the result is a
      view of `buf` (no copy): read-only if `buf` is, alive as long as it is,
      and possibly not aligned to its itemsize (numpy copes). Strings come
      back as an object array of bytes.

    Raises:
      DataLossError: the bytes are not a well-formed message.
      InvalidArgumentError: unknown dtype, bad shape, or content that does
        not match the shape.

    Example:
      >>> decode_tensor(b"".join(encode_tensor(np.arange(3.0))))
      array([0., 1., 2.])
    """
    enum, shape, content, values = _scan(wire.as_byte_view(buf))
    entry = BY_ENUM.get(enum)
    if entry is None:
        what = "no dtype" if enum == 0 else f"unsupported dtype enum {enum}"
        raise InvalidArgumentError(None, None, f"TensorProto has {what}")
    dtype, field, kind, npd = entry
    count = check_shape(shape)
    if kind == "string":
        if content is not None and len(content):
            return strings_from_content(content, shape, count)
        chunks = values.get(field, ())
        if any(wire_type != wire.LENGTH_DELIMITED for wire_type, _ in chunks):
            raise DataLossError(None, None, "TensorProto.string_val is not length-delimited")
        items = np.empty(len(chunks), object)
        items[:] = [bytes(v) for _, v in chunks]
        return fill_to_shape(items, shape, count, dtype, b"")
    if content is not None and len(content):
        if len(content) != count * npd.itemsize:
            raise InvalidArgumentError(
                None, None, f"tensor_content holds {len(content)} bytes; "
                f"shape {list(shape)} of {dtype.name} needs {count * npd.itemsize}")
        return np.frombuffer(content, npd).reshape(shape)
    flat = typed_values(values.get(field, ()), kind, npd)
    return fill_to_shape(flat, shape, count, dtype, 0)


def empty_for(buf) -> tuple:
    """Allocates the array a content-less TensorProto (see `split_content`) announces.

    Args:
      buf: TensorProto bytes with dtype and shape and no content or values;
        for strings, the whole tensor.

    Returns:
      (array, content): `content` is a writable flat uint8 view of the new,
      64-byte aligned array for its content bytes to be written into, or None
      when the array is already complete (strings, zero elements).

    Raises:
      DataLossError: malformed bytes, or a numeric tensor that already carries
        values.
      InvalidArgumentError: unknown dtype or bad shape.
      ResourceExhaustedError: the array cannot be allocated.
    """
    enum, shape, content, values = _scan(wire.as_byte_view(buf))
    entry = BY_ENUM.get(enum)
    if entry is None or entry[2] == "string":
        return decode_tensor(buf), None
    if content is not None or values:
        raise DataLossError(None, None, "streamed tensor header carries values")
    dtype, npd = entry[0], entry[3]
    with allocating(dtype, shape):
        array = aligned_empty(shape, npd)
    if array.size == 0:
        return array, None
    return array, array.reshape(-1).view(np.uint8)


def aligned_empty(shape: tuple, dtype, align: int = 64) -> np.ndarray:
    """An uninitialised, writable, C-contiguous array whose data starts on an
    `align`-byte boundary (SIMD and BLAS read it in place)."""
    npd = np.dtype(dtype)
    nbytes = math.prod(shape) * npd.itemsize
    raw = np.empty(nbytes + align, np.uint8)
    offset = -raw.ctypes.data % align
    return raw[offset:offset + nbytes].view(npd).reshape(shape)


def decode_named_tensor(buf) -> tuple[str, np.ndarray]:
    """Parses NamedTensorProto bytes into (name, array); see `decode_tensor`."""
    name, tensor = split_named(buf)
    return name, decode_tensor(tensor)


def split_named(buf) -> tuple[str, memoryview]:
    """Parses NamedTensorProto bytes into (name, the TensorProto's bytes), copying nothing."""
    name, tensor = "", memoryview(b"")
    for number, wire_type, value, _, _ in wire.iter_fields(buf):
        if wire_type != wire.LENGTH_DELIMITED:
            continue
        if number == NAME_FIELD:
            try:
                name = str(value, "utf-8")
            except UnicodeDecodeError as err:
                raise DataLossError(
                    None, None, f"NamedTensorProto name is not utf-8: {err}") from None
        elif number == TENSOR_FIELD:
            tensor = value
    return name, tensor


def from_tensor_proto(proto) -> np.ndarray:
    """Returns the array a TensorProto object holds (read-only for tensor_content)."""
    return decode_tensor(proto.SerializeToString())


def _scan(mv: memoryview):
    enum, shape, content, values = 0, [], None, {}
    for number, wire_type, value, _, _ in wire.iter_fields(mv):
        if number == DTYPE_FIELD:
            _expect(wire_type, wire.VARINT, "dtype")
            enum = value
        elif number == SHAPE_FIELD:
            _expect(wire_type, wire.LENGTH_DELIMITED, "tensor_shape")
            shape.extend(_decode_shape(value))  # repeated messages merge
        elif number == CONTENT_FIELD:
            _expect(wire_type, wire.LENGTH_DELIMITED, "tensor_content")
            content = value
        else:
            values.setdefault(number, []).append((wire_type, value))
    return enum, tuple(shape), content, values


def _expect(wire_type: int, expected: int, what: str) -> None:
    if wire_type != expected:
        raise DataLossError(None, None, f"TensorProto.{what} has wire type {wire_type}")


def _decode_shape(mv: memoryview) -> list:
    dims = []
    for number, wire_type, value, _, _ in wire.iter_fields(mv):
        if number == UNKNOWN_RANK_FIELD and value:
            raise InvalidArgumentError(None, None, "TensorProto shape has unknown rank")
        if number != DIM_FIELD:
            continue
        _expect(wire_type, wire.LENGTH_DELIMITED, "tensor_shape.dim")
        size, end = (wire.read_varint(value, 1) if len(value) > 1 and value[0] == 0x08
                     else (0, -1))
        if end != len(value):  # not just `size` (empty, named, or odd): the long way
            size = 0
            for n, wt, v, _, _ in wire.iter_fields(value):
                if n == DIM_SIZE_FIELD:
                    _expect(wt, wire.VARINT, "tensor_shape.dim.size")
                    size = v
        size = wire.signed64(size)
        if size < 0:
            raise InvalidArgumentError(None, None, f"TensorProto shape has dimension {size}")
        dims.append(size)
    return dims
