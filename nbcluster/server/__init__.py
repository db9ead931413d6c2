"""Server: one task of a cluster — its devices, worker and master on gRPC.

The seed's contract (tf.distribute.Server), plus `stop()`, context-manager
use, port 0 ("pick a free port") and a `target` with the real port.
`python -m nbcluster.server` (this package's `__main__`) runs one task as a
process and announces it with `ready_line`, which `parse_ready_line` reads.
"""
from __future__ import annotations

import re
import threading
from typing import Optional

from nbcluster import errors
from nbcluster.framework.cluster_spec import ClusterSpec, join_address, parse_address
from nbcluster.proto import config_pb2

SUPPORTED_PROTOCOLS = ("grpc",)
_STOP_WAIT_S = 5.0  # past any grace, how long stop() waits for handlers to return
# Every started server, by target, until its stop(): as in TF, a server
# serves until stopped or the process ends, even if the program keeps no
# reference to it (`[Server(spec, "ps", i) for i in range(2)]`, unused).
_STARTED: "dict[str, Server]" = {}
# The one line `python -m nbcluster.server` prints on stdout once it serves.
READY_PREFIX = "nbcluster.server: serving "
_READY_RE = re.compile(r"nbcluster\.server: serving /job:(?P<job>[^/\s]+)/task:(?P<task>\d+) "
                       r"at (?P<target>grpc://\S+)\s*$")


def ready_line(job: str, task: int, target: str) -> str:
    """'nbcluster.server: serving /job:<job>/task:<task> at grpc://<host>:<port>'."""
    return f"{READY_PREFIX}/job:{job}/task:{task} at {target}"


def parse_ready_line(line: str) -> Optional[tuple]:
    """(job, task, target) from a `ready_line`, or None if `line` is not one."""
    match = _READY_RE.match(line.strip())
    return (match["job"], int(match["task"]), match["target"]) if match else None


def local_master(target: str):
    """The master of a started server in this process serving `target`, if any."""
    server = _STARTED.get(target)
    return server._master if server is not None and server._serving else None


def make_server_def(server_or_cluster_def, job_name=None, task_index=None, protocol=None,
                    config=None) -> "config_pb2.ServerDef":
    """A complete ServerDef from any accepted form of the Server arguments."""
    if isinstance(server_or_cluster_def, config_pb2.ServerDef) or \
            type(server_or_cluster_def).__name__ == "ServerDef":
        server_def = config_pb2.ServerDef.FromString(server_or_cluster_def.SerializeToString())
        cluster = ClusterSpec(server_def.cluster)
        job_name = job_name or server_def.job_name or None
        if task_index is None and server_def.job_name:
            task_index = server_def.task_index
        protocol = protocol or server_def.protocol or None
        base_config = server_def.default_session_config \
            if server_def.HasField("default_session_config") else None
    else:
        cluster = ClusterSpec(server_or_cluster_def)
        base_config = None
    if not cluster.jobs:
        raise ValueError("The cluster spec must have at least one job")
    if job_name is None:
        if len(cluster.jobs) != 1:
            raise ValueError(f"Must specify an explicit `job_name`: the cluster has jobs "
                             f"{cluster.jobs}")
        job_name = cluster.jobs[0]
    if job_name not in cluster.jobs:
        raise ValueError(f"Job {job_name!r} is not in the cluster (jobs: {cluster.jobs})")
    if task_index is None:
        indices = cluster.task_indices(job_name)
        if len(indices) != 1:
            raise ValueError(f"Must specify an explicit `task_index`: job {job_name!r} has "
                             f"{len(indices)} tasks")
        task_index = indices[0]
    if not isinstance(task_index, int) or task_index not in cluster.task_indices(job_name):
        raise ValueError(f"Task index {task_index!r} is not a task of job {job_name!r} "
                         f"(tasks: {cluster.task_indices(job_name)})")
    protocol = protocol or "grpc"
    if protocol not in SUPPORTED_PROTOCOLS:
        raise errors.UnimplementedError(None, None, f"Protocol {protocol!r} is not supported; "
                                                    f"supported: {list(SUPPORTED_PROTOCOLS)}")
    server_def = config_pb2.ServerDef(cluster=cluster.as_cluster_def(), job_name=job_name,
                                      task_index=task_index, protocol=protocol)
    if base_config is not None:  # as TF: the ServerDef's config, then `config` over it
        server_def.default_session_config.CopyFrom(base_config)
    if config is not None:
        if not isinstance(config, config_pb2.ConfigProto):
            config = config_pb2.ConfigProto.FromString(config.SerializeToString())
        server_def.default_session_config.MergeFrom(config)
    return server_def


class Server:
    """An in-process server: one task of a cluster.

    Args:
      server_or_cluster_def: a ServerDef, ClusterDef, ClusterSpec or dict.
      job_name, task_index: this task; inferred only when unambiguous.
      protocol: "grpc" (the default and only one). Tasks on one host send
        each other tensors over an abstract Unix socket all the same
        (`rpc/socket_transport/server.py`); NBCLUSTER_DATA_PLANE=grpc turns that off.
      config: a ConfigProto, the default for every session on this server.
      start: start serving now.
      token: (nbcluster, keyword only) the secret every RPC to this task must
        carry; default NBCLUSTER_TOKEN, else the file NBCLUSTER_TOKEN_FILE
        names, else none (see docs/security.md).
      insecure: (nbcluster, keyword only) allow binding beyond loopback with
        no token or no TLS (a warning goes to stderr); without it such a
        server refuses to start.
      tls: (nbcluster, keyword only) serve TLS: a folder holding cert.pem,
        key.pem (0600) and ca.pem, or an `rpc.grpc_transport.tls_material.ServerTls`; default
        NBCLUSTER_TLS_DIR, else none; False: none. Clients in this process then
        verify the cluster's tasks against ca.pem (docs/security.md).
      checkpoint_dir: (nbcluster, keyword only) the directory that Save,
        Restore and Merge ops run here may touch; default NBCLUSTER_CHECKPOINT_DIR,
        else the working directory. Any other path is PermissionDeniedError
        (server/checkpoint_dir.py).
    Raises:
      ValueError: ambiguous or unknown job/task, malformed cluster.
      InvalidArgumentError: this task's address has no valid port.
      UnknownError: the port cannot be bound (e.g. it is in use).
    Example:
      >>> server = Server.create_local_server()
      >>> server.target.startswith("grpc://localhost:")
      True
      >>> server.stop()
    """

    def __init__(self, server_or_cluster_def, job_name: Optional[str] = None,
                 task_index: Optional[int] = None, protocol: Optional[str] = None,
                 config=None, start: bool = True, *, checkpoint_dir=None,
                 token: Optional[str] = None, insecure: bool = False, tls=None) -> None:
        from nbcluster.server.access import server_tls, server_token
        from nbcluster.server.checkpoint_dir import checkpoint_root
        self._server_def = make_server_def(server_or_cluster_def, job_name, task_index,
                                           protocol, config)
        self._checkpoint_root = checkpoint_root(checkpoint_dir)
        spec = ClusterSpec(self._server_def.cluster)
        host, _ = parse_address(spec.task_address(self._server_def.job_name,
                                                  self._server_def.task_index))
        self._tls = server_tls(tls)
        self._token = server_token(host, token, insecure, self._tls)
        self._serving = False
        self._stopped = threading.Event()
        self._build()
        if start:
            self.start()

    def _build(self) -> None:
        from nbcluster.master_worker.master import Master
        from nbcluster.master_worker.worker import Worker
        from nbcluster.rpc.grpc_transport.peer_check import PeerCheck
        from nbcluster.rpc.grpc_transport.server_core import bind_server
        from nbcluster.rpc.peers import ServerWorkerCache, worker_client
        from nbcluster.rpc.socket_transport.server import DataPlaneServer
        from nbcluster.runtime.devices import local_devices
        from nbcluster.runtime.malloc_reuse import keep_freed_memory
        from nbcluster.runtime.math_threads import is_process_wide, task_threads

        keep_freed_memory()
        sd = self._server_def
        spec = ClusterSpec(sd.cluster)
        job, task = sd.job_name, sd.task_index
        host, port = parse_address(spec.task_address(job, task))
        config = sd.default_session_config
        devices = local_devices(job, task, dict(config.device_count),
                                config.gpu_options.visible_device_list,
                                file_root=self._checkpoint_root)
        self._cache = ServerWorkerCache(spec, (job, task))
        # This task's share of the host's math threads, claimed while it serves.
        self._math_threads = task_threads(spec, job, task, config)
        self._math_wide = is_process_wide(config)
        self._math_claim = None
        # with a token, a session's own cluster may name only tasks that require one
        check = PeerCheck(self._token, [spec.task_address(j, i) for j in spec.jobs
                                        for i in spec.task_indices(j)])
        self._worker = Worker(job, task, devices, peers=self._cache.get,
                              connect=worker_client, parallelism=self._math_threads,
                              check_cluster=check)
        self._cache.set_local(self._worker)
        self._master = Master((job, task), self._cache, config, connect=worker_client,
                              check_cluster=check)
        self._grpc, bound = bind_server(host, port, self._master, self._worker, self._token,
                                        self._tls)
        if port == 0:  # report the real port everywhere the address shows
            cluster = spec.as_dict()
            cluster[job][task] = join_address(host, bound)
            sd.cluster.CopyFrom(ClusterSpec(cluster).as_cluster_def())
            self._cache.update_spec(ClusterSpec(cluster))
        self._port = bound
        check.trust(f"{host}:{bound}")
        check.trust(f"localhost:{bound}")
        cluster = ClusterSpec(sd.cluster)
        addresses = [cluster.task_address(j, i) for j in cluster.jobs
                     for i in cluster.task_indices(j)]
        if self._token:  # this process's clients (its master, Session(target)) send it
            from nbcluster.rpc.grpc_transport import tokens
            for address in addresses:
                tokens.register(address, self._token)
        if self._tls is not None:  # ... and trust the cluster's tasks under its CA
            from nbcluster.rpc.grpc_transport import tls_material
            for address in addresses:
                tls_material.register_ca(address, self._tls.ca)
            # its own addresses are forgotten at stop(): a later server there may be plaintext
            self._tls_addresses = [cluster.task_address(job, task), f"localhost:{bound}"]
            tls_material.register_ca(self._tls_addresses[1], self._tls.ca)
        # Same-host peers fetch tensors, and run graphs and steps, over a Unix
        # socket (rpc/socket_transport/server.py), after the same token as gRPC's.
        self._data_plane = DataPlaneServer.open(host, bound, self._worker, self._master,
                                                self._token)
        self._target = f"grpc://localhost:{bound}"

    @property
    def server_def(self) -> "config_pb2.ServerDef":
        return self._server_def

    @property
    def target(self) -> str:
        return self._target

    @property
    def checkpoint_dir(self) -> str:
        """The resolved directory this task's checkpoint files must lie in."""
        return self._checkpoint_root

    def start(self) -> None:
        """Starts serving; calling it again does nothing."""
        if self._stopped.is_set():
            raise errors.FailedPreconditionError(None, None, "The server has been stopped")
        if not self._serving:
            self._claim_math_threads()
            self._grpc.start()
            if self._data_plane is not None:
                self._data_plane.start()
            self._serving = True
            _STARTED[self._target] = self

    def _claim_math_threads(self) -> None:
        from nbcluster.runtime import math_threads
        if self._math_claim is None:  # a started server lives until stop(), which releases
            self._math_claim = math_threads.claim(self._math_threads, self._math_wide)

    def join(self) -> None:
        """Blocks until the server stops."""
        self._stopped.wait()

    def stop(self, grace: Optional[float] = None) -> None:
        """Stops serving and frees the port."""
        if self._stopped.is_set():
            return
        _STARTED.pop(self._target, None)
        self._serving = False
        stopped = self._grpc.stop(grace)
        if self._data_plane is not None:
            self._data_plane.close()
        # A handler blocked in a step (a RecvTensor whose producer never runs)
        # would hold the stop forever: end every step in flight.
        self._worker.cancel_steps()
        stopped.wait((grace or 0) + _STOP_WAIT_S)
        if self._data_plane is not None:
            self._data_plane.join()
        self._cache.close()
        if self._tls is not None:
            from nbcluster.rpc.grpc_transport import tls_material
            for address in self._tls_addresses:
                tls_material.forget_ca(address, self._tls.ca)
        if self._math_claim is not None:
            from nbcluster.runtime import math_threads
            math_threads.release(self._math_claim)
            self._math_claim = None
        self._stopped.set()

    def __enter__(self) -> "Server":
        return self

    def __exit__(self, *exc) -> None:
        self.stop()

    @staticmethod
    def create_local_server(config=None, start: bool = True) -> "Server":
        """A one-task cluster (job "localhost") on a free localhost port."""
        return Server({"localhost": ["localhost:0"]}, protocol="grpc", config=config,
                      start=start)
