"""MasterService over gRPC: thin handlers around a `Master`."""
from __future__ import annotations

import grpc

from nbcluster.framework.graph_def import nodes_from_proto
from nbcluster.proto import master_pb2
from nbcluster.rpc import messages
from nbcluster.rpc.handlers import proto_handler, unary

SERVICE = "nbcluster.MasterService"
FEED_FIELD = 2      # RunStepRequest.feed
TENSOR_FIELD = 1    # RunStepResponse.tensor


def decode_run_step(data: bytes) -> tuple:
    return messages.decode(data, master_pb2.RunStepRequest, FEED_FIELD)


def encode_run_step_response(response: tuple) -> bytes:
    tensors, metadata = response
    message = master_pb2.RunStepResponse()
    if metadata is not None:
        message.metadata.CopyFrom(metadata)
    return messages.encode(message, TENSOR_FIELD, tensors)


def master_handler(master) -> grpc.GenericRpcHandler:
    def create_session(req, context):
        config = req.config if req.HasField("config") else None
        handle, version = master.create_session(nodes_from_proto(req.graph_def), config)
        return master_pb2.CreateSessionResponse(session_handle=handle, graph_version=version)

    def extend_session(req, context):
        version = master.extend_session(req.session_handle, nodes_from_proto(req.graph_def),
                                        req.current_graph_version)
        return master_pb2.ExtendSessionResponse(new_graph_version=version)

    def run_step(request, context):
        req, feeds = request
        options = req.options if req.HasField("options") else None
        fetches = list(req.fetch)
        values, metadata = master.run_step(req.session_handle, dict(feeds), fetches,
                                           list(req.target), options)
        return list(zip(fetches, values)), metadata

    def close_session(req, context):
        master.close_session(req.session_handle)
        return master_pb2.CloseSessionResponse()

    def list_devices(req, context):
        devices = master.list_devices(req.session_handle or None)
        return master_pb2.ListDevicesResponse(local_device=devices)

    def reset(req, context):
        master.reset(list(req.container))
        return master_pb2.ResetResponse()

    return grpc.method_handlers_generic_handler(SERVICE, {
        "CreateSession": proto_handler(create_session, master_pb2.CreateSessionRequest),
        "ExtendSession": proto_handler(extend_session, master_pb2.ExtendSessionRequest),
        "RunStep": unary(run_step, decode_run_step, encode_run_step_response),
        "CloseSession": proto_handler(close_session, master_pb2.CloseSessionRequest),
        "ListDevices": proto_handler(list_devices, master_pb2.ListDevicesRequest),
        "Reset": proto_handler(reset, master_pb2.ResetRequest),
    })


