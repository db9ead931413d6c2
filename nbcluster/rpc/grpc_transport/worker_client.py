"""A worker over gRPC: `transport.WorkerClient` (the Worker seam), every call a gRPC call."""
from __future__ import annotations

import functools
import itertools
import math
import threading
import time
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
from nbcluster.rpc.grpc_transport.worker_control import (
    CONTROL_TIMEOUT,
    STEP_TIMEOUT,
    WorkerControlCalls,
)
from nbcluster.rpc.grpc_transport.worker_service import (
    RECV_TENSOR_REQUEST,
    RECV_TENSOR_RESPONSE,
    RECV_TENSORS,
    RUN_GRAPH_REQUEST,
    RUN_GRAPH_RESPONSE,
    SERVICE,
)

PROBE_S = 10.0  # how long a liveness probe (GetStatus) may take


def _tensorflow_on_unimplemented(method):
    """`method` as nbcluster's call; where the task answers UNIMPLEMENTED and is not
    ours, the client hands over to TF's dialect and makes the call again there."""
    name = method.__name__

    @functools.wraps(method)
    def call(self, *args, **kwargs):
        try:
            return method(self, *args, **kwargs)
        except errors.UnimplementedError:
            if self.tensorflow or self._is_ours():
                raise
        return getattr(self._hand_over(), name)(*args, **kwargs)
    return call


class GrpcWorkerClient(WorkerControlCalls):
    """Talks to the worker of the task at `address`.

    Args:
      address: "host:port".
      channel: the gRPC channel to use; default: the shared one to `address`
        (`channels.channel`). A channel given here stays its owner's to close.
    """

    def __init__(self, address: str, channel=None) -> None:
        self.address = address
        self._peer = f"worker {self.address}"
        self._handing_over = threading.Lock()
        channel = channel if channel is not None else channels.channel(address)

        # The protobuf-only methods through the generated stub; the tensor ones
        # through `TensorStub`, which frames their tensors by hand (docs/protocol.md).
        self._use_stub(worker_pb2_grpc.WorkerServiceStub(channel))
        self._run = TensorStub(channel, SERVICE, "RunGraph", RUN_GRAPH_REQUEST,
                               RUN_GRAPH_RESPONSE)
        self._recv = TensorStub(channel, SERVICE, "RecvTensor", RECV_TENSOR_REQUEST,
                                RECV_TENSOR_RESPONSE)
        self._recv_many = channel.unary_stream(f"/{SERVICE}/{RECV_TENSORS}")

    unanswered_at = -math.inf  # set on an UnavailableError (`transport.WorkerClient`)

    def _invoke(self, method, *args, **kwargs):
        try:
            with calling(self._peer):
                return method(*args, **kwargs)
        except errors.UnavailableError:
            self.unanswered_at = time.monotonic()
            raise

    def _call(self, stub, request, timeout: Optional[float], wait_for_ready: bool = False):
        return self._invoke(stub, request, timeout=timeout, wait_for_ready=wait_for_ready)

    def _call_tensors(self, stub, request, tensors: list, timeout: Optional[float]):
        return self._invoke(stub, request, tensors, timeout)

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
        timeout = timeout or CONTROL_TIMEOUT
        try:
            return self._call(self._status, worker_pb2.GetStatusRequest(), timeout,
                              wait_for_ready)
        except errors.UnimplementedError:
            pass  # the very question _is_ours asks: no need to ask it twice
        return self._hand_over().get_status(timeout, wait_for_ready)

    # Where the task is real TensorFlow, these become instance attributes bound to its
    # TensorFlowWorkerClient (`_hand_over`), so after first contact every call goes
    # straight to one client or the other, with no per-call check.
    needs_cleanup = False  # whether the master ends each step here with CleanupGraph
    tensorflow = False     # whether the task turned out to be real TensorFlow

    # The control calls both dialects share, as nbcluster's until the task turns out TF.
    create_worker_session = _tensorflow_on_unimplemented(WorkerControlCalls.create_worker_session)
    delete_worker_session = _tensorflow_on_unimplemented(WorkerControlCalls.delete_worker_session)
    cleanup_graph = _tensorflow_on_unimplemented(WorkerControlCalls.cleanup_graph)
    cleanup_all = _tensorflow_on_unimplemented(WorkerControlCalls.cleanup_all)

    def _hand_over(self):
        """The task is real TensorFlow: every call from now on speaks its dialect."""
        with self._handing_over:  # first contacts on two threads make one TF client
            if not self.tensorflow:
                from nbcluster.rpc.grpc_transport.tensorflow_worker_client import (
                    TensorFlowWorkerClient,
                )
                tf = TensorFlowWorkerClient(self.address)
                for name in _HANDED_OVER:
                    setattr(self, name, getattr(tf, name))
                self.needs_cleanup = self.tensorflow = True
        return self

    def _is_ours(self) -> bool:
        try:
            self._call(self._status, worker_pb2.GetStatusRequest(), CONTROL_TIMEOUT)
            return True
        except errors.UnimplementedError:
            return False

    def probe(self) -> None:
        """Returns if the task answers GetStatus within `PROBE_S`.

        Raises:
          UnavailableError: it does not (it hangs or died), worded as gRPC's
            keepalive failures are.
        """
        try:
            self.get_status(timeout=PROBE_S)
        except (errors.UnavailableError, errors.DeadlineExceededError) as e:
            self.unanswered_at = time.monotonic()
            raise errors.UnavailableError(
                None, None, f"{self._peer} stopped answering (no reply to a status probe "
                            f"while a call waited on it: the task hangs or died): "
                            f"{e.message}") from None

    @_tensorflow_on_unimplemented
    def register_graph(self, session_handle: str, nodes: list, parallelism: int) -> str:
        req = worker_pb2.RegisterGraphRequest(session_handle=session_handle,
                                              graph_def=nodes_to_proto(nodes),
                                              create_worker_session_called=True)
        req.config_proto.inter_op_parallelism_threads = parallelism
        return self._call(self._register, req, CONTROL_TIMEOUT).graph_handle

    @_tensorflow_on_unimplemented
    def deregister_graph(self, session_handle: str, graph_handle: str) -> None:
        self._call(self._deregister, worker_pb2.DeregisterGraphRequest(
            session_handle=session_handle, graph_handle=graph_handle), CONTROL_TIMEOUT)

    @_tensorflow_on_unimplemented
    def run_graph(self, session_handle: str, graph_handle: str, step_id: int, feeds: dict,
                  fetches: list, timeout: Optional[float], collect_stats: bool,
                  partition_graphs: bool) -> RunGraphResult:
        req = run_graph_request(session_handle, graph_handle, step_id, fetches,
                                 collect_stats, partition_graphs)
        timeout = timeout if timeout is not None else STEP_TIMEOUT
        return run_graph_result(*self._call_tensors(
            self._run, req, list(feeds.items()), timeout))

    @_tensorflow_on_unimplemented
    def recv_tensor(self, step_id: int, key: str, timeout: Optional[float], waiter=None):
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
                    self._hand_over()  # TF has no such stream: one by one
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


# The calls a TensorFlow task's client makes instead once the task turns out TF.
_HANDED_OVER = ("get_status", "create_worker_session", "delete_worker_session",
                "register_graph", "deregister_graph", "run_graph", "cleanup_graph",
                "cleanup_all", "recv_tensor", "stream_tensors")
