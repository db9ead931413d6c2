"""A worker and a master on this host: tensors, RunGraph and RunStep over the local socket,
every other call (and a call the peer's socket does not serve) over gRPC.

Rule: `rpc.peers` picks these once per peer, when the peer can be on this host
and the data plane is on (`client.peer_for`); a call then falls back to gRPC
only where the peer answers that it serves no data plane (`NOT_SERVED`: it runs
with NBCLUSTER_DATA_PLANE=grpc, or is another host's task on a shared port).
"""
from __future__ import annotations

from typing import Callable, Optional

from nbcluster.rpc.grpc_transport.master_client import GrpcMasterClient, run_step_result
from nbcluster.rpc.grpc_transport.worker_client import (
    STEP_TIMEOUT,
    GrpcWorkerClient,
    run_graph_request,
    run_graph_result,
)
from nbcluster.rpc.socket_transport.calls import RUN_GRAPH, RUN_STEP
from nbcluster.rpc.socket_transport.client import NOT_SERVED, DataPlanePeer


class SocketWorkerClient(GrpcWorkerClient):
    """`transport.WorkerClient` for a worker on this host, over its data plane `plane`.

    It overrides nbcluster's own tensor calls; a task that turns out to be TensorFlow
    (no socket, then UNIMPLEMENTED over gRPC) is called in TF's dialect from then on,
    its client's methods bound over these (`GrpcWorkerClient._hand_over`).
    """

    def __init__(self, address: str, plane: DataPlanePeer, channel=None) -> None:
        super().__init__(address, channel)
        self._plane = plane

    def run_graph(self, session_handle: str, graph_handle: str, step_id: int,
                        feeds: dict, fetches: list, timeout: Optional[float],
                        collect_stats: bool, partition_graphs: bool):
        req = run_graph_request(session_handle, graph_handle, step_id, fetches,
                                collect_stats, partition_graphs)
        reply = self._plane.call(RUN_GRAPH, req, list(feeds.items()),
                                 timeout if timeout is not None else STEP_TIMEOUT,
                                 probe=self.probe)
        if reply is NOT_SERVED:
            return super().run_graph(session_handle, graph_handle, step_id, feeds,
                                           fetches, timeout, collect_stats, partition_graphs)
        return run_graph_result(*reply)

    def start_run_graph(self, session_handle: str, graph_handle: str, step_id: int,
                        feeds: dict, fetches: list, timeout: Optional[float],
                        collect_stats: bool, partition_graphs: bool,
                        on_error: Callable[[], None]) -> Optional["StartedRunGraph"]:
        """`run_graph`, sent now: its `finish()` reads the result (on the
        calling thread, once it has run its own partition), or None where
        this peer takes `run_graph` only (TensorFlow's, or no data plane).
        `on_error` runs (on another thread) if the reply is an error that
        lands before the result is asked for (`socket_transport.reply_watch`)."""
        if self.tensorflow:
            return None
        req = run_graph_request(session_handle, graph_handle, step_id, fetches,
                                collect_stats, partition_graphs)
        pending = self._plane.start_call(RUN_GRAPH, req, list(feeds.items()),
                                         timeout if timeout is not None else STEP_TIMEOUT,
                                         probe=self.probe, on_error=on_error)
        return None if pending is NOT_SERVED else StartedRunGraph(pending)

    def recv_tensor(self, step_id: int, key: str, timeout: Optional[float],
                          waiter=None):
        value = self._plane.recv_tensor(step_id, key, timeout, waiter)
        if value is NOT_SERVED:
            return super().recv_tensor(step_id, key, timeout, waiter)
        return value

    def stream_tensors(self, step_id: int, keys: list, timeout: Optional[float],
                       cancellation=None):
        values = self._plane.stream_tensors(step_id, keys, timeout, cancellation)
        if values is None:
            return super().stream_tensors(step_id, keys, timeout, cancellation)
        return values


class StartedRunGraph:
    """A RunGraph sent over the data plane; `finish` or `abandon` follows, once."""

    def __init__(self, pending) -> None:
        self._pending = pending

    def finish(self):
        """The RunGraphResult, read now. Raises: OpError, as `run_graph`."""
        return run_graph_result(*self._pending.finish())

    def abandon(self) -> None:
        """Drops the call unread (its peer sees the hang-up and ends the step)."""
        self._pending.abandon()


class SocketMasterClient(GrpcMasterClient):
    """`transport.MasterClient` for a master on this host: RunStep over its data plane."""

    def __init__(self, address: str, plane: DataPlanePeer, config=None) -> None:
        super().__init__(address, config)
        self._plane = plane
        self._prober: Optional[GrpcWorkerClient] = None  # made when a step first waits long

    def _probe(self) -> None:
        # The task's worker service answers for it (gRPC keepalive's role on this path).
        if self._prober is None:
            self._prober = GrpcWorkerClient(self.address)
        self._prober.probe()

    def run_step(self, handle: str, feeds: dict, fetches: list, targets: list,
                 options=None) -> tuple:
        req, timeout = self.run_step_request(handle, fetches, targets, options)
        reply = self._plane.call(RUN_STEP, req, list(feeds.items()), timeout, self._peer,
                                 self._probe)
        if reply is NOT_SERVED:
            return super().run_step(handle, feeds, fetches, targets, options)
        return run_step_result(reply, fetches)
