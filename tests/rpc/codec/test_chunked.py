"""Unit tests for nbcluster.rpc.chunked: framing round trips and bad streams (no sockets)."""
from __future__ import annotations

import numpy as np
import pytest

from nbcluster import errors
from nbcluster.errors import DataLossError
from nbcluster.proto import master_pb2, worker_pb2
from nbcluster.rpc.codec import chunked, messages, wire
from nbcluster.rpc.grpc_transport.streaming import PendingResponses

pytestmark = pytest.mark.timeout(60)

MIB = chunked.CHUNK_BYTES
REQUEST = messages.Layout(master_pb2.RunStepRequest, 2)
RECV = messages.Layout(worker_pb2.RecvTensorResponse, 1, named=False)
SIZES = [0, 1, 7, MIB - 1, MIB, MIB + 1, 3 * MIB + 5]
DTYPES = [np.uint8, np.int8, np.float16, np.float32, np.float64, np.int64, np.bool_,
          np.complex64, np.uint32]


def _array(nbytes: int, dtype, seed: int = 0) -> np.ndarray:
    dtype = np.dtype(dtype)
    raw = np.random.default_rng(seed).integers(0, 256, nbytes - nbytes % dtype.itemsize,
                                               dtype=np.uint8)
    if dtype == np.bool_:
        return raw % 2 == 1
    return raw.view(dtype)


def _round_trip(tensors, layout=REQUEST, chunk_bytes=MIB, message=None):
    message = message or master_pb2.RunStepRequest(session_handle="s", fetch=["y:0"])
    frames = list(chunked.encode_frames(message, layout, tensors, chunk_bytes))
    assert all(isinstance(f, bytes) for f in frames)
    assert all(len(f) == chunk_bytes for f in frames[1:-1])  # only the last may be short
    assert len(frames) == 1 + -(-chunked.content_bytes(tensors) // chunk_bytes)
    out_message, out = chunked.decode_frames(frames, layout)
    assert out_message == message
    assert [n for n, _ in out] == [n for n, _ in tensors]
    for (_, a), (_, b) in zip(tensors, out):
        assert b.dtype == a.dtype and b.shape == a.shape
        np.testing.assert_array_equal(a, b)
        if b.dtype != object:
            assert b.flags.writeable and b.flags.c_contiguous
            assert b.size == 0 or b.ctypes.data % 64 == 0
    return frames, out


@pytest.mark.parametrize("nbytes", SIZES)
@pytest.mark.parametrize("dtype", DTYPES)
def test_round_trip_sizes_and_dtypes(nbytes, dtype):
    _round_trip([("x:0", _array(nbytes, dtype))])


def test_shapes_and_scalars_round_trip():
    _round_trip([("a", np.float32(3.5)), ("b", np.zeros((0, 4), np.int32)),
                 ("c", np.arange(24, dtype=np.float64).reshape(2, 3, 4)),
                 ("d", np.arange(6, dtype=np.int16).reshape(3, 2).T)])  # not contiguous


def test_several_tensors_share_frames_across_boundaries():
    tensors = [(f"t{i}", _array(n, np.uint8, seed=i)) for i, n in enumerate([5, 13, 0, 64, 9])]
    frames, _ = _round_trip(tensors, chunk_bytes=16)
    assert b"".join(frames[1:]) == b"".join(a.tobytes() for _, a in tensors)


def test_strings_stay_in_the_head():
    words = np.array([b"alpha", "beta".encode(), b""], dtype=object)
    frames, out = _round_trip([("w", words), ("x", _array(MIB + 3, np.uint8))])
    assert out[0][1].tolist() == [b"alpha", b"beta", b""]
    assert sum(len(f) for f in frames[1:]) == MIB + 3


def test_bare_tensor_layout_round_trips():
    array = _array(2 * MIB + 16, np.float64).reshape(-1, 2)
    _round_trip([("", array)], layout=RECV, message=worker_pb2.RecvTensorResponse())


def test_head_plus_contents_is_the_whole_message():
    tensors = [("x:0", _array(40, np.float32)), ("y:0", _array(24, np.int64))]
    message = master_pb2.RunStepRequest(session_handle="s")
    frames = list(chunked.encode_frames(message, REQUEST, tensors, chunk_bytes=8))
    head = master_pb2.RunStepRequest.FromString(bytes(next(
        v for n, _, v, _, _ in wire.iter_fields(frames[0]) if n == 1)))
    assert head.session_handle == "s" and [f.name for f in head.feed] == ["x:0", "y:0"]
    contents = b"".join(frames[1:])
    for feed, (_, array) in zip(head.feed, tensors):
        assert feed.tensor.tensor_content == b""
        assert [d.size for d in feed.tensor.tensor_shape.dim] == list(array.shape)
        feed.tensor.tensor_content = contents[:array.nbytes]
        contents = contents[array.nbytes:]
    whole = master_pb2.RunStepRequest.FromString(messages.encode(message, REQUEST, tensors))
    assert head == whole


def test_large_tensor_frames_are_slices_not_a_join():
    array = _array(4 * MIB, np.uint8)
    frames = chunked.encode_frames(master_pb2.RunStepRequest(), REQUEST, [("x", array)])
    next(frames)
    first = next(frames)
    assert len(first) == MIB and first == array[:MIB].tobytes()


def test_threshold():
    small = [("x", np.zeros(chunked.STREAM_THRESHOLD // 4 - 1, np.float32))]
    big = [("x", np.zeros(chunked.STREAM_THRESHOLD, np.uint8))]
    assert not chunked.should_stream(small) and chunked.should_stream(big)
    assert chunked.content_bytes([("s", np.array([b"x" * 100], object))]) == 0


# -- bad streams -------------------------------------------------------------------

def _frames(nbytes=3 * MIB + 1):
    return list(chunked.encode_frames(master_pb2.RunStepRequest(session_handle="s"), REQUEST,
                                      [("x", _array(nbytes, np.uint8))]))


@pytest.mark.parametrize("cut", [
    lambda f: [],                          # no head
    lambda f: f[:-1],                      # last frame lost
    lambda f: f[:1],                       # head only
    lambda f: f[:-1] + [f[-1][:-1]],       # one byte short
    lambda f: f + [b"x"],                  # one byte too many
    lambda f: [f[0][:-3]] + f[1:],         # head cut
    lambda f: [b"\xff\xff\xff"] + f[1:],   # garbage head
    lambda f: [b""] + f[1:],               # empty head
    lambda f: [f[0].replace(b"\x10\x81\x80\xc0\x01", b"\x10\x80\x80\xc0\x01")] + f[1:],
], ids=["empty", "truncated", "head_only", "short", "long", "cut_head", "garbage", "no_message",
        "wrong_total"])
def test_bad_streams_are_data_loss(cut):
    with pytest.raises(DataLossError):
        chunked.decode_frames(cut(_frames()), REQUEST)


def test_head_with_values_for_a_streamed_tensor_is_data_loss():
    message = messages.encode(master_pb2.RunStepRequest(), REQUEST, [("x", np.ones(3))])
    head = wire.length_delimited(1, len(message)) + message + b"\x10\x18"
    with pytest.raises(DataLossError):
        chunked.decode_frames([head, bytes(24)], REQUEST)


def test_head_announcing_an_impossible_tensor_is_an_op_error():
    tensor = b"\x08\x01\x12\x0e\x12\x0c\x08\xff\xff\xff\xff\xff\xff\xff\xff\x3f"  # 2**62 floats
    entry = messages.encode_entry(REQUEST, "x", [tensor])
    body = b"".join(entry)
    head = wire.length_delimited(1, len(body)) + body + b"\x10\x00"
    with pytest.raises(errors.OpError):
        chunked.decode_frames([head], REQUEST)


def test_random_garbage_only_raises_op_errors():
    rng = np.random.default_rng(1)
    good = _frames(300)
    for _ in range(300):
        head = bytearray(good[0])
        for _ in range(3):
            head[rng.integers(len(head))] = rng.integers(256)
        try:
            chunked.decode_frames([bytes(head)] + good[1:], REQUEST)
        except errors.OpError:
            pass


# -- parked responses ----------------------------------------------------------------

def test_pending_responses_are_taken_once_and_expire():
    pending = PendingResponses(ttl=60.0)
    token = pending.park(iter([b"head"]))
    assert list(pending.take(token)) == [b"head"]
    with pytest.raises(errors.NotFoundError):
        pending.take(token)
    short = PendingResponses(ttl=-1.0)
    stale = short.park(iter(()))
    short.park(iter(()))  # parking sweeps expired entries
    with pytest.raises(errors.NotFoundError):
        short.take(stale)
