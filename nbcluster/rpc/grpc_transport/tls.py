"""TLS on the wire: a task's server credentials, and channels that verify a task's certificate.

The gRPC side of `tls_material` (which holds the rules): `channels` opens
every channel through `open_channel` and `server_core` binds every port
through `add_port`, so no caller chooses between TLS and plaintext.

A channel with wait_for_ready calls (a client waits for a master not up
yet) would wait out its deadline on a certificate it can never accept, so
before a TLS channel's first call the task's certificate is checked once
with Python's `ssl` (the same CA and host name as gRPC's check): a refusal
is UnavailableError at once, naming the address and why. A task that does
not answer yet is left to gRPC's own wait.
"""
from __future__ import annotations

import socket
import ssl
import threading
from typing import Optional

import grpc

from nbcluster.rpc.grpc_transport import tls_material

_CHECK_S = 5.0  # the one handshake check before a channel's first call


def server_credentials(tls: tls_material.ServerTls) -> grpc.ServerCredentials:
    """The task serves `tls.cert`; callers need no certificate (the token authenticates them)."""
    return grpc.ssl_server_credentials([(tls.key, tls.cert)], root_certificates=None,
                                       require_client_auth=False)


def add_port(server: grpc.Server, address: str,
             tls: Optional[tls_material.ServerTls]) -> int:
    """Binds `address` on `server`, with TLS when `tls` is given; the port bound (0: failed)."""
    if tls is None:
        return server.add_insecure_port(address)
    return server.add_secure_port(address, server_credentials(tls))


def open_channel(address: str, options: list) -> grpc.Channel:
    """A channel to `address`: TLS verified against the CA known for it, else plaintext."""
    ca = tls_material.ca_for(address)
    if ca is None:
        return grpc.insecure_channel(address, options=options)
    opened = grpc.secure_channel(address, grpc.ssl_channel_credentials(root_certificates=ca),
                                 options=options)
    return grpc.intercept_channel(opened, _HandshakeCheck(address, ca))


def check(address: str, ca: bytes, timeout: float = _CHECK_S) -> tuple:
    """(passed, why): whether the task at `address` passed TLS verification against
    `ca`, and why it failed; (False, None) where nothing answered yet."""
    host, _, port = address.rpartition(":")
    host = host.strip("[]")
    context = ssl.create_default_context(cadata=ca.decode("ascii"))
    context.set_alpn_protocols(["h2"])
    try:
        sock = socket.create_connection((host, int(port)), timeout)
    except (OSError, ValueError):
        return False, None
    try:
        with context.wrap_socket(sock, server_hostname=host):
            return True, None
    except ssl.SSLCertVerificationError as e:
        return False, (f"its TLS certificate is not valid for {host} under this cluster's CA "
                f"({e.verify_message})")
    except (ssl.SSLEOFError, ConnectionResetError):
        return False, "it closed the connection during the TLS handshake (it may not serve TLS)"
    except ssl.SSLError as e:
        return False, f"the TLS handshake failed ({e.reason or e})"
    except OSError:
        return False, None
    finally:
        sock.close()


class TlsRefused(grpc.RpcError, grpc.Call, grpc.Future):
    """A call refused before it was sent: the task's certificate failed verification.

    Raised by the check, or handed back as the call's outcome where another
    interceptor (the token's) holds it: its result, or its stream, raises it.
    """

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self._message = message

    def code(self) -> grpc.StatusCode:
        return grpc.StatusCode.UNAVAILABLE

    def details(self) -> str:
        return self._message

    def trailing_metadata(self):
        return None

    def initial_metadata(self):
        return None

    def is_active(self) -> bool:
        return False

    def time_remaining(self):
        return None

    def cancel(self) -> bool:
        return False

    def add_callback(self, callback) -> bool:
        return False

    def result(self, timeout=None):
        raise self

    def exception(self, timeout=None):
        return self

    def traceback(self, timeout=None):
        return None

    def add_done_callback(self, fn) -> None:
        fn(self)

    def cancelled(self) -> bool:
        return False

    def running(self) -> bool:
        return False

    def done(self) -> bool:
        return True

    def __iter__(self):
        return self

    def __next__(self):
        raise self


class _HandshakeCheck(grpc.UnaryUnaryClientInterceptor, grpc.UnaryStreamClientInterceptor,
                      grpc.StreamUnaryClientInterceptor, grpc.StreamStreamClientInterceptor):
    """Checks the task's certificate before the channel's first call, until it passes once."""

    def __init__(self, address: str, ca: bytes) -> None:
        self._address, self._ca = address, ca
        self._passed = False
        self._lock = threading.Lock()

    def _check(self) -> None:
        if self._passed:
            return
        with self._lock:
            if self._passed:
                return
            self._passed, why = check(self._address, self._ca)
            if why is not None:
                raise TlsRefused(f"the task at {self._address} cannot be trusted: {why}")

    def intercept_unary_unary(self, continuation, details, request):
        self._check()
        return continuation(details, request)

    def intercept_unary_stream(self, continuation, details, request):
        self._check()
        return continuation(details, request)

    def intercept_stream_unary(self, continuation, details, request_iterator):
        self._check()
        return continuation(details, request_iterator)

    def intercept_stream_stream(self, continuation, details, request_iterator):
        self._check()
        return continuation(details, request_iterator)

