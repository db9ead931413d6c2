"""The same-host data plane's first frame: the caller's cluster token, checked before any request.

Rules: a connection's first frame is the hello below, which the client
sends in front of its first request (no round trip of its own); the server
reads it (within HELLO_S) before it reads any request and compares the
token with `hmac.compare_digest` (constant time), as gRPC's TokenCheck does.
A server with a token answers a missing or wrong one with an
UNAUTHENTICATED error frame, the reply to that first request, and closes
the connection: nothing runs. A server with no token admits any hello
(SO_PEERCRED has already admitted only its own user). A good hello gets no
answer of its own: the request behind it is served.

    hello = "NBDH" u32 len, token utf-8 (len 0: none)
"""
from __future__ import annotations

import hmac
import socket
import struct
import time
from typing import Optional

from nbcluster import errors
from nbcluster.rpc.grpc_transport.tokens import ENV, FILE_ENV
from nbcluster.rpc.socket_transport import frames as wire

HELLO_S = 10.0  # a connection that says nothing for this long is closed
_HELLO = struct.Struct("<4sI")
_MAGIC = b"NBDH"
_MAX_TOKEN = 4096


def hello(token: Optional[str]) -> bytes:
    """The first frame a client sends, carrying `token` (None: no token)."""
    data = (token or "").encode("utf-8")
    return _HELLO.pack(_MAGIC, len(data)) + data


def server_handshake(sock: socket.socket, reader: wire.FrameReader,
                     token: Optional[str]) -> bool:
    """Reads a connection's hello from `reader` (the one its requests are read
    with next); whether the connection may go on (a refusal was answered)."""
    reader.deadline = time.monotonic() + HELLO_S
    try:
        magic, length = _HELLO.unpack(reader.exact(_HELLO.size))
        if magic != _MAGIC or length > _MAX_TOKEN:
            raise wire.malformed(f"handshake {bytes(magic)!r} of {length} bytes, expected "
                                 f"{_MAGIC!r} and a token")
        given = bytes(reader.exact(length))
    except errors.DataLossError as e:
        wire.send_all(sock, [wire.encode_error(e)])
        return False
    except (wire.ConnectionClosed, OSError):
        return False
    finally:
        reader.deadline = None
    sock.settimeout(None)
    if token is not None and not hmac.compare_digest(given, token.encode("utf-8")):
        refusal = errors.UnauthenticatedError(
            None, None, f"this task's data plane requires its cluster's token (a client gets "
                        f"it from the launcher that started the cluster, or from {ENV} / "
                        f"{FILE_ENV})")
        wire.send_all(sock, [wire.encode_error(refusal)])
        return False
    return True
