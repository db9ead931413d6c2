"""TensorFlow's own MasterService (`/tensorflow.MasterService/*`), served
beside ours, so a real `tf.compat.v1.Session("grpc://<task>")` runs here.

Same master, same messages (TF's field numbers), with TF's conventions
where ours differ:
- every call is one unary message each way, however large its tensors
  (up to gRPC's 2 GiB limit): TF's client knows neither our streamed
  requests nor parked replies;
- RunStep honours `store_errors_in_response_body` (TF's client sets it):
  the step's error comes back in the body with an OK status;
- MakeCallable / RunCallable / ReleaseCallable (`Session.make_callable`,
  Keras in graph mode) fix feeds, fetches and targets once;
- what we cannot do (PartialRunSetup) is UNIMPLEMENTED, naming the method.
"""
from __future__ import annotations

import itertools
import threading

import grpc

from nbcluster import errors
from nbcluster.master_worker.master import CallerWatch
from nbcluster.proto import master_pb2
from nbcluster.rpc.codec import messages
from nbcluster.rpc.codec.messages import Layout
from nbcluster.rpc.grpc_transport.handlers import on_caller_gone, proto_handler, unary
from nbcluster.rpc.grpc_transport.master_service import (
    RUN_STEP_REQUEST,
    RUN_STEP_RESPONSE,
    session_methods,
)
from nbcluster.rpc.serving import serve_run_step

SERVICE = "tensorflow.MasterService"
_RUN_CALLABLE_REQUEST = Layout(master_pb2.RunCallableRequest, 3, named=False)    # feed = 3
_RUN_CALLABLE_RESPONSE = Layout(master_pb2.RunCallableResponse, 1, named=False)  # fetch = 1


class Callables:
    """The callables MakeCallable made, by (session handle, handle); thread-safe."""

    def __init__(self) -> None:
        self._options: dict = {}
        self._next = itertools.count(1)
        self._lock = threading.Lock()

    def make(self, session: str, options) -> int:
        if options.tensor_connection:
            raise errors.UnimplementedError(
                None, None, "MakeCallable: CallableOptions.tensor_connection "
                            f"({options.tensor_connection[0].to_tensor!r} fed from "
                            f"{options.tensor_connection[0].from_tensor!r}) is not supported")
        with self._lock:
            handle = next(self._next)
            self._options[(session, handle)] = options
        return handle

    def get(self, session: str, handle: int):
        with self._lock:
            options = self._options.get((session, handle))
        if options is None:
            raise errors.InvalidArgumentError(
                None, None, f"No callable with handle {handle} in session {session!r} "
                            "(released, or made in another session)")
        return options

    def release(self, session: str, handle: int) -> None:
        with self._lock:
            self._options.pop((session, handle), None)

    def forget_session(self, session: str) -> None:
        with self._lock:
            for key in [k for k in self._options if k[0] == session]:
                del self._options[key]

    def clear(self) -> None:
        with self._lock:
            self._options.clear()


def _watching(context, run):
    """`run(caller)`, its step cancelled on the other tasks if the caller goes away
    (the same CallerWatch our own RunStep handler uses)."""
    caller = CallerWatch()
    with on_caller_gone(context, caller.caller_gone):
        return run(caller)


def tensorflow_master_handler(master) -> grpc.GenericRpcHandler:
    """TF's MasterService over `master`."""
    callables = Callables()

    def run_step(decoded, context) -> bytes:
        req, feeds = decoded
        try:
            response, tensors = _watching(
                context, lambda caller: serve_run_step(master, req, feeds, caller))
        except errors.OpError as e:
            if not req.store_errors_in_response_body:
                raise
            return master_pb2.RunStepResponse(status_code=e.error_code,
                                              status_error_message=e.message
                                              ).SerializeToString()
        return messages.encode(response, RUN_STEP_RESPONSE, tensors)

    def make_callable(req, context):
        master.list_devices(req.session_handle)  # NotFound for an unknown session, as TF
        return master_pb2.MakeCallableResponse(
            handle=callables.make(req.session_handle, req.options))

    def run_callable(decoded, context) -> bytes:
        req, feeds = decoded
        options = callables.get(req.session_handle, req.handle)
        if len(feeds) != len(options.feed):
            raise errors.InvalidArgumentError(
                None, None, f"RunCallable: callable {req.handle} takes {len(options.feed)} "
                            f"feed(s) ({list(options.feed)}), got {len(feeds)}")
        fetches = list(options.fetch)
        run_options = options.run_options if options.HasField("run_options") else None
        values, metadata = _watching(context, lambda caller: master.run_step(
            req.session_handle, {name: value for name, (_, value) in zip(options.feed, feeds)},
            fetches, list(options.target), run_options, caller))
        response = master_pb2.RunCallableResponse()
        if metadata is not None:
            response.metadata.CopyFrom(metadata)
        return messages.encode(response, _RUN_CALLABLE_RESPONSE,
                               [("", value) for value in values])

    def release_callable(req, context):
        callables.release(req.session_handle, req.handle)
        return master_pb2.ReleaseCallableResponse()

    def partial_run_setup(req, context):
        raise errors.UnimplementedError(
            None, None, "PartialRunSetup: partial runs (Session.partial_run) are not "
                        "supported by nbcluster's master")

    def tensors(fn, layout: Layout):
        return unary(fn, lambda data: messages.decode(data, layout), _as_is)

    return grpc.method_handlers_generic_handler(SERVICE, {
        **session_methods(master, on_close=callables.forget_session, on_reset=callables.clear),
        "PartialRunSetup": proto_handler(partial_run_setup, master_pb2.PartialRunSetupRequest),
        "RunStep": tensors(run_step, RUN_STEP_REQUEST),
        "MakeCallable": proto_handler(make_callable, master_pb2.MakeCallableRequest),
        "RunCallable": tensors(run_callable, _RUN_CALLABLE_REQUEST),
        "ReleaseCallable": proto_handler(release_callable, master_pb2.ReleaseCallableRequest),
    })


def _as_is(data: bytes) -> bytes:
    return data
