"""Cluster.slurm against a real one-node Slurm on localhost (the `slurm` fixture)."""
from __future__ import annotations

import json
import signal
import subprocess
import sys
import textwrap
import time

import pytest

from nbcluster.launch import Cluster, LaunchError
from nbcluster.launch.process import child_env
from nbcluster.launch.slurm import SlurmLauncher

from cluster_graphs import spread_matmul
from process_checks import alive, kill_pids, wait_gone
from slurm_local import squeue_ids, wait_job_gone, wait_job_running

pytestmark = pytest.mark.timeout(180)


def _steps(job_id: str) -> list:
    done = subprocess.run(["squeue", "-h", "-s", "-j", job_id, "-o", "%i|%j"],
                          capture_output=True, text=True, timeout=30)
    return sorted(line.split("|")[1] for line in done.stdout.splitlines())


# -- without Slurm: the batch script and the checks of the request -------------------------
def test_job_script_holds_the_request():
    launcher = SlurmLauncher(3, "demo", partition="gpu", time="01:30:00", nodes=2,
                             cpus_per_task=4, gpus_per_task=1,
                             sbatch_options=("--mem-per-cpu=2G", "--account=ml"))
    lines = launcher.job_script().splitlines()
    assert lines[0] == "#!/bin/bash"
    options = [line.split(" ", 1)[1] for line in lines if line.startswith("#SBATCH")]
    assert options[0].startswith("--job-name=nbcluster-demo-")
    assert options[1:] == ["--ntasks=3", "--nodes=2", "--partition=gpu", "--time=01:30:00",
                           "--cpus-per-task=4", "--gpus-per-task=1", "--mem-per-cpu=2G",
                           "--account=ml", "--output=/dev/null"]
    assert lines[-1] == "exec sleep infinity"
    argv = launcher.step_argv("node7", ["--job", "worker", "--task", "1"], "nbc-worker-1")
    assert argv[:6] == ["srun", "--jobid=None", "--overlap", "-n1", "-N1", "--nodelist=node7"]
    assert "--cpus-per-task=4" in argv and "--gpus-per-task=1" in argv
    assert argv[-8:] == [sys.executable, "-m", "nbcluster.server", "--job", "worker",
                         "--task", "1", "--exit-with-parent"]


@pytest.mark.parametrize("options, word", [
    ({"time": "soon"}, "time"), ({"time": 0}, "time"), ({"nodes": 0}, "nodes"),
    ({"cpus_per_task": 1.5}, "cpus_per_task"), ({"sbatch_options": "--mem=1G"}, "sbatch_options"),
    ({"sbatch_options": ["mem=1G"]}, "sbatch_options"), ({"partition": "a b"}, "partition"),
])
def test_bad_requests_fail_before_any_submission(options, word):
    with pytest.raises(ValueError, match=word):
        SlurmLauncher(3, "demo", **options)


# -- against the local Slurm ---------------------------------------------------------
def test_slurm_cluster_runs_a_graph_and_stop_leaves_nothing(slurm):
    cluster = Cluster.slurm(ps=1, worker=2, name="slurmy", timeout=120)
    pids, sruns = [], []
    try:
        job_id = cluster.job_id
        assert job_id in squeue_ids("-j", job_id)
        assert "--ntasks=3" in cluster.job_script()
        statuses = cluster.status()
        pids = [s.pid for s in statuses]
        sruns = [t.process.pid for t in cluster._tasks.values()]
        assert [(s.job, s.index, s.state) for s in statuses] == [
            ("ps", 0, "up"), ("worker", 0, "up"), ("worker", 1, "up")]
        # the addresses are the node Slurm allocated, a distinct port per task there
        hosts = {address.rsplit(":", 1)[0] for job in cluster.spec.jobs
                 for address in cluster.spec.job_tasks(job)}
        assert hosts == {"localhost"}
        assert len({s.address for s in statuses}) == 3
        assert _steps(job_id) == ["batch", "nbc-ps-0", "nbc-worker-0", "nbc-worker-1"]
        assert not set(sruns) & set(pids)  # the servers are slurmstepd's, not ours
        assert spread_matmul(cluster.target("worker", 0)) == [[36.0, 36.0], [36.0, 36.0]]
        assert "serving /job:ps/task:0" in cluster.logs("ps", 0)
        assert f"(slurm, 3 tasks, Slurm job {job_id} RUNNING)" in repr(cluster)
        cluster.stop()
        assert squeue_ids("-j", job_id) == []
        assert wait_gone(pids, 10) == [] and wait_gone(sruns, 10) == []
        # scancel --signal=TERM first: every server exited 0, so did its srun
        assert [cluster.exit_code(j, i) for j, i in sorted(cluster.pids)] == [0, 0, 0]
    finally:
        cluster.stop()
        kill_pids(pids + sruns)


def test_a_slurm_cluster_gets_a_token_and_tls_on_no_command_line(slurm):
    with Cluster.slurm(ps=1, worker=2, timeout=120, tls=True) as cluster:
        assert spread_matmul(cluster.target("worker", 0)) == [[36.0, 36.0], [36.0, 36.0]]
        token = cluster._token
        assert token and cluster._ca is not None
        for pid in list(cluster.pids.values()) + [t.process.pid for t in
                                                   cluster._tasks.values()]:
            with open(f"/proc/{pid}/cmdline", "rb") as f:  # task servers and sruns alike
                argv = f.read()
            assert token.encode() not in argv and b"PRIVATE KEY" not in argv


def test_restart_of_one_task_keeps_its_address(slurm):
    with Cluster.slurm(ps=1, worker=2, timeout=120) as cluster:
        before = {s.job + str(s.index): (s.address, s.pid) for s in cluster.status()}
        target = cluster.restart("worker", 1)
        after = {s.job + str(s.index): (s.address, s.pid) for s in cluster.status()}
        assert target == f"grpc://{before['worker1'][0]}"
        assert after["worker1"][0] == before["worker1"][0]
        assert after["worker1"][1] != before["worker1"][1]
        assert not alive(before["worker1"][1])
        assert {k: after[k] for k in ("ps0", "worker0")} == \
            {k: before[k] for k in ("ps0", "worker0")}  # the others untouched
        assert spread_matmul(cluster.target("worker", 0)) == [[36.0, 36.0], [36.0, 36.0]]
        assert [s.state for s in cluster.status()] == ["up"] * 3


@pytest.mark.parametrize("request_, why", [
    (dict(worker=200), "PartitionConfig"),
    (dict(worker=1, cpus_per_task=64), "PartitionConfig"),
    (dict(worker=1, gpus_per_task=1), "gres"),
    (dict(worker=1, partition="nosuchpartition"), "partition"),
])
def test_a_request_slurm_can_never_satisfy_fails_at_once(slurm, request_, why):
    before = set(squeue_ids())
    with pytest.raises(LaunchError, match=why) as raised:
        Cluster.slurm(ps=0, timeout=120, name="toobig", **request_)
    assert "Slurm" in str(raised.value)
    deadline_ids = set(squeue_ids()) - before
    assert deadline_ids == set() or all(wait_job_gone(j) for j in deadline_ids)


def test_pending_cluster_shows_its_reason_then_starts(slurm):
    # a job that takes every CPU of the node: the cluster must wait for Resources
    blocker = subprocess.run(["sbatch", "--parsable", "-n", "8", "--output=/dev/null",
                              "--wrap", "exec sleep 300"], capture_output=True, text=True,
                             timeout=30)
    assert blocker.returncode == 0, blocker.stderr
    blocker_id = blocker.stdout.strip().split(";")[0]
    cluster = None
    try:
        assert wait_job_running(blocker_id)
        cluster = Cluster.slurm(ps=0, worker=2, wait=False, name="queued")
        job_id = cluster.job_id
        deadline = time.monotonic() + 60
        while cluster.job_state() == ("PENDING", "None"):  # not yet looked at by the scheduler
            assert time.monotonic() < deadline, "Slurm never gave the job a reason"
            time.sleep(0.2)
        assert cluster.job_state() == ("PENDING", "Resources")
        statuses = cluster.status()
        assert [s.state for s in statuses] == ["pending", "pending"]
        assert all(f"Slurm job {job_id} PENDING" in s.last_error for s in statuses)
        with pytest.raises(LaunchError, match=rf"Slurm job {job_id} PENDING \(Resources"):
            cluster.wait_ready(1.0)
        with pytest.raises(LaunchError, match="no allocation yet"):
            cluster.restart("worker", 0)
        # the JupyterLab sidebar's answer says the same (from the record and squeue)
        from nbcluster.jupyter.server_extension import clusters
        listed = [c for c in clusters() if c["name"] == "queued"]
        assert len(listed) == 1 and listed[0]["launcher"] == "slurm"
        assert [(t["state"], t["last_error"].split(" (")[0]) for t in listed[0]["tasks"]] == \
            [("pending", f"Slurm job {job_id} PENDING")] * 2
        assert "Resources" in listed[0]["tasks"][0]["last_error"]
        assert job_id in squeue_ids("-j", job_id)  # still queued after the timeout
        subprocess.run(["scancel", blocker_id], check=True, timeout=30)
        cluster.wait_ready(120)
        assert [s.state for s in cluster.status()] == ["up", "up"]
        cluster.stop()
        assert squeue_ids("-j", job_id) == []
    finally:
        subprocess.run(["scancel", blocker_id], timeout=30)
        if cluster is not None:
            cluster.stop()


_OWNER = textwrap.dedent("""
    import json, os, sys, time
    from nbcluster.launch import Cluster
    cluster = Cluster.slurm(ps=1, worker=1, timeout=120, env={"NBC_TEST_SECRET": "s3cret-42"})
    # a forked child (no exec) keeps every pipe of the owner open after the owner dies
    forked = os.fork() if sys.argv[1] == "fork" else 1
    if forked == 0:
        time.sleep(600)
        os._exit(0)
    print(json.dumps({"job": cluster.job_id, "pids": [s.pid for s in cluster.status()],
                      "sruns": [t.process.pid for t in cluster._tasks.values()],
                      "forked": [forked] if forked > 1 else []}), flush=True)
    time.sleep(600)
""")


@pytest.mark.parametrize("how", ["plain", "fork"])
def test_a_dead_owner_leaves_no_job_and_no_task(slurm, how):
    owner = subprocess.Popen([sys.executable, "-c", _OWNER, how], stdout=subprocess.PIPE,
                             env=child_env(), text=True)
    info = {"pids": [], "sruns": [], "forked": []}
    try:
        line = owner.stdout.readline()
        assert line, "the owner did not start its cluster"
        info = json.loads(line)
        job_id = info["job"]
        assert job_id in squeue_ids("-j", job_id)
        # the variable reached the servers through the environment, on no command line
        for pid in info["pids"]:
            with open(f"/proc/{pid}/environ", "rb") as f:
                assert b"NBC_TEST_SECRET=s3cret-42" in f.read().split(b"\0")
        for pid in info["pids"] + info["sruns"]:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                assert b"s3cret-42" not in f.read()
        owner.send_signal(signal.SIGKILL)
        owner.wait(30)
        assert wait_job_gone(job_id), f"job {job_id} outlived its owner"
        assert wait_gone(info["pids"] + info["sruns"], 30) == []
    finally:
        if owner.poll() is None:
            owner.kill()
            owner.wait()
        kill_pids(info["pids"] + info["sruns"] + info["forked"])


def test_python_that_cannot_import_nbcluster_is_named(slurm, tmp_path):
    # this python with nbcluster nowhere on its path (-I: no PYTHONPATH, -S: no site-packages)
    wrapper = tmp_path / "python-without-nbcluster"
    wrapper.write_text(f"#!/bin/sh\ncd /\nexec {sys.executable} -I -S \"$@\"\n")
    wrapper.chmod(0o755)
    if subprocess.run([str(wrapper), "-c", "import nbcluster"], capture_output=True,
                      timeout=60).returncode == 0:
        pytest.skip("nbcluster is installed in the interpreter itself")
    with pytest.raises(LaunchError, match="cannot import nbcluster"):
        Cluster.slurm(ps=0, worker=1, python=str(wrapper), timeout=120)
