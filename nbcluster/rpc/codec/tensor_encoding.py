"""ndarray -> TensorProto wire bytes, by hand: the payload is never copied.

Rule: encoding hands out the array's own buffer as the last piece.
Protobuf is kept out of this path because it copies a `bytes` payload about
eight times. The bytes are exactly what protobuf would write for the same
TensorProto, so TensorFlow peers and any protobuf reader parse them
(`tensor_decoding` reads them back, and what TF writes besides).

What `encode_tensor` writes (field numbers are TensorFlow's tensor.proto)::

    08 <dtype varint>                               dtype = 1
    12 <len> { 12 <len> { 08 <size varint> } ... }  tensor_shape = 2 { dim = 2 { size = 1 } }
    22 <nbytes varint> <the array's buffer>         tensor_content = 4 (little-endian)
  or, for strings:
    42 <len> <utf-8 bytes> ...                      string_val = 8, one per element
"""
from __future__ import annotations

import functools

import numpy as np

from nbcluster.errors import InvalidArgumentError
from nbcluster.rpc.codec import wire
from nbcluster.rpc.codec.tensor_values import (
    CONTENT_FIELD,
    DIM_FIELD,
    DIM_SIZE_FIELD,
    DTYPE_FIELD,
    ENUM_BY_NP,
    NAME_FIELD,
    SHAPE_FIELD,
    STRING_ENUM,
    STRING_VAL_FIELD,
    TENSOR_FIELD,
)


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
    enum = ENUM_BY_NP.get(little)
    if enum is None:
        raise InvalidArgumentError(None, None, f"cannot encode a tensor of numpy dtype {npd}")
    arr = np.asarray(arr, dtype=little, order="C")  # ascontiguousarray makes 0-d 1-d
    header = _header(enum, arr.shape)
    if arr.nbytes == 0:
        return [header]
    return [header + wire.length_delimited(CONTENT_FIELD, arr.nbytes),
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
    inner = wire.length_delimited(NAME_FIELD, len(name_bytes)) + name_bytes \
        if name_bytes else b""
    inner += wire.length_delimited(TENSOR_FIELD, tensor_size)
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
    return _header(ENUM_BY_NP[arr.dtype.newbyteorder("<")], arr.shape), pieces[1]


def to_tensor_proto(array):
    """Returns a `graph_pb2.TensorProto` for `array` (constants in AttrValue)."""
    from nbcluster.proto import graph_pb2  # kept off the step path's imports

    return graph_pb2.TensorProto.FromString(b"".join(encode_tensor(array)))


@functools.lru_cache(maxsize=1024)  # a training loop sends the same shapes each step
def _header(enum: int, shape: tuple) -> bytes:
    dims = b"".join(_dim(size) for size in shape)
    return (wire.tag(DTYPE_FIELD, wire.VARINT) + wire.encode_varint(enum)
            + wire.length_delimited(SHAPE_FIELD, len(dims)) + dims)


def _dim(size: int) -> bytes:
    if size == 0:  # proto3 leaves a zero out
        return wire.length_delimited(DIM_FIELD, 0)
    body = wire.tag(DIM_SIZE_FIELD, wire.VARINT) + wire.encode_varint(size)
    return wire.length_delimited(DIM_FIELD, len(body)) + body


def _encode_strings(arr: np.ndarray) -> list:
    parts = [_header(STRING_ENUM, arr.shape)]
    for item in arr.reshape(-1).tolist():
        if isinstance(item, str):
            item = item.encode("utf-8")
        elif not isinstance(item, (bytes, bytearray)):
            raise InvalidArgumentError(
                None, None, f"string tensor holds a {type(item).__name__}: {item!r:.80}")
        parts.append(wire.length_delimited(STRING_VAL_FIELD, len(item)))
        parts.append(item)
    return [b"".join(parts)]
