"""TensorFlow's WorkerService (`/tensorflow.WorkerService/*`), served beside ours.

What a TensorFlow master, and TensorFlow workers, ask of an nbcluster task in
a mixed cluster, by TF's conventions where ours differ:
- RunGraph's feeds and fetches are keyed by full rendezvous keys; the
  client-terminated `_Recv` / `_Send` nodes of each registered graph say
  which tensor each key names, so the worker runs with tensor names as ever;
- every call is one unary message however large (TF knows neither our
  streamed requests nor parked replies); errors go in RunGraph's body when
  the master asks;
- RecvTensor serves a TF worker's `_Recv` of a tensor sent here.
GetStatus answers as TF's (our extra fields are unknown to TF and skipped).
TF's collective and logging methods are UNIMPLEMENTED, naming the method.
"""
from __future__ import annotations

import threading

import grpc

from nbcluster import errors
from nbcluster.framework.graph_def import nodes_from_proto
from nbcluster.master_worker.rendezvous import key_of
from nbcluster.proto import worker_pb2
from nbcluster.rpc.codec import messages
from nbcluster.rpc.codec.messages import Layout
from nbcluster.rpc.grpc_transport import status
from nbcluster.rpc.grpc_transport.handlers import on_caller_gone, proto_handler, timeout_of, unary
from nbcluster.rpc.grpc_transport.worker_service import (
    RECV_TENSOR_REQUEST,
    RECV_TENSOR_RESPONSE,
    RUN_GRAPH_REQUEST,
    RUN_GRAPH_RESPONSE,
    session_methods,
)
from nbcluster.rpc.serving import serve_recv_tensor, serve_run_graph

SERVICE = "tensorflow.WorkerService"
# TF 2.x's WorkerService methods nbcluster has no counterpart for.
NOT_SERVED = ("Logging", "Tracing", "RecvBuf", "GetStepSequence", "CompleteGroup",
               "CompleteInstance", "MarkRecvFinished")


def client_tensor_names(nodes: list) -> dict:
    """Rendezvous key -> tensor name of each client-terminated _Recv / _Send."""
    names = {}
    for node in nodes:
        a = node.attrs
        if node.op in ("_Recv", "_Send") and a.get("client_terminated"):
            names[key_of(a)] = a["tensor_name"]
    return names


def tensorflow_worker_handler(worker, slots) -> grpc.GenericRpcHandler:
    """TF's WorkerService over `worker`; `slots` bound its waits as ours (WaitSlots)."""
    graphs: dict = {}  # (session, graph handle) -> {rendezvous key: tensor name}
    lock = threading.Lock()
    methods = session_methods(worker)

    def delete_worker_session(req, context):  # its graphs go with it, as the Worker's do
        with lock:
            for key in [k for k in graphs if k[0] == req.session_handle]:
                del graphs[key]
        worker.delete_worker_session(req.session_handle)
        return worker_pb2.DeleteWorkerSessionResponse()

    def register_graph(req, context):
        nodes = nodes_from_proto(req.graph_def)
        handle = worker.register_graph(req.session_handle, nodes,
                                       req.config_proto.inter_op_parallelism_threads,
                                       req.create_worker_session_called)
        with lock:
            graphs[(req.session_handle, handle)] = client_tensor_names(nodes)
        return worker_pb2.RegisterGraphResponse(graph_handle=handle)

    def deregister_graph(req, context):
        with lock:
            graphs.pop((req.session_handle, req.graph_handle), None)
        worker.deregister_graph(req.session_handle, req.graph_handle)
        return worker_pb2.DeregisterGraphResponse()

    def run_graph(decoded, context) -> bytes:
        req, sends = decoded
        with lock:
            names = graphs.get((req.session_handle, req.graph_handle))
        try:
            # a caller gone mid-step ends the step here, as TF's worker does
            with on_caller_gone(context, lambda: worker.cleanup_graph(req.step_id)):
                if names is None:
                    raise errors.AbortedError(None, None, f"Graph handle {req.graph_handle!r} is "
                                                          f"not registered on this worker")
                unknown = [k for k in [key for key, _ in sends] + list(req.recv_key)
                           if k not in names]
                if unknown:
                    raise errors.InvalidArgumentError(
                        None, None, f"Rendezvous key {unknown[0]!r} names no feed or fetch of "
                                    f"graph {req.graph_handle}")
                # Our worker runs by tensor name: the same request, keyed by the names
                # the graph's client-terminated nodes give each key.
                by_name = worker_pb2.RunGraphRequest()
                by_name.CopyFrom(req)
                by_name.ClearField("recv_key")
                by_name.recv_key.extend(names[key] for key in req.recv_key)
                response, fetched = serve_run_graph(worker, by_name,
                                                    [(names[key], v) for key, v in sends],
                                                    timeout_of(context))
        except errors.OpError as e:
            if not req.store_errors_in_response_body:
                raise
            return worker_pb2.RunGraphResponse(status_code=e.error_code,
                                               status_error_message=e.message
                                               ).SerializeToString()
        return messages.encode(response, RUN_GRAPH_RESPONSE,
                               [(key, value) for key, (_, value) in zip(req.recv_key, fetched)])

    def recv_tensor(decoded, context) -> bytes:
        req, _ = decoded
        step_id = req.step_id
        context.add_callback(lambda: worker.wake_step(step_id))  # a caller gone ends the wait
        with slots.hold(context.peer(), "RecvTensor"):
            value = serve_recv_tensor(worker, step_id, req.rendezvous_key, timeout_of(context),
                                      lambda: not context.is_active())
        return messages.encode(worker_pb2.RecvTensorResponse(), RECV_TENSOR_RESPONSE,
                               [("", value)])

    def tensors(fn, layout: Layout):
        return unary(fn, lambda data: messages.decode(data, layout), _as_is)

    methods.update({
        "DeleteWorkerSession": proto_handler(delete_worker_session,
                                             worker_pb2.DeleteWorkerSessionRequest),
        "RegisterGraph": proto_handler(register_graph, worker_pb2.RegisterGraphRequest),
        "DeregisterGraph": proto_handler(deregister_graph, worker_pb2.DeregisterGraphRequest),
        "RunGraph": tensors(run_graph, RUN_GRAPH_REQUEST),
        "RecvTensor": tensors(recv_tensor, RECV_TENSOR_REQUEST),
    })
    for name in NOT_SERVED:
        methods[name] = grpc.unary_unary_rpc_method_handler(_refuse(name))
    return grpc.method_handlers_generic_handler(SERVICE, methods)


def _refuse(method: str):
    def refuse(request: bytes, context):
        status.abort(context, errors.UnimplementedError(
            None, None, f"{SERVICE}.{method} is not served by nbcluster tasks"))
    return refuse


def _as_is(data: bytes) -> bytes:
    return data
