"""A worker over gRPC: `transport.WorkerClient` (the Worker seam), every call a gRPC call."""
from __future__ import annotations

import itertools
from typing import Optional

import grpc

from nbcluster import errors
from nbcluster.framework.graph_def import nodes_to_proto
from nbcluster.master_worker.transport import RunGraphResult
from nbcluster.proto import worker_pb2, worker_pb2_grpc
from nbcluster.rpc.codec import messages
from nbcluster.rpc.grpc_transport import channels
from nbcluster.rpc.grpc_transport.calls import calling
from nbcluster.rpc.grpc_transport.streaming import TensorStub
from nbcluster.rpc.grpc_transport.worker_service import (
    RECV_TENSOR_REQUEST,
    RECV_TENSOR_RESPONSE,
    RECV_TENSORS,
    RUN_GRAPH_REQUEST,
    RUN_GRAPH_RESPONSE,
    SERVICE,
)

_CONTROL_TIMEOUT = 30.0
STEP_TIMEOUT = 24 * 3600.0
PROBE_S = 10.0  # how long a liveness probe (GetStatus) may take


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

        # A real TensorFlow task answers ours UNIMPLEMENTED: from then on its
        # TensorFlowWorkerClient makes every call (`tensorflow_worker_client`).
        self._tf = None
        # The protobuf-only methods through the generated stub; the tensor ones
        # through `TensorStub`, which frames their tensors by hand (docs/protocol.md).
        stub = worker_pb2_grpc.WorkerServiceStub(channel)
        self._status = stub.GetStatus
        self._create = stub.CreateWorkerSession
        self._delete = stub.DeleteWorkerSession
        self._register = stub.RegisterGraph
        self._deregister = stub.DeregisterGraph
        self._run = TensorStub(channel, SERVICE, "RunGraph", RUN_GRAPH_REQUEST,
                               RUN_GRAPH_RESPONSE)
        self._cleanup = stub.CleanupGraph
        self._cleanup_all = stub.CleanupAll
        self._recv = TensorStub(channel, SERVICE, "RecvTensor", RECV_TENSOR_REQUEST,
                                RECV_TENSOR_RESPONSE)
        self._recv_many = channel.unary_stream(f"/{SERVICE}/{RECV_TENSORS}")

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
        timeout = timeout or _CONTROL_TIMEOUT
        if self._tf is None:
            try:
                return self._call(self._status, worker_pb2.GetStatusRequest(), timeout,
                                  wait_for_ready)
            except errors.UnimplementedError:
                self._turned_out_tensorflow()
        return self._tf.get_status(timeout, wait_for_ready)

    def _turned_out_tensorflow(self):
        """The task is real TensorFlow: every call from now on speaks its dialect."""
        if self._tf is None:
            from nbcluster.rpc.grpc_transport.tensorflow_worker_client import TensorFlowWorkerClient
            self._tf = TensorFlowWorkerClient(self.address)
        return self._tf

    @property
    def tensorflow(self) -> bool:
        """Whether the task turned out to be real TensorFlow."""
        return self._tf is not None

    @property
    def needs_cleanup(self) -> bool:
        """Whether the master must end each step here with CleanupGraph (TF's workers)."""
        return self._tf is not None

    def _tensorflow_or_ours(self, name: str, *args):
        """`name(*args)` on the TF client if the task is TensorFlow; else ours,
        handing over when the task answers it UNIMPLEMENTED."""
        if self._tf is not None:
            return getattr(self._tf, name)(*args)
        try:
            return getattr(self, "_ours_" + name)(*args)
        except errors.UnimplementedError:
            if self._tf is None and not self._is_ours():
                return getattr(self._turned_out_tensorflow(), name)(*args)
            raise

    def _is_ours(self) -> bool:
        try:
            self._call(self._status, worker_pb2.GetStatusRequest(), _CONTROL_TIMEOUT)
            return True
        except errors.UnimplementedError:
            return False

    # The worker's calls: ours, or TensorFlow's dialect once the task is TF.
    def create_worker_session(self, session_handle: str, isolate: bool,
                              server_def=None) -> None:
        self._tensorflow_or_ours("create_worker_session", session_handle, isolate, server_def)

    def delete_worker_session(self, session_handle: str) -> None:
        self._tensorflow_or_ours("delete_worker_session", session_handle)

    def register_graph(self, session_handle: str, nodes: list, parallelism: int) -> str:
        return self._tensorflow_or_ours("register_graph", session_handle, nodes, parallelism)

    def deregister_graph(self, session_handle: str, graph_handle: str) -> None:
        self._tensorflow_or_ours("deregister_graph", session_handle, graph_handle)

    def run_graph(self, session_handle: str, graph_handle: str, step_id: int, feeds: dict,
                  fetches: list, timeout: Optional[float], collect_stats: bool,
                  partition_graphs: bool) -> RunGraphResult:
        return self._tensorflow_or_ours("run_graph", session_handle, graph_handle, step_id,
                                        feeds, fetches, timeout, collect_stats,
                                        partition_graphs)

    def cleanup_graph(self, step_id: int) -> None:
        self._tensorflow_or_ours("cleanup_graph", step_id)

    def cleanup_all(self, containers: Optional[list]) -> None:
        self._tensorflow_or_ours("cleanup_all", containers)

    def recv_tensor(self, step_id: int, key: str, timeout: Optional[float], waiter=None):
        return self._tensorflow_or_ours("recv_tensor", step_id, key, timeout, waiter)

    def probe(self) -> None:
        """Returns if the task answers GetStatus within `PROBE_S`.

        Raises:
          UnavailableError: it does not (it hangs or died), worded as gRPC's
            keepalive failures are.
        """
        try:
            self.get_status(timeout=PROBE_S)
        except (errors.UnavailableError, errors.DeadlineExceededError) as e:
            raise errors.UnavailableError(
                None, None, f"{self._peer} stopped answering (no reply to a status probe "
                            f"while a call waited on it: the task hangs or died): "
                            f"{e.message}") from None

    def _ours_create_worker_session(self, session_handle: str, isolate: bool,
                              server_def=None) -> None:
        req = worker_pb2.CreateWorkerSessionRequest(session_handle=session_handle,
                                                    isolate_session_state=isolate)
        if server_def is not None:
            req.server_def.CopyFrom(server_def)
        self._call(self._create, req, _CONTROL_TIMEOUT)

    def _ours_delete_worker_session(self, session_handle: str) -> None:
        self._call(self._delete, worker_pb2.DeleteWorkerSessionRequest(
            session_handle=session_handle), _CONTROL_TIMEOUT)

    def _ours_register_graph(self, session_handle: str, nodes: list, parallelism: int) -> str:
        req = worker_pb2.RegisterGraphRequest(session_handle=session_handle,
                                              graph_def=nodes_to_proto(nodes),
                                              create_worker_session_called=True)
        req.config_proto.inter_op_parallelism_threads = parallelism
        return self._call(self._register, req, _CONTROL_TIMEOUT).graph_handle

    def _ours_deregister_graph(self, session_handle: str, graph_handle: str) -> None:
        self._call(self._deregister, worker_pb2.DeregisterGraphRequest(
            session_handle=session_handle, graph_handle=graph_handle), _CONTROL_TIMEOUT)

    def _ours_run_graph(self, session_handle: str, graph_handle: str, step_id: int, feeds: dict,
                  fetches: list, timeout: Optional[float], collect_stats: bool,
                  partition_graphs: bool) -> RunGraphResult:
        req = run_graph_request(session_handle, graph_handle, step_id, fetches,
                                 collect_stats, partition_graphs)
        timeout = timeout if timeout is not None else STEP_TIMEOUT
        return run_graph_result(*self._call_tensors(
            self._run, req, list(feeds.items()), timeout))

    def _ours_cleanup_graph(self, step_id: int) -> None:
        self._call(self._cleanup, worker_pb2.CleanupGraphRequest(step_id=step_id),
                   _CONTROL_TIMEOUT)

    def _ours_cleanup_all(self, containers: Optional[list]) -> None:
        self._call(self._cleanup_all, worker_pb2.CleanupAllRequest(container=containers or []),
                   _CONTROL_TIMEOUT)

    def _ours_recv_tensor(self, step_id: int, key: str, timeout: Optional[float], waiter=None):
        req = worker_pb2.RecvTensorRequest(step_id=step_id, rendezvous_key=key)
        _, tensors = self._call_tensors(self._recv, req, [],
                                        timeout if timeout is not None else STEP_TIMEOUT)
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
        if self._tf is not None:
            return self._tf.stream_tensors(step_id, keys, timeout, cancellation)
        req = worker_pb2.RunGraphRequest(step_id=step_id, recv_key=keys)
        with calling(self._peer):
            call = self._recv_many(req.SerializeToString(),
                                   timeout=timeout if timeout is not None else STEP_TIMEOUT)
        token = None
        if cancellation is not None:
            token = cancellation.register(call.cancel)
            if token is None:
                call.cancel()
        return self._stream_frames(call, keys, cancellation, token)

    def _stream_frames(self, call, keys: list, cancellation, token):
        try:
            with calling(self._peer):
                try:
                    first = next(iter(call), None)
                except grpc.RpcError as e:
                    if e.code() != grpc.StatusCode.UNIMPLEMENTED or self._is_ours():
                        raise
                    self._turned_out_tensorflow()  # TF has no such stream: one by one
                    yield from ([(key, None)] for key in keys)
                    return
                for frame in itertools.chain([first] if first is not None else [], call):
                    if frame[:1] == b"K":
                        yield [(frame[1:].decode(), None)]
                        continue
                    yield messages.decode(memoryview(frame)[1:], RUN_GRAPH_RESPONSE)[1]
        finally:
            if token is not None:
                cancellation.deregister(token)


def run_graph_request(session_handle: str, graph_handle: str, step_id: int, fetches: list,
                       collect_stats: bool, partition_graphs: bool):
    req = worker_pb2.RunGraphRequest(session_handle=session_handle, graph_handle=graph_handle,
                                     step_id=step_id, recv_key=fetches,
                                     create_worker_session_called=True)
    req.exec_opts.record_timeline = collect_stats
    req.exec_opts.record_partition_graphs = partition_graphs
    return req


def run_graph_result(response, tensors: list) -> RunGraphResult:
    result = RunGraphResult(dict(tensors), None, list(response.partition_graph))
    if response.HasField("step_stats"):
        result.step_stats = response.step_stats
    return result

