"""Which transport reaches a peer: the one place that picks in-process, the local socket or
gRPC, once per peer, and the worker cache a server's master and worker reach tasks through.

Rule: a peer in this process is called directly (`transport.InProcessWorkerClient`, or the
`Master` itself); a peer that can be on this host while the data plane is on
(NBCLUSTER_DATA_PLANE is not "grpc") gets the local-socket clients, whose tensors, RunGraph
and RunStep skip gRPC; any other peer gets the gRPC clients. Each returns the
`transport.WorkerClient` / `transport.MasterClient` Protocol, so no caller asks which.
"""
from __future__ import annotations

import threading
from typing import Optional

from nbcluster import errors
from nbcluster.framework.cluster_spec import ClusterSpec
from nbcluster.master_worker.transport import InProcessWorkerClient, MasterClient, WorkerClient

# The remote clients load with the first peer they reach, not with the server:
# a task that starts and runs its first step in process (a one-task cluster, a
# notebook's Session(server.target)) never needs them, and their modules were
# a fifth of a warm process's server start.


def worker_client(address: Optional[str], local=None) -> WorkerClient:
    """The client for the worker at `address` ("host:port").

    Args:
      local: that worker, where it is this process's own `Worker` (then `address`
        is not used).
    """
    if local is not None:
        return InProcessWorkerClient(local)
    from nbcluster.rpc.socket_transport.client import peer_for
    plane = peer_for(address)
    if plane is not None:
        from nbcluster.rpc.socket_transport.service_clients import SocketWorkerClient
        return SocketWorkerClient(address, plane)
    from nbcluster.rpc.grpc_transport.worker_client import GrpcWorkerClient
    return GrpcWorkerClient(address)


def master_client(address: str, config=None, local=None) -> MasterClient:
    """The client for the master at `address` ("host:port"); `local`: that master, where it
    is this process's own (`server.local_master`), called directly."""
    if local is not None:
        return local
    from nbcluster.rpc.socket_transport.client import peer_for
    plane = peer_for(address)
    if plane is not None:
        from nbcluster.rpc.socket_transport.service_clients import SocketMasterClient
        return SocketMasterClient(address, plane, config)
    from nbcluster.rpc.grpc_transport.master_client import GrpcMasterClient
    return GrpcMasterClient(address, config)


class ServerWorkerCache:
    """Every task of the cluster, one client each (`worker_client` picks its transport)."""

    def __init__(self, spec: ClusterSpec, local_task: tuple) -> None:
        self._spec = spec
        self._local_task = local_task
        self._local = None
        self._clients: dict = {}
        self._lock = threading.Lock()

    def set_local(self, worker) -> None:
        self._local = worker_client(None, local=worker)

    def update_spec(self, spec: ClusterSpec) -> None:
        self._spec = spec

    def tasks(self) -> list:
        return [(job, task) for job in self._spec.jobs for task in self._spec.task_indices(job)]

    def get(self, job: str, task: int):
        if (job, task) == self._local_task:
            return self._local
        with self._lock:
            client = self._clients.get((job, task))
            if client is None:
                try:
                    address = self._spec.task_address(job, task)
                except ValueError:
                    raise errors.InvalidArgumentError(
                        None, None, f"Unknown task /job:{job}/task:{task} (cluster jobs: "
                                    f"{self._spec.jobs})") from None
                client = self._clients[(job, task)] = worker_client(address)
            return client

    def close(self) -> None:
        with self._lock:
            self._clients.clear()
