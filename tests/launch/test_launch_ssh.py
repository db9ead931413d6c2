"""Cluster.ssh against a real OpenSSH sshd on 127.0.0.1 (the `sshd` fixture)."""
from __future__ import annotations

import json
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import nbcluster as tf
from nbcluster.launch import Cluster, LaunchError, child_env, free_ports
from nbcluster.launch.process import _PACKAGE_ROOT

from process_checks import alive, kill_pids, wait_gone

pytestmark = pytest.mark.timeout(180)


def _ssh_cluster(sshd, **kwargs) -> Cluster:
    """1 ps + 1 worker over ssh; the "remote" Python is this one, nbcluster on PYTHONPATH."""
    return Cluster.ssh([sshd["host"]], python=sys.executable, key=sshd["key"],
                       port=sshd["port"], ssh_options=sshd["options"],
                       env={"PYTHONPATH": _PACKAGE_ROOT}, **kwargs)


def test_ssh_cluster_runs_a_step_logs_and_stops(sshd):
    cluster = _ssh_cluster(sshd, ps=1, worker=1, name="remote")
    pids = []
    try:
        statuses = cluster.status()
        pids = [s.pid for s in statuses]
        assert [(s.job, s.index, s.state) for s in statuses] == [("ps", 0, "up"),
                                                                ("worker", 0, "up")]
        assert all(alive(p) for p in pids)
        ssh_clients = [t.process.pid for t in cluster._tasks.values()]
        assert not set(ssh_clients) & set(pids)  # the servers are sshd's children, not ours
        graph = tf.Graph()
        with graph.as_default():
            with tf.device("/job:ps/task:0"):
                w = tf.Variable(np.full((2, 2), 3.0, np.float32))
            with tf.device("/job:worker/task:0"):
                y = tf.matmul(w, w) + 1.0
            init = tf.global_variables_initializer()
        with tf.Session(cluster.target("worker", 0), graph=graph) as sess:
            sess.run(init)
            np.testing.assert_allclose(sess.run(y), np.full((2, 2), 19.0))
        assert "serving /job:ps/task:0" in cluster.logs("ps", 0)
        assert "(ssh, 2 tasks)" in repr(cluster)
        cluster.stop()
        assert wait_gone(pids, 10) == []
        assert wait_gone(ssh_clients, 10) == []
    finally:
        cluster.stop()
        kill_pids(pids)


def test_ssh_tls_material_goes_through_stdin_and_a_step_runs(sshd):
    from nbcluster.rpc.grpc_transport import tls_material
    with _ssh_cluster(sshd, ps=1, worker=1, tls=True) as cluster:
        with tf.Graph().as_default():
            with tf.device("/job:ps/task:0"):
                a = tf.constant(3.0)
            with tf.device("/job:worker/task:0"):
                b = a * 4.0
            with tf.Session(cluster.target("worker", 0)) as sess:
                assert sess.run(b) == 12.0
        for pid in cluster.pids.values():
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                argv = f.read()
            assert cluster._token.encode() not in argv and b"PRIVATE KEY" not in argv
            with open(f"/proc/{pid}/environ", "rb") as f:
                assert any(e.startswith(tls_material.MATERIAL_ENV.encode() + b"=")
                           for e in f.read().split(b"\0"))
        for task in cluster._tasks.values():  # nor on the ssh client's command line
            with open(f"/proc/{task.process.pid}/cmdline", "rb") as f:
                assert cluster._token.encode() not in f.read()


def test_ssh_restart_gives_a_new_remote_process(sshd):
    with _ssh_cluster(sshd, ps=0, worker=1) as cluster:
        before = cluster.status()[0].pid
        cluster.restart("worker", 0)
        (after,) = cluster.status()
        assert after.state == "up" and after.pid != before
        assert wait_gone([before], 10) == []
    assert wait_gone([after.pid], 10) == []


def test_an_unreachable_host_gives_one_line_naming_it(sshd):
    closed = free_ports(1)[0]  # nothing listens there
    with pytest.raises(LaunchError) as info:
        Cluster.ssh(["127.0.0.1"], python=sys.executable, key=sshd["key"], port=closed,
                    ssh_options=sshd["options"], timeout=30)
    message = str(info.value)
    assert "\n" not in message and "'127.0.0.1'" in message and "refused" in message


def test_a_remote_python_without_nbcluster_is_named(sshd, tmp_path):
    bare = tmp_path / "bare-python"  # this Python without site-packages: no nbcluster
    bare.write_text(f"#!/bin/sh\nexec {sys.executable} -S \"$@\"\n")
    bare.chmod(0o755)
    with pytest.raises(LaunchError, match=r"cannot import nbcluster") as info:
        Cluster.ssh([sshd["host"]], python=str(bare), key=sshd["key"], port=sshd["port"],
                    ssh_options=sshd["options"], env={"PYTHONPATH": "/nonexistent"},
                    timeout=30)
    assert "\n" not in str(info.value) and "'127.0.0.1'" in str(info.value)


def test_remote_tasks_die_with_their_owner(sshd):
    script = textwrap.dedent(f"""
        import json, sys, time
        from nbcluster.launch import Cluster
        cluster = Cluster.ssh(["127.0.0.1"], ps=0, worker=1, python=sys.executable,
                              key={sshd['key']!r}, port={sshd['port']},
                              ssh_options={list(sshd['options'])!r},
                              env={{"PYTHONPATH": {_PACKAGE_ROOT!r}}})
        print(json.dumps([s.pid for s in cluster.status()]), flush=True)
        time.sleep(120)
    """)
    owner = subprocess.Popen([sys.executable, "-c", script], env=child_env(),
                             stdout=subprocess.PIPE, text=True)
    pids = []
    try:
        pids = json.loads(owner.stdout.readline())
        assert len(pids) == 1 and alive(pids[0])
        owner.kill()
        owner.wait(30)
        assert wait_gone(pids, 10) == [], "a remote task outlived its owner by 10 s"
    finally:
        owner.kill()
        owner.wait()
        owner.stdout.close()
        kill_pids(pids)
