"""OpError <-> gRPC status: the one place the two meet.

TF's error codes equal gRPC's status codes, so the code travels as the
status; the node name travels in trailing metadata.
"""
from __future__ import annotations

from typing import Optional

import grpc

from nbcluster import errors

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


def remote_error(code: int, message: str, node: Optional[str], target: str) -> errors.OpError:
    """The OpError for a status (`code`, `message`, `node`) that `target` sent,
    over gRPC or the same-host data plane alike.

    Args:
      code: TF's (= gRPC's) status code.
      target: how the message names the peer, e.g. "worker 127.0.0.1:2222".
    Returns:
      An instance of the code's class (UnknownError for a code not in the table).
    """
    if code == grpc.StatusCode.UNAVAILABLE.value[0] and "ping timeout" in message:
        message = (f"{target} stopped answering (no reply to gRPC keepalive pings: the "
                   f"task hangs or its host is unreachable): {message}")
    elif code == grpc.StatusCode.UNAVAILABLE.value[0]:
        message = f"{message} (target {target})"
    elif code == grpc.StatusCode.DEADLINE_EXCEEDED.value[0] and "Deadline" in message:
        message = f"{message} waiting for {target}"
    cls = errors.exception_type_from_error_code(code) \
        if code in errors.CODE_TO_EXCEPTION_CLASS else errors.UnknownError
    return cls(None, None, message, node_name=node)
