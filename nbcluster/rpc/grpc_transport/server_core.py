"""Binding a task's master and worker to a gRPC server (its worker cache: `rpc.peers`)."""
from __future__ import annotations

import grpc

from nbcluster import errors
from nbcluster.framework.cluster_spec import join_address
from nbcluster.rpc.grpc_transport.channels import SERVER_OPTIONS
from nbcluster.rpc.grpc_transport.listen_addresses import bind_every_address
from nbcluster.rpc.grpc_transport.master_service import master_handler
from nbcluster.rpc.grpc_transport.streaming import PendingResponses
from nbcluster.rpc.grpc_transport.tensorflow_master import tensorflow_master_handler
from nbcluster.rpc.grpc_transport.tensorflow_worker import tensorflow_worker_handler
from nbcluster.rpc.grpc_transport.tls import add_port
from nbcluster.rpc.grpc_transport.wait_slots import RPC_THREADS, WaitSlots
from nbcluster.rpc.grpc_transport.worker_service import worker_handler
from nbcluster.runtime.thread_pool import DaemonPool


def bind_server(host: str, port: int, master, worker, token=None, tls=None) -> tuple:
    """A (not yet started) gRPC server for master+worker bound to host:port;
    with a `token`, every call must carry it (token_metadata.TokenCheck); with
    `tls` (a tls_material.ServerTls), the port serves TLS only."""
    interceptors = []
    if token:
        from nbcluster.rpc.grpc_transport.token_metadata import TokenCheck
        interceptors.append(TokenCheck(token))
    pending = PendingResponses()  # one byte budget for the server's parked responses
    slots = WaitSlots.for_server()  # tensor waits never take every thread

    def new_server() -> grpc.Server:
        return grpc.server(DaemonPool(max_workers=RPC_THREADS,
                                      thread_name_prefix="nbcluster-rpc"),
                           handlers=[master_handler(master, pending),
                                     worker_handler(worker, slots, pending),
                                     tensorflow_master_handler(master),
                                     tensorflow_worker_handler(worker, slots)],
                           options=SERVER_OPTIONS, interceptors=interceptors)

    def add(server: grpc.Server, address: str) -> int:
        return add_port(server, address, tls)

    server, bound, reason = bind_every_address(new_server, host, port, add)
    if not bound:
        raise errors.UnknownError(None, None, f"Could not start gRPC server: failed to bind "
                                              f"{join_address(host, port)}: {reason}")
    return server, bound
