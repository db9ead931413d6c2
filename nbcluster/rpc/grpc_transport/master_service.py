"""MasterService over gRPC: thin handlers around a `Master`."""
from __future__ import annotations

from typing import Optional

import grpc

from nbcluster.framework.graph_def import nodes_from_proto
from nbcluster.master_worker.master import CallerWatch
from nbcluster.proto import master_pb2
from nbcluster.rpc.codec.messages import Layout
from nbcluster.rpc.grpc_transport.handlers import on_caller_gone, proto_handler
from nbcluster.rpc.grpc_transport.streaming import PendingResponses, pull_method, tensor_methods
from nbcluster.rpc.serving import serve_run_step

SERVICE = master_pb2.DESCRIPTOR.services_by_name["MasterService"].full_name  # the wire path
RUN_STEP_REQUEST = Layout(master_pb2.RunStepRequest, 2)     # feed = 2
RUN_STEP_RESPONSE = Layout(master_pb2.RunStepResponse, 1)   # tensor = 1


def session_methods(master, on_close=None, on_reset=None) -> dict:
    """The plain protobuf methods of a MasterService over `master`, by method name:
    ours and TensorFlow's alike (tensorflow_master.py). `on_close(handle)` and
    `on_reset()` run after a session closes and after a reset."""
    def create_session(req, context):
        config = req.config if req.HasField("config") else None
        handle, version = master.create_session(nodes_from_proto(req.graph_def), config,
                                                req.target or None)
        return master_pb2.CreateSessionResponse(session_handle=handle, graph_version=version)

    def extend_session(req, context):
        version = master.extend_session(req.session_handle, nodes_from_proto(req.graph_def),
                                        req.current_graph_version)
        return master_pb2.ExtendSessionResponse(new_graph_version=version)

    def close_session(req, context):
        master.close_session(req.session_handle)
        if on_close is not None:
            on_close(req.session_handle)
        return master_pb2.CloseSessionResponse()

    def list_devices(req, context):
        devices = master.list_devices(req.session_handle or None)
        return master_pb2.ListDevicesResponse(local_device=devices)

    def reset(req, context):
        master.reset(list(req.container))
        if on_reset is not None:
            on_reset()
        return master_pb2.ResetResponse()

    return {
        "CreateSession": proto_handler(create_session, master_pb2.CreateSessionRequest),
        "ExtendSession": proto_handler(extend_session, master_pb2.ExtendSessionRequest),
        "CloseSession": proto_handler(close_session, master_pb2.CloseSessionRequest),
        "ListDevices": proto_handler(list_devices, master_pb2.ListDevicesRequest),
        "Reset": proto_handler(reset, master_pb2.ResetRequest),
    }


def master_handler(master, pending: Optional[PendingResponses] = None) -> grpc.GenericRpcHandler:
    """The MasterService of `master`; `pending` holds large responses until pulled."""
    def run_step(req, feeds, context):
        caller = CallerWatch()
        with on_caller_gone(context, caller.caller_gone):
            return serve_run_step(master, req, feeds, caller)

    pending = pending if pending is not None else PendingResponses()
    return grpc.method_handlers_generic_handler(SERVICE, {
        **tensor_methods("RunStep", run_step, RUN_STEP_REQUEST, RUN_STEP_RESPONSE, pending),
        **pull_method(pending),
        **session_methods(master),
    })
