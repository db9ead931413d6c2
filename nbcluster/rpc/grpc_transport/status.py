"""OpError <-> gRPC status: the one place the two meet.

TF's error codes equal gRPC's status codes, so the code travels as the
status; the node name travels in trailing metadata.
"""
from __future__ import annotations

import grpc

from nbcluster import errors
from nbcluster.rpc.peer_status import remote_error

_NODE_KEY = "nbcluster-node"
_BY_VALUE = {code.value[0]: code for code in grpc.StatusCode}


def abort(context, error: errors.OpError) -> None:
    """Ends the RPC with `error`'s code, message and node name."""
    if error.node_name:
        context.set_trailing_metadata(((_NODE_KEY, error.node_name),))
    context.abort(_BY_VALUE.get(error.error_code, grpc.StatusCode.UNKNOWN), error.message)


def from_rpc_error(e: grpc.RpcError, target: str) -> errors.OpError:
    """The OpError a failed call stands for, of the class the server raised."""
    code = e.code()
    node = None
    for key, value in (e.trailing_metadata() or ()):
        if key == _NODE_KEY:
            node = value
    return remote_error(code.value[0], e.details() or str(code), node, target)
