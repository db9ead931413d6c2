"""The token on the wire: a client interceptor that adds it to every call, and
the server interceptor that checks it before any handler runs.

One place each side: no handler can forget the check, and a call that fails
it is answered UNAUTHENTICATED before its request is even decoded, so it
changes nothing. Tokens are compared with `hmac.compare_digest` (constant
time: a caller learns nothing from how long a refusal takes).
"""
from __future__ import annotations

import collections
import hmac

import grpc

from nbcluster.rpc.grpc_transport.tokens import ENV, FILE_ENV, METADATA_KEY


class _Details(collections.namedtuple("_Details", ("method", "timeout", "metadata",
                                                   "credentials", "wait_for_ready",
                                                   "compression")),
               grpc.ClientCallDetails):
    pass


class TokenSender(grpc.UnaryUnaryClientInterceptor, grpc.UnaryStreamClientInterceptor,
                  grpc.StreamUnaryClientInterceptor, grpc.StreamStreamClientInterceptor):
    """Adds ("nbcluster-token", token) to every call's metadata."""

    def __init__(self, token: str) -> None:
        self._entry = (METADATA_KEY, token)

    def _details(self, details) -> _Details:
        return _Details(details.method, details.timeout,
                        list(details.metadata or ()) + [self._entry], details.credentials,
                        details.wait_for_ready, getattr(details, "compression", None))

    def intercept_unary_unary(self, continuation, details, request):
        return continuation(self._details(details), request)

    def intercept_unary_stream(self, continuation, details, request):
        return continuation(self._details(details), request)

    def intercept_stream_unary(self, continuation, details, request_iterator):
        return continuation(self._details(details), request_iterator)

    def intercept_stream_stream(self, continuation, details, request_iterator):
        return continuation(self._details(details), request_iterator)


def _refusal(handler, method: str):
    message = (f"{method}: this task requires its cluster's token (call metadata "
               f"{METADATA_KEY!r}); a client gets it from the launcher that started the "
               f"cluster, or from {ENV} / {FILE_ENV}")

    def refuse(request, context):
        context.abort(grpc.StatusCode.UNAUTHENTICATED, message)

    if handler is None or not (handler.request_streaming or handler.response_streaming):
        return grpc.unary_unary_rpc_method_handler(refuse)
    if handler.request_streaming and handler.response_streaming:
        return grpc.stream_stream_rpc_method_handler(refuse)
    if handler.request_streaming:
        return grpc.stream_unary_rpc_method_handler(refuse)
    return grpc.unary_stream_rpc_method_handler(refuse)


class TokenCheck(grpc.ServerInterceptor):
    """Lets a call through only if its metadata carries `token`."""

    def __init__(self, token: str) -> None:
        self._token = token.encode("utf-8")

    def intercept_service(self, continuation, details):
        given = b""
        for key, value in details.invocation_metadata or ():
            if key == METADATA_KEY:
                given = value.encode("utf-8") if isinstance(value, str) else value
                break
        handler = continuation(details)
        if hmac.compare_digest(given, self._token):
            return handler
        return _refusal(handler, details.method)
