"""Calling a gRPC method: the one place a client's call failures become OpErrors naming the peer."""
from __future__ import annotations

import contextlib

import grpc

from nbcluster.rpc.grpc_transport import channels
from nbcluster.rpc.grpc_transport.status import from_rpc_error


@contextlib.contextmanager
def calling(peer: str):
    """Turns a failed gRPC call (or stream read) inside into the OpError of its status.

    Args:
      peer: how errors name the other side, e.g. "worker 127.0.0.1:2222".
    """
    try:
        yield
    except grpc.RpcError as e:
        raise from_rpc_error(e, peer) from None
    except ValueError as e:  # gRPC refuses a call on a closed channel with ValueError
        closed = channels.closed_channel_error(e, peer)
        if closed is None:
            raise
        raise closed from None
