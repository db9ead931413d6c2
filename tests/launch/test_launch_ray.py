"""Cluster.ray: each task a Ray actor in one placement group, on a local Ray on 127.0.0.1.

Ray runs in a subprocess of its own (its start and stop take seconds, and a
driver installs process-wide state); the test reads what it saw as JSON.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from nbcluster.launch.process import child_env

from process_checks import kill_pids, wait_gone

TESTS_DIR = str(Path(__file__).resolve().parents[1])

pytest.importorskip("ray", reason="the `ray` extra is not installed: pip install 'nbcluster[ray]'")
pytestmark = pytest.mark.timeout(420)

_DRIVER = textwrap.dedent("""
    import json, os, sys, time
    import ray
    for attempt in (1, 2):
        try:
            ray.init(num_cpus=3, include_dashboard=False, object_store_memory=100_000_000,
                     _temp_dir=sys.argv[1], log_to_driver=False)
            break
        except Exception as e:
            # Ray gives its raylet a fixed 30 s to register with the GCS, which an
            # overloaded host can exceed: that start is Ray's, so it gets one more go
            if attempt == 2 or "timed out during startup" not in str(e):
                raise
            ray.shutdown()
    sys.path.insert(0, sys.argv[2])  # tests/, for the shared graphs
    from cluster_graphs import spread_matmul
    from nbcluster.launch import Cluster
    from nbcluster.launch.records import alive

    def parent(pid):
        with open(f"/proc/{pid}/stat") as f:
            return int(f.read().rsplit(")", 1)[1].split()[1])

    out = {}
    cluster = Cluster.ray(ps=1, worker=2, timeout=180, name="on-ray")
    first = cluster.status()
    out["first"] = [[s.job, s.index, s.state, s.address, s.pid] for s in first]
    out["title"] = repr(cluster).splitlines()[0]
    out["graph"] = spread_matmul(cluster.target("worker", 0))  # the launcher's token sent with no user step
    # the token reached each task's environment, on no command line; a call without it fails
    import grpc
    from nbcluster.proto import worker_pb2, worker_pb2_grpc
    token = cluster._token.encode()
    out["token_in_argv"] = any(token in open(f"/proc/{s.pid}/cmdline", "rb").read()
                               for s in first)
    out["token_in_env"] = all(b"NBCLUSTER_TOKEN=" + token in
                              open(f"/proc/{s.pid}/environ", "rb").read().split(b"\\0")
                              for s in first)
    with grpc.insecure_channel(first[1].address) as channel:
        try:
            worker_pb2_grpc.WorkerServiceStub(channel).GetStatus(
                worker_pb2.GetStatusRequest(), timeout=10)
            out["tokenless"] = "OK"
        except grpc.RpcError as e:
            out["tokenless"] = e.code().name
    # the actor process of worker:1 dies; Ray restarts it and its task comes back
    actor_pid = parent(first[2].pid)
    os.kill(actor_pid, 9)
    deadline = time.monotonic() + 120
    while True:
        now = cluster.status()[2]
        if now.state == "up" and now.pid != first[2].pid:
            break
        if time.monotonic() > deadline:
            raise SystemExit(f"worker:1 never came back: {now}")
        time.sleep(0.3)
    out["after"] = [now.address, now.pid, alive(first[2].pid), parent(now.pid) != actor_pid]
    out["graph_after"] = spread_matmul(cluster.target("worker", 0))
    out["restart"] = cluster.restart("worker", 0)
    pids = [s.pid for s in cluster.status()]
    out["pids"] = pids + [first[1].pid, first[2].pid]
    cluster.stop()
    deadline = time.monotonic() + 30
    while any(alive(p) for p in out["pids"]) and time.monotonic() < deadline:
        time.sleep(0.2)
    out["alive_after_stop"] = [p for p in out["pids"] if alive(p)]
    print(json.dumps(out), flush=True)
    ray.shutdown()
""")


def test_ray_cluster_runs_a_graph_survives_an_actor_death_and_stops(tmp_path):
    home = tmp_path / "home"
    home.mkdir()
    env = child_env({"RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER": "0",  # loopback only, see ray.md
                     "RAY_USAGE_STATS_ENABLED": "0", "RAY_AUTH_MODE": "disabled",
                     "HOME": str(home)})
    temp = f"/tmp/nbc-ray-{os.getpid()}"  # short: Ray's socket paths must fit 107 bytes
    driver = subprocess.Popen([sys.executable, "-c", _DRIVER, temp, TESTS_DIR], env=env,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    out = {}
    try:
        stdout, stderr = driver.communicate(timeout=360)
        lines = [line for line in stdout.splitlines() if line.startswith("{")]
        assert driver.returncode == 0 and lines, stderr[-3000:]
        out = json.loads(lines[-1])
        first = out["first"]
        assert [(j, i, s) for j, i, s, _, _ in first] == [
            ("ps", 0, "up"), ("worker", 0, "up"), ("worker", 1, "up")]
        assert all(address.startswith("127.0.0.1:") for _, _, _, address, _ in first)
        assert len({address for _, _, _, address, _ in first}) == 3
        assert "(ray, 3 tasks)" in out["title"]
        assert out["graph"] == out["graph_after"] == [[36.0, 36.0], [36.0, 36.0]]
        assert out["token_in_env"] and not out["token_in_argv"]
        assert out["tokenless"] == "UNAUTHENTICATED"
        address, pid, old_alive, new_actor = out["after"]
        assert address == first[2][3] and pid != first[2][4]
        assert not old_alive and new_actor
        assert out["restart"] == f"grpc://{first[1][3]}"
        assert out["alive_after_stop"] == []
    finally:
        if driver.poll() is None:
            driver.kill()
            driver.communicate()
        kill_pids(out.get("pids", []))
        subprocess.run(["rm", "-rf", temp], timeout=60)
    assert wait_gone(out.get("pids", []), 10) == []
