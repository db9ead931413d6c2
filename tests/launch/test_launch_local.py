"""Cluster.local: tasks as processes, ready by GetStatus, logs, restart, kill, stop, display."""
from __future__ import annotations

import os
import signal
import socket
import stat
import time

import numpy as np
import pytest

import nbcluster as tf
from nbcluster.launch import Cluster, LaunchError, LocalLauncher, TaskStatus
from nbcluster.launch.startup import Task

from cluster_graphs import ps_matmul_step
from process_checks import alive, kill_pids, wait_gone

pytestmark = pytest.mark.timeout(180)


@pytest.fixture
def clusters():
    """Clusters to stop at teardown; their task pids are killed if stop() left any."""
    started: list = []
    yield started
    for cluster in started:
        pids = [s.pid for s in cluster.status(timeout=0.5) if s.pid]
        cluster.stop(grace=2.0)
        kill_pids(wait_gone(pids, 5.0))


def test_local_cluster_runs_a_step_and_reports_each_task(clusters):
    cluster = Cluster.local(ps=1, worker=2, name="t")
    clusters.append(cluster)
    assert cluster.name == "t"
    assert set(cluster.targets) == {("ps", 0), ("worker", 0), ("worker", 1)}
    assert cluster.spec.jobs == ["ps", "worker"] and cluster.spec.num_tasks("worker") == 2
    for (job, index), target in cluster.targets.items():
        assert target == "grpc://" + cluster.spec.task_address(job, index)
        assert target.startswith("grpc://127.0.0.1:") and not target.endswith(":0")
    w = np.arange(4, dtype=np.float32).reshape(2, 2)
    np.testing.assert_allclose(ps_matmul_step(cluster.target("worker", 0)), w @ w)
    statuses = cluster.status()
    assert all(isinstance(s, TaskStatus) for s in statuses)
    assert [(s.job, s.index, s.state) for s in statuses] == \
        [("ps", 0, "up"), ("worker", 0, "up"), ("worker", 1, "up")]
    pids = {s.pid for s in statuses}
    assert len(pids) == 3 and os.getpid() not in pids and all(alive(p) for p in pids)
    worker1 = statuses[2]
    assert worker1.devices == ("/job:worker/replica:0/task:1/device:CPU:0",)
    assert worker1.steps_run >= 1 and worker1.uptime_s is not None and worker1.uptime_s >= 0
    assert worker1.host == socket.gethostname() and worker1.target == cluster.target("worker", 1)
    assert statuses[0].bytes_sent > 0  # the variable went from ps to worker 1
    cluster.wait_ready(timeout=10)
    assert "serving /job:worker/task:0" in cluster.logs("worker", 0)
    cluster.stop()
    assert wait_gone(pids, 10) == []
    assert {s.state for s in cluster.status()} == {"stopped"}
    cluster.stop()  # idempotent


def test_jobs_override_ps_and_worker_and_drop_empty_jobs(clusters):
    cluster = Cluster.local(jobs={"chief": 1, "worker": 1, "evaluator": 0})
    clusters.append(cluster)
    assert cluster.spec.jobs == ["chief", "worker"]
    assert [s.state for s in cluster.status()] == ["up", "up"]
    with pytest.raises(ValueError, match=r"/job:ps/task:0"):
        cluster.target("ps", 0)
    with pytest.raises(ValueError, match=r"/job:worker/task:5"):
        cluster.logs("worker", 5)


def test_bad_job_counts_are_refused():
    with pytest.raises(ValueError, match="at least one task"):
        Cluster.local(ps=0, worker=0)
    with pytest.raises(ValueError, match="'worker'.*-1"):
        Cluster.local(worker=-1)
    with pytest.raises(TypeError, match="'ps'"):
        Cluster.local(ps="1")


def test_restart_and_kill_change_state_and_pid(clusters):
    cluster = Cluster.local(ps=1, worker=2)
    clusters.append(cluster)
    before = {(s.job, s.index): s.pid for s in cluster.status()}
    target = cluster.restart("worker", 1)
    assert target == cluster.target("worker", 1)
    assert wait_gone([before[("worker", 1)]], 10) == []
    after = {(s.job, s.index): (s.pid, s.state) for s in cluster.status()}
    assert after[("worker", 1)][1] == "up" and after[("worker", 1)][0] != before[("worker", 1)]
    assert cluster.pid("worker", 1) == after[("worker", 1)][0]
    assert cluster.pids == {key: pid for key, (pid, _) in after.items()}
    w = np.arange(4, dtype=np.float32).reshape(2, 2)
    np.testing.assert_allclose(ps_matmul_step(cluster.target("worker", 0)), w @ w)
    cluster.kill("worker", 0)
    assert not alive(before[("worker", 0)])
    states = {(s.job, s.index): s.state for s in cluster.status()}
    assert states == {("ps", 0): "up", ("worker", 0): "failed", ("worker", 1): "up"}
    with pytest.raises(TimeoutError, match=r"/job:worker/task:0"):
        cluster.wait_ready(timeout=2)
    cluster.restart("worker", 0)
    cluster.wait_ready(timeout=10)


def test_a_task_killed_from_outside_shows_as_failed(clusters):
    cluster = Cluster.local(ps=0, worker=1)
    clusters.append(cluster)
    pid = cluster.pid("worker", 0)
    assert cluster.pids == {("worker", 0): pid} and cluster.status()[0].pid == pid
    os.kill(pid, signal.SIGKILL)
    # Its main thread is a zombie (gone to wait_gone) a moment before the
    # process as a whole can be reaped, which status() does once it can.
    deadline = time.monotonic() + 10
    while cluster.status()[0].state != "failed":
        assert time.monotonic() < deadline, cluster.status()
        time.sleep(0.05)
    assert wait_gone([pid], 1) == []
    with pytest.raises(ValueError, match=r"/job:worker/task:1"):
        cluster.pid("worker", 1)


def test_repr_and_html_show_every_task(clusters):
    cluster = Cluster.local(ps=1, worker=1, name="shown")
    clusters.append(cluster)
    text, page = repr(cluster), cluster._repr_html_()
    pid = cluster.status()[0].pid
    for shown in (text, page):
        assert "shown" in shown and "127.0.0.1:" in shown and str(pid) in shown
        assert "CPU:0" in shown and "up" in shown
    assert "<table>" in page and page.count("<tr>") == 3
    assert len(text.splitlines()) == 4  # title, header, two tasks


def test_context_manager_stops_every_task():
    with Cluster.local(ps=1, worker=1) as cluster:
        pids = [s.pid for s in cluster.status()]
        assert all(alive(p) for p in pids)
    assert wait_gone(pids, 10) == []


def _failing_python(tmp_path) -> str:
    script = tmp_path / "python"
    script.write_text("#!/bin/sh\necho 'boom: this interpreter cannot run a task' >&2\nexit 7\n")
    script.chmod(script.stat().st_mode | stat.S_IEXEC)
    return str(script)


def test_a_task_that_fails_to_start_raises_with_its_log_tail(tmp_path):
    launcher = LocalLauncher(python=_failing_python(tmp_path))
    with pytest.raises(LaunchError) as info:
        Cluster.from_spec({"worker": ["127.0.0.1:0"]}, launcher=launcher, timeout=30)
    message = str(info.value)
    assert "/job:worker/task:0" in message and "exited with status 7" in message
    assert "boom: this interpreter cannot run a task" in message


class _RacingLauncher(LocalLauncher):
    """Hands out, `races` times, a port someone else holds: the race the retry covers."""

    def __init__(self, taken: int, races: int) -> None:
        super().__init__()
        self.taken, self.races, self.calls = taken, races, 0

    def free_ports(self, host, count, timeout):
        self.calls += 1
        ports = super().free_ports(host, count, timeout)
        return [self.taken] + ports[1:] if self.calls <= self.races else ports


@pytest.fixture
def held_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen()
        yield s.getsockname()[1]


def test_a_port_taken_before_its_task_binds_is_picked_again(held_port, clusters):
    launcher = _RacingLauncher(held_port, races=1)
    cluster = Cluster.from_spec({"worker": ["127.0.0.1:0", "127.0.0.1:0"]}, launcher=launcher)
    clusters.append(cluster)
    assert launcher.calls == 2
    assert held_port not in [int(a.rsplit(":", 1)[1]) for a in cluster.spec.job_tasks("worker")]
    assert [s.state for s in cluster.status()] == ["up", "up"]


def test_a_port_taken_every_time_is_reported(held_port):
    launcher = _RacingLauncher(held_port, races=99)
    with pytest.raises(LaunchError, match=rf"could not bind 127\.0\.0\.1:{held_port} in 3 "):
        Cluster.from_spec({"worker": ["127.0.0.1:0"]}, launcher=launcher)
    assert launcher.calls == 3


def test_a_fixed_port_that_is_taken_is_not_retried(held_port):
    with pytest.raises(LaunchError, match=rf"could not bind 127\.0\.0\.1:{held_port} "
                                          rf"\(the port is taken\)"):
        Cluster.from_spec({"worker": [f"127.0.0.1:{held_port}"]})


def test_a_host_that_is_not_local_is_refused():
    with pytest.raises(LaunchError, match="192.0.2.1"):
        Cluster.local(ps=0, worker=1, host="192.0.2.1")


def test_unknown_launcher_is_refused():
    with pytest.raises(ValueError, match="'carrier-pigeon'"):
        Cluster.from_spec({"worker": ["127.0.0.1:0"]}, launcher="carrier-pigeon")


def test_status_counts_open_sessions_and_keeps_the_last_error(clusters):
    cluster = Cluster.local(ps=0, worker=1)
    clusters.append(cluster)
    graph = tf.Graph()
    with graph.as_default():
        with tf.device("/job:worker/task:0"):
            x = tf.placeholder(tf.float32, None)
            y = tf.reshape(x, [3])
    sess = tf.Session(cluster.target("worker", 0), graph=graph)
    try:
        np.testing.assert_allclose(sess.run(y, {x: [1.0, 2.0, 3.0]}), [1.0, 2.0, 3.0])
        assert cluster.status()[0].active_sessions == 1
        with pytest.raises(tf.errors.InvalidArgumentError):
            sess.run(y, {x: [1.0, 2.0]})
        (status,) = cluster.status()
        assert "InvalidArgumentError" in status.last_error and status.steps_run >= 1
        assert "InvalidArgumentError" in repr(cluster)
    finally:
        sess.close()
    assert cluster.status()[0].active_sessions == 0


def test_a_task_log_ends_with_how_its_process_ended(clusters):
    cluster = Cluster.local(ps=0, worker=2)
    clusters.append(cluster)
    cluster.kill("worker", 0)
    note = "[nbcluster] /job:worker/task:0 was killed by SIGKILL"
    log = cluster.logs("worker", 0)
    assert log.splitlines()[-1] == note and "serving /job:worker/task:0" in log
    assert cluster.logs("worker", 0).count(note) == 1  # once per run, however often read
    assert "[nbcluster]" not in cluster.logs("worker", 1)  # still running
    cluster.restart("worker", 0)  # the same log goes on; the next end is noted again
    assert cluster.logs("worker", 0).splitlines()[-1] != note
    cluster.kill("worker", 0)
    log = cluster.logs("worker", 0)
    assert log.count(note) == 2 and log.count("serving /job:worker/task:0") == 2
    assert log.splitlines()[-1] == note


def test_status_gives_the_task_processes_own_cpu_and_memory(clusters):
    import psutil
    cluster = Cluster.local(ps=0, worker=1)
    clusters.append(cluster)
    (first,) = cluster.status()
    assert first.cpu_percent is not None and first.rss_bytes > 0
    graph = tf.Graph()
    with graph.as_default(), tf.device("/job:worker/task:0"):
        a = tf.ones([400, 400])
        for _ in range(30):  # CPU time spent in the task, not here
            a = tf.matmul(a, tf.ones([400, 400])) / 400.0
    with tf.Session(cluster.target("worker", 0), graph=graph) as sess:
        sess.run(a)
    (status,) = cluster.status()
    assert status.cpu_percent > 0.0
    task_rss = psutil.Process(status.pid).memory_info().rss
    assert 0.5 * task_rss < status.rss_bytes < 2 * task_rss  # that process's, ...
    assert status.rss_bytes < psutil.virtual_memory().total / 4  # ... not the host's


def test_a_task_without_gpus_reports_no_gpu_memory(clusters):
    # honest absence: no entry at all, not a zero that reads as measured
    cluster = Cluster.local(ps=0, worker=1, env={"NBCLUSTER_DISABLE_GPU": "1"})
    clusters.append(cluster)
    (status,) = cluster.status()
    assert status.state == "up" and status.gpu_memory == ()
    from nbcluster.rpc.grpc_transport.worker_client import GrpcWorkerClient
    response = GrpcWorkerClient(cluster.spec.task_address("worker", 0)).get_status(5.0)
    assert len(response.gpu_memory) == 0 and not any(
        d.device_type == "GPU" for d in response.device_attributes)


def _gpu_or_skip() -> None:
    try:
        import cupy
        count = cupy.cuda.runtime.getDeviceCount()
    except Exception as e:  # noqa: BLE001 - no CuPy, no driver, no device: all skip
        pytest.skip(f"needs a CUDA GPU and CuPy (pip install 'nbcluster[gpu]', i.e. "
                    f"cupy-cuda12x): {type(e).__name__}: {e}")
    if not count:
        pytest.skip("needs a CUDA GPU: CuPy sees none")


def test_a_gpu_task_reports_the_device_memory_its_arrays_hold(clusters):
    _gpu_or_skip()
    cluster = Cluster.local(ps=0, worker=1, devices={"worker": {"gpus": "0"}})
    clusters.append(cluster)
    (before,) = cluster.status()
    (gpu_name,) = [d for d in before.devices if "GPU" in d]
    ((name, in_use, reserved, used, total),) = before.gpu_memory
    assert name == gpu_name and 0 < used <= total
    graph = tf.Graph()
    with graph.as_default(), tf.device("/job:worker/task:0/device:GPU:0"):
        big = tf.Variable(tf.ones([64, 1024, 1024]))  # 256 MiB that stays on the GPU
    with tf.Session(cluster.target("worker", 0), graph=graph) as sess:
        sess.run(big.initializer)
        ((_, in_use_after, reserved_after, _, _),) = cluster.status()[0].gpu_memory
    assert in_use_after >= in_use + 256 * 2 ** 20 and reserved_after >= in_use_after


def test_config_and_env_reach_every_task(clusters):
    config = tf.ConfigProto(device_count={"CPU": 2})
    cluster = Cluster.local(ps=1, worker=1, config=config, env={"OPENBLAS_NUM_THREADS": "1"})
    clusters.append(cluster)
    for status in cluster.status():
        assert [d.rsplit("/", 1)[1] for d in status.devices] == ["device:CPU:0", "device:CPU:1"]
        with open(f"/proc/{status.pid}/environ", "rb") as f:
            assert b"OPENBLAS_NUM_THREADS=1\0" in f.read()


def test_an_interpreter_that_does_not_exist_is_named(tmp_path):
    missing = str(tmp_path / "no-python")
    with pytest.raises(LaunchError, match=f"Cannot run '{missing}'"):
        Cluster.from_spec({"worker": ["127.0.0.1:0"]}, launcher=LocalLauncher(python=missing))


def test_exit_code_is_none_while_a_task_runs_and_its_return_code_once_it_ended(clusters):
    cluster = Cluster.local(ps=1, worker=1)
    clusters.append(cluster)
    assert cluster.stopped is False
    assert cluster.exit_code("ps", 0) is None and cluster.exit_code("worker", 0) is None
    cluster.kill("worker", 0)
    assert cluster.exit_code("worker", 0) == -signal.SIGKILL
    assert cluster.exit_code("ps", 0) is None
    cluster.restart("worker", 0)
    assert cluster.exit_code("worker", 0) is None  # the new process runs
    with pytest.raises(ValueError, match=r"/job:worker/task:3"):
        cluster.exit_code("worker", 3)
    pid = cluster.pid("ps", 0)
    cluster.stop()
    assert cluster.stopped is True
    assert wait_gone([pid], 5) == []
    assert cluster.exit_code("ps", 0) is not None  # reaped by stop()
    cluster.stop()  # idempotent: still stopped
    assert cluster.stopped is True


def test_a_connected_cluster_knows_no_exit_code(clusters):
    owner = Cluster.local(ps=0, worker=1)
    clusters.append(owner)
    connected = Cluster.connect(owner.spec, timeout=10)
    assert connected.exit_code("worker", 0) is None and connected.stopped is False
    connected.stop()
    assert connected.stopped is True and owner.stopped is False
    assert owner.status()[0].state == "up"  # stopping a connection kills nothing


class _EndedProcess:
    """A TaskProcess that already ended with `code` (None: still running)."""
    server_pid = None

    def __init__(self, code) -> None:
        self.code = code

    def poll(self):
        return self.code

    def terminate(self) -> None:
        pass

    def wait_until(self, deadline: float) -> bool:
        return True

    def force(self) -> None:
        pass


class _KindLauncher:
    def __init__(self, kind: str) -> None:
        self.kind = kind

    def close(self) -> None:
        pass


@pytest.mark.parametrize("kind, code, expected", [
    ("local", None, None), ("local", -9, -9), ("local", 0, 0), ("local", 3, 3),
    ("ssh", None, None), ("ssh", 3, 3),  # the remote server's own status, passed on
    ("ssh", 255, None), ("ssh", -15, None),  # ssh's failure / its client's death
    ("other", 1, None)])  # a launcher that does not say what its codes mean
def test_exit_code_is_the_task_s_own_status_only_where_the_launcher_tells_it(
        kind, code, expected):
    task = Task("worker", 0, "127.0.0.1", 1)
    task.process = _EndedProcess(code)
    cluster = Cluster([task], _KindLauncher(kind), "fake")
    try:
        assert cluster.exit_code("worker", 0) == expected
    finally:
        cluster.stop(grace=0)


def test_a_killed_task_reads_as_ended_while_another_thread_waits_for_it():
    """Regression: the dashboard's poll runs beside `kill()`, which waits for the
    process; Popen's own poll says None while another thread waits, so a task
    killed by SIGKILL showed "up -> down" before "down -> failed"."""
    import subprocess
    import sys

    from nbcluster.launch.launcher import LocalProcess
    proc = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    local = LocalProcess(proc)
    try:
        assert local.poll() is None
        with proc._waitpid_lock:  # what a thread inside proc.wait() holds
            os.kill(proc.pid, signal.SIGKILL)
            for _ in range(500):  # until the kernel has it as a zombie
                if os.waitid(os.P_PID, proc.pid, os.WEXITED | os.WNOHANG | os.WNOWAIT):
                    break
                time.sleep(0.01)
            assert proc.poll() is None  # Popen knows nothing while the lock is held
            assert local.poll() == -signal.SIGKILL
    finally:
        proc.kill()
        proc.wait(10)
    assert local.poll() == -signal.SIGKILL
