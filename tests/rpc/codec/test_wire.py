"""Unit tests for nbcluster.rpc.wire, checked against protobuf's own codec."""
from __future__ import annotations

import random

import numpy as np
import pytest
from google.protobuf import descriptor_pb2

from nbcluster.errors import DataLossError
from nbcluster.rpc.codec import wire

pytestmark = pytest.mark.timeout(60)

VARINTS = [0, 1, 127, 128, 300, 16383, 16384, 2**31 - 1, 2**32, 2**63 - 1, 2**64 - 1]


@pytest.mark.parametrize("n", VARINTS)
def test_varint_round_trip(n):
    data = wire.encode_varint(n)
    assert wire.read_varint(data, 0) == (n, len(data))
    assert wire.read_varint(b"\x00" + data + b"\x01", 1) == (n, len(data) + 1)


@pytest.mark.parametrize("n", [-1, -2, -(2**31), -(2**63)])
def test_negative_varints_are_ten_byte_twos_complement(n):
    data = wire.encode_varint(n)
    assert len(data) == 10
    value, _ = wire.read_varint(data, 0)
    assert wire.signed64(value) == n


def test_varints_match_protobuf():
    # SourceCodeInfo.Location.path is a packed repeated int32.
    values = [0, 1, 300, -1, 2**31 - 1, -(2**31), 7]
    loc = descriptor_pb2.SourceCodeInfo.Location(path=values)
    data = loc.SerializeToString()
    [(number, wire_type, payload, _, _)] = list(wire.iter_fields(data))
    assert (number, wire_type) == (1, wire.LENGTH_DELIMITED)
    decoded = wire.decode_packed_varints(payload).view(np.int64)
    assert decoded.tolist() == values
    assert data == wire.length_delimited(1, len(payload)) + b"".join(
        wire.encode_varint(v) for v in values)


def test_decode_packed_varints_empty_and_truncated():
    assert wire.decode_packed_varints(b"").size == 0
    with pytest.raises(DataLossError):
        wire.decode_packed_varints(b"\x01\x80")
    with pytest.raises(DataLossError):
        wire.decode_packed_varints(b"\xff" * 10 + b"\x01")


def test_tag_and_length_delimited():
    assert wire.tag(1, wire.VARINT) == b"\x08"
    assert wire.tag(4, wire.LENGTH_DELIMITED) == b"\x22"
    assert wire.tag(16, wire.VARINT) == b"\x80\x01"
    assert wire.length_delimited(2, 300) == b"\x12\xac\x02"


def _all_wire_types() -> bytes:
    return (wire.tag(1, wire.VARINT) + wire.encode_varint(150)
            + wire.length_delimited(2, 3) + b"abc"
            + wire.tag(3, wire.FIXED32) + (7).to_bytes(4, "little")
            + wire.tag(4, wire.FIXED64) + (2**40).to_bytes(8, "little")
            + wire.length_delimited(2000, 0))


def test_iter_fields_all_wire_types():
    data = _all_wire_types()
    fields = list(wire.iter_fields(data))
    assert [(f[0], f[1]) for f in fields] == [(1, 0), (2, 2), (3, 5), (4, 1), (2000, 2)]
    assert fields[0][2] == 150 and fields[2][2] == 7 and fields[3][2] == 2**40
    assert bytes(fields[1][2]) == b"abc" and bytes(fields[4][2]) == b""
    assert fields[0][3] == 0 and fields[-1][4] == len(data)
    for a, b in zip(fields, fields[1:]):
        assert a[4] == b[3]


def test_iter_fields_slices_do_not_copy():
    buf = bytearray(wire.length_delimited(5, 4) + b"\x01\x02\x03\x04")
    [(_, _, payload, _, _)] = list(wire.iter_fields(buf))
    assert isinstance(payload, memoryview)
    assert np.shares_memory(np.frombuffer(payload, np.uint8), np.frombuffer(buf, np.uint8))
    assert list(wire.iter_fields(memoryview(buf)))
    assert list(wire.iter_fields(np.frombuffer(buf, np.uint8)))


def test_split_fields_rest_parses_with_protobuf():
    msg = descriptor_pb2.DescriptorProto(name="Outer")
    msg.field.add(name="a", number=1)
    msg.field.add(name="b", number=2)
    msg.nested_type.add(name="Inner")
    msg.options.deprecated = True
    data = msg.SerializeToString()
    rest, pulled = wire.split_fields(data, (2, 99))
    assert pulled[99] == []
    assert [descriptor_pb2.FieldDescriptorProto.FromString(bytes(v)).name
            for v in pulled[2]] == ["a", "b"]
    parsed = descriptor_pb2.DescriptorProto.FromString(rest)
    assert isinstance(rest, bytes)
    assert parsed.name == "Outer" and not parsed.field
    assert parsed.nested_type[0].name == "Inner" and parsed.options.deprecated


def test_split_fields_wrong_wire_type_is_data_loss():
    data = wire.tag(2, wire.VARINT) + b"\x01"
    with pytest.raises(DataLossError, match="field 2"):
        wire.split_fields(data, [2])


@pytest.mark.parametrize("bad", [
    b"\x80",                                  # key varint cut short
    b"\x08",                                  # value varint missing
    b"\x08\x80\x80",                          # value varint cut short
    b"\x08" + b"\xff" * 10 + b"\x01",         # varint over 10 bytes
    b"\x12\x05abc",                           # length past the end
    b"\x1d\x01\x02",                          # fixed32 cut short
    b"\x21\x01\x02\x03\x04\x05\x06\x07",      # fixed64 cut short
    b"\x0b\x0c",                              # group wire types
    b"\x00\x01",                              # field number 0
    b"\x0e",                                  # wire type 6
])
def test_malformed_input_is_data_loss(bad):
    with pytest.raises(DataLossError):
        list(wire.iter_fields(bad))
    with pytest.raises(DataLossError):
        wire.split_fields(bad, [2])


def test_random_truncation_and_corruption_only_raise_data_loss():
    msg = descriptor_pb2.DescriptorProto(name="x" * 40)
    for i in range(20):
        msg.field.add(name=f"f{i}", number=i + 1, default_value="v" * i)
    data = msg.SerializeToString()
    rng = random.Random(0)
    cases = [data[:cut] for cut in range(len(data))]
    for _ in range(300):
        corrupt = bytearray(data)
        for _ in range(rng.randint(1, 4)):
            corrupt[rng.randrange(len(corrupt))] = rng.randrange(256)
        cases.append(bytes(corrupt))
    for case in cases:
        try:
            fields = list(wire.iter_fields(case))
        except DataLossError:
            continue
        assert sum(f[4] - f[3] for f in fields) == len(case)
