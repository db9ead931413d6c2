"""A master over gRPC, with the same methods as `Master` (the client's seam)."""
from __future__ import annotations

from typing import Optional

from nbcluster import errors
from nbcluster.framework.graph_def import nodes_to_proto
from nbcluster.proto import config_pb2, master_pb2
from nbcluster.rpc.grpc_transport import channels
from nbcluster.rpc.socket_transport import client as data_plane_client
from nbcluster.rpc.grpc_transport.master_service import RUN_STEP_REQUEST, RUN_STEP_RESPONSE, SERVICE
from nbcluster.rpc.grpc_transport.calls import calling, unary_method
from nbcluster.rpc.socket_transport.calls import RUN_STEP
from nbcluster.rpc.grpc_transport.streaming import TensorStub
from nbcluster.rpc.grpc_transport.worker_client import GrpcWorkerClient

_CONTROL_TIMEOUT = 60.0
_STEP_TIMEOUT = 24 * 3600.0  # a step may block on a queue for as long as it likes


class GrpcMasterClient:
    """Talks to the master of the server at `address` ("host:port")."""

    def __init__(self, address: str, config=None) -> None:
        self.address = address
        self._peer = f"grpc://{self.address}"
        self._config = config or config_pb2.ConfigProto()
        channel = channels.channel(address)

        def method(name, response_class):
            return unary_method(channel, SERVICE, name, response_class)

        self._create = method("CreateSession", master_pb2.CreateSessionResponse)
        self._extend = method("ExtendSession", master_pb2.ExtendSessionResponse)
        self._run = TensorStub(channel, SERVICE, "RunStep", RUN_STEP_REQUEST, RUN_STEP_RESPONSE)
        self._close = method("CloseSession", master_pb2.CloseSessionResponse)
        self._list = method("ListDevices", master_pb2.ListDevicesResponse)
        self._reset = method("Reset", master_pb2.ResetResponse)
        # A master on this host takes RunStep over its data plane (no gRPC round trip).
        self._plane = data_plane_client.peer_for(address)
        self._prober = None  # a GrpcWorkerClient, made when a step first waits long
        # A real TensorFlow server answers our CreateSession UNIMPLEMENTED: then
        # every call goes to its own MasterService (`tensorflow_master_client`).
        self._tensorflow = None

    def _probe(self) -> None:
        # The task's worker service answers for it (gRPC keepalive's role on this path).
        if self._prober is None:
            self._prober = GrpcWorkerClient(self.address)
        self._prober.probe()

    def _timeout(self, default: float) -> float:
        ms = self._config.operation_timeout_in_ms
        return ms / 1000.0 if ms > 0 else default

    def _call(self, stub, request, timeout: float, wait_for_ready: bool = False):
        with calling(self._peer):
            return stub(request, timeout=timeout, wait_for_ready=wait_for_ready)

    def create_session(self, nodes: list, config=None, target: Optional[str] = None) -> tuple:
        req = master_pb2.CreateSessionRequest(graph_def=nodes_to_proto(nodes),
                                              target=target or f"grpc://{self.address}")
        if config is not None:
            req.config.CopyFrom(config)
        # Tasks start in any order: as TF's client, wait for a master not up yet
        # (wait_for_ready) until the session's operation timeout or a minute.
        timeout = self._timeout(_CONTROL_TIMEOUT)
        if self._tensorflow is not None:
            return self._tensorflow.create_session(req)
        try:
            resp = self._call(self._create, req, timeout, wait_for_ready=True)
        except errors.DeadlineExceededError:
            raise errors.UnavailableError(
                None, None, f"The master at {self._peer} did not answer CreateSession within "
                            f"{timeout:g}s: is its task up?") from None
        except errors.UnimplementedError:
            from nbcluster.rpc.grpc_transport.tensorflow_master_client import (
                TensorFlowMasterClient)
            self._tensorflow = TensorFlowMasterClient(self.address, timeout,
                                                      self._timeout(_STEP_TIMEOUT))
            return self._tensorflow.create_session(req)
        return resp.session_handle, resp.graph_version

    def extend_session(self, handle: str, nodes: list, current_version: int) -> int:
        if self._tensorflow is not None:
            return self._tensorflow.extend_session(handle, nodes, current_version)
        req = master_pb2.ExtendSessionRequest(session_handle=handle,
                                              graph_def=nodes_to_proto(nodes),
                                              current_graph_version=current_version)
        return self._call(self._extend, req, self._timeout(_CONTROL_TIMEOUT)).new_graph_version

    def run_step(self, handle: str, feeds: dict, fetches: list, targets: list,
                 options=None) -> tuple:
        if self._tensorflow is not None:
            return self._tensorflow.run_step(handle, feeds, fetches, targets, options)
        req = master_pb2.RunStepRequest(session_handle=handle, fetch=fetches, target=targets)
        timeout = self._timeout(_STEP_TIMEOUT)
        if options is not None:
            req.options.CopyFrom(options)
            if options.timeout_in_ms > 0:
                timeout = options.timeout_in_ms / 1000.0
        # The master enforces the step's own deadline; the RPC's is a backstop.
        reply = data_plane_client.NOT_SERVED
        if self._plane is not None:
            reply = self._plane.call(RUN_STEP, req, list(feeds.items()), timeout + 5.0,
                                     self._peer, self._probe)
        if reply is data_plane_client.NOT_SERVED:
            with calling(self._peer):
                reply = self._run(req, list(feeds.items()), timeout + 5.0)
        response, tensors = reply
        values = dict(tensors)
        metadata = response.metadata if response.HasField("metadata") else None
        return [values[f] for f in fetches], metadata

    def close_session(self, handle: str) -> None:
        if self._tensorflow is not None:
            return self._tensorflow.close_session(handle)
        try:
            self._call(self._close, master_pb2.CloseSessionRequest(session_handle=handle),
                       self._timeout(_CONTROL_TIMEOUT))
        except errors.OpError:  # closing a session on a dead server: nothing left to close
            pass

    def list_devices(self, handle: Optional[str] = None) -> list:
        if self._tensorflow is not None:
            return self._tensorflow.list_devices(handle)
        resp = self._call(self._list, master_pb2.ListDevicesRequest(session_handle=handle or ""),
                          self._timeout(_CONTROL_TIMEOUT))
        return list(resp.local_device) + list(resp.remote_device)

    def reset(self, containers: list) -> None:
        if self._tensorflow is not None:
            return self._tensorflow.reset(containers)
        # Waits for the server to come up, bounded by operation_timeout_in_ms.
        self._call(self._reset, master_pb2.ResetRequest(container=containers),
                   self._timeout(_CONTROL_TIMEOUT), wait_for_ready=True)
