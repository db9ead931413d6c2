"""WorkerService over gRPC: thin handlers around a `Worker`."""
from __future__ import annotations

from typing import Optional

import grpc

from nbcluster import errors
from nbcluster.framework.graph_def import nodes_from_proto
from nbcluster.proto import worker_pb2
from nbcluster.rpc.codec import chunked, messages
from nbcluster.rpc.codec.messages import Layout
from nbcluster.rpc.grpc_transport import status
from nbcluster.rpc.grpc_transport.handlers import (
    on_caller_gone,
    proto_handler,
    run_safely,
    timeout_of,
)
from nbcluster.rpc.grpc_transport.streaming import PendingResponses, pull_method, tensor_methods
from nbcluster.rpc.grpc_transport.wait_slots import WaitSlots
from nbcluster.rpc.serving import serve_recv_tensor, serve_recv_tensors, serve_run_graph

SERVICE = worker_pb2.DESCRIPTOR.services_by_name["WorkerService"].full_name  # the wire path
RUN_GRAPH_REQUEST = Layout(worker_pb2.RunGraphRequest, 3)      # send = 3
RUN_GRAPH_RESPONSE = Layout(worker_pb2.RunGraphResponse, 1)    # recv = 1
RECV_TENSOR_REQUEST = Layout(worker_pb2.RecvTensorRequest, None)
RECV_TENSOR_RESPONSE = Layout(worker_pb2.RecvTensorResponse, 1, named=False)  # tensor = 1
RECV_TENSORS = "RecvTensors"  # ours: a step's tensors from one task, streamed as they come


def session_methods(worker) -> dict:
    """The plain protobuf methods of a WorkerService over `worker`, by method name:
    ours and TensorFlow's alike (tensorflow_worker.py)."""
    def get_status(req, context):
        return worker.get_status()

    def create_worker_session(req, context):
        # TF sends a ServerDef only under ClusterSpec propagation; no jobs: none.
        server_def = req.server_def if req.server_def.cluster.job else None
        worker.create_worker_session(req.session_handle, req.isolate_session_state, server_def)
        return worker_pb2.CreateWorkerSessionResponse()

    def delete_worker_session(req, context):
        worker.delete_worker_session(req.session_handle)
        return worker_pb2.DeleteWorkerSessionResponse()

    def cleanup_graph(req, context):
        worker.cleanup_graph(req.step_id)
        return worker_pb2.CleanupGraphResponse()

    def cleanup_all(req, context):
        worker.cleanup_all(list(req.container))
        return worker_pb2.CleanupAllResponse()

    return {
        "GetStatus": proto_handler(get_status, worker_pb2.GetStatusRequest),
        "CreateWorkerSession": proto_handler(create_worker_session,
                                             worker_pb2.CreateWorkerSessionRequest),
        "DeleteWorkerSession": proto_handler(delete_worker_session,
                                             worker_pb2.DeleteWorkerSessionRequest),
        "CleanupGraph": proto_handler(cleanup_graph, worker_pb2.CleanupGraphRequest),
        "CleanupAll": proto_handler(cleanup_all, worker_pb2.CleanupAllRequest),
    }


def worker_handler(worker, slots: Optional[WaitSlots] = None,
                   pending: Optional[PendingResponses] = None) -> grpc.GenericRpcHandler:
    """The WorkerService of `worker`. `slots` bounds the calls that wait for
    tensors (wait_slots.py); `pending` holds large responses until pulled."""
    slots = slots or WaitSlots.for_server()

    def register_graph(req, context):
        handle = worker.register_graph(req.session_handle, nodes_from_proto(req.graph_def),
                                       req.config_proto.inter_op_parallelism_threads,
                                       req.create_worker_session_called)
        return worker_pb2.RegisterGraphResponse(graph_handle=handle)

    def deregister_graph(req, context):
        worker.deregister_graph(req.session_handle, req.graph_handle)
        return worker_pb2.DeregisterGraphResponse()

    def run_graph(req, sends, context):
        with on_caller_gone(context, lambda: worker.cleanup_graph(req.step_id)):
            return serve_run_graph(worker, req, sends, timeout_of(context))

    def recv_tensor(req, _, context):
        step_id = req.step_id
        # The caller cancelling, timing out or hanging up wakes the wait, which then ends.
        context.add_callback(lambda: worker.wake_step(step_id))
        with slots.hold(context.peer(), "RecvTensor"):
            value = serve_recv_tensor(worker, step_id, req.rendezvous_key, timeout_of(context),
                                      lambda: not context.is_active())
        return worker_pb2.RecvTensorResponse(), [("", value)]

    def recv_tensors(request: bytes, context):
        # Frames: b"T" + a RunGraphResponse holding the tensors that were
        # ready, each named by its key; or b"K" + a key whose tensor is too
        # large for the stream (the caller fetches it with RecvTensor).
        try:
            req = worker_pb2.RunGraphRequest.FromString(request)
        except Exception as e:  # noqa: BLE001 - corrupt bytes from a peer must not kill us
            status.abort(context, errors.DataLossError(None, None, f"Malformed request: {e}"))
        step_id = req.step_id
        context.add_callback(lambda: worker.wake_step(step_id))
        slot = run_safely(lambda: slots.acquire(context.peer(), RECV_TENSORS), context,
                          RECV_TENSORS)
        try:
            values = serve_recv_tensors(worker, step_id, list(req.recv_key),
                                        timeout_of(context), lambda: not context.is_active(),
                                        chunked.STREAM_THRESHOLD)
            while True:
                batch = run_safely(lambda: next(values, None), context, RECV_TENSORS)
                if batch is None:
                    return
                for key, value in batch:
                    if value is None:
                        yield b"K" + key.encode()
                tensors = [(key, value) for key, value in batch if value is not None]
                if tensors:
                    yield b"T" + messages.encode(worker_pb2.RunGraphResponse(),
                                                 RUN_GRAPH_RESPONSE, tensors)
        finally:
            slots.release(slot)

    pending = pending if pending is not None else PendingResponses()
    return grpc.method_handlers_generic_handler(SERVICE, {
        RECV_TENSORS: grpc.unary_stream_rpc_method_handler(recv_tensors),
        **tensor_methods("RunGraph", run_graph, RUN_GRAPH_REQUEST, RUN_GRAPH_RESPONSE, pending),
        **tensor_methods("RecvTensor", recv_tensor, RECV_TENSOR_REQUEST, RECV_TENSOR_RESPONSE,
                         pending),
        **pull_method(pending),
        **session_methods(worker),
        "RegisterGraph": proto_handler(register_graph, worker_pb2.RegisterGraphRequest),
        "DeregisterGraph": proto_handler(deregister_graph, worker_pb2.DeregisterGraphRequest),
    })

