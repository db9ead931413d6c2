"""Slurm's queue as nbcluster reads it: client commands, job states, and what pending reasons mean.

Rule: every Slurm client call goes through `run_command`, which bounds its
time and turns a missing command into a LaunchError saying what to install.
"""
from __future__ import annotations

import re
import subprocess
from typing import Optional

from nbcluster.launch.errors import LaunchError

# Pending reasons that no wait can cure (the request exceeds what the partition has).
NEVER_REASONS = {
    "PartitionConfig": "the partition cannot hold this request (more CPUs, GPUs or memory "
                       "per node than its nodes have, or more tasks than its nodes' CPUs)",
    "PartitionNodeLimit": "the request needs more nodes than the partition allows",
    "PartitionTimeLimit": "the requested time exceeds the partition's limit",
    "BadConstraints": "no node has the requested features",
    "ReqNodeNotAvail": "a node the request needs is not available",
    "InvalidAccount": "the account is not valid",
    "InvalidQOS": "the QOS is not valid",
    "DependencyNeverSatisfied": "a dependency can never be satisfied",
}
# What the reasons a job commonly waits on mean, for the pending message.
WAIT_REASONS = {
    "Resources": "the resources it needs are in use",
    "Priority": "jobs of higher priority go first",
    "None": "the scheduler has not looked at it yet",
    "BeginTime": "its start time has not come",
    "PartitionDown": "the partition is down",
    "NodeDown": "a node it needs is down",
}
_COMMAND_TIMEOUT_S = 30.0


def last_line(text: str) -> str:
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    return lines[-1] if lines else "no message"


def run_command(argv: list, timeout: float = _COMMAND_TIMEOUT_S,
                stdin: Optional[str] = None) -> subprocess.CompletedProcess:
    """Runs a Slurm client command; its output as text.

    Raises:
      LaunchError: the command is not installed, or did not end within `timeout`.
    """
    try:
        return subprocess.run(argv, input=stdin, capture_output=True, text=True,
                              timeout=timeout, stdin=None if stdin is not None
                              else subprocess.DEVNULL)
    except FileNotFoundError:
        raise LaunchError(f"No `{argv[0]}` on PATH: Cluster.slurm needs Slurm's client "
                          f"commands (Debian: apt-get install slurm-client)") from None
    except subprocess.TimeoutExpired:
        raise LaunchError(f"`{' '.join(argv[:3])} ...` did not answer within {timeout:g}s "
                          f"(is slurmctld up?)") from None


def job_state(job_id: str) -> tuple:
    """(state, reason) of Slurm job `job_id` as squeue (or, once it left squeue, scontrol)
    says: ("PENDING", "Resources"), ("RUNNING", "None"), ("GONE", "unknown job")."""
    done = run_command(["squeue", "-h", "-j", job_id, "-o", "%T|%r"])
    line = done.stdout.strip()
    if done.returncode == 0 and "|" in line:
        state, reason = line.split("|", 1)
        return state, reason
    shown = run_command(["scontrol", "show", "job", job_id]).stdout
    found = re.search(r"JobState=(\S+) Reason=(\S+)", shown)
    return (found.group(1), found.group(2)) if found else ("GONE", "unknown job")


def describe(job_id: str, state: str, reason: str) -> str:
    """'Slurm job 12 PENDING (Resources: the resources it needs are in use)'."""
    meaning = NEVER_REASONS.get(reason.split(",")[0]) or WAIT_REASONS.get(reason)
    why = f"{reason}: {meaning}" if meaning else reason
    shown = reason != "None" or state == "PENDING"
    return f"Slurm job {job_id} {state}" + (f" ({why})" if shown else "")


def pending_reason(job_id: str) -> str:
    """describe() of job `job_id` now (the sidebar's word on a cluster waiting for its
    allocation); never raises LaunchError (says it instead)."""
    try:
        return describe(job_id, *job_state(job_id))
    except LaunchError as e:
        return f"Slurm job {job_id}: {e}"
