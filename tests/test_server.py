"""The Server contract (tf.distribute.Server), plus stop/context-manager/port 0."""
from __future__ import annotations

import socket
import threading
import time

import grpc
import numpy as np
import pytest

import nbcluster as tf
from nbcluster import errors
from nbcluster.proto import master_pb2
from nbcluster.rpc.grpc_transport.master_client import GrpcMasterClient

pytestmark = pytest.mark.timeout(60)


@pytest.fixture
def servers():
    """Collects servers a test starts and stops them at teardown."""
    started = []
    yield started
    for server in started:
        server.stop()


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _port(target: str) -> int:
    return int(target.rsplit(":", 1)[1])


# -- construction ------------------------------------------------------------

def test_from_dict_infers_single_job_and_task(servers):
    server = tf.distribute.Server({"worker": ["127.0.0.1:0"]})
    servers.append(server)
    assert server.server_def.job_name == "worker"
    assert server.server_def.task_index == 0
    assert server.server_def.protocol == "grpc"
    assert server.target.startswith("grpc://localhost:")
    port = _port(server.target)
    assert port > 0
    # Port 0 is replaced by the bound port in the server's own cluster.
    assert server.server_def.cluster.job[0].tasks[0] == f"127.0.0.1:{port}"


def test_train_server_is_the_same_class():
    assert tf.train.Server is tf.distribute.Server


def test_from_cluster_spec_cluster_def_and_server_def(servers):
    spec = tf.train.ClusterSpec({"ps": ["127.0.0.1:0"], "worker": ["127.0.0.1:0"]})
    a = tf.distribute.Server(spec, job_name="ps")
    servers.append(a)
    assert (a.server_def.job_name, a.server_def.task_index) == ("ps", 0)
    b = tf.distribute.Server(spec.as_cluster_def(), job_name="worker", task_index=0)
    servers.append(b)
    assert b.server_def.job_name == "worker"
    server_def = tf.train.ServerDef(cluster=spec.as_cluster_def(), job_name="worker",
                                    task_index=0, protocol="grpc")
    c = tf.distribute.Server(server_def)
    servers.append(c)
    assert c.server_def.job_name == "worker"


def test_ambiguous_job_is_value_error():
    with pytest.raises(ValueError, match="job_name"):
        tf.distribute.Server({"ps": ["127.0.0.1:0"], "worker": ["127.0.0.1:0"]})


def test_ambiguous_task_is_value_error():
    with pytest.raises(ValueError, match="task_index"):
        tf.distribute.Server({"worker": ["127.0.0.1:0", "127.0.0.1:0"]})


def test_unknown_job_or_task_is_value_error():
    with pytest.raises(ValueError):
        tf.distribute.Server({"worker": ["127.0.0.1:0"]}, job_name="ps")
    with pytest.raises(ValueError):
        tf.distribute.Server({"worker": ["127.0.0.1:0"]}, task_index=3)


def test_unsupported_protocol_names_the_supported_ones():
    with pytest.raises(Exception) as info:
        tf.distribute.Server({"worker": ["127.0.0.1:0"]}, protocol="grpc+verbs")
    assert "grpc+verbs" in str(info.value) and "'grpc'" in str(info.value)


def test_address_without_port_is_invalid_argument():
    with pytest.raises(errors.InvalidArgumentError, match="port"):
        tf.distribute.Server({"worker": ["127.0.0.1"]})


def test_config_is_merged_into_default_session_config(servers):
    config = tf.ConfigProto(device_count={"CPU": 2}, log_device_placement=False,
                            operation_timeout_in_ms=1234)
    server = tf.distribute.Server({"worker": ["127.0.0.1:0"]}, config=config)
    servers.append(server)
    merged = server.server_def.default_session_config
    assert merged.operation_timeout_in_ms == 1234
    assert dict(merged.device_count) == {"CPU": 2}
    with tf.Graph().as_default():
        with tf.Session(server.target) as sess:
            assert len(sess.list_devices()) == 2


def test_server_def_config_and_config_argument_both_apply(servers):
    server_def = tf.train.ServerDef(
        cluster=tf.train.ClusterSpec({"w": ["127.0.0.1:0"]}).as_cluster_def(),
        job_name="w", task_index=0, protocol="grpc",
        default_session_config=tf.ConfigProto(operation_timeout_in_ms=500))
    server = tf.distribute.Server(server_def, config=tf.ConfigProto(allow_soft_placement=True))
    servers.append(server)
    merged = server.server_def.default_session_config
    assert merged.operation_timeout_in_ms == 500 and merged.allow_soft_placement


# -- lifecycle ---------------------------------------------------------------

def test_create_local_server_job_localhost(servers):
    server = tf.distribute.Server.create_local_server()
    servers.append(server)
    assert server.server_def.job_name == "localhost"
    assert server.target.startswith("grpc://localhost:")
    with tf.Graph().as_default():
        with tf.Session(server.target) as sess:
            assert sess.run(tf.constant(2.0) * 4.0) == 8.0
            names = [d.name for d in sess.list_devices()]
    assert "/job:localhost/replica:0/task:0/device:CPU:0" in names


def test_create_local_server_without_start(servers):
    server = tf.distribute.Server.create_local_server(start=False)
    servers.append(server)
    server.start()
    server.start()  # idempotent
    with tf.Graph().as_default():
        with tf.Session(server.target) as sess:
            assert sess.run(tf.constant(1.0)) == 1.0


def test_join_blocks_until_stop():
    server = tf.distribute.Server.create_local_server()
    joined = threading.Event()
    thread = threading.Thread(target=lambda: (server.join(), joined.set()), daemon=True)
    thread.start()
    time.sleep(0.2)
    assert not joined.is_set()
    server.stop()
    assert joined.wait(10)
    server.stop()  # idempotent


def test_stop_frees_the_port():
    first = tf.distribute.Server({"worker": ["127.0.0.1:0"]})
    port = _port(first.target)
    first.stop()
    second = tf.distribute.Server({"worker": [f"127.0.0.1:{port}"]})
    try:
        assert _port(second.target) == port
        with tf.Graph().as_default():
            with tf.Session(second.target) as sess:
                assert sess.run(tf.constant(3.0)) == 3.0
    finally:
        second.stop()


def test_context_manager_stops():
    with tf.distribute.Server({"worker": ["127.0.0.1:0"]}) as server:
        port = _port(server.target)
    again = tf.distribute.Server({"worker": [f"127.0.0.1:{port}"]})
    again.stop()


def test_port_in_use_is_an_op_error():
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen(1)
        port = sock.getsockname()[1]
        with pytest.raises(errors.OpError):
            tf.distribute.Server({"worker": [f"127.0.0.1:{port}"]})


def test_two_servers_cannot_share_a_port(servers):
    first = tf.distribute.Server({"worker": ["127.0.0.1:0"]})
    servers.append(first)
    with pytest.raises(errors.OpError):
        tf.distribute.Server({"worker": [f"127.0.0.1:{_port(first.target)}"]})
    with tf.Graph().as_default():
        with tf.Session(first.target) as sess:  # the first is unharmed
            assert sess.run(tf.constant(1.0)) == 1.0


def test_many_servers_in_one_process(servers):
    for i in range(6):
        servers.append(tf.distribute.Server({f"job{i}": ["127.0.0.1:0"]}))
    assert len({s.target for s in servers}) == 6
    for i, server in enumerate(servers):
        with tf.Graph().as_default():
            with tf.Session(server.target) as sess:
                assert sess.run(tf.constant(float(i))) == float(i)
                assert sess.list_devices()[0].name.startswith(f"/job:job{i}/")


# -- the wire: a raw channel, no in-process shortcut ---------------------------

def _raw(target: str, method: str):
    channel = grpc.insecure_channel(target[len("grpc://"):])
    return channel, channel.unary_unary(f"/nbcluster.MasterService/{method}",
                                        request_serializer=lambda b: b,
                                        response_deserializer=lambda b: b)


def test_server_survives_garbage_requests(servers):
    server = tf.distribute.Server.create_local_server()
    servers.append(server)
    channel, run_step = _raw(server.target, "RunStep")
    with channel:
        for junk in (b"\xff\xff\xff\xff\xff", b"\x0a\xff\x01abc", b"\x12\x05ab"):
            with pytest.raises(grpc.RpcError) as info:
                run_step(junk, timeout=10)
            assert info.value.code() in (grpc.StatusCode.DATA_LOSS,
                                         grpc.StatusCode.INVALID_ARGUMENT,
                                         grpc.StatusCode.ABORTED)
        _, create = _raw(server.target, "CreateSession")
        with pytest.raises(grpc.RpcError) as info:
            create(b"\xff\xff\xff", timeout=10)
        assert info.value.code() != grpc.StatusCode.UNAVAILABLE
    # The next good request works, over gRPC too.
    client = GrpcMasterClient(server.target[len("grpc://"):])
    with tf.Graph().as_default() as g:
        tf.constant(5.0, name="five")
        handle, _ = client.create_session([op.to_node() for op in g.get_operations()])
        values, _ = client.run_step(handle, {}, ["five:0"], [])
    assert float(values[0]) == 5.0


def test_unknown_session_handle_is_aborted(servers):
    server = tf.distribute.Server.create_local_server()
    servers.append(server)
    client = GrpcMasterClient(server.target[len("grpc://"):])
    with pytest.raises(errors.AbortedError):
        client.run_step("no-such-session", {}, ["x:0"], [])
    channel, run_step = _raw(server.target, "RunStep")
    with channel:
        request = master_pb2.RunStepRequest(session_handle="nope", fetch=["x:0"])
        with pytest.raises(grpc.RpcError) as info:
            run_step(request.SerializeToString(), timeout=10)
    assert info.value.code() == grpc.StatusCode.ABORTED


def test_grpc_client_runs_a_step_with_feeds(servers):
    server = tf.distribute.Server.create_local_server()
    servers.append(server)
    client = GrpcMasterClient(server.target[len("grpc://"):])
    with tf.Graph().as_default() as g:
        x = tf.placeholder(tf.float32, [None], name="x")
        tf.multiply(x, 2.0, name="twice")
        handle, _ = client.create_session([op.to_node() for op in g.get_operations()])
    values, _ = client.run_step(handle, {"x:0": np.arange(3, dtype=np.float32)},
                                ["twice:0"], [])
    np.testing.assert_allclose(values[0], [0.0, 2.0, 4.0])
    client.close_session(handle)
    with pytest.raises(errors.AbortedError):
        client.run_step(handle, {"x:0": np.zeros(1, np.float32)}, ["twice:0"], [])


def test_stopped_server_target_is_unavailable():
    server = tf.distribute.Server.create_local_server()
    target = server.target
    server.stop()
    # a client waits for a master not up yet, up to the session's operation timeout
    client = GrpcMasterClient(target[len("grpc://"):],
                              config=tf.ConfigProto(operation_timeout_in_ms=1000))
    start = time.monotonic()
    with tf.Graph().as_default() as g:
        tf.constant(1.0)
        with pytest.raises(errors.UnavailableError):
            client.create_session([op.to_node() for op in g.get_operations()])
    assert time.monotonic() - start < 10


# -- lifetime: a started server serves until stop() or process exit -----------

def _start_cluster_keeping_only_targets(spec) -> list:
    """Starts every task of `spec`, as a helper that returns only targets would."""
    return [tf.train.Server(spec, job_name=job, task_index=i).target
            for job in spec.jobs for i in spec.task_indices(job)]


def test_a_started_server_nobody_references_keeps_serving():
    """Regression: a garbage-collected server stopped serving (Connection refused)."""
    import gc
    import weakref

    from nbcluster.launch import free_ports
    ps0, ps1, worker = free_ports(3)
    spec = tf.train.ClusterSpec({"ps": [f"127.0.0.1:{ps0}", f"127.0.0.1:{ps1}"],
                                 "worker": [f"127.0.0.1:{worker}"]})
    targets = _start_cluster_keeping_only_targets(spec)
    from nbcluster.server import _STARTED
    refs = [weakref.ref(s) for s in list(_STARTED.values())
            if _port(s.target) in (ps0, ps1, worker)]
    assert len(refs) == 3
    try:
        gc.collect()
        assert all(ref() is not None for ref in refs)
        with tf.Graph().as_default():
            with tf.device("/job:ps/task:0"):
                w = tf.Variable(np.zeros(2, np.float32))
            with tf.device("/job:ps/task:1"):
                b = tf.Variable(0.0)
            with tf.device("/job:worker/task:0"):
                x = tf.constant([[1.0, 2.0], [3.0, 4.0]])
                y = tf.constant([5.0, 11.0])
                loss = tf.reduce_mean(tf.square(tf.reshape(tf.matmul(x, tf.reshape(w, [2, 1])),
                                                           [2]) + b - y))
                train = tf.train.GradientDescentOptimizer(0.05).minimize(loss)
            with tf.Session(targets[2]) as sess:
                sess.run(tf.global_variables_initializer())
                first = sess.run(loss)
                for _ in range(20):
                    sess.run(train)
                assert sess.run(loss) < first
    finally:
        for ref in refs:
            if ref() is not None:
                ref().stop()


def test_a_stopped_server_is_not_kept_alive():
    import gc
    import weakref
    server = tf.distribute.Server.create_local_server()
    ref = weakref.ref(server)
    server.stop()
    del server
    gc.collect()
    assert ref() is None


# -- what a start loads ------------------------------------------------------

# A one-task cluster's server and a first step through it in this process, as
# a notebook or a script runs them; prints the modules of REMOTE it loaded.
_START_AND_RUN = """
import json, sys
import numpy as np
import nbcluster as tf
server = tf.train.Server(tf.train.ClusterSpec({"worker": ["127.0.0.1:0"]}), "worker", 0)
with tf.Graph().as_default():
    x = tf.placeholder(tf.float32, [4])
    with tf.Session(server.target) as sess:
        assert sess.run(x + 1, {x: np.arange(4, dtype=np.float32)}).tolist() == [1, 2, 3, 4]
print(json.dumps([m for m in json.loads(sys.argv[1]) if m in sys.modules]))
server.stop()
"""


def test_a_start_and_a_first_step_in_process_load_no_client_nor_threadpoolctl():
    """The clients of other tasks load with the first peer they reach, and
    threadpoolctl only where a share narrows the pools (here the share is
    every core: the libraries' own count)."""
    import json
    import subprocess
    import sys

    from nbcluster.launch import child_env
    from nbcluster.runtime.math_threads import THREAD_VARS
    remote = ["nbcluster.rpc.grpc_transport.master_client",
              "nbcluster.rpc.grpc_transport.worker_client",
              "nbcluster.rpc.socket_transport.client",
              "nbcluster.rpc.socket_transport.service_clients",
              "nbcluster.proto.master_pb2_grpc", "nbcluster.proto.worker_pb2_grpc",
              "grpc.experimental", "threadpoolctl"]
    env = {k: v for k, v in child_env().items() if k not in THREAD_VARS}
    out = subprocess.run([sys.executable, "-c", _START_AND_RUN, json.dumps(remote)], env=env,
                         capture_output=True, text=True, timeout=50, check=True).stdout
    assert json.loads(out) == []
