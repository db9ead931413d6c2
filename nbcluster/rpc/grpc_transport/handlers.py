"""Building blocks for thin servicers: decode, call the logic, encode.

A request that fails to decode, or logic that raises, ends the RPC with the
right status; the server itself never goes down over a bad request.
"""
from __future__ import annotations

import contextlib
import logging
from typing import Callable

import grpc

from nbcluster import errors
from nbcluster.rpc.grpc_transport import status

log = logging.getLogger("nbcluster.rpc")


class _BadRequest:
    def __init__(self, error: errors.OpError) -> None:
        self.error = error


def _safe(deserialize):
    def wrapped(data: bytes):
        try:
            return deserialize(data)
        except errors.OpError as e:
            return _BadRequest(e)
        except Exception as e:  # noqa: BLE001 - corrupt bytes from a peer must not kill us
            return _BadRequest(errors.DataLossError(None, None, f"Malformed request: {e}"))
    return wrapped


def unary(fn, deserialize, serialize):
    """A unary-unary handler running `fn(request, context)` with error mapping."""
    def call(request, context):
        if isinstance(request, _BadRequest):
            status.abort(context, request.error)
        try:
            return fn(request, context)
        except errors.OpError as e:
            error = e
        except Exception as e:  # noqa: BLE001 - a bug becomes INTERNAL, the server lives on
            log.exception("internal error in %s", getattr(fn, "__name__", fn))
            error = errors.InternalError(None, None, f"{type(e).__name__}: {e}")
        status.abort(context, error)
    return grpc.unary_unary_rpc_method_handler(call, request_deserializer=_safe(deserialize),
                                               response_serializer=serialize)


def proto_handler(fn, request_class):
    return unary(fn, request_class.FromString, lambda m: m.SerializeToString())


@contextlib.contextmanager
def on_caller_gone(context, gone: Callable[[], None]):
    """Runs `gone()` if the RPC ends (the caller cancelled, timed out or hung up)
    while the body of this `with` is still serving it: a step its caller left must
    end, as TF's master and worker end it, or a dequeue among its kernels would take
    the next element anyone enqueues. A normal end does not call it."""
    running = [True]
    context.add_callback(lambda: running[0] and gone())
    try:
        yield
    finally:
        running[0] = False


def timeout_of(context):
    remaining = context.time_remaining()
    return None if remaining is None or remaining > 1e8 else remaining


def run_safely(fn, context, name: str):
    """`fn()` for a streaming handler, failures mapped as `unary` maps them.

    Returns what `fn` returns (the frames to send); on failure the RPC ends
    with the error's status instead.
    """
    try:
        return fn()
    except errors.OpError as e:
        error = e
    except grpc.RpcError:  # the peer cancelled while we read its stream
        error = errors.CancelledError(None, None, f"{name}: the caller went away")
    except Exception as e:  # noqa: BLE001 - a bug becomes INTERNAL, the server lives on
        log.exception("internal error in %s", name)
        error = errors.InternalError(None, None, f"{type(e).__name__}: {e}")
    status.abort(context, error)
