"""TLS on 127.0.0.1: a launched cluster forced onto TLS runs a step across its
tasks with every call verified against its own CA; a task whose certificate
is another CA's, or another host's, is refused as UnavailableError naming
it, and a client with no CA (plaintext) gets nothing from a TLS task."""
from __future__ import annotations

import json
import os
import stat
import subprocess
import sys

import grpc
import numpy as np
import pytest

import nbcluster as tf
from nbcluster import errors
from nbcluster.launch import Cluster, child_env
from nbcluster.launch.certificates import ClusterCA
from nbcluster.rpc.grpc_transport import tls_material
from nbcluster.rpc.grpc_transport.worker_client import GrpcWorkerClient
from nbcluster.server import parse_ready_line
from nbcluster.server.access import server_token

pytestmark = pytest.mark.timeout(120)


def _address(target: str) -> str:
    return target[len("grpc://"):]


@pytest.fixture
def tls_cluster(monkeypatch):
    # gRPC for every hop, the tasks' own included: no same-host socket around TLS
    monkeypatch.setenv("NBCLUSTER_DATA_PLANE", "grpc")
    with Cluster.local(ps=1, worker=1, tls=True, env={"NBCLUSTER_DATA_PLANE": "grpc"}) as c:
        yield c


def test_a_tls_cluster_runs_a_step_across_both_tasks(tls_cluster):
    target = tls_cluster.target("worker", 0)
    with tf.Graph().as_default():
        with tf.device("/job:ps/task:0"):
            w = tf.Variable(np.arange(4, dtype=np.float32), name="w")
        with tf.device("/job:worker/task:0"):
            y = tf.reduce_sum(w * 2.0)
        with tf.Session(target) as sess:
            sess.run(w.initializer)
            assert sess.run(y) == 12.0
    assert {s.state for s in tls_cluster.status()} == {"up"}
    # the key reached each task as a 0600 file, named by the environment only
    for (job, index), pid in tls_cluster.pids.items():
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            assert b"PRIVATE KEY" not in f.read()
        with open(f"/proc/{pid}/environ", "rb") as f:
            env = dict(e.split(b"=", 1) for e in f.read().split(b"\0") if b"=" in e)
        key = os.path.join(env[tls_material.DIR_ENV.encode()].decode(), "key.pem")
        assert stat.S_IMODE(os.stat(key).st_mode) == 0o600
    # the records carry the CA for the sidebar's and other processes' clients
    from nbcluster.launch import records
    assert records.record_of(tls_cluster)["tls_ca"].startswith("-----BEGIN CERTIFICATE")


def test_a_client_without_the_ca_gets_nothing(tls_cluster):
    address = _address(tls_cluster.target("ps", 0))
    with grpc.insecure_channel(address) as plaintext:  # what a client with no CA dials
        with pytest.raises(errors.UnavailableError, match=address):
            GrpcWorkerClient(address, channel=plaintext).get_status(5.0)


def test_another_cas_certificate_is_refused(tls_cluster):
    address = _address(tls_cluster.target("worker", 0))
    ca = tls_material.ca_for(address)
    tls_material.register_ca(address, ClusterCA("another").cert_pem)
    try:
        with pytest.raises(errors.UnavailableError, match=f"{address} cannot be trusted"):
            GrpcWorkerClient(address).get_status(5.0)
        # a Session waits for a master not up yet, but not for one it can never trust
        with tf.Graph().as_default():
            with pytest.raises(errors.UnavailableError, match="not valid for 127.0.0.1"):
                with tf.Session(f"grpc://{address}") as sess:
                    sess.run(tf.constant(1.0))
    finally:
        tls_material.register_ca(address, ca)


def test_another_hosts_certificate_is_refused():
    ca = ClusterCA("hosts")
    with tf.distribute.Server({"w": ["127.0.0.1:0"]}, tls=ca.issue("10.11.12.13")) as server:
        address = "127.0.0.1:" + server.target.rsplit(":", 1)[1]
        with pytest.raises(errors.UnavailableError, match="not valid for 127.0.0.1"):
            GrpcWorkerClient(address).get_status(5.0)
    with tf.distribute.Server({"w": ["127.0.0.1:0"]}, tls=ca.issue("127.0.0.1")) as server:
        address = "127.0.0.1:" + server.target.rsplit(":", 1)[1]
        assert GrpcWorkerClient(address).get_status(5.0).job_name == "w"


def test_the_command_line_serves_tls_from_a_folder(tmp_path):
    ca = ClusterCA("cli")
    folder = tls_material.write_dir(str(tmp_path / "tls"), ca.issue("127.0.0.1"))
    env = child_env()
    proc = subprocess.Popen([sys.executable, "-m", "nbcluster.server", "--cluster",
                             json.dumps({"worker": ["127.0.0.1:0"]}), "--tls-dir", folder],
                            env=env, stdout=subprocess.PIPE, text=True)
    try:
        address = _address(parse_ready_line(proc.stdout.readline())[2]).replace(
            "localhost", "127.0.0.1")
        tls_material.register_ca(address, ca.cert_pem)
        assert GrpcWorkerClient(address).get_status(10.0).job_name == "worker"
    finally:
        tls_material.register_ca(address, None)
        proc.kill()
        proc.wait()
        proc.stdout.close()
    os.chmod(os.path.join(folder, "key.pem"), 0o644)  # a key others may read: refused
    done = subprocess.run([sys.executable, "-m", "nbcluster.server", "--cluster",
                           json.dumps({"worker": ["127.0.0.1:0"]}), "--tls-dir", folder],
                          env=env, capture_output=True, text=True, timeout=60)
    assert done.returncode == 2 and "readable by others" in done.stderr


def test_beyond_loopback_a_token_without_tls_is_refused(capsys):
    tls = ClusterCA("x").issue("10.1.2.3")
    with pytest.raises(errors.InvalidArgumentError, match="with no TLS"):
        server_token("10.1.2.3", "t", insecure=False)
    assert server_token("10.1.2.3", "t", insecure=False, tls=tls) == "t"
    assert server_token("10.1.2.3", "t", insecure=True) == "t"
    assert "no TLS (insecure)" in capsys.readouterr().err
    assert server_token("127.0.0.1", None, insecure=False) is None  # zero-setup loopback


def test_a_server_beyond_loopback_with_a_token_but_no_tls_does_not_start(monkeypatch):
    monkeypatch.delenv(tls_material.DIR_ENV, raising=False)
    monkeypatch.delenv(tls_material.MATERIAL_ENV, raising=False)
    # 192.0.2.1 is TEST-NET: never bindable, so a refusal must come before the bind
    with pytest.raises(errors.InvalidArgumentError, match="beyond loopback, with no TLS"):
        tf.distribute.Server({"worker": ["192.0.2.1:0"]}, token="a-token")


def test_another_process_finds_the_ca_and_token_in_the_record(tls_cluster):
    """A between-graph script of the same user: no CA, token or flag given to it."""
    script = ("import nbcluster as tf, sys\n"
              "with tf.Graph().as_default():\n"
              "    with tf.device('/job:ps/task:0'):\n"
              "        a = tf.constant(5.0)\n"
              "    with tf.Session(sys.argv[1]) as sess:\n"
              "        print(sess.run(a * 2.0))\n")
    env = child_env()
    for name in (tls_material.DIR_ENV, tls_material.CA_ENV, tls_material.MATERIAL_ENV,
                 "NBCLUSTER_TOKEN", "NBCLUSTER_TOKEN_FILE"):
        env.pop(name, None)
    done = subprocess.run([sys.executable, "-c", script, tls_cluster.target("worker", 0)],
                          env=env, capture_output=True, text=True, timeout=90, check=False)
    assert done.returncode == 0 and done.stdout.split() == ["10.0"], done.stderr[-2000:]
