"""Every Server sizes its process's BLAS pool by the rule of runtime/math_threads.py,
checked with threadpoolctl's own report from task processes a user would start."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

import nbcluster as tf
from nbcluster.launch.process import free_ports, share_blas_threads
from nbcluster.runtime import math_threads

from process_checks import kill_pids

ROOT = Path(__file__).resolve().parents[2]
TIMEOUT_S = 60

# One task of a cluster, as a user's script runs it; prints the BLAS pools'
# threads before the server, while it serves, after a step, and once it stopped.
_TASK = """
import json, sys
import numpy as np
from threadpoolctl import threadpool_info
def blas():
    return [p["num_threads"] for p in threadpool_info() if p["user_api"] == "blas"]
before = blas()
import nbcluster as tf
cluster, job, task, intra = json.loads(sys.argv[1])
config = tf.ConfigProto(intra_op_parallelism_threads=intra)
server = tf.distribute.Server(cluster, job_name=job, task_index=task, config=config)
serving = blas()
with tf.Graph().as_default():
    x = tf.constant(np.ones((64, 64), np.float32))
    with tf.Session(server.target) as sess:
        sess.run(tf.matmul(x, x))
stepped = blas()
print(json.dumps({"before": before, "serving": serving, "stepped": stepped}), flush=True)
sys.stdin.read()  # every task of the cluster lives until the test closes our stdin
server.stop()
print(json.dumps({"stopped": blas()}), flush=True)
"""

_NO_SERVER = """
import json
import numpy as np
from threadpoolctl import threadpool_info
import nbcluster as tf
with tf.Graph().as_default():
    x = tf.constant(np.ones((64, 64), np.float32))
    with tf.Session() as sess:
        sess.run(tf.matmul(x, x))
print(json.dumps([p["num_threads"] for p in threadpool_info() if p["user_api"] == "blas"]))
"""


def _env() -> dict:
    env = {k: v for k, v in os.environ.items() if k not in math_threads.THREAD_VARS}
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))
    return env


def _start(args) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-c", _TASK, json.dumps(args)], env=_env(),
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)


def _cluster(n: int) -> dict:
    return {"worker": [f"127.0.0.1:{p}" for p in free_ports(n)]}


def _run_cluster(n: int, intra: dict) -> list:
    """Runs the n tasks of a worker job at once (each its own process); their reports."""
    cluster = _cluster(n)
    procs = [_start([cluster, "worker", i, intra.get(i, 0)]) for i in range(n)]
    try:
        first = [json.loads(p.stdout.readline()) for p in procs]
        for p in procs:
            p.stdin.close()
        last = [json.loads(p.stdout.readline()) for p in procs]
        for p in procs:
            assert p.wait(TIMEOUT_S) == 0
        return [dict(a, **b) for a, b in zip(first, last)]
    finally:
        kill_pids([p.pid for p in procs if p.poll() is None])
        for p in procs:
            p.wait()
            p.stdout.close()


@pytest.fixture(autouse=True)
def _needs_blas():
    pytest.importorskip("threadpoolctl")
    from threadpoolctl import threadpool_info
    if not any(p["user_api"] == "blas" for p in threadpool_info()):
        pytest.skip("numpy here reports no BLAS library to threadpoolctl")


@pytest.mark.timeout(TIMEOUT_S * 2)
def test_each_task_of_a_three_task_cluster_limits_blas_to_its_share():
    share = math_threads.core_share(3)
    for report in _run_cluster(3, {}):
        assert report["before"] == [math_threads.host_cores()]
        assert report["serving"] == [share] and report["stepped"] == [share]
        assert report["stopped"] == report["before"]  # no server left: every core


@pytest.mark.timeout(TIMEOUT_S * 2)
def test_intra_op_parallelism_threads_wins_over_the_share():
    intra = math_threads.core_share(3) + 1
    reports = _run_cluster(3, {1: intra})
    assert reports[1]["serving"] == [intra] and reports[1]["stepped"] == [intra]
    assert reports[0]["serving"] == [math_threads.core_share(3)]


@pytest.mark.timeout(TIMEOUT_S)
def test_a_process_with_no_server_uses_every_core():
    out = subprocess.run([sys.executable, "-c", _NO_SERVER], env=_env(), capture_output=True,
                         text=True, timeout=TIMEOUT_S, check=True).stdout
    assert json.loads(out) == [math_threads.host_cores()]


def test_servers_in_one_process_add_their_shares_and_the_last_stop_restores():
    from threadpoolctl import threadpool_info

    def blas():
        return [p["num_threads"] for p in threadpool_info() if p["user_api"] == "blas"]

    original = blas()
    cluster = _cluster(2)
    config = tf.ConfigProto(intra_op_parallelism_threads=1)
    a = tf.distribute.Server(cluster, job_name="worker", task_index=0, config=config)
    try:
        assert blas() == [1]
        b = tf.distribute.Server(cluster, job_name="worker", task_index=1, config=config)
        assert blas() == [2]
        b.stop()
        assert blas() == [1]
    finally:
        a.stop()
    assert blas() == original


def test_tasks_on_host_counts_loopback_and_this_hosts_name_only():
    spec = tf.train.ClusterSpec({"ps": ["127.0.0.1:1"], "worker": ["localhost:2", "[::1]:3",
                                                                   "10.9.9.9:4"]})
    assert math_threads.tasks_on_host([spec.task_address(j, i) for j in spec.jobs
                                       for i in spec.task_indices(j)], "localhost:2") == 3
    assert math_threads.tasks_on_host(["10.9.9.9:4", "10.9.9.9:5", "127.0.0.1:1"],
                                      "10.9.9.9:4") == 2


def test_the_rule_intra_op_then_environment_then_core_share():
    spec = tf.train.ClusterSpec({"ps": ["127.0.0.1:1"], "worker": ["127.0.0.1:2", "127.0.0.1:3"]})
    share = math_threads.core_share(3)
    assert math_threads.task_threads(spec, "ps", 0, None, environ={}) == share
    assert math_threads.task_threads(spec, "ps", 0, None, environ={"OMP_NUM_THREADS": "5"}) == 5
    config = tf.ConfigProto(intra_op_parallelism_threads=7)
    assert math_threads.task_threads(spec, "ps", 0, config, environ={"OMP_NUM_THREADS": "5"}) \
        == 7


def test_the_launcher_sets_the_same_share_before_numpy_loads():
    env: dict = {}
    share_blas_threads(env, 3)
    assert env == {"OPENBLAS_NUM_THREADS": str(math_threads.core_share(3))}
    env = {"MKL_NUM_THREADS": "4"}
    share_blas_threads(env, 3)
    assert env == {"MKL_NUM_THREADS": "4"}  # the user's setting wins


def test_a_count_from_the_environment_is_the_processs_whatever_its_servers(monkeypatch):
    from threadpoolctl import threadpool_info

    def blas():
        return [p["num_threads"] for p in threadpool_info() if p["user_api"] == "blas"]

    original = blas()
    monkeypatch.setenv("OPENBLAS_NUM_THREADS", "1")
    cluster = _cluster(2)
    a = tf.distribute.Server(cluster, job_name="worker", task_index=0)
    b = tf.distribute.Server(cluster, job_name="worker", task_index=1)
    try:
        assert blas() == [1]  # not 1 + 1
    finally:
        a.stop()
        b.stop()
    assert blas() == original
