"""The seams between master, workers and clients: one Protocol per service (a
`WorkerClient`, a `MasterClient`) plus the in-process implementations. The
local-socket and gRPC ones live in `nbcluster.rpc`, and `rpc.peers` picks one
of the three per peer.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Optional, Protocol


@dataclass
class RunGraphResult:
    fetches: dict
    step_stats: Optional[object] = None        # config_pb2.StepStats
    partition_graphs: list = field(default_factory=list)  # graph_pb2.GraphDef


class WorkerClient(Protocol):
    """What a master or a peer worker asks of one task's worker."""

    # Whether the worker keeps each step's state until CleanupGraph (a TensorFlow
    # task's does), so the master ends every step there with one.
    needs_cleanup: bool
    # When (time.monotonic) a call last found the task gone or hung; a failed step's
    # cleanup does not wait for such a task (`fanout.cleanup_step`). -inf: never;
    # a client without it is always waited for.
    unanswered_at: float

    def get_status(self, timeout: Optional[float] = None): ...

    def create_worker_session(self, session_handle: str, isolate: bool,
                              server_def=None) -> None:
        """`server_def`: the session's own cluster, naming this worker in it."""

    def delete_worker_session(self, session_handle: str) -> None: ...

    def register_graph(self, session_handle: str, nodes: list, parallelism: int) -> str: ...

    def deregister_graph(self, session_handle: str, graph_handle: str) -> None: ...

    def run_graph(self, session_handle: str, graph_handle: str, step_id: int, feeds: dict,
                  fetches: list, timeout: Optional[float], collect_stats: bool,
                  partition_graphs: bool) -> RunGraphResult: ...

    def cleanup_graph(self, step_id: int) -> None: ...

    def cleanup_all(self, containers: Optional[list]) -> None: ...

    def recv_tensor(self, step_id: int, key: str, timeout: Optional[float],
                    waiter=None):
        """`waiter`: the receiving step's context; its cancellation ends the call."""

    def stream_tensors(self, step_id: int, keys: list, timeout: Optional[float],
                       cancellation=None):
        """Asks for `keys` in one call, sent now: an iterator of lists of (key, ndarray)
        as they are produced, (key, None) for one too large to stream (fetch it with
        `recv_tensor`); or None where this client has no stream (Recvs fetch one by one)."""


class MasterClient(Protocol):
    """What a client Session asks of a master (`Master` itself is one, in process)."""

    def create_session(self, nodes: list, config=None, target: Optional[str] = None
                       ) -> tuple: ...

    def extend_session(self, handle: str, nodes: list, current_version: int) -> int: ...

    def run_step(self, handle: str, feeds: dict, fetches: list, targets: list,
                 options=None) -> tuple: ...

    def close_session(self, handle: str) -> None: ...

    def list_devices(self, handle: Optional[str] = None) -> list: ...

    def reset(self, containers: list) -> None: ...


class InProcessWorkerClient:
    """Calls a Worker object directly: no sockets, no serialization."""

    needs_cleanup = False  # an nbcluster worker ends a step by itself

    def __init__(self, worker) -> None:
        self._worker = worker

    def register_graph(self, session_handle: str, nodes: list, parallelism: int = 0) -> str:
        # As on the wire: a master creates the worker session before registering.
        return self._worker.register_graph(session_handle, nodes, parallelism, True)

    def stream_tensors(self, step_id: int, keys: list, timeout: Optional[float],
                       cancellation=None) -> None:
        return None  # in process, a Recv reads the producer's rendezvous directly

    def __getattr__(self, name: str):
        return getattr(self._worker, name)


class WorkerCache(Protocol):
    """The tasks a master can use, and a client for each."""

    def tasks(self) -> list: ...

    def get(self, job: str, task: int) -> WorkerClient: ...


class LocalWorkerCache:
    """A one-task cluster whose only worker lives in this process."""

    def __init__(self, worker) -> None:
        self._worker = worker
        self._client = InProcessWorkerClient(worker)

    def tasks(self) -> list:
        return [(self._worker.job, self._worker.task)]

    def get(self, job: str, task: int) -> WorkerClient:
        if (job, task) != (self._worker.job, self._worker.task):
            from nbcluster import errors
            raise errors.InvalidArgumentError(None, None, f"Unknown task /job:{job}/task:{task}")
        return self._client
