"""The seams between master, workers and clients: protocols plus the
in-process implementations (tests and same-process peers use these; the
gRPC ones live in `nbcluster.rpc`).
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


class InProcessWorkerClient:
    """Calls a Worker object directly: no sockets, no serialization."""

    def __init__(self, worker) -> None:
        self._worker = worker

    def register_graph(self, session_handle: str, nodes: list, parallelism: int = 0) -> str:
        # As on the wire: a master creates the worker session before registering.
        return self._worker.register_graph(session_handle, nodes, parallelism, True)

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
