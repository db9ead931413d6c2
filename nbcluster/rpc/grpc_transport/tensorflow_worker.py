"""TensorFlow's WorkerService (`/tensorflow.WorkerService/*`), served beside ours.

GetStatus answers as TF's does (the task's devices; our extra fields are
unknown to TF and skipped). A TensorFlow master driving nbcluster workers
(a mixed cluster) is not supported yet, so every other method of TF's set is
UNIMPLEMENTED with a message naming it, and a TF master fails at once,
clearly, instead of waiting.
"""
from __future__ import annotations

import grpc

from nbcluster import errors
from nbcluster.proto import worker_pb2
from nbcluster.rpc.grpc_transport import status
from nbcluster.rpc.grpc_transport.handlers import proto_handler

SERVICE = "tensorflow.WorkerService"
# TF 2.x's WorkerService, less GetStatus.
_NOT_SERVED = ("CreateWorkerSession", "DeleteWorkerSession", "RegisterGraph",
               "DeregisterGraph", "RunGraph", "CleanupGraph", "CleanupAll", "RecvTensor",
               "Logging", "Tracing", "RecvBuf", "GetStepSequence", "CompleteGroup",
               "CompleteInstance", "MarkRecvFinished")


def tensorflow_worker_handler(worker) -> grpc.GenericRpcHandler:
    """TF's WorkerService over `worker`."""
    def get_status(req, context):
        return worker.get_status()

    methods = {"GetStatus": proto_handler(get_status, worker_pb2.GetStatusRequest)}
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
