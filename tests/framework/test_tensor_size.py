"""A TensorProto's claimed size is checked before anything is allocated."""
import numpy as np
import pytest

from nbcluster import errors
from nbcluster.framework import tensor_size
from nbcluster.framework.tensor_util import make_ndarray, make_tensor_proto
from nbcluster.proto import graph_pb2
from nbcluster.rpc.codec.tensor_decoding import decode_tensor


def _proto(shape, float_val=(), dtype=1):
    proto = graph_pb2.TensorProto(dtype=dtype, float_val=list(float_val))
    proto.tensor_shape.dim.extend(graph_pb2.TensorShapeProto.Dim(size=d) for d in shape)
    return proto


@pytest.mark.parametrize("decode", [make_ndarray,
                                    lambda p: decode_tensor(p.SerializeToString())])
def test_made_up_values_stop_at_the_limit(monkeypatch, decode):
    monkeypatch.setenv(tensor_size.ENV, "4000")
    np.testing.assert_array_equal(decode(_proto([1000], [2.0])), np.full(1000, 2, np.float32))
    with pytest.raises(errors.InvalidArgumentError, match=r"\[1001\] \(4004 bytes\)"):
        decode(_proto([1001], [2.0]))
    with pytest.raises(errors.InvalidArgumentError, match="4004 bytes"):
        decode(_proto([1001]))  # no values: zeros, made up all the same


def test_a_tensor_whose_bytes_all_arrive_is_not_bounded(monkeypatch):
    monkeypatch.setenv(tensor_size.ENV, "16")
    value = np.arange(100, dtype=np.float32)
    np.testing.assert_array_equal(make_ndarray(make_tensor_proto(value)), value)


def test_the_default_limit_is_256_mib(monkeypatch):
    monkeypatch.delenv(tensor_size.ENV, raising=False)
    assert tensor_size.max_expanded_bytes() == 256 << 20


@pytest.mark.parametrize("proto, message", [
    (_proto([2**32, 2**32]), "more than a tensor can hold"),
    (_proto([3], [1.0, 2.0, 3.0, 4.0]), "4 values for shape [3]"),
    (_proto([1], dtype=999), "unknown dtype enum 999"),
    (_proto([0, 2**62]), "cannot be represented"),  # empty, but numpy cannot hold it
    (_proto([1], dtype=20), "dtype resource cannot be read"),  # found by the fuzz test
    (graph_pb2.TensorProto(dtype=1, tensor_content=b"\0" * 5,
                           tensor_shape=graph_pb2.TensorShapeProto(
                               dim=[graph_pb2.TensorShapeProto.Dim(size=3)])),
     "holds 5 bytes"),
])
def test_malformed_protos_are_invalid_argument(proto, message):
    with pytest.raises(errors.InvalidArgumentError) as info:
        make_ndarray(proto)
    assert message in info.value.message
