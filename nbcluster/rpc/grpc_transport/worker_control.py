"""A worker's control calls, which nbcluster's and TensorFlow's dialects make alike.

Both services take the same protobuf messages for sessions and cleanup; only
the service path differs, so each client builds the generated stub of its
service (`worker_pb2_grpc` for ours, `tensorflow_services_pb2_grpc` for TF's)
and shares these calls. Graph registration and the tensor calls differ
(TF's RunGraph keys feeds by rendezvous key) and stay with each client.
"""
from __future__ import annotations

from typing import Optional

from nbcluster.proto import worker_pb2

CONTROL_TIMEOUT = 30.0
STEP_TIMEOUT = 24 * 3600.0  # a step may block on a queue for as long as it likes


class WorkerControlCalls:
    """CreateWorkerSession, DeleteWorkerSession, CleanupGraph and CleanupAll.

    A client mixing this in sets `_status`, `_create`, `_delete`, `_register`,
    `_deregister`, `_cleanup` and `_cleanup_all` with `_use_stub`, and has
    `_call(stub, request, timeout)`, which turns gRPC failures into OpErrors.
    """

    def _use_stub(self, stub) -> None:
        """Takes the protobuf-only methods from a generated WorkerService stub."""
        self._status = stub.GetStatus
        self._create = stub.CreateWorkerSession
        self._delete = stub.DeleteWorkerSession
        self._register = stub.RegisterGraph
        self._deregister = stub.DeregisterGraph
        self._cleanup = stub.CleanupGraph
        self._cleanup_all = stub.CleanupAll

    def create_worker_session(self, session_handle: str, isolate: bool,
                              server_def=None) -> None:
        req = worker_pb2.CreateWorkerSessionRequest(session_handle=session_handle,
                                                    isolate_session_state=isolate)
        if server_def is not None:
            req.server_def.CopyFrom(server_def)
        self._call(self._create, req, CONTROL_TIMEOUT)

    def delete_worker_session(self, session_handle: str) -> None:
        self._call(self._delete, worker_pb2.DeleteWorkerSessionRequest(
            session_handle=session_handle), CONTROL_TIMEOUT)

    def cleanup_graph(self, step_id: int) -> None:
        self._call(self._cleanup, worker_pb2.CleanupGraphRequest(step_id=step_id),
                   CONTROL_TIMEOUT)

    def cleanup_all(self, containers: Optional[list]) -> None:
        self._call(self._cleanup_all, worker_pb2.CleanupAllRequest(container=containers or []),
                   CONTROL_TIMEOUT)
