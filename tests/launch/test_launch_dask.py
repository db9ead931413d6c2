"""Cluster.dask: one nbcluster task per worker of a real distributed.LocalCluster on 127.0.0.1."""
from __future__ import annotations

import os
import signal
import time

import pytest

from nbcluster.launch import Cluster, LaunchError

from cluster_graphs import spread_matmul
from process_checks import kill_pids, wait_gone

distributed = pytest.importorskip("distributed", reason="the `dask` extra is not installed: "
                                  "pip install 'nbcluster[dask]'")
pytestmark = pytest.mark.timeout(240)


@pytest.fixture(scope="module")
def dask_client(tmp_path_factory):
    cluster = distributed.LocalCluster(n_workers=3, threads_per_worker=1, processes=True,
                                       host="127.0.0.1", dashboard_address=None,
                                       local_directory=str(tmp_path_factory.mktemp("dask")))
    client = distributed.Client(cluster)
    yield client
    client.close()
    cluster.close()


def _worker_pid(client, name: str) -> int:
    for address, info in client.scheduler_info()["workers"].items():
        if str(info["name"]) == name:
            return client.run(os.getpid, workers=[address])[address]
    raise AssertionError(f"no worker {name}")


def test_dask_cluster_runs_a_graph_survives_a_worker_restart_and_stops(dask_client):
    cluster = Cluster.dask(dask_client, ps=1, worker=2, name="on-dask", timeout=120)
    pids = []
    try:
        statuses = cluster.status()
        pids = [s.pid for s in statuses]
        assert [(s.job, s.index, s.state) for s in statuses] == [
            ("ps", 0, "up"), ("worker", 0, "up"), ("worker", 1, "up")]
        assert all(s.address.startswith("127.0.0.1:") for s in statuses)
        assert len({s.address for s in statuses}) == 3
        assert spread_matmul(cluster.target("worker", 0)) == [[36.0, 36.0], [36.0, 36.0]]
        assert "(dask, 3 tasks)" in repr(cluster)
        # the Dask worker of worker:1 dies; its nanny restarts it (same name) and the
        # plugin brings the task back at the same address
        victim = cluster._launcher._names[("worker", 1)]
        before = {(s.job, s.index): (s.address, s.pid) for s in statuses}
        os.kill(_worker_pid(dask_client, victim), signal.SIGKILL)
        assert wait_gone([before[("worker", 1)][1]], 30) == []
        deadline = time.monotonic() + 90
        while True:
            now = {(s.job, s.index): (s.address, s.pid, s.state) for s in cluster.status()}
            if now[("worker", 1)][2] == "up" and now[("worker", 1)][1] != before[("worker", 1)][1]:
                break
            assert time.monotonic() < deadline, f"worker:1 never came back: {now}"
            time.sleep(0.3)
        assert now[("worker", 1)][0] == before[("worker", 1)][0]
        pids.append(now[("worker", 1)][1])
        assert spread_matmul(cluster.target("worker", 0)) == [[36.0, 36.0], [36.0, 36.0]]
        target = cluster.restart("worker", 0)
        assert target == f"grpc://{before[('worker', 0)][0]}"
        pids.append(cluster.status()[1].pid)
        cluster.stop()
        assert wait_gone(pids, 15) == []
    finally:
        cluster.stop()
        kill_pids(pids)


def test_too_few_workers_is_named(dask_client):
    with pytest.raises(LaunchError, match="3 workers; 5 tasks"):
        Cluster.dask(dask_client, ps=1, worker=4, timeout=2)


def _tokenless_status_code(address: str):
    """The status code of a GetStatus to `address` that carries no token (TLS where
    this process knows the cluster's CA)."""
    import grpc

    from nbcluster.proto import worker_pb2, worker_pb2_grpc
    from nbcluster.rpc.grpc_transport import tls
    channel = tls.open_channel(address, [])
    try:
        worker_pb2_grpc.WorkerServiceStub(channel).GetStatus(worker_pb2.GetStatusRequest(),
                                                             timeout=10)
    except grpc.RpcError as e:
        return e.code()
    finally:
        channel.close()
    return grpc.StatusCode.OK


def test_a_dask_cluster_has_a_token_and_tls_on_no_command_line(dask_client, monkeypatch):
    import grpc

    from nbcluster.rpc.grpc_transport import tls_material, tokens
    monkeypatch.delenv(tokens.ENV, raising=False)
    cluster = Cluster.dask(dask_client, ps=1, worker=2, name="dask-tls", timeout=120, tls=True)
    pids = []
    try:
        pids = list(cluster.pids.values())
        assert spread_matmul(cluster.target("worker", 0)) == [[36.0, 36.0], [36.0, 36.0]]  # no user step
        token = cluster._token
        address = cluster.spec.task_address("worker", 1)
        assert tls_material.ca_for(address) == cluster._ca.cert_pem
        assert _tokenless_status_code(address) == grpc.StatusCode.UNAUTHENTICATED
        for pid in pids:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                argv = f.read()
            assert token.encode() not in argv and b"PRIVATE KEY" not in argv
            with open(f"/proc/{pid}/environ", "rb") as f:
                env = dict(e.split(b"=", 1) for e in f.read().split(b"\0") if b"=" in e)
            assert env[tokens.ENV.encode()] == token.encode()
            key = os.path.join(env[tls_material.DIR_ENV.encode()].decode(), "key.pem")
            assert os.stat(key).st_mode & 0o777 == 0o600
    finally:
        cluster.stop()
        kill_pids(pids)
