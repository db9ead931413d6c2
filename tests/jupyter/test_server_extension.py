"""The jupyter-server extension: GET /nbcluster/clusters from a real server process, and the
installed extensions as `jupyter ... list` reports them."""
from __future__ import annotations

import json
import os
import re
import socket
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request

import pytest
from lab_server import TOKEN
from lab_server import get_json as _get

from nbcluster.launch import Cluster

from cluster_graphs import ps_matmul_step

pytestmark = pytest.mark.timeout(180)

def test_lists_a_running_cluster_with_its_tasks_live_state(same_runtime):
    assert _get(same_runtime) == []
    with Cluster.local(ps=1, worker=2, name="served") as cluster:
        ps_matmul_step(cluster.target("worker", 0))
        [listed] = _get(same_runtime)
        assert listed["name"] == "served" and listed["owner_pid"] == os.getpid()
        assert listed["launcher"] == "local" and listed["started"] <= time.time()
        tasks = {(t["job"], t["index"]): t for t in listed["tasks"]}
        assert {key: t["state"] for key, t in tasks.items()} == {
            ("ps", 0): "up", ("worker", 0): "up", ("worker", 1): "up"}
        assert {key: t["pid"] for key, t in tasks.items()} == cluster.pids
        assert {key: t["target"] for key, t in tasks.items()} == cluster.targets
        # the same counters GetStatus gives the cluster itself; the step ran on ps:0 and worker:1
        steps = {(s.job, s.index): s.steps_run for s in cluster.status()}
        assert {key: t["steps_run"] for key, t in tasks.items()} == steps
        assert steps["ps", 0] >= 1 and steps["worker", 1] >= 1
        assert all(t["last_error"] == "" for t in tasks.values())
        # each task process's own figures
        assert all(t["rss_bytes"] > 0 and t["cpu_percent"] >= 0 for t in tasks.values())

        cluster.kill("worker", 1)
        [listed] = _get(same_runtime)
        states = {(t["job"], t["index"]): t["state"] for t in listed["tasks"]}
        assert states == {("ps", 0): "up", ("worker", 0): "up", ("worker", 1): "down"}
        [gone] = [t for t in listed["tasks"] if (t["job"], t["index"]) == ("worker", 1)]
        assert (gone["cpu_percent"], gone["rss_bytes"]) == (None, 0)
    assert _get(same_runtime) == []


def _post(server, path: str, token: bool = True, timeout: float = 30) -> tuple:
    headers = {"Authorization": f"token {TOKEN}"} if token else {}
    request = urllib.request.Request(server["url"] + path, data=b"", headers=headers,
                                     method="POST")
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read() or b"{}")


def test_stop_ends_a_clusters_tasks_and_it_leaves_the_list(same_runtime):
    with Cluster.local(ps=1, worker=1, name="to-stop") as cluster:
        [listed] = _get(same_runtime)
        assert listed["id"] == f"{os.getpid()}-to-stop"
        assert _post(same_runtime, f"/nbcluster/clusters/{listed['id']}/stop",
                     token=False)[0] == 403
        status, answer = _post(same_runtime, f"/nbcluster/clusters/{listed['id']}/stop")
        assert status == 200
        assert sorted(answer["stopped"]) == ["/job:ps/task:0", "/job:worker/task:0"]
        assert _get(same_runtime) == []
        assert {s.state for s in cluster.status()} == {"stopped"}
    status, answer = _post(same_runtime, "/nbcluster/clusters/1-nothing/stop")
    assert status == 404 and "No running cluster '1-nothing'" in answer["message"]


def test_needs_the_token(same_runtime):
    with pytest.raises(urllib.error.HTTPError) as raised:
        _get(same_runtime, token=False)
    assert raised.value.code == 403


def test_a_silent_task_does_not_block_the_server(same_runtime):
    """A task that accepts connections but never answers costs the request its GetStatus
    deadline, in a worker thread: the server answers other requests meanwhile."""
    with socket.socket() as silent:
        silent.bind(("127.0.0.1", 0))
        silent.listen(8)  # connections queue; nothing ever reads them
        address = f"127.0.0.1:{silent.getsockname()[1]}"
        folder = same_runtime["runtime"] / "nbcluster"
        folder.mkdir(parents=True, exist_ok=True)
        record = folder / f"{os.getpid()}-silent.json"
        record.write_text(json.dumps({
            "version": 1, "name": "silent", "owner_pid": os.getpid(), "started": 1.0,
            "launcher": "local", "tasks": [{"job": "worker", "index": 0, "address": address,
                                            "target": f"grpc://{address}", "pid": None}]}))
        try:
            answer: list = []
            slow = threading.Thread(target=lambda: answer.append(_get(same_runtime)))
            slow.start()
            time.sleep(0.2)  # the clusters request is waiting on the silent task now
            _get(same_runtime, "/api/status")
            still_waiting = slow.is_alive()
            slow.join(30)
        finally:
            record.unlink()
    assert still_waiting, "/api/status waited for the clusters request: the loop was blocked"
    [listed] = answer[0]
    assert listed["name"] == "silent" and listed["tasks"][0]["state"] == "down"


def _jupyter(*args: str) -> str:
    exe = os.path.join(os.path.dirname(sys.executable), "jupyter")
    done = subprocess.run([exe, *args], capture_output=True, text=True, timeout=120)
    return re.sub(r"\x1b\[[0-9;]*m", "", done.stdout + done.stderr)  # colours; list -> stderr


def test_the_installed_extensions_are_enabled():
    """`pip install` put the prebuilt lab extension and the server config in place."""
    labextensions = _jupyter("labextension", "list")
    assert re.search(r"nbcluster v[\d.]+ enabled OK \(python, nbcluster\)", labextensions), \
        labextensions
    server_extensions = _jupyter("server", "extension", "list")
    assert re.search(r"nbcluster\.jupyter enabled", server_extensions), server_extensions
    assert re.search(r"nbcluster\.jupyter\s+OK", server_extensions), server_extensions
