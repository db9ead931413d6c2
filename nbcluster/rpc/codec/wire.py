"""Bytes of the protobuf wire format, read and written by hand without copies.

Rule: no payload is ever copied on the way in; length-delimited fields come out
as memoryview slices of the caller's buffer. Malformed or truncated input
raises DataLossError, never IndexError or a silent wrong answer.

A message is a sequence of fields, each a key varint then a value::

    key = (field_number << 3) | wire_type
    wire_type 0  varint        7 bits a byte, low group first, high bit = "more"
    wire_type 1  fixed64       8 bytes little-endian
    wire_type 2  length-delim  varint length, then that many bytes
    wire_type 5  fixed32       4 bytes little-endian
    (3 and 4, groups, are proto2 relics: rejected here)

Negative int32/int64 values travel as 10-byte varints of their 64-bit two's
complement; `signed64` turns a decoded varint back into the signed value.
"""
from __future__ import annotations

from collections.abc import Iterable, Iterator

import numpy as np

from nbcluster.errors import DataLossError

VARINT, FIXED64, LENGTH_DELIMITED, FIXED32 = 0, 1, 2, 5

_MASK64 = (1 << 64) - 1
_MAX_VARINT_BYTES = 10


def _data_loss(message: str) -> DataLossError:
    return DataLossError(None, None, message)


def encode_varint(n: int) -> bytes:
    """Returns `n` as a varint; negative values as their 64-bit two's complement."""
    if 0 <= n < 0x80:
        return bytes((n,))
    if n < 0:
        n &= _MASK64
    out = bytearray()
    while n >= 0x80:
        out.append((n & 0x7F) | 0x80)
        n >>= 7
    out.append(n)
    return bytes(out)


def tag(field_number: int, wire_type: int) -> bytes:
    """Returns the key varint that opens a field."""
    return encode_varint((field_number << 3) | wire_type)


def length_delimited(field_number: int, size: int) -> bytes:
    """Returns the key and length prefix of a length-delimited field.

    The `size` payload bytes are written separately, right after these.

    Example:
      >>> length_delimited(4, 300) + b"x" * 300   # a 300-byte bytes field 4
    """
    return tag(field_number, LENGTH_DELIMITED) + encode_varint(size)


def read_varint(buf, pos: int) -> tuple[int, int]:
    """Reads the varint at `buf[pos]`; returns (unsigned value, next position).

    Raises:
      DataLossError: the varint is truncated or longer than 10 bytes.
    """
    try:
        b = buf[pos]
    except IndexError:
        raise _data_loss(f"truncated varint at byte {pos}") from None
    if b < 0x80:
        return b, pos + 1
    result = b & 0x7F
    shift = 7
    end = min(len(buf), pos + _MAX_VARINT_BYTES)
    pos += 1
    while pos < end:
        b = buf[pos]
        pos += 1
        result |= (b & 0x7F) << shift
        if b < 0x80:
            return result & _MASK64, pos
        shift += 7
    if pos == len(buf) and shift < 7 * _MAX_VARINT_BYTES:
        raise _data_loss(f"truncated varint at byte {pos}")
    raise _data_loss(f"varint longer than {_MAX_VARINT_BYTES} bytes at byte {pos}")


def signed64(value: int) -> int:
    """Reads a decoded varint as an int64 (how int32/int64 fields carry negatives)."""
    return value - (1 << 64) if value >= (1 << 63) else value


def as_byte_view(buf) -> memoryview:
    """Returns a flat unsigned-byte memoryview over any C-contiguous buffer."""
    mv = buf if isinstance(buf, memoryview) else memoryview(buf)
    if mv.format != "B" or mv.ndim != 1:
        mv = mv.cast("B")
    return mv


def iter_fields(buf) -> Iterator[tuple[int, int, int | memoryview, int, int]]:
    """Walks the top-level fields of a serialized message, copying nothing.

    Args:
      buf: the message bytes (bytes, bytearray, memoryview, numpy array).

    Yields:
      (field_number, wire_type, value, start, end): `value` is an int for
      varint and fixed fields (unsigned; see `signed64`) and a memoryview slice
      of `buf` for length-delimited ones; `buf[start:end]` is the whole field,
      key included.

    Raises:
      DataLossError: the bytes are not a well-formed message.

    Example:
      >>> [f[:3] for f in iter_fields(b"\\x08\\x01")]
      [(1, 0, 1)]
    """
    mv = as_byte_view(buf)
    n = len(mv)
    pos = 0
    while pos < n:
        start = pos
        key = mv[pos]
        if key < 0x80:  # one-byte fast paths: most keys, lengths and values
            pos += 1
        else:
            key, pos = read_varint(mv, pos)
        field_number, wire_type = key >> 3, key & 7
        if field_number == 0:
            raise _data_loss(f"field number 0 at byte {start}")
        if wire_type == VARINT:
            value, pos = read_varint(mv, pos)
        elif wire_type == LENGTH_DELIMITED:
            if pos < n and mv[pos] < 0x80:
                size = mv[pos]
                pos += 1
            else:
                size, pos = read_varint(mv, pos)
            if size > n - pos:
                raise _data_loss(f"field {field_number} at byte {start} claims "
                                 f"{size} bytes, {n - pos} left")
            value = mv[pos:pos + size]
            pos += size
        elif wire_type == FIXED32 or wire_type == FIXED64:
            width = 4 if wire_type == FIXED32 else 8
            if width > n - pos:
                raise _data_loss(f"truncated fixed field {field_number} at byte {start}")
            value = int.from_bytes(mv[pos:pos + width], "little")
            pos += width
        else:
            raise _data_loss(f"unsupported wire type {wire_type} for field "
                             f"{field_number} at byte {start}")
        yield field_number, wire_type, value, start, pos


def split_fields(buf, field_numbers: Iterable[int]) -> tuple[bytes, dict[int, list[memoryview]]]:
    """Pulls length-delimited fields out of a message; keeps the rest parseable.

    Args:
      buf: the serialized message.
      field_numbers: the fields to pull out (each must be length-delimited).

    Returns:
      (rest, pulled): `rest` is the other fields' raw bytes in order, ready for
      protobuf's `ParseFromString`; `pulled[n]` lists the payload slices of
      field `n` in order (an empty list when absent), views into `buf`.

    Raises:
      DataLossError: malformed bytes, or a pulled field with another wire type.

    Example:
      >>> rest, pulled = split_fields(response_bytes, (4,))   # 4: NamedTensorProto
    """
    mv = as_byte_view(buf)
    wanted = {int(f): [] for f in field_numbers}
    spans: list[tuple[int, int]] = []
    for number, wire_type, value, start, end in iter_fields(mv):
        slices = wanted.get(number)
        if slices is None:
            if spans and spans[-1][1] == start:
                spans[-1] = (spans[-1][0], end)
            else:
                spans.append((start, end))
        elif wire_type != LENGTH_DELIMITED:
            raise _data_loss(f"field {number} has wire type {wire_type}, "
                             "expected length-delimited")
        else:
            slices.append(value)
    if len(spans) == 1 and spans[0] == (0, len(mv)):
        return mv.tobytes(), wanted
    return b"".join([mv[s:e] for s, e in spans]), wanted


def decode_packed_varints(payload) -> np.ndarray:
    """Decodes a packed repeated varint field into uint64 values, vectorised.

    Raises:
      DataLossError: the last varint is truncated or one is over 10 bytes.
    """
    raw = np.frombuffer(as_byte_view(payload), np.uint8)
    if raw.size == 0:
        return np.zeros(0, np.uint64)
    last = raw < 0x80
    if not last[-1]:
        raise _data_loss("truncated packed varint")
    ends = np.flatnonzero(last)
    starts = np.empty_like(ends)
    starts[0] = 0
    starts[1:] = ends[:-1] + 1
    if int((ends - starts).max()) >= _MAX_VARINT_BYTES:
        raise _data_loss(f"packed varint longer than {_MAX_VARINT_BYTES} bytes")
    offsets = np.arange(raw.size) - np.repeat(starts, ends - starts + 1)
    groups = (raw & 0x7F).astype(np.uint64) << (7 * offsets).astype(np.uint64)
    return np.add.reduceat(groups, starts)
