"""Messages that carry tensors: protobuf for the small fields, the tensors
written and read by hand (`tensor_encoding`, `tensor_decoding`), so payloads
are never copied by protobuf. The bytes are what protobuf itself would write.

    [protobuf-serialized small fields][tag len (Named)TensorProto]...

This is the whole-message (unary) form; `chunked` streams the same message
in 1 MiB frames when its tensors are large.
"""
from __future__ import annotations

from typing import NamedTuple, Optional

from nbcluster.rpc.codec import wire
from nbcluster.rpc.codec.tensor_decoding import decode_named_tensor, decode_tensor
from nbcluster.rpc.codec.tensor_encoding import encode_tensor, encoded_size, named_tensor_prefix
from nbcluster.rpc.codec.wire import split_fields  # noqa: F401 - re-exported for peers


class Layout(NamedTuple):
    """Where a message type keeps its tensors.

    field: the repeated field that holds them, None for a message without any.
    named: entries are NamedTensorProto (RunStep, RunGraph); otherwise the
      field is one bare TensorProto (RecvTensorResponse.tensor) and the
      tensor's name is "".
    """
    message_class: type
    field: Optional[int]
    named: bool = True


def encode(message, layout: Layout, tensors) -> bytes:
    """`message` serialized, then each (name, array) of `tensors` as `layout.field`."""
    return b"".join(encode_pieces(message, layout, tensors))


def encode_pieces(message, layout: Layout, tensors) -> list:
    """The pieces of `encode`'s bytes; large payloads are views, not copies."""
    pieces = [message.SerializeToString()]
    for name, array in tensors:
        pieces.extend(encode_entry(layout, name, encode_tensor(array)))
    return pieces


def encode_entry(layout: Layout, name: str, tensor: list) -> list:
    """An encoded tensor (`encode_tensor`'s pieces) as one `layout.field` entry."""
    size = encoded_size(tensor)
    if layout.named:
        head = named_tensor_prefix(layout.field, name, size)
    else:
        head = wire.length_delimited(layout.field, size)
    return [head + tensor[0], *tensor[1:]]


def decode(buf, layout: Layout) -> tuple:
    """(message without the tensors, [(name, ndarray), ...]) from `encode`'s bytes.

    Arrays are views of `buf` (read-only when it is bytes).

    Raises:
      DataLossError: malformed bytes.
    """
    if layout.field is None:
        return layout.message_class.FromString(bytes(buf)), []
    rest, fields = split_fields(buf, [layout.field])
    message = layout.message_class.FromString(rest)
    entries = fields[layout.field]
    if layout.named:
        return message, [decode_named_tensor(mv) for mv in entries]
    return message, [("", decode_tensor(mv)) for mv in entries]
