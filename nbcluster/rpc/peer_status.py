"""A peer's status (code, message, node) as the OpError it stands for, worded to name the
peer: the same for a status from gRPC (`grpc_transport.status`) and from the local socket.

TF's error codes equal gRPC's status codes, so no table maps one to the other.
"""
from __future__ import annotations

from typing import Optional

from nbcluster import errors


def remote_error(code: int, message: str, node: Optional[str], target: str) -> errors.OpError:
    """The OpError for a status (`code`, `message`, `node`) that `target` sent,
    over gRPC or the same-host data plane alike.

    Args:
      code: TF's (= gRPC's) status code.
      target: how the message names the peer, e.g. "worker 127.0.0.1:2222".
    Returns:
      An instance of the code's class (UnknownError for a code not in the table).
    """
    if code == errors.UNAVAILABLE and "ping timeout" in message:
        message = (f"{target} stopped answering (no reply to gRPC keepalive pings: the "
                   f"task hangs or its host is unreachable): {message}")
    elif code == errors.UNAVAILABLE:
        message = f"{message} (target {target})"
    elif code == errors.DEADLINE_EXCEEDED and "Deadline" in message:
        message = f"{message} waiting for {target}"
    cls = errors.exception_type_from_error_code(code) \
        if code in errors.CODE_TO_EXCEPTION_CLASS else errors.UnknownError
    return cls(None, None, message, node_name=node)
