"""A real TensorFlow task as a worker of ours (`/tensorflow.WorkerService/*`).

`GrpcWorkerClient` hands over to this once a task answered it UNIMPLEMENTED.
TF's dialect of the same messages: every call one unary message; RunGraph's
feeds and fetches keyed by full rendezvous keys (TF's worker finds a fed
value by the key its client-terminated `_Recv` makes from its attrs), which
this client learns from each graph it registers. TF's worker keeps a step's
rendezvous until CleanupGraph, so the master sends one after every step
(`needs_cleanup`), as TF's master does.
"""
from __future__ import annotations

import threading
from typing import Optional

from nbcluster import errors
from nbcluster.framework.device_spec import DeviceSpec
from nbcluster.framework.graph_def import nodes_to_proto
from nbcluster.master_worker.rendezvous import attr_incarnation, key_of
from nbcluster.master_worker.transport import RunGraphResult
from nbcluster.proto import tensorflow_services_pb2_grpc, worker_pb2
from nbcluster.rpc.codec import messages
from nbcluster.rpc.grpc_transport import channels
from nbcluster.rpc.grpc_transport.calls import calling
from nbcluster.rpc.grpc_transport.status import remote_error
from nbcluster.rpc.grpc_transport.tensorflow_worker import SERVICE
from nbcluster.rpc.grpc_transport.worker_control import (
    CONTROL_TIMEOUT,
    STEP_TIMEOUT,
    WorkerControlCalls,
)
from nbcluster.rpc.grpc_transport.worker_service import (
    RECV_TENSOR_RESPONSE,
    RUN_GRAPH_REQUEST,
    RUN_GRAPH_RESPONSE,
)


def _for_tensorflow(nodes: list, incarnations: dict) -> tuple:
    """(nodes, {tensor name: rendezvous key}) for a TF worker.

    TF's worker takes a RunGraph's feeds into its rendezvous only from one of
    its own devices ("Invalid rendezvous key (src)" otherwise), so both ends
    of each client-terminated _Recv / _Send become the node's own device,
    with that device's incarnation (which TF's worker writes into such
    nodes anyway); the keys are what TF's kernels make from those attrs.
    """
    out, keys = [], {}
    for node in nodes:
        a = node.attrs
        if node.op in ("_Recv", "_Send") and a.get("client_terminated"):
            a = {**a, "send_device": node.device, "recv_device": node.device,
                 "send_device_incarnation": attr_incarnation(incarnations.get(node.device, 0))}
            node = node.with_changes(attrs=a)
            keys[a["tensor_name"]] = key_of(a)
        out.append(node)
    return out, keys


class TensorFlowWorkerClient(WorkerControlCalls):
    """The worker of the TensorFlow task at `address`, with `Worker`'s methods."""

    def __init__(self, address: str) -> None:
        self.address = address
        self._peer = f"worker {address} (a TensorFlow server)"
        channel = channels.tensorflow_channel(address)

        self._use_stub(tensorflow_services_pb2_grpc.WorkerServiceStub(channel))
        self._run = channel.unary_unary(
            f"/{SERVICE}/RunGraph",
            request_serializer=lambda r: messages.encode(r[0], RUN_GRAPH_REQUEST, r[1]))
        self._recv_raw = channel.unary_unary(f"/{SERVICE}/RecvTensor",
                                             request_serializer=lambda m: m.SerializeToString())
        self._devices: Optional[dict] = None  # device name -> incarnation
        self._keys: dict = {}  # (session, graph handle) -> {tensor name: rendezvous key}
        self._lock = threading.Lock()

    def _call(self, stub, request, timeout: float):
        with calling(self._peer):
            return stub(request, timeout=timeout)

    def get_status(self, timeout: float, wait_for_ready: bool = False):
        """TF's GetStatusResponse (the task's devices), with job_name and
        task_index filled from the devices' names for nbcluster's callers."""
        with calling(self._peer):
            response = self._status(worker_pb2.GetStatusRequest(), timeout=timeout,
                                    wait_for_ready=wait_for_ready)
        if response.device_attributes:
            spec = DeviceSpec.from_string(response.device_attributes[0].name)
            response.job_name, response.task_index = spec.job or "", spec.task or 0
        self._devices = {d.name: d.incarnation for d in response.device_attributes}
        return response

    def _incarnations(self) -> dict:
        """Device name -> incarnation, from the task's GetStatus (asked once)."""
        if self._devices is None:
            self.get_status(CONTROL_TIMEOUT)
        return self._devices

    def register_graph(self, session_handle: str, nodes: list, parallelism: int) -> str:
        nodes, keys = _for_tensorflow(nodes, self._incarnations())
        req = worker_pb2.RegisterGraphRequest(session_handle=session_handle,
                                              graph_def=nodes_to_proto(nodes),
                                              create_worker_session_called=True)
        handle = self._call(self._register, req, CONTROL_TIMEOUT).graph_handle
        with self._lock:
            self._keys[(session_handle, handle)] = keys
        return handle

    def deregister_graph(self, session_handle: str, graph_handle: str) -> None:
        with self._lock:
            self._keys.pop((session_handle, graph_handle), None)
        self._call(self._deregister, worker_pb2.DeregisterGraphRequest(
            session_handle=session_handle, graph_handle=graph_handle,
            create_worker_session_called=True), CONTROL_TIMEOUT)

    def run_graph(self, session_handle: str, graph_handle: str, step_id: int, feeds: dict,
                  fetches: list, timeout: Optional[float], collect_stats: bool,
                  partition_graphs: bool) -> RunGraphResult:
        with self._lock:
            keys = self._keys.get((session_handle, graph_handle))
        if keys is None:
            raise errors.AbortedError(None, None, f"Graph handle {graph_handle!r} is not "
                                                  f"registered on {self._peer}")
        req = worker_pb2.RunGraphRequest(
            session_handle=session_handle, graph_handle=graph_handle, step_id=step_id,
            recv_key=[keys[f] for f in fetches], create_worker_session_called=True,
            store_errors_in_response_body=True)
        req.exec_opts.record_timeline = collect_stats
        req.exec_opts.record_partition_graphs = partition_graphs
        with calling(self._peer):
            data = self._run((req, [(keys[name], value) for name, value in feeds.items()]),
                             timeout=timeout if timeout is not None else STEP_TIMEOUT)
        response, tensors = messages.decode(data, RUN_GRAPH_RESPONSE)
        if response.status_code:
            raise remote_error(response.status_code, response.status_error_message, None,
                               self._peer)
        names = {key: name for name, key in keys.items()}
        result = RunGraphResult({names[key]: value for key, value in tensors}, None,
                                list(response.partition_graph))
        if response.HasField("step_stats"):
            result.step_stats = response.step_stats
        return result

    def recv_tensor(self, step_id: int, key: str, timeout: Optional[float], waiter=None):
        req = worker_pb2.RecvTensorRequest(step_id=step_id, rendezvous_key=key)
        with calling(self._peer):
            data = self._recv_raw(req, timeout=timeout if timeout is not None
                                  else STEP_TIMEOUT)
        response, tensors = messages.decode(data, RECV_TENSOR_RESPONSE)
        if response.is_dead:
            raise errors.UnimplementedError(
                None, None, f"{self._peer} sent a dead tensor for {key!r} (control flow "
                            f"across TensorFlow and nbcluster tasks is not supported)")
        if len(tensors) != 1:
            raise errors.DataLossError(None, None, f"RecvTensor from {self._peer} returned "
                                                   f"{len(tensors)} tensors")
        return tensors[0][1]

    def stream_tensors(self, step_id: int, keys: list, timeout: Optional[float],
                       cancellation=None):
        # TF has no stream of several tensors: "(key, None)" tells the caller to
        # fetch each one with recv_tensor.
        return iter([[(key, None)] for key in keys])
