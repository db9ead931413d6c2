"""TensorFlow's WorkerService (`/tensorflow.WorkerService/*`), served beside ours.

GetStatus answers as TF's does (the task's devices; our extra fields are
unknown to TF and skipped). RecvTensor serves a TF worker's `_Recv` of a
tensor this task sent (an nbcluster master driving both kinds of task),
one unary message at any size. A TensorFlow master driving nbcluster
workers is not supported yet, so every other method of TF's set is
UNIMPLEMENTED with a message naming it: a TF master fails at once, clearly.
"""
from __future__ import annotations

import grpc

from nbcluster import errors
from nbcluster.proto import worker_pb2
from nbcluster.rpc.grpc_transport import status
from nbcluster.rpc.codec import messages
from nbcluster.rpc.codec.messages import Layout
from nbcluster.rpc.grpc_transport.handlers import proto_handler, timeout_of, unary

SERVICE = "tensorflow.WorkerService"
_RECV_TENSOR_REQUEST = Layout(worker_pb2.RecvTensorRequest, None)
_RECV_TENSOR_RESPONSE = Layout(worker_pb2.RecvTensorResponse, 1, named=False)  # tensor = 1
# TF 2.x's WorkerService, less GetStatus.
_NOT_SERVED = ("CreateWorkerSession", "DeleteWorkerSession", "RegisterGraph",
               "DeregisterGraph", "RunGraph", "CleanupGraph", "CleanupAll", "Logging", "Tracing", "RecvBuf", "GetStepSequence", "CompleteGroup",
               "CompleteInstance", "MarkRecvFinished")


def tensorflow_worker_handler(worker, slots) -> grpc.GenericRpcHandler:
    """TF's WorkerService over `worker`; `slots` bound its waits as ours (WaitSlots)."""
    def get_status(req, context):
        return worker.get_status()

    def recv_tensor(decoded, context) -> bytes:
        req, _ = decoded
        step_id = req.step_id
        context.add_callback(lambda: worker.wake_step(step_id))  # a caller gone ends the wait
        with slots.hold(context.peer(), "RecvTensor"):
            value = worker.recv_tensor(step_id, req.rendezvous_key, timeout_of(context),
                                       stopped=lambda: not context.is_active())
        return messages.encode(worker_pb2.RecvTensorResponse(), _RECV_TENSOR_RESPONSE,
                               [("", value)])

    methods = {"GetStatus": proto_handler(get_status, worker_pb2.GetStatusRequest),
               "RecvTensor": unary(recv_tensor, lambda data: messages.decode(
                   data, _RECV_TENSOR_REQUEST), _as_is)}
    for name in _NOT_SERVED:
        methods[name] = grpc.unary_unary_rpc_method_handler(_refuse(name))
    return grpc.method_handlers_generic_handler(SERVICE, methods)


def _refuse(method: str):
    def refuse(request: bytes, context):
        status.abort(context, errors.UnimplementedError(
            None, None, f"{SERVICE}.{method}: nbcluster workers do not yet take steps from a "
                        f"TensorFlow master (mixed clusters); run nbcluster's client or "
                        f"master against them"))
    return refuse


def _as_is(data: bytes) -> bytes:
    return data
