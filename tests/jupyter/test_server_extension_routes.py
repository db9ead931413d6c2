"""The server extension's routes for the sidebar: the "New cluster" form (a cluster the server
starts, lists, restarts and stops), connect code, task logs, failure reasons, JSON errors."""
from __future__ import annotations

import json
import os
import urllib.error
import urllib.request

import pytest
from lab_server import TOKEN
from lab_server import get_json as _get

from nbcluster.jupyter import lab_launch
from nbcluster.launch import Cluster

from process_checks import alive, wait_gone

pytestmark = pytest.mark.timeout(240)


def _call(server, path: str, body=None, method: str = "POST", token: bool = True) -> tuple:
    headers = {"Authorization": f"token {TOKEN}"} if token else {}
    data = None if method == "GET" else (b"" if body is None else
                                         body if isinstance(body, bytes) else
                                         json.dumps(body).encode())
    request = urllib.request.Request(server["url"] + path, data=data, headers=headers,
                                     method=method)
    try:
        with urllib.request.urlopen(request, timeout=90) as response:
            assert response.headers["Content-Type"].startswith("application/json")
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as e:
        assert e.headers["Content-Type"].startswith("application/json"), e.headers
        return e.code, json.loads(e.read())


def _tasks(entry: dict) -> dict:
    return {(t["job"], t["index"]): t for t in entry["tasks"]}


def test_the_form_starts_a_cluster_the_server_lists_restarts_and_stops(same_runtime):
    form = {"name": "formed", "launcher": "local", "jobs": {"ps": 1, "worker": 1}}
    assert _call(same_runtime, "/nbcluster/clusters", form, token=False)[0] == 403
    status, made = _call(same_runtime, "/nbcluster/clusters", form)
    assert status == 201, made
    assert made["name"] == "formed" and made["owner"] == "server" and made["can_restart"]
    assert made["owner_pid"] != os.getpid()  # the Jupyter server's own
    tasks = _tasks(made)
    assert {key: t["state"] for key, t in tasks.items()} == {("ps", 0): "up",
                                                            ("worker", 0): "up"}
    assert made["summary"] | {"rss_bytes": 0, "cpu_percent": 0} == {
        "tasks": 2, "up": 2, "cpus": 2, "gpus": 0, "rss_bytes": 0, "cpu_percent": 0,
        "gpu_bytes_in_use": 0}
    assert made["summary"]["rss_bytes"] > 0
    assert all(t["devices"] == ["CPU:0"] and t["gpu_memory"] == [] for t in tasks.values())
    first_pid = tasks["worker", 0]["pid"]
    assert alive(first_pid)
    assert [c["id"] for c in _get(same_runtime)] == [made["id"]]
    base = f"/nbcluster/clusters/{made['id']}"
    try:
        status, restarted = _call(same_runtime, f"{base}/tasks/worker/0/restart")
        assert status == 200 and restarted["task"] == "/job:worker/task:0"
        assert restarted["target"] == tasks["worker", 0]["target"]  # the same address
        again = _tasks(_call(same_runtime, base, method="GET")[1])["worker", 0]
        assert again["state"] == "up" and again["pid"] != first_pid
        assert wait_gone([first_pid], 10.0) == []
        status, log = _call(same_runtime, f"{base}/tasks/worker/0/log?lines=50", method="GET")
        assert status == 200 and log["task"] == "/job:worker/task:0"
        assert log["text"].count("serving /job:worker/task:0") == 2  # both runs
        assert _call(same_runtime, f"{base}/tasks/worker/7/restart")[0] == 404

        # the inserted cell connects for real: its token comes from the record
        status, answer = _call(same_runtime, f"{base}/connect", method="GET")
        assert status == 200 and f"record={made['id']!r}" in answer["code"]
        namespace: dict = {}
        exec(compile(answer["code"], "<connect cell>", "exec"), namespace)
        connected, sess = namespace["formed"], namespace["sess"]
        try:
            import nbcluster as tf
            with tf.Graph().as_default() as graph:
                with tf.device("/job:ps/task:0"):
                    product = tf.constant(6.0) * 7.0
            sess.close()
            with tf.Session(connected.target("worker", 0), graph=graph) as sess:
                assert sess.run(product) == 42.0
        finally:
            connected.stop()  # connected: kills nothing
        pids = [t["pid"] for t in _call(same_runtime, base, method="GET")[1]["tasks"]]
        assert all(alive(pid) for pid in pids)
    finally:
        status, stopped = _call(same_runtime, f"{base}/stop")
    assert status == 200 and sorted(stopped["stopped"]) == ["/job:ps/task:0",
                                                             "/job:worker/task:0"]
    assert wait_gone(pids, 10.0) == []
    assert _get(same_runtime) == []
    assert _call(same_runtime, base, method="GET")[0] == 404


@pytest.mark.parametrize("form, names", [
    ({"launcher": "local"}, "jobs:"),
    ({"jobs": {"worker": 0}}, "'worker' must be a whole number from 1"),
    ({"jobs": {"worker": 2.5}}, "'worker' must be a whole number"),
    ({"jobs": {"worker": 1000}}, "from 1 to 64"),
    ({"jobs": {"bad job": 1}}, "not 'bad job'"),
    ({"jobs": {"worker": 1}, "launcher": "mesos"}, "launcher: one of local, ssh, slurm"),
    ({"jobs": {"worker": 1}, "launcher": "ssh"}, "hosts: a list of host names"),
    ({"jobs": {"worker": 1}, "launcher": "ssh", "hosts": ["-oProxyCommand=x"]}, "hosts:"),
    ({"jobs": {"worker": 1}, "launcher": "ssh", "hosts": ["h"], "port": 0}, "port: the SSH"),
    ({"jobs": {"worker": 1}, "launcher": "ssh", "hosts": ["h"],
      "ssh_options": ["ProxyCommand=nc"]}, "ProxyCommand runs a command"),
    ({"jobs": {"worker": 1}, "launcher": "ssh", "hosts": ["h"],
      "ssh_options": ["-oX=y"]}, "each is 'Name=value'"),
    ({"jobs": {"worker": 1}, "launcher": "slurm", "time": "soon"}, "time: minutes or"),
    ({"jobs": {"worker": 1}, "name": "a/b"}, "name: letters"),
    ({"jobs": {"worker": 1}, "gpus": 2}, "unknown fields ['gpus']"),
    ([1, 2], "a JSON object"),
])
def test_a_bad_form_is_a_400_naming_the_field(form, names):
    with pytest.raises(lab_launch.FormError, match=".") as raised:
        lab_launch.parse_form(form)
    assert names in str(raised.value)


def test_bad_forms_over_http_are_json_400s_and_start_nothing(same_runtime):
    for body in (b"not json", json.dumps({"jobs": {"worker": 0}}).encode()):
        status, answer = _call(same_runtime, "/nbcluster/clusters", body)
        assert status == 400 and answer["message"].startswith("Bad new-cluster form: ")
    assert _get(same_runtime) == []


def test_a_kernels_cluster_shows_its_owner_and_why_a_task_failed(same_runtime, monkeypatch):
    # jupyter-server gives its kernels the notebook's path; the sidebar names it from the root
    root = same_runtime["runtime"].parent  # the server's root_dir
    monkeypatch.setenv("JPY_SESSION_NAME", str(root / "work" / "train.ipynb"))
    with Cluster.local(ps=0, worker=2, name="theirs") as cluster:
        [entry] = _get(same_runtime)
        assert entry["notebook"] == "work/train.ipynb" and entry["owner"] == "kernel"
        assert not entry["can_restart"]
        base = f"/nbcluster/clusters/{entry['id']}"
        # its processes are the kernel's Cluster's: REST cannot restart them honestly
        status, answer = _call(same_runtime, f"{base}/tasks/worker/1/restart")
        assert status == 409
        assert "%tfserver restart theirs worker:1" in answer["message"]
        assert "the kernel of work/train.ipynb" in answer["message"]
        assert "cluster.restart('worker', 1)" in answer["message"]
        cluster.kill("worker", 1)
        cluster.exit_code("worker", 1)  # the owner notes the exit in the log
        gone = _tasks(_get(same_runtime)[0])["worker", 1]
        assert gone["state"] == "down"
        assert gone["failure"] == "/job:worker/task:1 was killed by SIGKILL"
        status, log = _call(same_runtime, f"{base}/tasks/worker/1/log", method="GET")
        assert status == 200 and log["text"].endswith("was killed by SIGKILL")
        assert _call(same_runtime, f"{base}/tasks/chief/0/log", method="GET")[0] == 404
        assert _call(same_runtime, f"{base}/tasks/worker/0/log?lines=x", method="GET")[0] == 400
    for path, method in (("/nbcluster/clusters/1-none", "GET"),
                         ("/nbcluster/clusters/1-none/connect", "GET"),
                         ("/nbcluster/clusters/1-none/tasks/worker/0/log", "GET"),
                         ("/nbcluster/clusters/1-none/tasks/worker/0/restart", "POST")):
        status, answer = _call(same_runtime, path, method=method)
        assert status == 404 and answer["message"] == "No running cluster '1-none'", path


def test_connect_by_record_needs_a_running_cluster(same_runtime):
    with pytest.raises(ValueError, match="no running cluster 'nothing-here'"):
        Cluster.connect(record="nothing-here")
    with pytest.raises(ValueError, match="exactly one"):
        Cluster.connect()


def test_the_form_starts_an_ssh_cluster(same_runtime, sshd):
    import sys
    form = {"name": "by-ssh", "launcher": "ssh", "jobs": {"worker": 1},
            "hosts": [sshd["host"]], "python": sys.executable, "key": sshd["key"],
            "port": sshd["port"], "ssh_options": [o for o in sshd["options"] if o != "-o"]}
    status, made = _call(same_runtime, "/nbcluster/clusters", form)
    assert status == 201, made
    assert made["launcher"] == "ssh" and made["owner"] == "server"
    [task] = made["tasks"]
    assert task["state"] == "up" and alive(task["pid"])
    base = f"/nbcluster/clusters/{made['id']}"
    try:
        status, restarted = _call(same_runtime, f"{base}/tasks/worker/0/restart")
        assert status == 200, restarted
        [again] = _call(same_runtime, base, method="GET")[1]["tasks"]
        assert again["state"] == "up" and again["pid"] != task["pid"]
    finally:
        status, stopped = _call(same_runtime, f"{base}/stop")
    assert status == 200 and stopped["stopped"] == ["/job:worker/task:0"]
    assert wait_gone([task["pid"], again["pid"]], 15.0) == []


def test_the_form_starts_a_slurm_cluster(same_runtime, slurm):
    from slurm_local import wait_job_gone
    form = {"name": "by-slurm", "launcher": "slurm", "jobs": {"worker": 1}, "time": "5"}
    status, made = _call(same_runtime, "/nbcluster/clusters", form)
    assert status == 201, made
    assert made["launcher"] == "slurm" and made["owner"] == "server"
    [task] = made["tasks"]
    assert task["state"] == "up" and task["address"] and made["slurm_job"]
    status, stopped = _call(same_runtime, f"/nbcluster/clusters/{made['id']}/stop")
    assert status == 200 and stopped["stopped"] == ["/job:worker/task:0"]
    assert _get(same_runtime) == []
    assert wait_job_gone(made["slurm_job"]), "stop left the Slurm job queued or running"
