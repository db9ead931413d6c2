"""Every RPC to a task with a token must carry it: without it, or with a wrong
one, the call is UNAUTHENTICATED and changes nothing; launched clusters get a
token of their own that clients in this process send with no user step, and
that never shows on a command line."""
from __future__ import annotations

import json
import os
import subprocess
import sys

import grpc
import numpy as np
import pytest

import nbcluster as tf
from nbcluster import errors
from nbcluster.launch import Cluster, child_env
from nbcluster.proto import master_pb2, worker_pb2
from nbcluster.rpc.grpc_transport import tokens
from nbcluster.server import parse_ready_line
from nbcluster.server.access import server_token

pytestmark = pytest.mark.timeout(120)

TOKEN = "a-test-token-0123456789"

METHODS = [  # (service method, request bytes, kind)
    ("WorkerService/GetStatus", worker_pb2.GetStatusRequest(), "unary"),
    ("WorkerService/CleanupAll", worker_pb2.CleanupAllRequest(), "unary"),
    ("WorkerService/RecvTensors", worker_pb2.RunGraphRequest(step_id=1), "unary_stream"),
    ("WorkerService/PullResponse", None, "unary_stream"),
    ("MasterService/CreateSession", master_pb2.CreateSessionRequest(), "unary"),
    ("MasterService/RunStepStreamed", None, "stream_unary"),
    ("MasterService/Reset", master_pb2.ResetRequest(), "unary"),
]


@pytest.fixture
def token_server(tmp_path):
    """A `python -m nbcluster.server --token-file` task: its target."""
    path = tmp_path / "token"
    tokens.write_token_file(str(path), TOKEN)
    env = child_env()
    env.pop(tokens.ENV, None)
    proc = subprocess.Popen([sys.executable, "-m", "nbcluster.server", "--cluster",
                             json.dumps({"worker": ["127.0.0.1:0"]}), "--token-file", str(path)],
                            env=env, stdout=subprocess.PIPE, text=True)
    try:
        yield parse_ready_line(proc.stdout.readline())[2]
    finally:
        proc.kill()
        proc.wait()
        proc.stdout.close()


def _call(target: str, method: str, request, kind: str, metadata=()):
    channel = grpc.insecure_channel(target[len("grpc://"):])
    with channel:
        data = request.SerializeToString() if request is not None else b"x"
        if kind == "unary":
            return channel.unary_unary(f"/nbcluster.{method}")(data, timeout=30,
                                                                metadata=metadata)
        if kind == "unary_stream":
            return list(channel.unary_stream(f"/nbcluster.{method}")(data, timeout=30,
                                                                      metadata=metadata))
        return channel.stream_unary(f"/nbcluster.{method}")(iter([data]), timeout=30,
                                                            metadata=metadata)


@pytest.mark.parametrize("method, request_, kind", METHODS, ids=[m[0] for m in METHODS])
@pytest.mark.parametrize("metadata", [(), (("nbcluster-token", "wrong"),),
                                      (("nbcluster-token", TOKEN[:-1]),)],
                         ids=["none", "wrong", "prefix"])
def test_calls_without_the_token_are_unauthenticated(token_server, method, request_, kind,
                                                     metadata):
    with pytest.raises(grpc.RpcError) as info:
        _call(token_server, method, request_, kind, metadata)
    assert info.value.code() == grpc.StatusCode.UNAUTHENTICATED
    assert "token" in info.value.details()


def test_the_token_lets_a_call_through(token_server):
    answer = _call(token_server, "WorkerService/GetStatus", worker_pb2.GetStatusRequest(),
                   "unary", (("nbcluster-token", TOKEN),))
    assert worker_pb2.GetStatusResponse.FromString(answer).job_name == "worker"


def test_a_session_without_it_gets_unauthenticated_error_and_changes_nothing(token_server):
    address = token_server[len("grpc://"):]
    tokens.register(address, TOKEN)
    try:
        with tf.Graph().as_default():
            v = tf.Variable(np.float32(7), name="kept")
            with tf.Session(token_server) as sess:
                sess.run(v.initializer)
            tokens.register(address, None)  # as a stranger: no token
            with pytest.raises(errors.UnauthenticatedError):
                tf.Session.reset(token_server)
            with pytest.raises(errors.UnauthenticatedError):
                with tf.Session(token_server) as sess:
                    sess.run(v)
            tokens.register(address, TOKEN)
            with tf.Session(token_server) as sess:
                assert sess.run(v) == 7  # the stranger's Reset cleared nothing
    finally:
        tokens.register(address, None)


def test_a_launched_cluster_has_a_token_that_no_command_line_shows(monkeypatch):
    monkeypatch.delenv(tokens.ENV, raising=False)
    with Cluster.local(ps=1, worker=1) as cluster:
        target = cluster.target("worker", 0)
        with tf.Graph().as_default():  # no user step: the launcher registered the token
            with tf.device("/job:ps/task:0"):
                a = tf.constant(2.0)
            with tf.Session(target) as sess:
                assert sess.run(a * 3.0) == 6.0
        with pytest.raises(grpc.RpcError) as info:
            _call(target, "WorkerService/GetStatus", worker_pb2.GetStatusRequest(), "unary")
        assert info.value.code() == grpc.StatusCode.UNAUTHENTICATED
        token = cluster._token
        for pid in cluster.pids.values():
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                assert token.encode() not in f.read()
            with open(f"/proc/{pid}/environ", "rb") as f:
                assert f"{tokens.ENV}={token}".encode() in f.read().split(b"\0")
        # another process connects with the token it was given, as a user would
        connected = Cluster.connect(cluster.spec, token=token, timeout=30)
        assert {s.state for s in connected.status()} == {"up"}


def test_a_server_beyond_loopback_needs_a_token_or_insecure(capsys, monkeypatch):
    monkeypatch.delenv(tokens.ENV, raising=False)
    monkeypatch.delenv(tokens.FILE_ENV, raising=False)
    with pytest.raises(errors.InvalidArgumentError, match="beyond loopback"):
        server_token("0.0.0.0", None, insecure=False)
    assert server_token("0.0.0.0", None, insecure=True) is None
    assert "no token and no TLS (insecure)" in capsys.readouterr().err
    assert server_token("10.1.2.3", "t", insecure=True) == "t"  # TLS too: tests/rpc/test_tls.py
    assert server_token("127.0.0.1", None, insecure=False) is None  # zero-setup loopback
    assert server_token("localhost", None, insecure=False) is None
    # A Server refuses before it binds anything (192.0.2.1 is TEST-NET: never bindable).
    with pytest.raises(errors.InvalidArgumentError, match="beyond loopback"):
        tf.distribute.Server({"worker": ["192.0.2.1:0"]})


def test_a_token_file_others_can_read_is_refused(tmp_path):
    path = tmp_path / "token"
    path.write_text(TOKEN)
    os.chmod(path, 0o644)
    done = subprocess.run([sys.executable, "-m", "nbcluster.server", "--cluster",
                           json.dumps({"worker": ["127.0.0.1:0"]}), "--token-file", str(path)],
                          env=child_env(), capture_output=True, text=True, timeout=60)
    assert done.returncode == 2
    assert "readable by others" in done.stderr


def test_the_process_token_comes_from_the_environment(tmp_path, monkeypatch):
    monkeypatch.delenv(tokens.ENV, raising=False)
    path = tmp_path / "t"
    tokens.write_token_file(str(path), "from-file")
    assert oct(os.stat(path).st_mode & 0o777) == "0o600"
    monkeypatch.setenv(tokens.FILE_ENV, str(path))
    assert tokens.for_address("127.0.0.1:1") == "from-file"
    monkeypatch.setenv(tokens.ENV, "from-env")
    assert tokens.for_address("127.0.0.1:1") == "from-env"
    tokens.register("localhost:1", "registered")  # loopback names are one host
    try:
        assert tokens.for_address("127.0.0.1:1") == "registered"
    finally:
        tokens.register("localhost:1", None)


_CLIENT = """
import sys
import nbcluster as tf
with tf.Graph().as_default():
    try:
        with tf.Session(sys.argv[1]) as sess:
            print(sess.run(tf.constant(4.0) * 2.0))
    except tf.errors.UnauthenticatedError:
        print("unauthenticated")
"""


def test_another_process_of_this_user_finds_the_token_in_the_record(tmp_path, monkeypatch):
    monkeypatch.delenv(tokens.ENV, raising=False)
    with Cluster.local(ps=0, worker=1) as cluster:
        target = cluster.target("worker", 0)

        def client(**env) -> str:
            done = subprocess.run([sys.executable, "-c", _CLIENT, target],
                                  env=child_env(env), capture_output=True, text=True,
                                  timeout=60)
            assert done.returncode == 0, done.stderr
            return done.stdout.strip()
        assert client() == "8.0"  # same runtime dir: the cluster's record has the token
        assert client(JUPYTER_RUNTIME_DIR=str(tmp_path)) == "unauthenticated"
