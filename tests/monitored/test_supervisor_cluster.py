"""Supervisor across processes: 1 ps + 2 workers, each its own `python supervisor_trainer.py`
process (TF1's how-to trainer); the non-chief starts first and waits for the chief."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from nbcluster.launch import child_env
from nbcluster.launch.process import free_ports

from process_checks import kill_pids

pytestmark = pytest.mark.timeout(240)

TRAINER = Path(__file__).with_name("supervisor_trainer.py")
PROCESS_TIMEOUT_S = 180


class Task:
    """One task process; its stderr is read on a thread so a line can be waited for."""

    def __init__(self, args: list) -> None:
        self.proc = subprocess.Popen([sys.executable, str(TRAINER), *args], env=child_env(),
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=subprocess.PIPE, text=True)
        self.err_lines: list = []
        self._seen = threading.Condition()
        self._reader = threading.Thread(target=self._read_err, daemon=True)
        self._reader.start()

    def _read_err(self) -> None:
        for line in self.proc.stderr:
            with self._seen:
                self.err_lines.append(line)
                self._seen.notify_all()
        with self._seen:
            self._seen.notify_all()

    def wait_for_line(self, text: str, timeout: float) -> bool:
        with self._seen:
            return self._seen.wait_for(
                lambda: any(text in l for l in self.err_lines) or self.proc.poll() is not None,
                timeout) and any(text in l for l in self.err_lines)

    def finish(self, timeout: float) -> tuple:
        out = self.proc.stdout.read() if self.proc.wait(timeout) is not None else ""
        self._reader.join(10)
        return self.proc.returncode, out, "".join(self.err_lines)


def test_between_graph_supervisor_trains_checkpoints_and_every_process_exits(tmp_path):
    ps_port, chief_port, worker_port = free_ports(3)
    logdir = tmp_path / "train"
    common = [f"--ps_hosts=127.0.0.1:{ps_port}",
              f"--worker_hosts=127.0.0.1:{chief_port},127.0.0.1:{worker_port}",
              f"--logdir={logdir}", "--steps=150"]
    tasks = []
    try:
        tasks.append(Task(common + ["--job_name=ps", "--task_index=0"]))
        worker = Task(common + ["--job_name=worker", "--task_index=1"])
        tasks.append(worker)
        # The non-chief is up first and polls: it says so before the chief exists.
        assert worker.wait_for_line("Waiting for model to be ready", 90), worker.err_lines
        assert not logdir.exists()
        chief = Task(common + ["--job_name=worker", "--task_index=0"])
        tasks.append(chief)
        results = [t.finish(PROCESS_TIMEOUT_S) for t in (chief, worker)]
        tasks[0].proc.stdin.close()  # the workers are done: the ps may go
        results.append(tasks[0].finish(30))
    finally:
        kill_pids([t.proc.pid for t in tasks if t.proc.poll() is None])
    for rc, out, err in results:
        assert rc == 0, err[-3000:]
    chief_r, worker_r = (json.loads(out) for _, out, _ in results[:2])
    # one shared model: a worker that starts late (a loaded host) first sees it half
    # trained already, so the run's start is the higher of the two first losses
    start = max(chief_r["first_loss"], worker_r["first_loss"])
    for r in (chief_r, worker_r):
        assert r["final_loss"] < 0.5 * start, (r, start)
        assert r["local_steps"] > 0 and r["final_step"] >= 150
    # both trained the one model: the global step counts every worker's runs
    assert chief_r["local_steps"] + worker_r["local_steps"] >= 150
    names = os.listdir(logdir)
    assert "checkpoint" in names and "graph.pbtxt" in names
    assert any(n.startswith("events.out.tfevents.") for n in names)
    state = (logdir / "checkpoint").read_text()
    assert f'model_checkpoint_path: "{logdir}/model.ckpt-' in state, state
    step = int(state.split("model.ckpt-")[1].split('"')[0])
    # the chief's checkpoint thread saves at once, then every second
    assert 0 <= step <= chief_r["local_steps"] + worker_r["local_steps"], (state, results)
    assert (logdir / f"model.ckpt-{step}.index").is_file()
    # the chief's summaries and graph, as TensorBoard reads them
    from tensorboard.backend.event_processing import event_accumulator
    acc = event_accumulator.EventAccumulator(str(logdir), size_guidance={"scalars": 0})
    acc.Reload()
    losses = [e.value for e in acc.Scalars("train_loss")]
    assert losses and acc.Graph().node
    assert losses[-1] < losses[0]
