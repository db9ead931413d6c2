"""A real one-node Slurm on localhost (scripts/slurm-local.sh) for the Slurm launcher tests (a fixture)."""
from __future__ import annotations

import os
import shutil
import subprocess
import time

import pytest

SCRIPT = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "scripts",
                      "slurm-local.sh")
# 3-task clusters on a 2-core machine: the node declares more CPUs than it has
# (.ci/run starts it with the same value, so the config is not rewritten here).
CPUS = "8"
_DAEMONS = ("slurmctld", "slurmd", "munged", "srun", "sbatch")


@pytest.fixture(scope="session")
def slurm():
    """Slurm's daemons up (started here if needed, stopped at the end if so).

    Skips only where Slurm is not installed (`apt-get install -y slurm-wlm`;
    .ci/run does) or where it cannot be started (not root).
    """
    missing = [d for d in _DAEMONS if not shutil.which(d) and
               not os.path.exists(f"/usr/sbin/{d}")]
    if missing:
        pytest.skip(f"Slurm is not installed (no {', '.join(missing)}): "
                    f"apt-get install -y slurm-wlm")
    env = dict(os.environ, SLURM_LOCAL_CPUS=CPUS)
    was_up = subprocess.run(["bash", SCRIPT, "status"], capture_output=True,
                            timeout=60).returncode == 0
    if os.geteuid() != 0 and not was_up:
        pytest.skip("scripts/slurm-local.sh starts Slurm's daemons as root: run as root")
    if os.geteuid() == 0:
        done = subprocess.run(["bash", SCRIPT, "start"], capture_output=True, text=True,
                              env=env, timeout=600)
        assert done.returncode == 0, done.stderr
    yield
    if not was_up:
        done = subprocess.run(["bash", SCRIPT, "stop"], capture_output=True, text=True,
                              timeout=120)
        assert done.returncode == 0, done.stderr


def squeue_ids(*args: str) -> list:
    """The job ids squeue lists for `args` (e.g. "-n", NAME)."""
    done = subprocess.run(["squeue", "-h", "-o", "%i", *args], capture_output=True, text=True,
                          timeout=30)
    return done.stdout.split()


def wait_job_gone(job_id: str, timeout: float = 30.0) -> bool:
    """Whether squeue stops listing `job_id` within `timeout` s."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if job_id not in squeue_ids("-j", job_id):
            return True
        time.sleep(0.2)
    return False


def wait_job_running(job_id: str, timeout: float = 30.0) -> bool:
    """Whether squeue says `job_id` is RUNNING within `timeout` s."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        done = subprocess.run(["squeue", "-h", "-j", job_id, "-o", "%T"], capture_output=True,
                              text=True, timeout=30)
        if done.stdout.strip() == "RUNNING":
            return True
        time.sleep(0.2)
    return False
