"""Benchmark: the hand TensorProto codec next to protobuf's own, in GB/s.

Prints one JSON line per case. "encode" is ndarray -> one bytes object (ours:
encode_tensor + join, the copy grpcio would make anyway; protobuf: tobytes +
constructor + SerializeToString). "decode" is bytes -> ndarray (ours:
decode_tensor, zero copy; protobuf: FromString + np.frombuffer of
tensor_content). The *_only columns time protobuf's serialize / parse alone.

Run from the repository root: python -m benchmarks.tensor_codec
"""
from __future__ import annotations

import json
import statistics
import time

import numpy as np

from nbcluster.proto import graph_pb2
from nbcluster.rpc.codec.tensor_decoding import decode_tensor
from nbcluster.rpc.codec.tensor_encoding import encode_tensor

CASES = [("float32 1MiB", 2**20, 300), ("float32 64MiB", 64 * 2**20, 12)]


def _median_seconds(fn, repeats: int) -> float:
    fn()  # warm-up
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def _pb_build(arr: np.ndarray) -> graph_pb2.TensorProto:
    return graph_pb2.TensorProto(
        dtype=1, tensor_content=arr.tobytes(),
        tensor_shape=graph_pb2.TensorShapeProto(
            dim=[graph_pb2.TensorShapeProto.Dim(size=s) for s in arr.shape]))


def _pb_decode(data: bytes) -> np.ndarray:
    proto = graph_pb2.TensorProto.FromString(data)
    shape = [d.size for d in proto.tensor_shape.dim]
    return np.frombuffer(proto.tensor_content, np.float32).reshape(shape)


def run_case(name: str, nbytes: int, repeats: int) -> dict:
    arr = np.random.default_rng(0).standard_normal(nbytes // 4).astype(np.float32)
    data = b"".join(encode_tensor(arr))
    proto = _pb_build(arr)
    assert proto.SerializeToString() == data
    seconds = {
        "ours_encode": _median_seconds(lambda: b"".join(encode_tensor(arr)), repeats),
        "ours_decode": _median_seconds(lambda: decode_tensor(data), repeats),
        "pb_encode": _median_seconds(lambda: _pb_build(arr).SerializeToString(), repeats),
        "pb_decode": _median_seconds(lambda: _pb_decode(data), repeats),
        "pb_serialize_only": _median_seconds(proto.SerializeToString, repeats),
        "pb_parse_only": _median_seconds(lambda: graph_pb2.TensorProto.FromString(data),
                                         repeats),
    }
    row = {"case": name, "bytes": nbytes}
    row.update({f"{k}_gbps": round(nbytes / s / 1e9, 2) for k, s in seconds.items()})
    row["encode_speedup"] = round(seconds["pb_encode"] / seconds["ours_encode"], 1)
    row["decode_speedup"] = round(seconds["pb_decode"] / seconds["ours_decode"], 1)
    row["ours_decode_us"] = round(seconds["ours_decode"] * 1e6, 1)
    return row


def main() -> None:
    for case in CASES:
        print(json.dumps(run_case(*case)), flush=True)


if __name__ == "__main__":
    main()
