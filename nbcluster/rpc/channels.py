"""gRPC channel and server options, and one reused channel per target."""
from __future__ import annotations

import threading

import grpc
import grpc.experimental

MAX_MESSAGE = 2 ** 31 - 1
OPTIONS = [
    ("grpc.max_send_message_length", MAX_MESSAGE),
    ("grpc.max_receive_message_length", MAX_MESSAGE),
    ("grpc.http2.lookahead_bytes", 256 * 1024 * 1024),
]
SERVER_OPTIONS = OPTIONS + [("grpc.so_reuseport", 0)]
# A unary-stream call (PullResponse) read in the calling thread: no hand-off
# to the channel's polling thread per frame.
CHANNEL_OPTIONS = OPTIONS + [(grpc.experimental.ChannelOptions.SingleThreadedUnaryStream, 1)]

_channels: dict[str, grpc.Channel] = {}
_lock = threading.Lock()


def channel(address: str) -> grpc.Channel:
    """The shared channel to `address` (a new channel costs about 1 ms)."""
    with _lock:
        found = _channels.get(address)
        if found is None:
            found = _channels[address] = grpc.insecure_channel(address, options=CHANNEL_OPTIONS)
        return found


def forget(address: str) -> None:
    with _lock:
        found = _channels.pop(address, None)
    if found is not None:
        found.close()
