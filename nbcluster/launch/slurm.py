"""The Slurm launcher: one allocation (an sbatch'd holder job) holds the cluster, one srun step per task.

Rules:
- The allocation is a batch job whose script only sleeps (`job_script()`
  shows it), so every task is scheduled together; each task is then its own
  `srun --jobid=J --overlap -n1 -N1 -w NODE python -m nbcluster.server ...`
  run from this host (its output comes back into the task's local log file),
  so a single task can be stopped (`scancel --signal=TERM J.STEP`) and
  restarted at its address without touching the others.
- Where each task runs is Slurm's own layout: a probe step over the whole
  allocation reports each rank's node; ports are picked per node by one probe
  that binds them all at once, so tasks on one node never collide.
- Nothing secret goes on a command line: variables (`env`, a future token)
  reach the tasks through srun's environment (its default `--export=ALL`),
  and the cluster and config arguments hold no secret.
- The allocation never outlives its owner: a watchdog child holds a pipe
  from this process and runs `scancel --name=<the job's unique name>` when
  the pipe closes without a "released" line, or its parent changes: when
  this process died.
- A request Slurm can never satisfy fails at once: sbatch's refusal, or a
  pending reason in NEVER_REASONS, cancels the job and raises LaunchError.
"""
from __future__ import annotations

import getpass
import os
import re
import signal
import subprocess
import sys
import time
import uuid
from typing import Optional

from nbcluster.launch.errors import LaunchError
from nbcluster.launch.launcher import stop_all, wait_until
from nbcluster.launch.process import child_env, spawn
from nbcluster.launch.slurm_jobs import NEVER_REASONS, describe, job_state, last_line, run_command

_POLL_S = 0.2
_JOB_GONE_S = 30.0

# Watches its owner (its parent): a "released" on the pipe ends it quietly; EOF (the owner
# died) or a new parent (the owner died while a forked child still holds the pipe)
# cancels the allocation by its unique name.
_WATCHDOG = ("import os, select, subprocess, sys\n"
             "owner = int(sys.argv[3])\n"
             "while os.getppid() == owner:\n"
             "    if select.select([0], [], [], 1.0)[0]:\n"
             "        data = os.read(0, 64)\n"
             "        if b'released' in data:\n"
             "            sys.exit(0)\n"
             "        if not data:\n"
             "            break\n"
             "subprocess.run(['scancel', '--name=' + sys.argv[1], '--user=' + sys.argv[2]],\n"
             "               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)\n")
# Checks that nbcluster imports on this node, then prints this rank's node name.
_LAYOUT = ("import importlib.util, os, sys\n"
           "if importlib.util.find_spec('nbcluster') is None: sys.exit(3)\n"
           "print('node', os.environ['SLURM_PROCID'], os.environ['SLURMD_NODENAME'])\n")
# Prints `count` ports free on `host` (all bound together, so distinct).
_PORTS = ("import socket, sys\n"
          "socks = [socket.socket() for _ in range(int(sys.argv[1]))]\n"
          "for s in socks: s.bind((sys.argv[2], 0))\n"
          "print('ports', *[s.getsockname()[1] for s in socks])\n")


def _time_text(value) -> Optional[str]:
    if value is None:
        return None
    if isinstance(value, int) and not isinstance(value, bool) and value > 0:
        return str(value)  # minutes, as sbatch reads a bare number
    if isinstance(value, str) and re.fullmatch(r"[0-9:-]+", value.strip()):
        return value.strip()
    raise ValueError(f"time must be minutes (an int > 0) or Slurm's [D-]HH:MM:SS text, "
                     f"not {value!r}")


def _positive(name: str, value) -> Optional[int]:
    if value is None:
        return None
    if not isinstance(value, int) or isinstance(value, bool) or value <= 0:
        raise ValueError(f"{name} must be an int > 0, not {value!r}")
    return value


class SlurmProcess:
    """One task's srun step; its server pid comes from GetStatus."""

    def __init__(self, launcher: "SlurmLauncher", step_name: str,
                 proc: subprocess.Popen) -> None:
        self.launcher, self.step_name, self.proc = launcher, step_name, proc
        self.pid: Optional[int] = proc.pid
        self.server_pid: Optional[int] = None
        self._step: Optional[str] = None

    def step_id(self) -> Optional[str]:
        """"JOB.STEP" of this task's step, once Slurm lists it (None before)."""
        if self._step is None:
            self._step = self.launcher.step_of(self.step_name)
        return self._step

    def poll(self) -> Optional[int]:
        return self.proc.poll()

    def signal(self, sig: int) -> None:
        if self.proc.poll() is not None:
            return
        step = self.step_id()
        if step is None:  # not a step yet: ending srun ends the task
            self.proc.send_signal(sig)
            return
        run_command(["scancel", f"--signal={int(sig)}", step])

    def terminate(self) -> None:
        self.signal(signal.SIGTERM)

    def wait_until(self, deadline: float) -> bool:
        return wait_until(self.proc, deadline)

    def force(self) -> None:
        step = self.step_id() if self.proc.poll() is None else None
        if step is not None:
            run_command(["scancel", step])
            if wait_until(self.proc, time.monotonic() + 10.0):
                return
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait()

    def stop(self, grace: float) -> None:
        stop_all([self], grace)


class SlurmLauncher:
    """Holds one Slurm allocation for a cluster's tasks and runs each task as an srun step.

    Args:
      ntasks: the tasks of the cluster (the allocation's --ntasks).
      cluster_name: the cluster's name (in the job's name).
      partition, time, nodes, cpus_per_task, gpus_per_task: sbatch's options of
        those names (time: minutes or "HH:MM:SS"); each task's step asks for the
        same CPUs and GPUs per task.
      sbatch_options: more `#SBATCH` options, e.g. ("--mem-per-cpu=2G", "--account=x").
      python: the interpreter on the nodes that can import nbcluster (default:
        this one, right where the nodes share this host's filesystem).
      env: environment variables for the tasks (through srun's environment).
    """

    kind = "slurm"

    def __init__(self, ntasks: int, cluster_name: str, partition: Optional[str] = None,
                 time=None, nodes: Optional[int] = None, cpus_per_task: Optional[int] = None,
                 gpus_per_task: Optional[int] = None, sbatch_options=(),
                 python: Optional[str] = None, env: Optional[dict] = None) -> None:
        if isinstance(sbatch_options, str) or not all(
                isinstance(o, str) and o.startswith("-") and "\n" not in o
                for o in sbatch_options):
            raise ValueError(f"sbatch_options must be a sequence of options such as "
                             f"'--mem=4G', not {sbatch_options!r}")
        if partition is not None and (not isinstance(partition, str) or not
                                      re.fullmatch(r"[\w.,-]+", partition)):
            raise ValueError(f"partition must be a partition name, not {partition!r}")
        self.ntasks = _positive("ntasks", ntasks)
        self.partition, self.time = partition, _time_text(time)
        self.nodes = _positive("nodes", nodes)
        self.cpus_per_task = _positive("cpus_per_task", cpus_per_task)
        self.gpus_per_task = _positive("gpus_per_task", gpus_per_task)
        self.sbatch_options = tuple(sbatch_options)
        self.python = python or sys.executable
        self.env = {str(k): str(v) for k, v in (env or {}).items()}
        self.cluster_name = cluster_name
        # unique, so the watchdog's `scancel --name` can only ever hit this job
        self._unique = f"{os.getpid()}-{uuid.uuid4().hex[:8]}"
        self.job_id: Optional[str] = None
        self._watchdog: Optional[subprocess.Popen] = None
        self._closed = False

    @property
    def job_name(self) -> str:
        """The job's name: nbcluster-<cluster name>-<owner pid>-<random>, unique."""
        safe = re.sub(r"[^A-Za-z0-9_.-]", "_", self.cluster_name)[:60]
        return f"nbcluster-{safe}-{self._unique}"

    # -- the allocation ------------------------------------------------------
    def job_script(self) -> str:
        """The batch script that holds the allocation (what `submit()` hands to sbatch)."""
        options = [f"--job-name={self.job_name}", f"--ntasks={self.ntasks}"]
        for flag, value in (("--nodes", self.nodes), ("--partition", self.partition),
                            ("--time", self.time), ("--cpus-per-task", self.cpus_per_task),
                            ("--gpus-per-task", self.gpus_per_task)):
            if value is not None:
                options.append(f"{flag}={value}")
        options += list(self.sbatch_options) + ["--output=/dev/null"]
        lines = ["#!/bin/bash"] + [f"#SBATCH {o}" for o in options] + [
            "# nbcluster: this job only holds the allocation. Each task runs in it as its",
            "# own `srun --jobid=$SLURM_JOB_ID --overlap -n1 -N1 -w NODE python -m",
            "# nbcluster.server ...` step, started from the notebook's host.",
            "exec sleep infinity"]
        return "\n".join(lines) + "\n"

    def submit(self) -> str:
        """Starts the watchdog, then submits the job; its id.

        Raises:
          LaunchError: sbatch refused the request (its reason quoted).
        """
        self._watchdog = spawn([sys.executable, "-c", _WATCHDOG, self.job_name,
                                getpass.getuser(), str(os.getpid())], stdin=subprocess.PIPE,
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                               start_new_session=True)
        done = run_command(["sbatch", "--parsable"], stdin=self.job_script())
        if done.returncode != 0:
            raise LaunchError(f"Slurm refused the allocation ({self._request()}): "
                              f"{last_line(done.stderr)}")
        self.job_id = done.stdout.strip().split(";")[0]
        return self.job_id

    def _request(self) -> str:
        words = [f"{self.ntasks} tasks"]
        for name in ("nodes", "partition", "time", "cpus_per_task", "gpus_per_task"):
            if getattr(self, name) is not None:
                words.append(f"{name}={getattr(self, name)}")
        return ", ".join(words + list(self.sbatch_options))

    def job_state(self) -> tuple:
        """(state, reason) of the allocation (see `job_state`)."""
        return job_state(self.job_id)

    def describe(self, state: str, reason: str) -> str:
        """'Slurm job 12 PENDING (Resources: ...)' for this allocation."""
        return describe(self.job_id, state, reason)

    def wait_allocated(self, timeout: float) -> None:
        """Returns once the job runs.

        Raises:
          LaunchError: the job cannot ever run (it is cancelled), it ended, or it
            still waits after `timeout` s (naming squeue's reason; it stays queued).
        """
        deadline = time.monotonic() + timeout
        while True:
            state, reason = self.job_state()
            if state == "RUNNING":
                return
            if state == "PENDING" and reason.split(",")[0] in NEVER_REASONS:
                message = self.describe(state, reason)
                self.cancel()
                raise LaunchError(f"{message}: Slurm can never run this request "
                                  f"({self._request()}); the job is cancelled")
            if state not in ("PENDING", "CONFIGURING", "REQUEUED", "RESIZING"):
                raise LaunchError(f"{self.describe(state, reason)} before its tasks started")
            if time.monotonic() >= deadline:
                raise LaunchError(f"{self.describe(state, reason)} after {timeout:g}s: no "
                                  f"allocation yet (wait_ready() waits again; stop() "
                                  f"cancels it)")
            time.sleep(_POLL_S)

    def layout(self, timeout: float) -> list:
        """The node of each rank of the allocation, in rank order.

        Raises:
          LaunchError: the probe step failed (python cannot import nbcluster there).
        """
        # the job's own task count (and CPUs per task): srun lays it out as the job is
        argv = ["srun", f"--jobid={self.job_id}", "--overlap", "--quiet",
                f"--ntasks={self.ntasks}", f"--job-name={self.job_name}-probe"]
        if self.cpus_per_task:
            argv.append(f"--cpus-per-task={self.cpus_per_task}")
        done = run_command(argv + [self.python, "-c", _LAYOUT], timeout=max(timeout, 5.0))
        nodes = {}
        for line in done.stdout.splitlines():
            words = line.split()
            if len(words) == 3 and words[0] == "node":
                nodes[int(words[1])] = words[2]
        if done.returncode == 3:
            raise LaunchError(f"{self.python} on the nodes of {self.describe('RUNNING', 'None')}"
                              f" cannot import nbcluster (install it there, or pass "
                              f"env={{'PYTHONPATH': ...}})")
        if done.returncode != 0 or sorted(nodes) != list(range(self.ntasks)):
            raise LaunchError(f"The probe step in Slurm job {self.job_id} failed (status "
                              f"{done.returncode}): {last_line(done.stderr)}")
        return [nodes[rank] for rank in range(self.ntasks)]

    def step_of(self, step_name: str) -> Optional[str]:
        """"JOB.STEP" of the newest step named `step_name` in the job, if listed."""
        done = run_command(["squeue", "-h", "-s", "-j", self.job_id, "-o", "%i|%j"])
        steps = [line.split("|", 1)[0] for line in done.stdout.splitlines()
                 if line.split("|", 1)[-1] == step_name]
        steps = [s for s in steps if s.split(".")[-1].isdigit()]
        return max(steps, key=lambda s: int(s.split(".")[-1])) if steps else None

    # -- the Launcher protocol -------------------------------------------------
    def free_ports(self, host: str, count: int, timeout: float) -> list:
        """`count` ports free on node `host`, bound together in one probe step there.

        Raises:
          LaunchError: the probe did not run on `host`.
        """
        if not count:
            return []
        done = run_command(["srun", f"--jobid={self.job_id}", "--overlap", "--quiet", "-n1",
                            "-N1", f"--nodelist={host}", f"--job-name={self.job_name}-ports",
                            self.python, "-c", _PORTS, str(count), host],
                           timeout=max(timeout, 5.0))
        words = last_line(done.stdout).split()
        if done.returncode != 0 or words[:1] != ["ports"] or len(words) != count + 1:
            raise LaunchError(f"Cannot pick ports on node {host!r} of Slurm job "
                              f"{self.job_id} (status {done.returncode}): "
                              f"{last_line(done.stderr)}")
        return [int(w) for w in words[1:]]

    def step_argv(self, host: str, args: list, step_name: str) -> list:
        """The `srun ... python -m nbcluster.server ARGS` of one task on node `host`."""
        argv = ["srun", f"--jobid={self.job_id}", "--overlap", "-n1", "-N1",
                f"--nodelist={host}", f"--job-name={step_name}", "--unbuffered"]
        if self.cpus_per_task:
            argv.append(f"--cpus-per-task={self.cpus_per_task}")
        if self.gpus_per_task:
            argv.append(f"--gpus-per-task={self.gpus_per_task}")
        # the server's parent is slurmstepd: it ends with the step
        return argv + [self.python, "-m", "nbcluster.server", *args, "--exit-with-parent"]

    def start(self, host: str, args: list, log_path: str, tasks_on_host: int,
              env: dict) -> SlurmProcess:
        """Starts one task as an srun step on node `host`; its output into `log_path`."""
        del tasks_on_host  # the step's CPUs are Slurm's to give
        job, task = args[args.index("--job") + 1], args[args.index("--task") + 1]
        step_name = f"nbc-{job}-{task}"
        env = child_env({**self.env, **env})
        if self.cpus_per_task and not any(k in env for k in ("OPENBLAS_NUM_THREADS",
                                                              "OMP_NUM_THREADS")):
            env["OPENBLAS_NUM_THREADS"] = str(self.cpus_per_task)
        with open(log_path, "ab") as log:
            proc = spawn(self.step_argv(host, args, step_name), env=env,
                         stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
                         start_new_session=True)
        return SlurmProcess(self, step_name, proc)

    def cancel(self) -> None:
        """scancel the whole job; returns once squeue no longer lists it (or after 30 s)."""
        if self.job_id is None:
            return
        run_command(["scancel", self.job_id])
        deadline = time.monotonic() + _JOB_GONE_S
        while time.monotonic() < deadline:
            done = run_command(["squeue", "-h", "-j", self.job_id, "-o", "%i"])
            if not done.stdout.strip():
                return
            time.sleep(_POLL_S)

    def close(self) -> None:
        """Cancels the allocation (its remaining steps with it) and releases the watchdog.
        Idempotent; runs at exit too (no threads)."""
        if self._closed:
            return
        self._closed = True
        try:
            self.cancel()
        finally:
            if self._watchdog is not None:
                try:
                    self._watchdog.stdin.write(b"released\n")
                    self._watchdog.stdin.close()
                except OSError:
                    pass
                if not wait_until(self._watchdog, time.monotonic() + 5.0):
                    self._watchdog.kill()
                    self._watchdog.wait()
