"""`python -m nbcluster.server`: the ready line, signals, bad arguments; and
`nbcluster demo`, which runs a cluster of such processes."""
from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys

import pytest

import nbcluster as tf
from nbcluster.launch import child_env, free_ports
from nbcluster.server import parse_ready_line, ready_line

pytestmark = pytest.mark.timeout(60)


def _start(*args: str) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "nbcluster.server", *args], env=child_env(),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def _run(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "nbcluster.server", *args], env=child_env(),
                          capture_output=True, text=True, timeout=30)


@pytest.fixture
def procs():
    started: list = []
    yield started
    for proc in started:
        if proc.poll() is None:
            proc.kill()
        proc.wait()
        proc.stdout.close()
        proc.stderr.close()


def _port_is_free(port: int) -> bool:
    """Whether a new server could listen there (servers set SO_REUSEADDR, so
    connections left in TIME_WAIT do not count)."""
    with socket.socket() as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind(("127.0.0.1", port))
            s.listen()
        except OSError:
            return False
    return True


def test_ready_line_round_trips():
    line = ready_line("worker", 1, "grpc://localhost:2222")
    assert line == "nbcluster.server: serving /job:worker/task:1 at grpc://localhost:2222"
    assert parse_ready_line(line + "\n") == ("worker", 1, "grpc://localhost:2222")
    assert parse_ready_line("something else") is None


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_serves_prints_target_and_exits_0_on_signal_freeing_the_port(procs, sig):
    port = free_ports(1)[0]
    cluster = {"ps": [f"127.0.0.1:{port}"], "worker": ["127.0.0.1:1", "127.0.0.1:2"]}
    proc = _start("--cluster", json.dumps(cluster), "--job", "ps", "--task", "0")
    procs.append(proc)
    job, task, target = parse_ready_line(proc.stdout.readline())
    assert (job, task, target) == ("ps", 0, f"grpc://localhost:{port}")
    only_me = tf.ConfigProto(device_filters=["/job:ps"])  # the workers are not running
    with tf.Graph().as_default(), tf.Session(target, config=only_me) as sess:
        assert sess.run(tf.constant(3.0) * 2.0) == 6.0
    proc.send_signal(sig)
    assert proc.wait(10) == 0
    assert _port_is_free(port)


def test_port_0_prints_the_real_port_and_config_applies(procs, tmp_path):
    path = tmp_path / "cluster.json"
    path.write_text(json.dumps({"worker": {"1": "127.0.0.1:0"}}))
    proc = _start("--cluster", str(path), "--job", "worker", "--task", "1",
                  "--config", '{"deviceCount": {"CPU": 2}}')
    procs.append(proc)
    _, _, target = parse_ready_line(proc.stdout.readline())
    assert not target.endswith(":0")
    with tf.Graph().as_default(), tf.Session(target) as sess:
        names = sorted(d.name for d in sess.list_devices())
    assert names == ["/job:worker/replica:0/task:1/device:CPU:0",
                     "/job:worker/replica:0/task:1/device:CPU:1"]


@pytest.mark.parametrize("args, says", [
    (["--cluster", '{"ps": ["127.0.0.1:0"'], "malformed cluster JSON"),
    (["--cluster", "no/such/file.json"], "'no/such/file.json' is neither"),
    (["--cluster", "[1, 2]"], "must be a JSON object"),
    (["--cluster", '{"ps": 3}'], "ps"),
    (["--cluster", '{"ps": ["a:1"], "worker": ["b:2"]}'], "job_name"),
    (["--cluster", '{"ps": ["127.0.0.1:0"]}', "--job", "worker"], "'worker'"),
    (["--cluster", '{"ps": ["127.0.0.1:0"]}', "--task", "x"], "invalid int value: 'x'"),
    (["--cluster", '{"ps": ["127.0.0.1:0"]}', "--task", "4"], "Task index 4"),
    (["--cluster", '{"ps": ["127.0.0.1:xx"]}'], "127.0.0.1:xx"),
    (["--cluster", '{"ps": ["127.0.0.1:0"]}', "--config", '{"nope": 1}'], "--config"),
    (["--cluster", '{"ps": ["127.0.0.1:0"]}', "--protocol", "grpc+verbs"], "grpc+verbs"),
    ([], "--cluster"),
])
def test_bad_arguments_give_one_error_line_and_status_2(args, says):
    done = _run(*args)
    assert done.returncode == 2, done.stderr
    assert done.stdout == ""
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("nbcluster.server: error: "), done.stderr
    assert says in lines[0]


def test_port_in_use_exits_1_naming_the_address():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen()
        port = s.getsockname()[1]
        done = _run("--cluster", json.dumps({"ps": [f"127.0.0.1:{port}"]}))
    assert done.returncode == 1
    assert f"127.0.0.1:{port}" in done.stderr


def test_cluster_fixture_gives_spec_targets_and_pids(local_cluster):
    assert local_cluster.spec.jobs == ["ps", "worker"]
    assert set(local_cluster.targets) == {("ps", 0), ("worker", 0), ("worker", 1)}
    for pid in local_cluster.pids.values():
        os.kill(pid, 0)  # alive


def test_cluster_processes_are_gone_after_stop(cluster_factory):
    cluster = cluster_factory({"worker": 2})
    pids = list(cluster.pids.values())
    cluster.stop()
    for pid in pids:
        with pytest.raises(ProcessLookupError):
            os.kill(pid, 0)


@pytest.mark.timeout(60)
def test_demo_runs_and_trains_across_three_task_processes_and_leaves_none():
    done = subprocess.run([sys.executable, "-m", "nbcluster.cli", "demo"], env=child_env(),
                          capture_output=True, text=True, timeout=50)
    assert done.returncode == 0, done.stderr
    out = done.stdout
    assert "(matches NumPy)" in out
    first, last = (float(v) for v in
                   out.split("held-out loss ")[1].split(",")[0].split(" -> "))
    assert last < first / 10, out  # the short PS training run learned
    for device in ("/job:ps/replica:0/task:0/device:CPU:0",
                   "/job:worker/replica:0/task:0/device:CPU:0",
                   "/job:worker/replica:0/task:1/device:CPU:0"):
        assert device in out
    pids = [int(line.split("pid")[1].split()[0]) for line in out.splitlines() if " pid " in line]
    assert len(pids) == 3
    for pid in pids:
        with pytest.raises(ProcessLookupError):
            os.kill(pid, 0)


def test_sigterm_stops_a_task_with_a_recv_blocked_forever(procs):
    """Regression: a RecvTensor for a step that never runs held server.stop()."""
    import threading

    from nbcluster.master_worker.rendezvous import make_key
    from nbcluster.rpc.grpc_transport.worker_client import GrpcWorkerClient
    proc = _start("--cluster", '{"ps": ["127.0.0.1:0"]}')
    procs.append(proc)
    _, _, target = parse_ready_line(proc.stdout.readline())
    client = GrpcWorkerClient(target[len("grpc://"):])
    device = client.get_status().device_attributes[0]
    key = make_key(device.name, device.incarnation, "/job:w/replica:0/task:0/device:CPU:0",
                   "never:0")
    blocked = threading.Thread(target=lambda: pytest.raises(
        tf.errors.OpError, client.recv_tensor, 7, key, 30.0), daemon=True)
    blocked.start()
    blocked.join(1.0)
    assert blocked.is_alive()  # the recv waits for a step that never runs
    proc.send_signal(signal.SIGTERM)
    assert proc.wait(15) == 0


def test_task_exits_when_its_parent_dies(tmp_path):
    """A launcher killed outright leaves no task behind (--exit-with-parent)."""
    import time
    script = (
        "import subprocess, sys\n"
        "p = subprocess.Popen([sys.executable, '-m', 'nbcluster.server', '--cluster', "
        "'{\"ps\": [\"127.0.0.1:0\"]}', '--exit-with-parent'], stdout=subprocess.PIPE, "
        "text=True)\n"
        "p.stdout.readline()\n"
        "print(p.pid, flush=True)\n"
        "import time; time.sleep(60)\n")
    launcher = subprocess.Popen([sys.executable, "-c", script], env=child_env(),
                                stdout=subprocess.PIPE, text=True)
    try:
        task_pid = int(launcher.stdout.readline())
        os.kill(task_pid, 0)
    finally:
        launcher.kill()
        launcher.wait()
        launcher.stdout.close()
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        try:
            os.kill(task_pid, 0)
        except ProcessLookupError:
            return
        time.sleep(0.2)
    os.kill(task_pid, signal.SIGKILL)
    pytest.fail("the task outlived its parent by 10 s")


def test_a_parent_already_gone_ends_the_task_before_it_serves():
    """`--exit-with-parent=PID` names the launcher; if it is not our parent any
    more (it died while we started), the task exits at once, serving nothing."""
    done = _run("--cluster", '{"ps": ["127.0.0.1:0"]}', "--exit-with-parent=1")
    assert done.returncode == 0 and done.stdout == "", done.stderr


# -- --from-env: TF_CONFIG and Slurm's variables ---------------------------------

def _start_env(extra: dict) -> subprocess.Popen:
    env = child_env(extra)
    for name in ("TF_CONFIG", "SLURM_PROCID"):
        if name not in extra:
            env.pop(name, None)
    return subprocess.Popen([sys.executable, "-m", "nbcluster.server", "--from-env",
                             "--exit-with-parent"], env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)


def test_from_env_tf_config_runs_a_step_across_two_tasks(procs):
    ps_port, worker_port = free_ports(2)
    cluster = {"ps": [f"127.0.0.1:{ps_port}"], "worker": [f"127.0.0.1:{worker_port}"]}
    for job in ("ps", "worker"):
        procs.append(_start_env({"TF_CONFIG": json.dumps(
            {"cluster": cluster, "task": {"type": job, "index": 0}})}))
    ready = [parse_ready_line(p.stdout.readline()) for p in procs]
    assert ready == [("ps", 0, f"grpc://localhost:{ps_port}"),
                     ("worker", 0, f"grpc://localhost:{worker_port}")]
    import numpy as np
    graph = tf.Graph()
    with graph.as_default():
        with tf.device("/job:ps/task:0"):
            w = tf.Variable(np.full((3, 3), 2.0, np.float32))
        with tf.device("/job:worker/task:0"):
            y = tf.reduce_sum(tf.matmul(w, w))
        init = tf.global_variables_initializer()
    with tf.Session(ready[1][2], graph=graph) as sess:
        sess.run(init)
        meta = tf.RunMetadata()
        assert sess.run(y, options=tf.RunOptions(trace_level=tf.RunOptions.FULL_TRACE),
                        run_metadata=meta) == 108.0
    devices = {d.device for d in meta.step_stats.dev_stats}
    assert any("/job:ps/" in d for d in devices) and any("/job:worker/" in d for d in devices)


def test_from_env_slurm_runs_the_rank_of_this_process(procs):
    port = free_ports(1)[0]
    procs.append(_start_env({
        "SLURM_PROCID": "1", "SLURM_STEP_NUM_TASKS": "2", "SLURM_STEP_NODELIST": "127.0.0.1",
        "SLURM_STEP_TASKS_PER_NODE": "2", "NBCLUSTER_SLURM_PORT_BASE": str(port - 1),
        "NBCLUSTER_SLURM_JOBS": '{"ps": 1, "worker": 1}'}))
    assert parse_ready_line(procs[0].stdout.readline()) == \
        ("worker", 0, f"grpc://localhost:{port}")


@pytest.mark.parametrize("args, env, says", [
    (["--from-env"], {}, "neither TF_CONFIG nor Slurm's SLURM_PROCID is set"),
    (["--from-env", "--job", "ps"], {"TF_CONFIG": "{}"}, "drop --cluster, --job and --task"),
    (["--from-env"], {"TF_CONFIG": "{nope"}, "TF_CONFIG is not valid JSON"),
    (["--from-env"], {"TF_CONFIG": '{"cluster": {"worker": ["127.0.0.1:0"]}}'},
     "names no task"),
    (["--from-env"], {"TF_CONFIG": json.dumps({"cluster": {"worker": ["127.0.0.1:0"]},
                                               "task": {"type": "evaluator"}})},
     "evaluator:0 is not in its cluster"),
    (["--from-env"], {"SLURM_PROCID": "0"}, "SLURM_STEP_NUM_TASKS"),
    (["--from-env"], {"TF_CONFIG": json.dumps({"cluster": {"worker": ["127.0.0.1:0"]},
                                               "task": {"type": "worker", "index": 0},
                                               "rpc_layer": "grpc+verbs"})},
     "rpc_layer 'grpc+verbs'"),
])
def test_from_env_errors_are_one_line(args, env, says):
    full = child_env(env)
    for name in ("TF_CONFIG", "SLURM_PROCID", "SLURM_NTASKS", "SLURM_STEP_NUM_TASKS"):
        if name not in env:
            full.pop(name, None)
    done = subprocess.run([sys.executable, "-m", "nbcluster.server", *args], env=full,
                          capture_output=True, text=True, timeout=30)
    assert done.returncode == 2, done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("nbcluster.server: error: "), done.stderr
    assert says in lines[0]


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
@pytest.mark.parametrize("attempt", range(4))
def test_a_burst_of_signals_stops_the_task_with_status_0(procs, sig, attempt):
    """Regression: a handler that called Event.set() deadlocked when a second
    signal arrived inside it (schedulers such as Slurm signal more than once)."""
    import time
    proc = _start("--cluster", '{"ps": ["127.0.0.1:0"]}')
    procs.append(proc)
    assert parse_ready_line(proc.stdout.readline()) is not None
    for _ in range(10):
        proc.send_signal(sig)
        time.sleep(0.001)
    try:
        assert proc.wait(10) == 0, proc.stderr.read()
    except subprocess.TimeoutExpired:
        pytest.fail(f"the task ignored a burst of {signal.Signals(sig).name}: still running "
                    f"10 s later")
