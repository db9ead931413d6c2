"""Real TensorFlow beside nbcluster (tests/interop): each task and each client its own process.

TensorFlow comes from the `interop` extra (`pip install '.[interop]'`); the
tests skip, saying so, only where it is not installed. TF is never imported
into the test process: its programs run as subprocesses and print JSON.
"""
from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from nbcluster.launch import free_ports

from process_checks import kill_pids, wait_gone

ROOT = Path(__file__).resolve().parents[1]
PROGRAMS = Path(__file__).resolve().parent / "interop" / "programs"

requires_tensorflow = pytest.mark.skipif(
    importlib.util.find_spec("tensorflow") is None,
    reason="TensorFlow is not installed: pip install '.[interop]' (tensorflow-cpu)")

_TASK = {
    "nbcluster": "import nbcluster as tf",
    "tensorflow": "import tensorflow as tf",
}
_TASK_BODY = """
import json, sys
spec, job, index = json.loads(sys.argv[1]), sys.argv[2], int(sys.argv[3])
server = tf.distribute.Server(spec, job_name=job, task_index=index)
print("up", flush=True)
server.join()
"""


def environment() -> dict:
    """The tasks' and programs' environment: this checkout importable, TF quiet."""
    return dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2", CUDA_VISIBLE_DEVICES="",
                PYTHONPATH=os.pathsep.join(filter(None, [str(ROOT),
                                                         os.environ.get("PYTHONPATH")])))


class Tasks:
    """Starts servers of either kind as processes; `stop()` kills every one by pid."""

    def __init__(self) -> None:
        self.procs: list = []

    def start(self, kind: str, spec: dict, job: str, index: int, timeout: float = 90.0):
        proc = subprocess.Popen(
            [sys.executable, "-c", _TASK[kind] + _TASK_BODY, json.dumps(spec), job, str(index)],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=environment())
        self.procs.append(proc)
        line = _read_line(proc, timeout)
        if line.strip() != "up":
            raise RuntimeError(f"{kind} task {job}:{index} did not start: {line!r} "
                               f"{proc.stderr.read() if proc.poll() is not None else ''}")
        return proc

    def cluster(self, kinds: dict) -> dict:
        """Starts {job: [kind, ...]} on fresh loopback ports; returns the spec."""
        ports = iter(free_ports(sum(len(v) for v in kinds.values())))
        spec = {job: [f"127.0.0.1:{next(ports)}" for _ in tasks]
                for job, tasks in kinds.items()}
        for job, tasks in kinds.items():
            for index, kind in enumerate(tasks):
                self.start(kind, spec, job, index)
        return spec

    def stop(self) -> None:
        pids = [p.pid for p in self.procs]
        for proc in self.procs:
            proc.terminate()
        kill_pids(wait_gone(pids, 10))
        for proc in self.procs:
            proc.wait()


def _read_line(proc, timeout: float) -> str:
    box: list = []
    reader = threading.Thread(target=lambda: box.append(proc.stdout.readline()), daemon=True)
    reader.start()
    reader.join(timeout)
    if not box:
        proc.kill()
        raise TimeoutError(f"task process printed nothing within {timeout}s")
    return box[0]


def run_program(name: str, *args: str, timeout: float = 240.0) -> dict:
    """Runs tests/interop/programs/`name` with `args`; returns the JSON it printed last."""
    try:
        done = subprocess.run([sys.executable, str(PROGRAMS / name), *args], text=True,
                              capture_output=True, timeout=timeout, env=environment())
    except subprocess.TimeoutExpired as e:
        raise AssertionError(f"{name} did not end within {timeout}s: {e.stderr}") from None
    lines = [line for line in done.stdout.splitlines() if line.startswith("{")]
    assert done.returncode == 0 and lines, f"{name} failed ({done.returncode}):\n" \
                                          f"{done.stdout[-2000:]}\n{done.stderr[-4000:]}"
    return json.loads(lines[-1])
