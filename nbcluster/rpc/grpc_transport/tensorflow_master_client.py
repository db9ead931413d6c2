"""A real TensorFlow master (`tf.distribute.Server`) as our client's master.

`GrpcMasterClient` hands over to this when a task answers our
CreateSession with UNIMPLEMENTED (TF's server knows only
`/tensorflow.MasterService/*`). It speaks TF's dialect of the same
messages: every call one unary message (no streamed requests or parked
replies), errors asked for in RunStep's response body, TF's graph versions.
"""
from __future__ import annotations

from typing import Optional

from nbcluster import errors
from nbcluster.framework.graph_def import nodes_to_proto
from nbcluster.proto import master_pb2, tensorflow_services_pb2_grpc
from nbcluster.rpc.codec import messages
from nbcluster.rpc.grpc_transport import channels
from nbcluster.rpc.grpc_transport.calls import calling
from nbcluster.rpc.grpc_transport.master_service import RUN_STEP_REQUEST, RUN_STEP_RESPONSE
from nbcluster.rpc.grpc_transport.status import remote_error
from nbcluster.rpc.grpc_transport.tensorflow_master import SERVICE


class TensorFlowMasterClient:
    """The master of the TensorFlow server at `address`, with `Master`'s methods.

    Args:
      address: "host:port".
      timeout: seconds a control call (create, extend, close, list) may take.
      step_timeout: seconds a step may take when its RunOptions set none.
    """

    def __init__(self, address: str, timeout: float, step_timeout: float) -> None:
        self.address = address
        self._peer = f"grpc://{address} (a TensorFlow server)"
        self._timeout = timeout
        self._step_timeout = step_timeout
        channel = channels.tensorflow_channel(address)

        stub = tensorflow_services_pb2_grpc.MasterServiceStub(channel)
        self._create = stub.CreateSession
        self._extend = stub.ExtendSession
        self._close = stub.CloseSession
        self._list = stub.ListDevices
        self._reset = stub.Reset
        self._run = channel.unary_unary(
            f"/{SERVICE}/RunStep",
            request_serializer=lambda r: messages.encode(r[0], RUN_STEP_REQUEST, r[1]))

    def _call(self, stub, request, timeout: float):
        with calling(self._peer):
            return stub(request, timeout=timeout)

    def create_session(self, request) -> tuple:
        """(handle, graph version) for a CreateSessionRequest our client built."""
        resp = self._call(self._create, request, self._timeout)
        return resp.session_handle, resp.graph_version

    def extend_session(self, handle: str, nodes: list, current_version: int) -> int:
        req = master_pb2.ExtendSessionRequest(session_handle=handle,
                                              graph_def=nodes_to_proto(nodes),
                                              current_graph_version=current_version)
        return self._call(self._extend, req, self._timeout).new_graph_version

    def run_step(self, handle: str, feeds: dict, fetches: list, targets: list,
                 options=None) -> tuple:
        req = master_pb2.RunStepRequest(session_handle=handle, fetch=fetches, target=targets,
                                        store_errors_in_response_body=True)
        timeout = self._step_timeout
        if options is not None:
            req.options.CopyFrom(options)
            if options.timeout_in_ms > 0:
                timeout = options.timeout_in_ms / 1000.0 + 5.0
        with calling(self._peer):
            data = self._run((req, list(feeds.items())), timeout=timeout)
        response, tensors = messages.decode(data, RUN_STEP_RESPONSE)
        if response.status_code:
            raise remote_error(response.status_code, response.status_error_message, None,
                               self._peer)
        values = dict(tensors)
        missing = [f for f in fetches if f not in values]
        if missing:
            raise errors.DataLossError(None, None, f"{self._peer} returned no value for "
                                                   f"fetches {missing}")
        metadata = response.metadata if response.HasField("metadata") else None
        return [values[f] for f in fetches], metadata

    def close_session(self, handle: str) -> None:
        try:
            self._call(self._close, master_pb2.CloseSessionRequest(session_handle=handle),
                       self._timeout)
        except errors.OpError:  # nothing left to close on a dead server
            pass

    def list_devices(self, handle: Optional[str] = None) -> list:
        resp = self._call(self._list, master_pb2.ListDevicesRequest(session_handle=handle or ""),
                          self._timeout)
        return list(resp.local_device) + list(resp.remote_device)

    def reset(self, containers: list) -> None:
        self._call(self._reset, master_pb2.ResetRequest(container=containers), self._timeout)
