"""Jupyter tier: %%tfserver cluster and the commands on clusters, each task a real process."""
from __future__ import annotations

import json
import socket

import numpy as np
import pytest

import nbcluster as tf
from nbcluster.launch import Cluster, free_ports

from process_checks import alive, wait_gone
from tfserver_cells import cell as _cell
from tfserver_cells import line as _line
from tfserver_cells import one_error as _one_error

pytestmark = pytest.mark.timeout(180)


def _pids(cluster) -> list:
    return [s.pid for s in cluster.status()]


def _ps_worker_step(target: str) -> np.ndarray:
    with tf.Graph().as_default():
        with tf.device("/job:ps/task:0"):
            w = tf.Variable(np.arange(4, dtype=np.float32).reshape(2, 2), name="w")
        with tf.device("/job:worker/task:1"):
            y = tf.matmul(tf.ones([1, 2]), w)
        with tf.Session(target) as sess:
            sess.run(tf.global_variables_initializer())
            return sess.run(y)


def test_cluster_cell_end_to_end(ip):
    out, err, outputs = _cell(ip, "cluster demo", "ps: 1\nworker: 2\n")
    assert not err, err
    demo = ip.user_ns["demo"]
    assert isinstance(demo, Cluster)
    assert {job: demo.spec.num_tasks(job) for job in demo.spec.jobs} == {"ps": 1, "worker": 2}
    html = outputs[0].data["text/html"]
    for (job, index), target in demo.targets.items():
        assert target.split("//")[1] in html
    statuses = demo.status()
    assert [s.state for s in statuses] == ["up"] * 3
    pids = [s.pid for s in statuses]
    np.testing.assert_allclose(_ps_worker_step(demo.target("worker", 0)), [[2.0, 4.0]])

    out, err, _ = _line(ip, "list")
    assert "demo" in out and "ps=1 worker=2" in out and demo.target("worker", 0) in out
    out, err, outputs = _line(ip, "status demo")
    assert not err and "text/html" in outputs[0].data
    out, err, _ = _line(ip, "logs demo worker:1 --tail 5")
    assert not err and "/job:worker/task:1" in out and len(out.splitlines()) <= 5

    _, err, _ = _cell(ip, "cluster demo", "ps: 1")  # the same name again: refused, no new tasks
    assert "demo already runs in this kernel" in _one_error(err)
    assert _pids(demo) == pids
    for line, words in [("logs demo worker:7", "demo has no task worker:7 (tasks: ps:0, "
                                               "worker:0, worker:1)"),
                        ("logs demo chief:0", "no task chief:0"),
                        ("logs demo worker", "bad task 'worker'"),
                        ("restart demo ps:3", "no task ps:3"), ("status nope", "named 'nope'")]:
        _, err, _ = _line(ip, line)
        assert words in _one_error(err), line

    out, err, _ = _line(ip, "stop demo")
    assert out.strip() == "stopped demo" and not err
    assert wait_gone(pids) == []
    _, err, _ = _line(ip, "status demo")
    assert "no cluster or server named 'demo'" in _one_error(err)


def test_restart_one_task(ip):
    _cell(ip, "cluster one", '{"worker": 1}')
    cluster = ip.user_ns["one"]
    [old_pid] = _pids(cluster)
    out, err, _ = _line(ip, "restart one worker:0")
    assert not err and out.strip() == f"one worker:0 restarted at {cluster.target('worker', 0)}"
    assert wait_gone([old_pid]) == [] and _pids(cluster)[0] != old_pid
    with tf.Graph().as_default(), tf.Session(cluster.target("worker", 0)) as sess:
        assert sess.run(tf.constant(3.0) * 2.0) == 6.0


def test_explicit_addresses_and_config(ip):
    ports = free_ports(2)
    body = f"ps: [127.0.0.1:{ports[0]}]\nworker:\n  - 127.0.0.1:{ports[1]}\n"
    out, err, _ = _cell(ip, 'cluster fixed --config {"deviceCount": {"CPU": 2}}', body)
    assert not err, err
    cluster = ip.user_ns["fixed"]
    assert cluster.spec.as_dict() == {"ps": [f"127.0.0.1:{ports[0]}"],
                                      "worker": [f"127.0.0.1:{ports[1]}"]}
    statuses = cluster.status()
    assert [s.state for s in statuses] == ["up", "up"]
    assert [len([d for d in s.devices if "CPU" in d]) for s in statuses] == [2, 2]


def test_task_that_cannot_start_is_one_line(ip):
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        _, err, outputs = _cell(ip, "cluster busy --timeout 60", f"worker: [127.0.0.1:{port}]")
    line = _one_error(err)
    assert "worker" in line and str(port) in line
    assert "busy" not in ip.user_ns and not outputs
    assert "no clusters or servers" in _line(ip, "list")[0]


def test_unreachable_ssh_host_is_one_line(ip):
    _, err, _ = _cell(ip, "cluster far --ssh no-such-host.invalid --timeout 20", "worker: 1")
    assert "no-such-host.invalid" in _one_error(err)
    assert "far" not in ip.user_ns


def test_ssh_cluster_cell_against_a_real_sshd(ip, sshd):
    """-o and --env reach the ssh launcher: host-key options, and the remote
    tasks' PYTHONPATH (the "remote" Python is this one)."""
    import os
    import sys

    root = os.path.dirname(os.path.dirname(os.path.abspath(tf.__file__)))
    options = " ".join(f"-o {o}" for o in sshd["options"][1::2])
    line = (f"cluster far --ssh {sshd['host']} --ssh-port {sshd['port']} --key {sshd['key']} "
            f"{options} --python {sys.executable} --env PYTHONPATH={root}")
    _, err, outputs = _cell(ip, line, "ps: 1\nworker: 2\n")
    assert not err, err
    far = ip.user_ns["far"]
    pids = _pids(far)
    try:
        assert "(ssh, 3 tasks)" in repr(far) and outputs
        np.testing.assert_allclose(_ps_worker_step(far.target("worker", 0)), [[2.0, 4.0]])
        assert "serving /job:worker/task:1" in _line(ip, "logs far worker:1")[0]
        assert _line(ip, "stop far")[0].strip() == "stopped far"
        assert wait_gone(pids, 10) == []
    finally:
        far.stop()


def test_env_needs_name_equals_value(ip):
    _, err, _ = _cell(ip, "cluster bad --env PYTHONPATH", "worker: 1")
    assert "--env 'PYTHONPATH'" in _one_error(err)


def test_connect_to_servers_started_elsewhere(ip, cluster_factory):
    outside = cluster_factory({"ps": 1, "worker": 1})
    targets = " ".join(outside.targets[key] for key in [("worker", 0), ("ps", 0)])
    out, err, outputs = _line(ip, f"connect ext {targets}")
    assert not err, err
    ext = ip.user_ns["ext"]
    assert ext.targets == outside.targets  # job and task asked from each server
    np.testing.assert_allclose(_ps_worker_step_one(ext.target("worker", 0)), 5.0)
    for line, words in [("logs ext worker:0", "ext was connected to, not started here"),
                        ("restart ext ps:0", "connected to, not started")]:
        _, err, _ = _line(ip, line)
        assert words in _one_error(err), line
    _line(ip, "stop ext")  # connected: owns no process, kills none
    assert all(alive(pid) for pid in outside.pids.values())

    dead = free_ports(1)[0]
    _, err, _ = _line(ip, f"connect nobody grpc://127.0.0.1:{dead} --timeout 2")
    assert f"127.0.0.1:{dead}" in _one_error(err)


def _ps_worker_step_one(target: str) -> float:
    with tf.Graph().as_default():
        with tf.device("/job:ps/task:0"):
            a = tf.constant(2.0)
        with tf.device("/job:worker/task:0"):
            b = a + 3.0
        with tf.Session(target) as sess:
            return float(sess.run(b))


def test_unload_stops_every_cluster(ip):
    _cell(ip, "cluster first", "worker: 1")
    _cell(ip, "cluster second", json.dumps({"ps": 1}))
    pids = _pids(ip.user_ns["first"]) + _pids(ip.user_ns["second"])
    assert all(alive(pid) for pid in pids)
    ip.run_line_magic("unload_ext", "nbcluster.jupyter")
    assert wait_gone(pids) == []
