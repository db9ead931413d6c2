"""Unit tests for the hand TensorProto codec (rpc/tensor_encoding.py,
rpc/tensor_decoding.py) against protobuf's TensorProto."""
from __future__ import annotations

import numpy as np
import pytest

from nbcluster.errors import DataLossError, InvalidArgumentError
from nbcluster.framework import dtypes
from nbcluster.proto import graph_pb2, master_pb2
from nbcluster.rpc.codec import tensor_decoding as decoding
from nbcluster.rpc.codec import tensor_encoding as encoding
from nbcluster.rpc.codec import wire

pytestmark = pytest.mark.timeout(60)

NUMERIC = [np.float16, np.float32, np.float64, np.int8, np.int16, np.int32, np.int64,
           np.uint8, np.uint16, np.uint32, np.uint64, np.bool_, np.complex64, np.complex128]
SHAPES = [(), (0,), (3, 0), (5,), (2, 3, 4)]


def _sample(npd, shape, seed=0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    npd = np.dtype(npd)
    if npd == np.bool_:
        return rng.random(shape) < 0.5
    if npd.kind in "iu":
        info = np.iinfo(npd)
        return rng.integers(info.min, info.max, size=shape, dtype=npd, endpoint=True)
    values = rng.standard_normal(shape) * 100
    if npd.kind == "c":
        values = values + 1j * rng.standard_normal(shape)
    return np.asarray(values).astype(npd)


def _join(pieces) -> bytes:
    return b"".join(pieces)


def _proto(npd, shape, **fields) -> graph_pb2.TensorProto:
    return graph_pb2.TensorProto(
        dtype=dtypes.as_dtype(npd).as_datatype_enum,
        tensor_shape=graph_pb2.TensorShapeProto(
            dim=[graph_pb2.TensorShapeProto.Dim(size=s) for s in shape]),
        **fields)


def _assert_same(got: np.ndarray, want: np.ndarray) -> None:
    assert got.shape == want.shape
    if want.dtype.kind in "OSU":
        assert got.dtype == object
    else:
        assert got.dtype == want.dtype.newbyteorder("=")
    np.testing.assert_array_equal(got, want)


# -------------------------------------------------------- round trips

@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("npd", NUMERIC, ids=lambda d: np.dtype(d).name)
def test_numeric_round_trip_and_protobuf_agrees(npd, shape):
    arr = _sample(npd, shape)
    pieces = encoding.encode_tensor(arr)
    data = _join(pieces)
    assert encoding.encoded_size(pieces) == len(data)
    _assert_same(decoding.decode_tensor(data), arr)
    parsed = graph_pb2.TensorProto.FromString(data)
    assert parsed.dtype == dtypes.as_dtype(npd).as_datatype_enum
    assert [d.size for d in parsed.tensor_shape.dim] == list(shape)
    assert parsed.tensor_content == arr.tobytes()
    assert parsed.SerializeToString() == data  # canonical: byte for byte protobuf's
    assert data == _proto(npd, shape, tensor_content=arr.tobytes()).SerializeToString()


STRINGS = [
    np.array([b"abc", b"", b"\x00\xff"], dtype=object),
    np.array([["héllo", "wörld"], ["日本", ""]]),
    np.array([b"x", b"yz"]),
    np.array(b"scalar", dtype=object),
    np.array(["mixed", b"bytes"], dtype=object),
    np.zeros((0, 2), dtype=object),
]


@pytest.mark.parametrize("arr", STRINGS, ids=range(len(STRINGS)))
def test_string_round_trip_and_protobuf_agrees(arr):
    data = _join(encoding.encode_tensor(arr))
    want = np.vectorize(lambda s: s.encode() if isinstance(s, str) else bytes(s),
                        otypes=[object])(arr) if arr.size else arr
    _assert_same(decoding.decode_tensor(data), want)
    parsed = graph_pb2.TensorProto.FromString(data)
    assert parsed.dtype == dtypes.string.as_datatype_enum
    assert list(parsed.string_val) == list(want.reshape(-1))
    assert parsed.SerializeToString() == data


@pytest.mark.parametrize("make", [
    lambda a: a[:, ::2],
    lambda a: a.T,
    np.asfortranarray,
    lambda a: a.astype(a.dtype.newbyteorder(">")),
    lambda a: a[::-1, 1:3].astype(">f8"),
], ids=["strided", "transposed", "fortran", "big-endian", "big-endian-strided"])
def test_awkward_layouts_round_trip(make):
    arr = make(np.arange(20, dtype=np.float64).reshape(4, 5) * 1.5)
    data = _join(encoding.encode_tensor(arr))
    got = decoding.decode_tensor(data)
    np.testing.assert_array_equal(got, arr)
    assert got.dtype == np.float64 and got.dtype.isnative
    assert graph_pb2.TensorProto.FromString(data).tensor_content == np.ascontiguousarray(
        arr, dtype="<f8").tobytes()


def test_big_endian_integers_and_complex():
    for npd in (">i2", ">u4", ">i8", ">c8", ">c16", ">f2"):
        arr = _sample(np.dtype(npd).newbyteorder("="), (3, 2)).astype(npd)
        got = decoding.decode_tensor(_join(encoding.encode_tensor(arr)))
        np.testing.assert_array_equal(got, arr)


def test_python_values_and_input_buffer_kinds():
    assert decoding.decode_tensor(_join(encoding.encode_tensor(3.5))).item() == 3.5
    data = _join(encoding.encode_tensor([[1, 2], [3, 4]]))
    for buf in (data, bytearray(data), memoryview(data), np.frombuffer(data, np.uint8)):
        np.testing.assert_array_equal(decoding.decode_tensor(buf), [[1, 2], [3, 4]])
    assert decoding.decode_tensor(bytearray(data)).flags.writeable


def test_encode_shares_the_array_buffer():
    arr = np.arange(1000, dtype=np.float32)
    pieces = encoding.encode_tensor(arr)
    assert np.shares_memory(np.frombuffer(pieces[-1], np.uint8), arr)


# -------------------------------------------------- protobuf -> ours

def test_decodes_protobuf_tensor_content():
    arr = _sample(np.int32, (4, 3))
    proto = _proto(np.int32, (4, 3), tensor_content=arr.tobytes())
    _assert_same(decoding.decode_tensor(proto.SerializeToString()), arr)


TYPED = [
    (np.float32, "float_val", [1.5, -2.25, 3.0]),
    (np.float64, "double_val", [1e300, -2.5, 0.1]),
    (np.int32, "int_val", [0, -1, 2**31 - 1, -(2**31)]),
    (np.int8, "int_val", [-128, 127, -1]),
    (np.int16, "int_val", [-32768, 32767]),
    (np.uint8, "int_val", [0, 255, 7]),
    (np.uint16, "int_val", [0, 65535]),
    (np.int64, "int64_val", [-(2**63), 2**63 - 1, -5]),
    (np.uint32, "uint32_val", [0, 2**32 - 1]),
    (np.uint64, "uint64_val", [0, 2**64 - 1, 2**63]),
    (np.bool_, "bool_val", [True, False, True]),
]


@pytest.mark.parametrize("npd,field,values", TYPED, ids=[t[1] + "-" + np.dtype(t[0]).name
                                                          for t in TYPED])
def test_decodes_protobuf_typed_values(npd, field, values):
    proto = _proto(npd, (len(values),), **{field: values})
    _assert_same(decoding.decode_tensor(proto.SerializeToString()), np.array(values, npd))


def test_decodes_protobuf_half_and_complex_values():
    halves = np.float16([1.5, -0.0, np.inf, 65504])
    proto = _proto(np.float16, (2, 2), half_val=halves.view(np.uint16).tolist())
    _assert_same(decoding.decode_tensor(proto.SerializeToString()), halves.reshape(2, 2))
    c64 = np.complex64([1 + 2j, -3.5j])
    proto = _proto(np.complex64, (2,), scomplex_val=c64.view(np.float32).tolist())
    _assert_same(decoding.decode_tensor(proto.SerializeToString()), c64)
    c128 = np.complex128([1e100 + 2j])
    proto = _proto(np.complex128, (), dcomplex_val=c128.view(np.float64).tolist())
    _assert_same(decoding.decode_tensor(proto.SerializeToString()), c128.reshape(()))


def test_decodes_protobuf_string_val():
    proto = _proto(object, (2,), string_val=[b"a\x00b", "ü".encode()])
    _assert_same(decoding.decode_tensor(proto.SerializeToString()),
                 np.array([b"a\x00b", "ü".encode()], dtype=object))


@pytest.mark.parametrize("npd,field,value", [
    (np.float32, "float_val", 7.5), (np.int32, "int_val", -3), (np.bool_, "bool_val", True),
    (np.float16, "half_val", int(np.float16(2.5).view(np.uint16))),
    (np.complex64, "scomplex_val", None), (object, "string_val", b"s"),
])
def test_single_value_fills_the_shape(npd, field, value):
    values = [1.0, 2.0] if field == "scomplex_val" else [value]
    proto = _proto(npd, (2, 3), **{field: values})
    got = decoding.decode_tensor(proto.SerializeToString())
    assert got.shape == (2, 3)
    want = {"scomplex_val": 1 + 2j, "half_val": 2.5}.get(field, value)
    assert all(v == want for v in got.reshape(-1).tolist())


def test_short_value_list_repeats_its_last_value():
    proto = _proto(np.int64, (5,), int64_val=[1, 2])
    assert decoding.decode_tensor(proto.SerializeToString()).tolist() == [1, 2, 2, 2, 2]


def test_no_values_is_zeros():
    for npd in (np.float32, np.int8, np.bool_, np.complex128):
        got = decoding.decode_tensor(_proto(npd, (2, 2)).SerializeToString())
        _assert_same(got, np.zeros((2, 2), npd))
    got = decoding.decode_tensor(_proto(object, (2,)).SerializeToString())
    assert got.tolist() == [b"", b""]


def test_decodes_unpacked_typed_values():
    # Old proto2 writers send repeated scalars one field each; parsers accept both.
    head = _proto(np.float32, (3,)).SerializeToString()
    floats = np.float32([1.5, -2.0, 8.0])
    data = head + b"".join(wire.tag(5, wire.FIXED32) + v.tobytes() for v in floats)
    assert list(graph_pb2.TensorProto.FromString(data).float_val) == floats.tolist()
    _assert_same(decoding.decode_tensor(data), floats)
    head = _proto(np.int32, (3,)).SerializeToString()
    data = head + b"".join(wire.tag(7, wire.VARINT) + wire.encode_varint(v) for v in (4, -4))
    data += wire.length_delimited(7, 1) + b"\x09"  # packed and unpacked may mix
    assert decoding.decode_tensor(data).tolist() == [4, -4, 9]


def test_decodes_tf_string_tensor_content():
    # TensorFlow's AsProtoTensorContent: varint lengths, then the bytes.
    items = [b"ab", b"", b"x" * 200]
    content = b"".join(wire.encode_varint(len(s)) for s in items) + b"".join(items)
    proto = _proto(object, (3,), tensor_content=content)
    assert decoding.decode_tensor(proto.SerializeToString()).tolist() == items


# ------------------------------------------------ named tensors, objects

def test_named_tensor_round_trip_and_protobuf_agrees():
    arr = _sample(np.float32, (3, 4))
    pieces = encoding.encode_named_tensor(5, "layer/w:0", arr)
    data = _join(pieces)
    rest, pulled = wire.split_fields(data, [5])
    assert rest == b"" and len(pulled[5]) == 1
    named = graph_pb2.NamedTensorProto.FromString(bytes(pulled[5][0]))
    assert named.name == "layer/w:0"
    assert named.tensor.tensor_content == arr.tobytes()
    name, got = decoding.decode_named_tensor(pulled[5][0])
    assert name == "layer/w:0"
    _assert_same(got, arr)
    assert named.SerializeToString() == bytes(pulled[5][0])


def test_pieces_appended_to_protobuf_fields_parse():
    # The step path: protobuf writes the small fields, our pieces follow.
    arrays = [_sample(np.float32, (2, 3)), np.array([b"s"], dtype=object)]
    data = graph_pb2.AttrValue.ListValue(i=[1, 2]).SerializeToString()
    for arr in arrays:
        pieces = encoding.encode_tensor(arr)
        data += wire.length_delimited(8, encoding.encoded_size(pieces)) + _join(pieces)
    parsed = graph_pb2.AttrValue.ListValue.FromString(data)
    assert list(parsed.i) == [1, 2] and len(parsed.tensor) == 2
    rest, pulled = wire.split_fields(data, [8])
    assert graph_pb2.AttrValue.ListValue.FromString(rest) == graph_pb2.AttrValue.ListValue(i=[1, 2])
    for arr, payload in zip(arrays, pulled[8]):
        _assert_same(decoding.decode_tensor(payload), arr)


def test_named_tensor_pieces_extend_a_run_step_request():
    head = master_pb2.RunStepRequest(session_handle="s", fetch=["y:0"]).SerializeToString()
    x = _sample(np.int64, (3,))
    data = head + _join(encoding.encode_named_tensor(2, "x:0", x))
    parsed = master_pb2.RunStepRequest.FromString(data)
    assert parsed.session_handle == "s" and parsed.feed[0].name == "x:0"
    assert parsed.feed[0].tensor.tensor_content == x.tobytes()


def test_decodes_protobuf_named_tensor():
    arr = np.array([["u", "v"]], dtype=object)
    named = graph_pb2.NamedTensorProto(name="feed", tensor=encoding.to_tensor_proto(arr))
    name, got = decoding.decode_named_tensor(named.SerializeToString())
    assert name == "feed" and got.tolist() == [[b"u", b"v"]]


@pytest.mark.parametrize("arr", [np.arange(6, dtype=np.int32).reshape(2, 3), np.float16(1.5),
                                 np.array([b"a"], dtype=object), np.zeros((0, 4), np.uint8)])
def test_tensor_proto_objects(arr):
    proto = encoding.to_tensor_proto(arr)
    assert isinstance(proto, graph_pb2.TensorProto)
    assert proto.dtype == dtypes.as_dtype(arr.dtype).as_datatype_enum
    _assert_same(decoding.from_tensor_proto(proto), arr)


# ------------------------------------------------------------- errors

def _content_proto(**overrides) -> bytes:
    fields = dict(dtype=1, tensor_content=np.float32([1, 2, 3]).tobytes(),
                  tensor_shape=graph_pb2.TensorShapeProto(dim=[{"size": 3}]))
    fields.update(overrides)
    return graph_pb2.TensorProto(**fields).SerializeToString()


@pytest.mark.parametrize("data,match", [
    (_content_proto(dtype=0), "dtype"),
    (_content_proto(dtype=14), "dtype"),           # bfloat16: not supported
    (_content_proto(dtype=20), "dtype"),           # resource
    (_content_proto(tensor_shape=graph_pb2.TensorShapeProto(dim=[{"size": 4}])), "bytes"),
    (_content_proto(tensor_shape=graph_pb2.TensorShapeProto(dim=[{"size": -1}])), "-1"),
    (_content_proto(tensor_shape=graph_pb2.TensorShapeProto(unknown_rank=True)), "rank"),
    (_proto(np.int32, (2,), int_val=[1, 2, 3]).SerializeToString(), "3 values"),
    (_proto(object, (3,), tensor_content=b"\x05ab").SerializeToString(), "lengths"),
])
def test_invalid_content_is_invalid_argument(data, match):
    with pytest.raises(InvalidArgumentError, match=match):
        decoding.decode_tensor(data)


def test_wrong_wire_types_are_data_loss():
    for data in (wire.length_delimited(1, 1) + b"\x01",        # dtype as bytes
                 b"\x08\x01" + wire.tag(2, wire.VARINT) + b"\x01",  # shape as varint
                 b"\x08\x01" + wire.tag(4, wire.FIXED32) + b"\x00" * 4,
                 b"\x08\x01" + wire.tag(5, wire.VARINT) + b"\x01"):  # float_val varint
        with pytest.raises(DataLossError):
            decoding.decode_tensor(data)


def test_truncation_raises_data_loss_never_crashes():
    samples = [_sample(np.float64, (3, 4)), np.array(["ab", "cdé"]), _sample(np.int64, (2,))]
    for arr in samples:
        data = _join(encoding.encode_tensor(arr))
        for cut in range(len(data)):
            try:
                decoding.decode_tensor(data[:cut])
            except (DataLossError, InvalidArgumentError):
                pass
    data = _join(encoding.encode_tensor(samples[0]))
    for cut in range(len(data) - 8 * 12 + 1, len(data)):  # inside tensor_content
        with pytest.raises(DataLossError):
            decoding.decode_tensor(data[:cut])
    with pytest.raises(DataLossError):
        decoding.decode_named_tensor(_join(encoding.encode_named_tensor(1, "x", samples[0]))[2:-1])


def test_corrupt_bytes_raise_op_errors_only():
    rng = np.random.default_rng(1)
    data = _join(encoding.encode_named_tensor(2, "t", _sample(np.int16, (4, 4))))[2:]
    for _ in range(500):
        corrupt = bytearray(data)
        for i in rng.integers(0, len(data), size=3):
            corrupt[i] = int(rng.integers(256))
        try:
            decoding.decode_named_tensor(bytes(corrupt))
        except (DataLossError, InvalidArgumentError):
            pass


def test_unencodable_values_are_invalid_argument():
    with pytest.raises(InvalidArgumentError, match="datetime64"):
        encoding.encode_tensor(np.array(["2020-01-01"], dtype="datetime64[D]"))
    with pytest.raises(InvalidArgumentError, match="int"):
        encoding.encode_tensor(np.array([b"a", 3], dtype=object))


def test_huge_shape_without_values_is_an_op_error():
    data = _proto(np.float32, (0, 2**62, 2**62)).SerializeToString()
    with pytest.raises(InvalidArgumentError):
        decoding.decode_tensor(data)


# -------------------------------------------------------------- copies

def test_64mib_decode_is_zero_copy():
    arr = np.arange(16 * 2**20, dtype=np.float32)
    data = _join(encoding.encode_tensor(arr))
    got = decoding.decode_tensor(data)
    assert np.shares_memory(got, np.frombuffer(data, np.uint8))
    base = got
    while isinstance(base, np.ndarray):
        base = base.base
    assert isinstance(base, memoryview) and base.obj is data
    assert not got.flags.writeable
    np.testing.assert_array_equal(got, arr)
    named = bytearray(_join(encoding.encode_named_tensor(1, "big", arr)))
    _, payload = wire.split_fields(named, [1])
    name, got = decoding.decode_named_tensor(payload[1][0])
    assert name == "big" and np.shares_memory(got, np.frombuffer(named, np.uint8))
