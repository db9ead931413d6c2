"""Messages that carry tensors: protobuf for the small fields, the tensors
written and read by hand (`tensor_codec`), so payloads are never copied by
protobuf. The bytes are what protobuf itself would write.

    [protobuf-serialized small fields][tag len NamedTensorProto]...
"""
from __future__ import annotations

from nbcluster.rpc.tensor_codec import decode_named_tensor, encode_named_tensor
from nbcluster.rpc.wire import split_fields  # noqa: F401 - re-exported for peers


def encode(message, field_number: int, tensors) -> bytes:
    """`message` serialized, then each (name, array) as field `field_number`."""
    pieces = [message.SerializeToString()]
    for name, array in tensors:
        pieces.extend(encode_named_tensor(field_number, name, array))
    return b"".join(pieces)


def decode(buf: bytes, message_class, field_number: int) -> tuple:
    """(message without the tensors, [(name, ndarray), ...])."""
    rest, fields = split_fields(buf, [field_number])
    message = message_class.FromString(rest)
    return message, [decode_named_tensor(mv) for mv in fields[field_number]]
