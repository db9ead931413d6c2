"""Runs one corpus program the way its docstring says: each task its own process on
127.0.0.1, started in a random order, trainers checked for their final loss and a
clean exit, servers ended with SIGTERM; `--tensorflow` runs the same script on
TensorFlow instead (only its import line changed).

Usage: python -m nbcluster.examples.run NAME [--tensorflow] [--seed N] [--timeout S]
Prints one JSON line: {"program", "implementation", "ok", "wall_s", "losses", ...};
exits 0 when every trainer reached the loss and every process ended cleanly.
Rule: every process it starts is ended by pid before it returns, whatever happens.
"""
from __future__ import annotations

import argparse
import json
import os
import random
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from nbcluster.examples.corpus import HERE, PROGRAMS, Program
from nbcluster.launch.process import free_ports

IMPORT_LINE = "import nbcluster as tf\n"
TF_IMPORTS = {"v1": "import tensorflow.compat.v1 as tf\ntf.disable_v2_behavior()\n"}
LOSS = re.compile(r"^final loss: ([-+0-9.eEnaif]+)\s*$", re.M)


@dataclass
class Task:
    job: str
    index: int
    argv: list
    env: dict
    log: Path
    trains: bool
    proc: subprocess.Popen | None = None


def cluster_of(program: Program) -> dict:
    ports = iter(free_ports(sum(program.jobs.values())))
    return {job: [f"127.0.0.1:{next(ports)}" for _ in range(n)]
            for job, n in program.jobs.items()}


def tasks_of(program: Program, script: Path, cluster: dict, workdir: Path) -> list:
    """The processes to start: one per task, plus the client of an in-graph program."""
    roles = [(job, i) for job, n in program.jobs.items() for i in range(n)]
    if program.client:
        roles.append(("client", 0))
    tasks = []
    for job, index in roles:
        argv = [sys.executable, str(script), *program.args]
        # A served task's checkpoint root is its working directory, as from a user's shell;
        # named here so that an inherited NBCLUSTER_CHECKPOINT_DIR cannot point elsewhere.
        env = dict(os.environ, NBCLUSTER_CHECKPOINT_DIR=str(workdir))
        if program.launch == "flags":
            argv += [f"--ps_hosts={','.join(cluster['ps'])}",
                     f"--worker_hosts={','.join(cluster['worker'])}",
                     f"--job_name={job}", f"--task_index={index}"]
        else:
            env["TF_CONFIG"] = json.dumps({"cluster": cluster,
                                           "task": {"type": job, "index": index}})
        trains = job in program.trainers or job == "client"
        tasks.append(Task(job, index, argv, env, workdir / f"{job}-{index}.log", trains))
    return tasks


def tensorflow_copy(program: Program, workdir: Path) -> Path:
    """The script with its nbcluster import swapped for TensorFlow's, beside its data module."""
    text = program.script.read_text()
    if IMPORT_LINE not in text:
        raise SystemExit(f"{program.script} has no line {IMPORT_LINE.strip()!r}")
    copy = workdir / "program" / program.script.name
    copy.parent.mkdir()
    copy.write_text(text.replace(IMPORT_LINE, TF_IMPORTS[program.tensorflow], 1))
    shutil.copy(HERE / "mnist_data.py", copy.parent)
    return copy


def start(task: Task, workdir: Path) -> None:
    with open(task.log, "wb") as log:
        task.proc = subprocess.Popen(task.argv, env=task.env, cwd=workdir, stdout=log,
                                     stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)


def end_all(tasks: list, grace: float = 10.0) -> None:
    """SIGTERM every task still running, then SIGKILL what is left after `grace` s."""
    running = [t.proc for t in tasks if t.proc is not None and t.proc.poll() is None]
    for proc in running:
        proc.send_signal(signal.SIGTERM)
    deadline = time.monotonic() + grace
    for proc in running:
        try:
            proc.wait(max(0.1, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def run(program: Program, tensorflow: bool, seed: int, timeout: float) -> dict:
    workdir = Path(tempfile.mkdtemp(prefix=f"nbcluster-{program.name}-"))
    script = tensorflow_copy(program, workdir) if tensorflow else program.script
    tasks = tasks_of(program, script, cluster_of(program), workdir)
    order = list(tasks)
    random.Random(seed).shuffle(order)
    began = time.monotonic()
    result = {"program": program.name, "implementation": "tensorflow" if tensorflow
              else "nbcluster", "seed": seed,
              "order": [f"{t.job}:{t.index}" for t in order]}
    try:
        for task in order:
            start(task, workdir)
            time.sleep(random.Random(seed + task.index).uniform(0.0, 0.3))
        trainers = [t for t in tasks if t.trains]
        deadline = began + timeout
        while any(t.proc.poll() is None for t in trainers) and time.monotonic() < deadline:
            if any(t.proc.poll() not in (None, 0) for t in trainers):
                break  # a trainer failed: the others may wait on it forever
            time.sleep(0.1)
        result["wall_s"] = round(time.monotonic() - began, 2)
        result["timed_out"] = [f"{t.job}:{t.index}" for t in trainers if t.proc.poll() is None]
    finally:
        end_all(tasks)
    return judge(program, tasks, result, workdir)


def judge(program: Program, tasks: list, result: dict, workdir: Path) -> dict:
    """ok: every trainer exited 0 with a low enough final loss, every server ended on
    the SIGTERM it was sent (exit 0, or killed by that signal), none needed SIGKILL."""
    problems, losses = [], {}
    for t in tasks:
        name, code, text = f"{t.job}:{t.index}", t.proc.returncode, t.log.read_text("utf-8",
                                                                                     "replace")
        if t.trains:
            found = LOSS.findall(text)
            if code != 0 or not found:
                problems.append(f"{name} exited {code}" + ("" if found else ", no final loss"))
            else:
                losses[name] = float(found[-1])
                if not losses[name] <= program.max_loss:
                    problems.append(f"{name} final loss {losses[name]} > {program.max_loss}")
        elif code not in (0, -signal.SIGTERM):
            problems.append(f"{name} (a server) exited {code}, not on SIGTERM")
        if problems and problems[-1].startswith(name):
            print(f"--- {name} log ({t.log}) ---\n{text[-4000:]}", file=sys.stderr)
    result.update(ok=not problems, losses=losses, problems=problems)
    if result["ok"]:
        shutil.rmtree(workdir, ignore_errors=True)
    else:
        result["logs"] = str(workdir)
    return result


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("name", choices=sorted(PROGRAMS))
    parser.add_argument("--tensorflow", action="store_true",
                        help="run it on TensorFlow (pip install tensorflow-cpu)")
    parser.add_argument("--seed", type=int, default=None, help="the start order's seed")
    parser.add_argument("--timeout", type=float, default=240.0,
                        help="seconds the trainers may take")
    args = parser.parse_args(argv)
    program = PROGRAMS[args.name]
    if args.tensorflow and program.tensorflow is None:
        print(json.dumps({"program": program.name, "implementation": "tensorflow",
                          "ok": None, "skipped": "needs what only nbcluster offers"}))
        return 0
    seed = args.seed if args.seed is not None else random.randrange(1 << 16)
    result = run(program, args.tensorflow, seed, args.timeout)
    print(json.dumps(result))
    return 0 if result["ok"] else 1


if __name__ == "__main__":
    sys.exit(main())
