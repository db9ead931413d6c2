"""ndarray <-> TensorProto wire bytes, by hand: the payload is never copied.

Rule: encoding hands out the array's own buffer as the last piece; decoding
returns `np.frombuffer` over the message's `tensor_content` slice. Protobuf is
kept out of this path because it copies a `bytes` payload about eight times.
The bytes are exactly what protobuf would write for the same TensorProto, so
TensorFlow peers and any protobuf reader parse them.

What `encode_tensor` writes (field numbers are TensorFlow's tensor.proto)::

    08 <dtype varint>                               dtype = 1
    12 <len> { 12 <len> { 08 <size varint> } ... }  tensor_shape = 2 { dim = 2 { size = 1 } }
    22 <nbytes varint> <the array's buffer>         tensor_content = 4 (little-endian)
  or, for strings:
    42 <len> <utf-8 bytes> ...                      string_val = 8, one per element

`decode_tensor` also reads what TF writes for small tensors: the typed
`*_val` fields (packed or not, one value broadcast over the whole shape, a
short list padded with its last value) and strings in `tensor_content`
(TensorFlow's varint-lengths-then-bytes list).
"""
from __future__ import annotations

import contextlib

import functools
import math

import numpy as np

from nbcluster.errors import DataLossError, InvalidArgumentError, ResourceExhaustedError
from nbcluster.framework import dtypes
from nbcluster.rpc import wire

_DTYPE, _SHAPE, _CONTENT, _STRING_VAL = 1, 2, 4, 8
_DIM, _DIM_SIZE, _UNKNOWN_RANK = 2, 1, 3
_NAME, _TENSOR = 1, 2

# Value field of each dtype and how to read it: "fixed" (packed little-endian
# floats), "signed"/"unsigned" (varints), "half" (float16 bits in a varint),
# "bool", "string".
_VALUES = {
    dtypes.float16: (13, "half"), dtypes.float32: (5, "fixed"),
    dtypes.float64: (6, "fixed"), dtypes.complex64: (9, "fixed"),
    dtypes.complex128: (12, "fixed"), dtypes.int8: (7, "signed"),
    dtypes.int16: (7, "signed"), dtypes.int32: (7, "signed"),
    dtypes.uint8: (7, "signed"), dtypes.uint16: (7, "signed"),
    dtypes.int64: (10, "signed"), dtypes.uint32: (16, "unsigned"),
    dtypes.uint64: (17, "unsigned"), dtypes.bool: (11, "bool"),
    dtypes.string: (_STRING_VAL, "string"),
}
# enum -> (DType, value field, kind, little-endian numpy dtype or None)
_DECODE = {d.as_datatype_enum: (d, field, kind, None if kind == "string" else
                                np.dtype(d.as_numpy_dtype).newbyteorder("<"))
           for d, (field, kind) in _VALUES.items()}
_ENUM_BY_NP = {np.dtype(d.as_numpy_dtype): d.as_datatype_enum
               for d in _VALUES if d is not dtypes.string}
_STRING_ENUM = dtypes.string.as_datatype_enum


# ----------------------------------------------------------------- encoding

def encode_tensor(array) -> list:
    """Serializes an array as TensorProto bytes without copying its buffer.

    Args:
      array: an ndarray or anything `np.asarray` takes. Strings may be numpy
        bytes/str arrays or object arrays of bytes/str (str goes as utf-8).

    Returns:
      Buffer pieces (bytes, memoryview) whose concatenation is the message.
      The last piece may be a view of `array`'s memory: send it before
      mutating the array. Non-contiguous or big-endian arrays are copied once.

    Raises:
      InvalidArgumentError: the dtype has no TensorProto form.

    Example:
      >>> b"".join(encode_tensor(np.float32([1, 2])))
      b'\\x08\\x01\\x12\\x04\\x12\\x02\\x08\\x02"\\x08\\x00\\x00\\x80?\\x00\\x00\\x00@'
    """
    arr = np.asarray(array)
    npd = arr.dtype
    if npd.kind in "OSU":
        return _encode_strings(arr)
    little = npd.newbyteorder("<")
    enum = _ENUM_BY_NP.get(little)
    if enum is None:
        raise InvalidArgumentError(None, None, f"cannot encode a tensor of numpy dtype {npd}")
    arr = np.asarray(arr, dtype=little, order="C")  # ascontiguousarray makes 0-d 1-d
    header = _header(enum, arr.shape)
    if arr.nbytes == 0:
        return [header]
    return [header + wire.length_delimited(_CONTENT, arr.nbytes),
            memoryview(arr.reshape(-1).view(np.uint8))]


def encoded_size(pieces) -> int:
    """Returns the byte length of the concatenation of `pieces`."""
    return sum(p.nbytes if isinstance(p, memoryview) else len(p) for p in pieces)


def encode_named_tensor(field_number: int, name: str, array) -> list:
    """Serializes field `field_number` holding NamedTensorProto{name, tensor}.

    Append the pieces to the protobuf-serialized rest of a message (fields may
    come in any order) to send a feed or fetch without copying its payload.

    Example:
      >>> # RunStepRequest.feed is field 2
      >>> pieces = [request.SerializeToString(), *encode_named_tensor(2, "x:0", x)]
    """
    tensor = encode_tensor(array)
    head = named_tensor_prefix(field_number, name, encoded_size(tensor))
    return [head + tensor[0], *tensor[1:]]


def named_tensor_prefix(field_number: int, name: str, tensor_size: int) -> bytes:
    """The bytes of field `field_number` = NamedTensorProto{name, tensor} that
    come before its TensorProto of `tensor_size` bytes."""
    name_bytes = name.encode("utf-8")
    inner = wire.length_delimited(_NAME, len(name_bytes)) + name_bytes if name_bytes else b""
    inner += wire.length_delimited(_TENSOR, tensor_size)
    return wire.length_delimited(field_number, len(inner) + tensor_size) + inner


def split_content(array) -> tuple:
    """Splits an array's TensorProto into (bytes without the content, content).

    The first part is a valid TensorProto holding dtype and shape (strings:
    the whole tensor, their content is never split off); the second is a
    flat byte memoryview of the array's buffer, or None when there is
    nothing to split (strings, zero elements). The first part followed by
    field 4 (`tensor_content`) holding the second is `encode_tensor`'s message.

    Raises:
      InvalidArgumentError: the dtype has no TensorProto form.
    """
    arr = np.asarray(array)
    if arr.dtype.kind in "OSU":
        return _encode_strings(arr)[0], None
    pieces = encode_tensor(arr)
    if len(pieces) == 1:
        return pieces[0], None
    return _header(_ENUM_BY_NP[arr.dtype.newbyteorder("<")], arr.shape), pieces[1]


@functools.lru_cache(maxsize=1024)  # a training loop sends the same shapes each step
def _header(enum: int, shape: tuple) -> bytes:
    dims = b"".join(_dim(size) for size in shape)
    return (wire.tag(_DTYPE, wire.VARINT) + wire.encode_varint(enum)
            + wire.length_delimited(_SHAPE, len(dims)) + dims)


def _dim(size: int) -> bytes:
    if size == 0:  # proto3 leaves a zero out
        return wire.length_delimited(_DIM, 0)
    body = wire.tag(_DIM_SIZE, wire.VARINT) + wire.encode_varint(size)
    return wire.length_delimited(_DIM, len(body)) + body


def _encode_strings(arr: np.ndarray) -> list:
    parts = [_header(_STRING_ENUM, arr.shape)]
    for item in arr.reshape(-1).tolist():
        if isinstance(item, str):
            item = item.encode("utf-8")
        elif not isinstance(item, (bytes, bytearray)):
            raise InvalidArgumentError(
                None, None, f"string tensor holds a {type(item).__name__}: {item!r:.80}")
        parts.append(wire.length_delimited(_STRING_VAL, len(item)))
        parts.append(item)
    return [b"".join(parts)]


# ----------------------------------------------------------------- decoding

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
    entry = _DECODE.get(enum)
    if entry is None:
        what = "no dtype" if enum == 0 else f"unsupported dtype enum {enum}"
        raise InvalidArgumentError(None, None, f"TensorProto has {what}")
    dtype, field, kind, npd = entry
    count = math.prod(shape)
    if kind == "string":
        if content is not None and len(content):
            return _strings_from_content(content, shape, count)
        chunks = values.get(field, ())
        if any(wire_type != wire.LENGTH_DELIMITED for wire_type, _ in chunks):
            raise DataLossError(None, None, "TensorProto.string_val is not length-delimited")
        items = np.empty(len(chunks), object)
        items[:] = [bytes(v) for _, v in chunks]
        return _fill(items, shape, count, dtype, b"")
    if content is not None and len(content):
        if len(content) != count * npd.itemsize:
            raise InvalidArgumentError(
                None, None, f"tensor_content holds {len(content)} bytes; "
                f"shape {list(shape)} of {dtype.name} needs {count * npd.itemsize}")
        return np.frombuffer(content, npd).reshape(shape)
    flat = _typed_values(values.get(field, ()), kind, npd)
    return _fill(flat, shape, count, dtype, 0)


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
    entry = _DECODE.get(enum)
    if entry is None or entry[2] == "string":
        return decode_tensor(buf), None
    if content is not None or values:
        raise DataLossError(None, None, "streamed tensor header carries values")
    dtype, npd = entry[0], entry[3]
    with _allocating(dtype, shape):
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
        if number == _NAME:
            try:
                name = str(value, "utf-8")
            except UnicodeDecodeError as err:
                raise DataLossError(
                    None, None, f"NamedTensorProto name is not utf-8: {err}") from None
        elif number == _TENSOR:
            tensor = value
    return name, tensor


def _scan(mv: memoryview):
    enum, shape, content, values = 0, [], None, {}
    for number, wire_type, value, _, _ in wire.iter_fields(mv):
        if number == _DTYPE:
            _expect(wire_type, wire.VARINT, "dtype")
            enum = value
        elif number == _SHAPE:
            _expect(wire_type, wire.LENGTH_DELIMITED, "tensor_shape")
            shape.extend(_decode_shape(value))  # repeated messages merge
        elif number == _CONTENT:
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
        if number == _UNKNOWN_RANK and value:
            raise InvalidArgumentError(None, None, "TensorProto shape has unknown rank")
        if number != _DIM:
            continue
        _expect(wire_type, wire.LENGTH_DELIMITED, "tensor_shape.dim")
        size, end = (wire.read_varint(value, 1) if len(value) > 1 and value[0] == 0x08
                     else (0, -1))
        if end != len(value):  # not just `size` (empty, named, or odd): the long way
            size = 0
            for n, wt, v, _, _ in wire.iter_fields(value):
                if n == _DIM_SIZE:
                    _expect(wt, wire.VARINT, "tensor_shape.dim.size")
                    size = v
        size = wire.signed64(size)
        if size < 0:
            raise InvalidArgumentError(None, None, f"TensorProto shape has dimension {size}")
        dims.append(size)
    return dims


def _typed_values(chunks, kind: str, npd: np.dtype) -> np.ndarray:
    """Decodes the *_val chunks (packed slices or single unpacked values)."""
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


def _fill(flat: np.ndarray, shape: tuple, count: int, dtype, zero) -> np.ndarray:
    """Applies TF's rule: no values is zeros, fewer repeat the last value."""
    n = flat.size
    if n > count:
        raise InvalidArgumentError(
            None, None, f"TensorProto has {n} values for shape {list(shape)} of {dtype.name}")
    with _allocating(dtype, shape):  # a few bytes on the wire can ask for a huge tensor
        if n == count:
            return flat.reshape(shape)
        if n == 0 and zero == 0:
            return np.zeros(shape, flat.dtype)  # calloc: no page touched yet
        out = np.full(count, flat[-1] if n else zero, flat.dtype)
        out[:n] = flat
        return out.reshape(shape)


@contextlib.contextmanager
def _allocating(dtype, shape):
    """Maps a failed allocation for a tensor a peer described to an OpError."""
    try:
        yield
    except MemoryError:
        raise ResourceExhaustedError(
            None, None, f"cannot allocate a {dtype.name} tensor of shape {list(shape)}") from None
    except (ValueError, OverflowError):
        raise InvalidArgumentError(
            None, None, f"TensorProto shape {list(shape)} is too large") from None


def _strings_from_content(content: memoryview, shape: tuple, count: int) -> np.ndarray:
    """Reads TF's string list encoding: `count` varint lengths, then the bytes."""
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


# ------------------------------------------------------- protobuf objects

def to_tensor_proto(array):
    """Returns a `graph_pb2.TensorProto` for `array` (constants in AttrValue)."""
    from nbcluster.proto import graph_pb2  # kept off the step path's imports

    return graph_pb2.TensorProto.FromString(b"".join(encode_tensor(array)))


def from_tensor_proto(proto) -> np.ndarray:
    """Returns the array a TensorProto object holds (read-only for tensor_content)."""
    return decode_tensor(proto.SerializeToString())
