"""Cluster tier: ClusterBuilder launches, restarts and stops real task processes on 127.0.0.1."""
from __future__ import annotations

import html
import os
import socket
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import nbcluster as tf
from nbcluster.jupyter.widgets import ClusterBuilder
from nbcluster.jupyter.widgets.dashboard import ClusterDashboard
from nbcluster.launch import LaunchError

from process_checks import alive, kill_pids, process_table, wait_gone

pytestmark = pytest.mark.timeout(180)


def _server_children() -> set:
    """Pids of the `nbcluster.server` processes this test process started."""
    return {pid for pid, (ppid, argv) in process_table().items()
            if ppid == os.getpid() and any("nbcluster.server" in a for a in argv)
            and alive(pid)}


def _environ(pid: int) -> dict:
    with open(f"/proc/{pid}/environ", "rb") as f:
        pairs = [item.split(b"=", 1) for item in f.read().split(b"\0") if b"=" in item]
    return {k.decode(): v.decode() for k, v in pairs}


@pytest.fixture
def builders():
    """Makes ClusterBuilders; closes them (stopping their clusters) at teardown."""
    made: list = []

    def make(**kwargs) -> ClusterBuilder:
        made.append(ClusterBuilder(**kwargs))
        return made[-1]

    yield make
    for builder in made:
        pids = list(builder.cluster.pids.values()) if builder.cluster else []
        builder.close()
        kill_pids(wait_gone(pids, 5.0))


def _ps_1_worker_1(builder: ClusterBuilder) -> ClusterBuilder:
    builder.remove_job("worker")
    builder.add_job("worker", tasks=1)
    return builder


def _step(target: str) -> np.ndarray:
    with tf.Graph().as_default():
        with tf.device("/job:ps/task:0"):
            w = tf.Variable(np.array([[1.0, 2.0]], dtype=np.float32), name="w")
        with tf.device("/job:worker/task:0"):
            y = w * 3.0
        with tf.Session(target) as sess:
            sess.run(tf.global_variables_initializer())
            return sess.run(y)


def test_launch_session_restart_and_stop(builders):
    builder = _ps_1_worker_1(builders())
    shown: list = []
    builder._progress.layout.observe(lambda c: shown.append(c["new"]), "display")
    builder._progress.observe(lambda c: shown.append(c["new"]), "value")
    cluster = builder.launch()
    assert builder.cluster is cluster
    assert shown[0] == "flex" and shown[-1] == "none"  # a progress bar while it started
    assert "launched 'cluster': 2 tasks" in html.unescape(builder._message.value)
    assert [(s.job, s.index, s.state) for s in cluster.status()] == [("ps", 0, "up"),
                                                                     ("worker", 0, "up")]
    np.testing.assert_allclose(_step(cluster.target("worker", 0)), [[3.0, 6.0]])
    dashboard = builder._status_box.children[0]
    assert isinstance(dashboard, ClusterDashboard) and dashboard.cluster is cluster
    assert builder._task_choice.options == (("ps:0", ("ps", 0)), ("worker:0", ("worker", 0)))
    with pytest.raises(LaunchError, match="is running: Stop it"):
        builder.launch()

    old = cluster.pid("worker", 0)
    builder._task_choice.value = ("worker", 0)
    builder._restart_button.click()
    assert "worker:0 restarted at grpc://127.0.0.1:" in builder._message.value
    new = cluster.pid("worker", 0)
    assert new != old and wait_gone([old], 5.0) == [] and alive(new)
    assert cluster.status()[1].state == "up"

    pids = list(cluster.pids.values())
    builder._stop_button.click()
    assert builder.cluster is None and not builder._status_box.children
    assert dashboard.comm is None  # closed: its poller ends with it
    assert wait_gone(pids, 10.0) == []
    assert "stopped" in builder._message.value


def test_devices_per_task_take_effect(builders):
    builder = builders()
    builder.remove_job("worker")
    builder.add_job("worker", tasks=2, cpus=[2, None], gpus=["none", "1"])
    cluster = builder.launch()
    devices = {(s.job, s.index): s.devices for s in cluster.status()}
    assert devices[("worker", 0)] == ("/job:worker/replica:0/task:0/device:CPU:0",
                                      "/job:worker/replica:0/task:0/device:CPU:1")
    assert devices[("worker", 1)] == ("/job:worker/replica:0/task:1/device:CPU:0",)
    assert _environ(cluster.pid("worker", 0))["CUDA_VISIBLE_DEVICES"] == ""
    assert _environ(cluster.pid("worker", 1))["CUDA_VISIBLE_DEVICES"] == "1"
    assert _environ(cluster.pid("ps", 0)).get("CUDA_VISIBLE_DEVICES") == \
        os.environ.get("CUDA_VISIBLE_DEVICES")
    builder.restart("worker", 0)  # a restarted task keeps its devices
    assert len(cluster.status()[1].devices) == 2


def test_a_failed_launch_is_shown_and_leaves_no_process(builders):
    builder = builders(timeout=30)
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        builder.remove_job("ps")
        builder.add_job("ps", hosts=f"local:{port}")
        before = _server_children()
        with pytest.raises(LaunchError, match=f"127.0.0.1:{port}"):
            builder.launch()
    assert builder.cluster is None
    assert f"127.0.0.1:{port}" in builder._message.value and "#c62828" in builder._message.value
    assert wait_gone(_server_children() - before, 10.0) == []
    assert not builder._launch_button.disabled and builder._progress.layout.display == "none"


def test_the_generated_python_starts_the_same_cluster(builders):
    builder = builders(name="twin")
    builder.add_job("chief", tasks=1, cpus=2)
    launched = builder.launch()
    namespace: dict = {}
    exec(builder.code, namespace)
    twin = namespace["twin"]
    try:
        shape = {(s.job, s.index): s.devices for s in twin.status()}
        assert shape == {(s.job, s.index): s.devices for s in launched.status()}
        assert len(shape[("chief", 0)]) == 2 and set(shape) == {
            ("ps", 0), ("worker", 0), ("worker", 1), ("chief", 0)}
    finally:
        pids = list(twin.pids.values())
        twin.stop()
        assert wait_gone(pids, 10.0) == []


def test_the_kernel_exiting_ends_the_builders_tasks(tmp_path):
    script = textwrap.dedent("""
        from nbcluster.jupyter.widgets import ClusterBuilder
        builder = ClusterBuilder()
        cluster = builder.launch()
        print(*cluster.pids.values(), flush=True)
    """)  # exits without stop() or close()
    root = os.path.dirname(os.path.dirname(os.path.abspath(tf.__file__)))
    path = os.pathsep.join(p for p in (root, os.environ.get("PYTHONPATH")) if p)
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          timeout=120, env={**os.environ, "PYTHONPATH": path})
    assert done.returncode == 0, done.stderr
    pids = [int(p) for p in done.stdout.split()]
    assert len(pids) == 3
    left = wait_gone(pids, 15.0)
    kill_pids(left)
    assert left == []
