"""The channel options: the one grpc.experimental constant channels.py spells by value."""
from __future__ import annotations

import grpc.experimental

from nbcluster.rpc.grpc_transport import channels


def test_the_single_threaded_unary_stream_option_is_grpcs_own():
    assert channels.SINGLE_THREADED_UNARY_STREAM == \
        grpc.experimental.ChannelOptions.SingleThreadedUnaryStream
    assert (channels.SINGLE_THREADED_UNARY_STREAM, 1) in channels.CHANNEL_OPTIONS
    assert (channels.SINGLE_THREADED_UNARY_STREAM, 1) in channels.POLLING_OPTIONS
