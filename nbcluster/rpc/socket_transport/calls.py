"""RunGraph's and RunStep's frames on the same-host data plane: control fields as protobuf, tensors raw.

Rules: the small fields travel as the serialized request / response message
with its tensor fields left empty; the tensors (RunGraph's sends and
fetches, RunStep's feeds and fetches) travel as `frames` batch
frames (raw array bytes, never a protobuf `bytes` field); nothing is
pickled. A frame that does not parse raises DataLossError naming the bad value.

Layout (little-endian; see `frames` for batch and error frames):

    request = "NBDP" u8 kind, i64 step_id (RunStep: 0), f64 timeout (< 0: none),
              u32 control_len, the request message (no tensors), then one batch
              (the feeds, in any order)
              kind 3 (RUN_GRAPH): RunGraphRequest;  kind 4 (RUN_STEP): RunStepRequest
    reply   = "R" u32 control_len, the response message (no tensors), then one
              batch (the fetches, in the request's order), or one error frame
"""
from __future__ import annotations

import struct
from typing import Optional

from nbcluster.proto import master_pb2, worker_pb2
from nbcluster.rpc.socket_transport import frames as wire

RUN_GRAPH, RUN_STEP = wire.RUN_GRAPH, wire.RUN_STEP
REQUESTS = {RUN_GRAPH: worker_pb2.RunGraphRequest, RUN_STEP: master_pb2.RunStepRequest}
RESPONSES = {RUN_GRAPH: worker_pb2.RunGraphResponse, RUN_STEP: master_pb2.RunStepResponse}
_REPLY = struct.Struct("<cI")


def encode_request(kind: int, request, feeds: list, timeout: Optional[float]) -> list:
    """The pieces of a RUN_GRAPH or RUN_STEP request frame.

    Args:
      kind: RUN_GRAPH or RUN_STEP.
      request: the request message without tensors (tensor fields are ignored).
      feeds: [(name, ndarray)], sent as raw batch entries.
      timeout: seconds the callee may take, None for no limit.
    Returns:
      bytes and array views for `frames.send_all`.
    """
    control = request.SerializeToString()
    step_id = request.step_id if kind == RUN_GRAPH else 0
    head = wire.encode_request_head(kind, step_id, len(control), timeout)
    return [head + control] + wire.encode_batch(feeds)


def read_request(reader: wire.FrameReader, kind: int, step_id: int, control: bytes) -> tuple:
    """(request message, [(name, ndarray)]): the rest of a request whose head
    `frames.read_request` read (`control`: its message's bytes).

    Raises:
      DataLossError: the message or the feeds are malformed, or a RunGraph
        names another step than its head.
      ConnectionClosed, OSError: from the socket.
    """
    request = _parse(REQUESTS[kind], control)
    if kind == RUN_GRAPH and request.step_id != step_id:
        raise wire.malformed(f"RunGraphRequest for step {request.step_id} in a frame for "
                             f"step {step_id}")
    return request, _read_batch(reader, f"{REQUESTS[kind].__name__} feeds")


def encode_reply(response, fetches: list, shared=None) -> list:
    """The pieces of a reply frame: `response` (without tensors) then
    `fetches` [(name, ndarray)] as one batch (`shared`: as `wire.encode_batch`'s)."""
    control = response.SerializeToString()
    return [_REPLY.pack(b"R", len(control)) + control] + wire.encode_batch(fetches, shared)


def read_reply(reader: wire.FrameReader, kind: int):
    """The reply to a request of `kind`: (response message, [(name, ndarray)]),
    or (code, message, node name) for an error frame.

    Raises:
      DataLossError: the frame is malformed.
      ConnectionClosed, socket.timeout, OSError: from the socket.
    """
    response_class = RESPONSES[kind]
    tag = bytes(reader.exact(1))
    if tag == b"X":
        return wire.read_error(reader)
    if tag != b"R":
        raise wire.malformed(f"{response_class.__name__} tag {tag!r}, expected b'R' or b'X'")
    (length,) = struct.unpack("<I", reader.exact(4))
    if length > wire.MAX_CONTROL:
        raise wire.malformed(f"a {response_class.__name__} of {length} bytes "
                             f"(at most {wire.MAX_CONTROL})")
    response = _parse(response_class, bytes(reader.exact(length)))
    return response, _read_batch(reader, f"{response_class.__name__} fetches")


def _parse(message_class, raw: bytes):
    try:
        return message_class.FromString(raw)
    except Exception as e:  # noqa: BLE001 - protobuf's DecodeError and friends
        raise wire.malformed(f"{message_class.__name__} of {len(raw)} bytes: {e}") from None


def _read_batch(reader: wire.FrameReader, what: str) -> list:
    batch = wire.read_reply(reader)
    if isinstance(batch, tuple):  # an error frame where tensors belong
        raise wire.malformed(f"an error frame in place of the {what}")
    return batch
