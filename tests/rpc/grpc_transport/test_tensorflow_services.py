"""TensorFlow's MasterService and WorkerService, as every task serves them:
the calls a TF client makes, sent here with TF's method paths and messages."""
from __future__ import annotations

import grpc
import numpy as np
import pytest

import nbcluster as tf
from nbcluster.framework.graph_def import nodes_to_proto
from nbcluster.proto import config_pb2, master_pb2, worker_pb2
from nbcluster.rpc.codec import messages
from nbcluster.rpc.codec.messages import Layout

pytestmark = pytest.mark.timeout(60)

MASTER, WORKER = "/tensorflow.MasterService/", "/tensorflow.WorkerService/"
RUN_CALLABLE = Layout(master_pb2.RunCallableRequest, 3, named=False)
CALLABLE_RESULT = Layout(master_pb2.RunCallableResponse, 1, named=False)
RUN_STEP = Layout(master_pb2.RunStepRequest, 2)
STEP_RESULT = Layout(master_pb2.RunStepResponse, 1)


@pytest.fixture
def channel(server_target):
    opened = grpc.insecure_channel(server_target[len("grpc://"):],
                                   options=[("grpc.max_receive_message_length", 64 << 20)])
    yield opened
    opened.close()


def _call(channel, path: str, request, response_class):
    stub = channel.unary_unary(path, request_serializer=lambda m: m.SerializeToString(),
                               response_deserializer=response_class.FromString)
    return stub(request, timeout=20)


def _raw(channel, path: str, data: bytes) -> bytes:
    return channel.unary_unary(path)(data, timeout=20)


def _error(fn) -> grpc.RpcError:
    with pytest.raises(grpc.RpcError) as info:
        fn()
    return info.value


def _session(channel) -> str:
    """A session whose graph is x (a float placeholder) and y = x * 3."""
    with tf.Graph().as_default() as graph:
        x = tf.placeholder(tf.float32, [None], name="x")
        tf.multiply(x, 3.0, name="y")
    graph_def = nodes_to_proto([op.to_node() for op in graph.get_operations()])
    created = _call(channel, MASTER + "CreateSession",
                    master_pb2.CreateSessionRequest(graph_def=graph_def),
                    master_pb2.CreateSessionResponse)
    assert created.graph_version == 0  # TF's versions: 0, then one more per extend
    return created.session_handle


def test_callables_run_by_handle_with_feeds_in_order(channel):
    handle = _session(channel)
    made = _call(channel, MASTER + "MakeCallable", master_pb2.MakeCallableRequest(
        session_handle=handle, options=config_pb2.CallableOptions(feed=["x:0"], fetch=["y:0"])),
        master_pb2.MakeCallableResponse)
    request = master_pb2.RunCallableRequest(session_handle=handle, handle=made.handle)

    def run(*feeds) -> bytes:
        return _raw(channel, MASTER + "RunCallable",
                    messages.encode(request, RUN_CALLABLE, [("", f) for f in feeds]))
    _, values = messages.decode(run(np.array([1.0, 2.0], np.float32)), CALLABLE_RESULT)
    np.testing.assert_array_equal(values[0][1], [3.0, 6.0])
    error = _error(lambda: run(np.ones(1, np.float32), np.ones(1, np.float32)))
    assert error.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert "takes 1 feed(s) (['x:0']), got 2" in error.details()
    _call(channel, MASTER + "ReleaseCallable", master_pb2.ReleaseCallableRequest(
        session_handle=handle, handle=made.handle), master_pb2.ReleaseCallableResponse)
    error = _error(lambda: run(np.ones(1, np.float32)))
    assert error.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert f"No callable with handle {made.handle}" in error.details()


def test_a_callable_of_an_unknown_session_or_with_tensor_connections_is_refused(channel):
    error = _error(lambda: _call(channel, MASTER + "MakeCallable", master_pb2.MakeCallableRequest(
        session_handle="nope", options=config_pb2.CallableOptions(fetch=["y:0"])),
        master_pb2.MakeCallableResponse))
    assert error.code() in (grpc.StatusCode.NOT_FOUND, grpc.StatusCode.ABORTED)
    handle = _session(channel)
    options = config_pb2.CallableOptions(fetch=["y:0"])
    options.tensor_connection.add(from_tensor="y:0", to_tensor="x:0")
    error = _error(lambda: _call(channel, MASTER + "MakeCallable", master_pb2.MakeCallableRequest(
        session_handle=handle, options=options), master_pb2.MakeCallableResponse))
    assert error.code() == grpc.StatusCode.UNIMPLEMENTED and "tensor_connection" in error.details()


def test_run_step_errors_come_in_the_body_when_asked_and_the_session_goes_on(channel):
    handle = _session(channel)

    def step(feed, in_body: bool) -> bytes:
        request = master_pb2.RunStepRequest(session_handle=handle, fetch=["y:0"],
                                            store_errors_in_response_body=in_body)
        return _raw(channel, MASTER + "RunStep", messages.encode(request, RUN_STEP,
                                                                 [("x:0", feed)]))
    wrong = np.array([1, 2], np.int32)  # x is float32
    response, tensors = messages.decode(step(wrong, True), STEP_RESULT)
    assert response.status_code == 3 and "x" in response.status_error_message and not tensors
    error = _error(lambda: step(wrong, False))
    assert error.code() == grpc.StatusCode.INVALID_ARGUMENT
    response, tensors = messages.decode(step(np.full(3 << 20, 1.0, np.float32), True),
                                        STEP_RESULT)  # 12 MiB back in the one reply
    assert response.status_code == 0 and tensors[0][0] == "y:0"
    assert tensors[0][1].shape == (3 << 20,) and float(tensors[0][1][-1]) == 3.0


def test_partial_runs_and_collectives_are_unimplemented_naming_the_method(channel):
    error = _error(lambda: _call(channel, MASTER + "PartialRunSetup",
                                 master_pb2.PartialRunSetupRequest(session_handle="s"),
                                 master_pb2.PartialRunSetupResponse))
    assert error.code() == grpc.StatusCode.UNIMPLEMENTED and "PartialRunSetup" in error.details()
    error = _error(lambda: _raw(channel, WORKER + "CompleteGroup", b""))
    assert error.code() == grpc.StatusCode.UNIMPLEMENTED
    assert "tensorflow.WorkerService.CompleteGroup" in error.details()


def test_tf_s_get_status_lists_the_task_s_devices(channel):
    status = _call(channel, WORKER + "GetStatus", worker_pb2.GetStatusRequest(),
                   worker_pb2.GetStatusResponse)
    assert [d.name for d in status.device_attributes] == \
        ["/job:worker/replica:0/task:0/device:CPU:0"]


def _fed_graph(device: str) -> list:
    """y = x * 3 with x fed and y fetched by client-terminated nodes, as a master sends."""
    from nbcluster.framework.node import Node
    ends = {"send_device": device, "send_device_incarnation": 0, "recv_device": device,
            "client_terminated": True}
    return [Node("recv_x", "_Recv", (), device, {"tensor_type": tf.float32,
                                                 "tensor_name": "x:0", **ends}),
            Node("three", "Const", (), device, {"dtype": tf.float32,
                                                "value": np.array(3.0, np.float32)}),
            Node("y", "Mul", ("recv_x:0", "three:0"), device, {"T": tf.float32}),
            Node("send_y", "_Send", ("y:0",), device, {"T": tf.float32, "tensor_name": "y:0",
                                                       **ends})]


def test_tf_s_run_graph_counts_its_feeds_and_a_deleted_session_takes_its_graphs(server_target):
    from nbcluster.rpc.grpc_transport.tensorflow_worker_client import TensorFlowWorkerClient
    client = TensorFlowWorkerClient(server_target[len("grpc://"):])
    device = client.get_status(20).device_attributes[0].name
    client.create_worker_session("s", False)
    handle = client.register_graph("s", _fed_graph(device), 1)
    before = client.get_status(20).bytes_received
    x = np.arange(1000, dtype=np.float32)
    result = client.run_graph("s", handle, 7, {"x:0": x}, ["y:0"], 20, False, False)
    np.testing.assert_array_equal(result.fetches["y:0"], x * 3)
    assert client.get_status(20).bytes_received - before >= x.nbytes  # as over our service
    client.delete_worker_session("s")
    with pytest.raises(tf.errors.AbortedError, match="not registered"):
        client.run_graph("s", handle, 8, {"x:0": x}, ["y:0"], 20, False, False)
