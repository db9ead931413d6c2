"""Shared fixtures: servers in subprocesses, so tests exercise real gRPC.

A server in the test's own process is called directly (no gRPC hop, see
`nbcluster.server.local_master`); a subprocess server is the only way to
test the wire end to end.
"""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from slurm_local import slurm  # noqa: F401 - the fixture, for tests/launch and tests/jupyter
from sshd import sshd  # noqa: F401 - the fixture, for tests/launch and tests/jupyter

ROOT = Path(__file__).resolve().parent.parent

_SERVER_SCRIPT = """
import sys
import nbcluster as tf
config = tf.ConfigProto.FromString(bytes.fromhex(sys.argv[1]))
server = tf.distribute.Server({"worker": ["127.0.0.1:0"]}, config=config)
print(server.target, flush=True)
server.join()
"""


def spawn_server(config=None, timeout: float = 30.0) -> tuple:
    """Starts a one-task server ("/job:worker/task:0") in a subprocess.

    Returns (process, target). The caller kills the process.
    """
    import nbcluster as tf
    config = config or tf.ConfigProto()
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(
        filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])))
    proc = subprocess.Popen(
        [sys.executable, "-c", _SERVER_SCRIPT, config.SerializeToString().hex()],
        stdout=subprocess.PIPE, env=env, text=True)
    try:
        line = _read_line(proc, timeout)
    except BaseException:
        proc.kill()
        proc.wait()
        raise
    if not line.startswith("grpc://"):
        proc.kill()
        proc.wait()
        raise RuntimeError(f"server subprocess printed {line!r} instead of its target")
    return proc, line.strip()


def _read_line(proc: subprocess.Popen, timeout: float) -> str:
    import threading
    box: list = []
    reader = threading.Thread(target=lambda: box.append(proc.stdout.readline()), daemon=True)
    reader.start()
    reader.join(timeout)
    if not box:
        raise TimeoutError(f"server subprocess gave no target within {timeout}s")
    return box[0]


@pytest.fixture(scope="session", autouse=True)
def _private_runtime_dir(tmp_path_factory):
    """Every Cluster writes a record of itself to the Jupyter runtime dir (the lab
    sidebar lists them): the suite's go to a folder of its own, not the user's."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("JUPYTER_RUNTIME_DIR", str(tmp_path_factory.mktemp("jupyter-runtime")))
        yield


@pytest.fixture(scope="session", autouse=True)
def _checkpoints_under_basetemp(tmp_path_factory):
    """A served task's checkpoint ops may touch only its checkpoint directory
    (default: its working directory, the checkout here). Tests save under
    tmp_path: every server the suite starts, in process or as a task process
    (which inherits this), allows pytest's base temp dir."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("NBCLUSTER_CHECKPOINT_DIR", str(tmp_path_factory.getbasetemp()))
        yield


@pytest.fixture
def server_factory():
    """`start(config=None) -> target`; `start.kill(target)` kills that server,
    `start.pid(target)` is its process id.

    Every server started is killed at teardown, whatever the test's outcome.
    """
    procs: dict = {}

    def start(config=None) -> str:
        proc, target = spawn_server(config)
        procs[target] = proc
        return target

    def kill(target: str) -> None:
        proc = procs[target]
        proc.kill()
        proc.wait()

    start.kill = kill
    start.pid = lambda target: procs[target].pid
    yield start
    for proc in procs.values():
        proc.kill()
        proc.wait()


@pytest.fixture
def server_target(server_factory) -> str:
    """The "grpc://localhost:<port>" target of a fresh subprocess server."""
    return server_factory()


# -- multi-task clusters: each task a `python -m nbcluster.server` process ---

@pytest.fixture
def cluster_factory():
    """`start(jobs={"ps": 1, "worker": 2}, config=None, timeout=60) -> Cluster`.

    Each task runs as `python -m nbcluster.server` on 127.0.0.1
    (`nbcluster.launch.Cluster.local`); `start` returns once every task
    answers GetStatus (bounded by `timeout`). The Cluster gives `.spec`
    (ClusterSpec), `.targets` / `.pids` ({(job, task): ...}), `.target(job,
    task)`, `.pid(job, task)`, `.kill(job, task)` and `.restart(job, task)`.
    Every task process is stopped by pid at teardown, whatever the test's
    outcome, and any left alive is SIGKILLed.
    """
    from nbcluster.launch import Cluster

    from process_checks import kill_pids, wait_gone
    clusters: list = []

    def start(jobs=None, config=None, timeout: float = 60.0) -> "Cluster":
        cluster = Cluster.local(jobs=jobs or {"ps": 1, "worker": 2}, config=config,
                                timeout=timeout)
        clusters.append(cluster)
        return cluster

    yield start
    for cluster in clusters:
        pids = list(cluster.pids.values())
        cluster.stop()
        kill_pids(wait_gone(pids, 5.0))


@pytest.fixture
def local_cluster(request, cluster_factory):
    """A started cluster of task processes: {"ps": 1, "worker": 2} unless the
    test parametrizes it indirectly with another {job: count}."""
    return cluster_factory(getattr(request, "param", None))


@pytest.fixture
def refused_port() -> int:
    """A 127.0.0.1 port that refuses connections for the whole test: bound, never
    listening, and held (a port bound and released may be any process's by the
    time the test connects: a busy host's servers take ports all the time)."""
    import socket
    with socket.socket() as held:
        held.bind(("127.0.0.1", 0))
        yield held.getsockname()[1]
