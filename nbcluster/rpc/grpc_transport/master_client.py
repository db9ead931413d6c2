"""A master over gRPC: `transport.MasterClient` (the client's seam), every call a gRPC call."""
from __future__ import annotations

from typing import Optional

from nbcluster import errors
from nbcluster.framework.graph_def import nodes_to_proto
from nbcluster.proto import config_pb2, master_pb2, master_pb2_grpc
from nbcluster.rpc.grpc_transport import channels
from nbcluster.rpc.grpc_transport.calls import calling
from nbcluster.rpc.grpc_transport.master_service import RUN_STEP_REQUEST, RUN_STEP_RESPONSE, SERVICE
from nbcluster.rpc.grpc_transport.streaming import TensorStub
from nbcluster.rpc.grpc_transport.worker_control import STEP_TIMEOUT

_CONTROL_TIMEOUT = 60.0


class GrpcMasterClient:
    """Talks to the master of the server at `address` ("host:port")."""

    def __init__(self, address: str, config=None) -> None:
        self.address = address
        self._peer = f"grpc://{self.address}"
        self._config = config or config_pb2.ConfigProto()
        channel = channels.channel(address)

        # The protobuf-only methods through the generated stub; RunStep through
        # `TensorStub`, which frames its tensors by hand (docs/protocol.md).
        stub = master_pb2_grpc.MasterServiceStub(channel)
        self._create = stub.CreateSession
        self._extend = stub.ExtendSession
        self._run = TensorStub(channel, SERVICE, "RunStep", RUN_STEP_REQUEST, RUN_STEP_RESPONSE)
        self._close = stub.CloseSession
        self._list = stub.ListDevices
        self._reset = stub.Reset

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
            return self._hand_over(timeout).create_session(req)
        return resp.session_handle, resp.graph_version

    # A real TensorFlow server answers our CreateSession UNIMPLEMENTED: then every
    # call goes to its own MasterService, the TF client's methods bound over these.
    _tensorflow = None

    def _hand_over(self, timeout: float):
        from nbcluster.rpc.grpc_transport.tensorflow_master_client import TensorFlowMasterClient
        tf = self._tensorflow = TensorFlowMasterClient(self.address, timeout,
                                                       self._timeout(STEP_TIMEOUT))
        for name in ("extend_session", "run_step", "close_session", "list_devices", "reset"):
            setattr(self, name, getattr(tf, name))
        return tf

    def extend_session(self, handle: str, nodes: list, current_version: int) -> int:
        req = master_pb2.ExtendSessionRequest(session_handle=handle,
                                              graph_def=nodes_to_proto(nodes),
                                              current_graph_version=current_version)
        return self._call(self._extend, req, self._timeout(_CONTROL_TIMEOUT)).new_graph_version

    def run_step(self, handle: str, feeds: dict, fetches: list, targets: list,
                 options=None) -> tuple:
        req, timeout = self.run_step_request(handle, fetches, targets, options)
        with calling(self._peer):
            return run_step_result(self._run(req, list(feeds.items()), timeout), fetches)

    def run_step_request(self, handle: str, fetches: list, targets: list, options) -> tuple:
        """(RunStepRequest without its feeds, the call's timeout in seconds)."""
        req = master_pb2.RunStepRequest(session_handle=handle, fetch=fetches, target=targets)
        timeout = self._timeout(STEP_TIMEOUT)
        if options is not None:
            req.options.CopyFrom(options)
            if options.timeout_in_ms > 0:
                timeout = options.timeout_in_ms / 1000.0
        # The master enforces the step's own deadline; the RPC's is a backstop.
        return req, timeout + 5.0

    def close_session(self, handle: str) -> None:
        try:
            self._call(self._close, master_pb2.CloseSessionRequest(session_handle=handle),
                       self._timeout(_CONTROL_TIMEOUT))
        except errors.OpError:  # closing a session on a dead server: nothing left to close
            pass

    def list_devices(self, handle: Optional[str] = None) -> list:
        resp = self._call(self._list, master_pb2.ListDevicesRequest(session_handle=handle or ""),
                          self._timeout(_CONTROL_TIMEOUT))
        return list(resp.local_device) + list(resp.remote_device)

    def reset(self, containers: list) -> None:
        # Waits for the server to come up, bounded by operation_timeout_in_ms.
        self._call(self._reset, master_pb2.ResetRequest(container=containers),
                   self._timeout(_CONTROL_TIMEOUT), wait_for_ready=True)


def run_step_result(reply: tuple, fetches: list) -> tuple:
    """RunStep's (response, tensors) as `Master.run_step` returns: (values, metadata)."""
    response, tensors = reply
    values = dict(tensors)
    metadata = response.metadata if response.HasField("metadata") else None
    return [values[f] for f in fetches], metadata
