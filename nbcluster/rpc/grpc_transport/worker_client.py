"""A worker over gRPC, with the same methods as `Worker` (the WorkerClient seam)."""
from __future__ import annotations

from typing import Optional

from nbcluster import errors
from nbcluster.framework.device_spec import DeviceSpec
from nbcluster.framework.graph_def import nodes_to_proto
from nbcluster.distributed.transport import RunGraphResult
from nbcluster.proto import worker_pb2
from nbcluster.rpc.grpc_transport import channels
from nbcluster.rpc.socket_transport import client as data_plane_client
from nbcluster.rpc.codec import messages
from nbcluster.rpc.grpc_transport.calls import calling, unary_method
from nbcluster.rpc.socket_transport.calls import RUN_GRAPH
from nbcluster.rpc.grpc_transport.streaming import TensorStub
from nbcluster.rpc.grpc_transport.worker_service import (RECV_TENSOR_REQUEST,
                                                         RECV_TENSOR_RESPONSE, RECV_TENSORS,
                                                         RUN_GRAPH_REQUEST, RUN_GRAPH_RESPONSE,
                                                         SERVICE)

_CONTROL_TIMEOUT = 30.0
TENSORFLOW_SERVICE = "tensorflow.WorkerService"
_STEP_TIMEOUT = 24 * 3600.0


class GrpcWorkerClient:
    """Talks to the worker of the task at `address`.

    Args:
      address: "host:port".
      channel: the gRPC channel to use; default: the shared one to `address`
        (`channels.channel`). A channel given here stays its owner's to close.
    """

    def __init__(self, address: str, channel=None) -> None:
        self.address = address
        self._peer = f"worker {self.address}"
        channel = channel if channel is not None else channels.channel(address)

        def method(name, response_class):
            return unary_method(channel, SERVICE, name, response_class)

        self._status = method("GetStatus", worker_pb2.GetStatusResponse)
        # A real TensorFlow task answers ours UNIMPLEMENTED; its own GetStatus
        # lists its devices (field 1, as ours) and nothing else.
        self._tensorflow_status = unary_method(channel, TENSORFLOW_SERVICE, "GetStatus",
                                               worker_pb2.GetStatusResponse)
        self.tensorflow = False  # set once the task turned out to be TensorFlow
        self._create = method("CreateWorkerSession", worker_pb2.CreateWorkerSessionResponse)
        self._delete = method("DeleteWorkerSession", worker_pb2.DeleteWorkerSessionResponse)
        self._register = method("RegisterGraph", worker_pb2.RegisterGraphResponse)
        self._deregister = method("DeregisterGraph", worker_pb2.DeregisterGraphResponse)
        self._run = TensorStub(channel, SERVICE, "RunGraph", RUN_GRAPH_REQUEST,
                               RUN_GRAPH_RESPONSE)
        self._cleanup = method("CleanupGraph", worker_pb2.CleanupGraphResponse)
        self._cleanup_all = method("CleanupAll", worker_pb2.CleanupAllResponse)
        self._recv = TensorStub(channel, SERVICE, "RecvTensor", RECV_TENSOR_REQUEST,
                                RECV_TENSOR_RESPONSE)
        self._recv_many = channel.unary_stream(f"/{SERVICE}/{RECV_TENSORS}")
        # Tensors from a task on this host skip gRPC when it offers a data plane.
        self._plane = data_plane_client.peer_for(address)

    def _call(self, stub, request, timeout: Optional[float], wait_for_ready: bool = False):
        with calling(self._peer):
            return stub(request, timeout=timeout, wait_for_ready=wait_for_ready)

    def _call_tensors(self, stub, request, tensors: list, timeout: Optional[float]):
        with calling(self._peer):
            return stub(request, tensors, timeout)

    def get_status(self, timeout: Optional[float] = None, wait_for_ready: bool = False):
        """The task's GetStatusResponse (pid, host, devices, counters).

        Args:
          timeout: seconds the call may take (default 30).
          wait_for_ready: wait, within `timeout`, for the task to accept
            connections instead of failing at once when it refuses them.
        Raises:
          UnavailableError: the task does not answer (DeadlineExceededError
            once `timeout` passed).
        """
        request, timeout = worker_pb2.GetStatusRequest(), timeout or _CONTROL_TIMEOUT
        if not self.tensorflow:
            try:
                return self._call(self._status, request, timeout, wait_for_ready)
            except errors.UnimplementedError:
                self.tensorflow = True
        return _with_task(self._call(self._tensorflow_status, request, timeout, wait_for_ready))

    def probe(self) -> None:
        """Returns if the task answers GetStatus within `data_plane_client.PROBE_S`.

        Raises:
          UnavailableError: it does not (it hangs or died), worded as gRPC's
            keepalive failures are.
        """
        try:
            self.get_status(timeout=data_plane_client.PROBE_S)
        except (errors.UnavailableError, errors.DeadlineExceededError) as e:
            raise errors.UnavailableError(
                None, None, f"{self._peer} stopped answering (no reply to a status probe "
                            f"while a call waited on it: the task hangs or died): "
                            f"{e.message}") from None

    def create_worker_session(self, session_handle: str, isolate: bool,
                              server_def=None) -> None:
        req = worker_pb2.CreateWorkerSessionRequest(session_handle=session_handle,
                                                    isolate_session_state=isolate)
        if server_def is not None:
            req.server_def.CopyFrom(server_def)
        self._call(self._create, req, _CONTROL_TIMEOUT)

    def delete_worker_session(self, session_handle: str) -> None:
        self._call(self._delete, worker_pb2.DeleteWorkerSessionRequest(
            session_handle=session_handle), _CONTROL_TIMEOUT)

    def register_graph(self, session_handle: str, nodes: list, parallelism: int) -> str:
        req = worker_pb2.RegisterGraphRequest(session_handle=session_handle,
                                              graph_def=nodes_to_proto(nodes),
                                              create_worker_session_called=True)
        req.config_proto.inter_op_parallelism_threads = parallelism
        return self._call(self._register, req, _CONTROL_TIMEOUT).graph_handle

    def deregister_graph(self, session_handle: str, graph_handle: str) -> None:
        self._call(self._deregister, worker_pb2.DeregisterGraphRequest(
            session_handle=session_handle, graph_handle=graph_handle), _CONTROL_TIMEOUT)

    def run_graph(self, session_handle: str, graph_handle: str, step_id: int, feeds: dict,
                  fetches: list, timeout: Optional[float], collect_stats: bool,
                  partition_graphs: bool) -> RunGraphResult:
        req = _run_graph_request(session_handle, graph_handle, step_id, fetches,
                                 collect_stats, partition_graphs)
        timeout = timeout if timeout is not None else _STEP_TIMEOUT
        if self._plane is not None:  # a peer on this host: skip gRPC's round trip
            reply = self._plane.call(RUN_GRAPH, req, list(feeds.items()), timeout,
                                     probe=self.probe)
            if reply is not data_plane_client.NOT_SERVED:
                return _run_graph_result(*reply)
        return _run_graph_result(*self._call_tensors(
            self._run, req, list(feeds.items()), timeout))

    def cleanup_graph(self, step_id: int) -> None:
        self._call(self._cleanup, worker_pb2.CleanupGraphRequest(step_id=step_id),
                   _CONTROL_TIMEOUT)

    def cleanup_all(self, containers: Optional[list]) -> None:
        self._call(self._cleanup_all, worker_pb2.CleanupAllRequest(container=containers or []),
                   _CONTROL_TIMEOUT)

    def recv_tensor(self, step_id: int, key: str, timeout: Optional[float], waiter=None):
        if self._plane is not None:
            value = self._plane.recv_tensor(step_id, key, timeout, waiter)
            if value is not data_plane_client.NOT_SERVED:
                return value
        req = worker_pb2.RecvTensorRequest(step_id=step_id, rendezvous_key=key)
        _, tensors = self._call_tensors(self._recv, req, [],
                                        timeout if timeout is not None else _STEP_TIMEOUT)
        if len(tensors) != 1:
            raise errors.DataLossError(None, None, f"RecvTensor from worker {self.address} "
                                                   f"returned {len(tensors)} tensors")
        return tensors[0][1]

    def stream_tensors(self, step_id: int, keys: list, timeout: Optional[float],
                       cancellation=None):
        """Asks for `keys` of step `step_id` in one call, sent now; returns an
        iterator of lists of (key, ndarray), the tensors as the worker
        produces them; (key, None) is a tensor too large for the stream:
        fetch it with `recv_tensor`. Cancelling `cancellation` (a
        CancellationManager) ends the call.

        Raises (here or from the iterator):
          OpError: the call failed (CancelledError once cancelled).
        """
        if self._plane is not None:
            values = self._plane.stream_tensors(step_id, keys, timeout, cancellation)
            if values is not None:
                return values
        req = worker_pb2.RunGraphRequest(step_id=step_id, recv_key=keys)
        with calling(self._peer):
            call = self._recv_many(req.SerializeToString(),
                                   timeout=timeout if timeout is not None else _STEP_TIMEOUT)
        token = None
        if cancellation is not None:
            token = cancellation.register(call.cancel)
            if token is None:
                call.cancel()
        return self._stream_frames(call, cancellation, token)

    def _stream_frames(self, call, cancellation, token):
        try:
            with calling(self._peer):
                for frame in call:
                    if frame[:1] == b"K":
                        yield [(frame[1:].decode(), None)]
                        continue
                    yield messages.decode(memoryview(frame)[1:], RUN_GRAPH_RESPONSE)[1]
        finally:
            if token is not None:
                cancellation.deregister(token)


def _run_graph_request(session_handle: str, graph_handle: str, step_id: int, fetches: list,
                       collect_stats: bool, partition_graphs: bool):
    req = worker_pb2.RunGraphRequest(session_handle=session_handle, graph_handle=graph_handle,
                                     step_id=step_id, recv_key=fetches,
                                     create_worker_session_called=True)
    req.exec_opts.record_timeline = collect_stats
    req.exec_opts.record_partition_graphs = partition_graphs
    return req


def _run_graph_result(response, tensors: list) -> RunGraphResult:
    result = RunGraphResult(dict(tensors), None, list(response.partition_graph))
    if response.HasField("step_stats"):
        result.step_stats = response.step_stats
    return result


def _with_task(response):
    """A TensorFlow task's GetStatusResponse with job_name and task_index
    filled from its devices' names ("/job:ps/replica:0/task:0/device:CPU:0")."""
    if response.device_attributes:
        spec = DeviceSpec.from_string(response.device_attributes[0].name)
        response.job_name, response.task_index = spec.job or "", spec.task or 0
    return response
