"""Jupyter tier: every tutorial notebook in notebooks/ runs headless with nbclient.

Each run fails on any cell error, must finish within two minutes, and leaves
nothing behind: a cell the test appends lists the kernel's live descendant
processes (every cluster task and worker script the notebook started must be
gone by then), and the kernel itself must be gone once nbclient is done.
Each notebook's outputs are then checked for what it set out to show.
"""
from __future__ import annotations

import json
import os
import re
import time
from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient

from process_checks import kill_pids, wait_gone

pytestmark = pytest.mark.timeout(300)

NOTEBOOKS = Path(__file__).resolve().parents[2] / "notebooks"
EXPECTED = ["01_quickstart", "02_cluster_and_placement", "03_parameter_server_training",
            "04_coordinator_fault_tolerance", "05_cluster_builder", "06_gpu_placement",
            "07_slurm"]
WIDGET = "application/vnd.jupyter.widget-view+json"
BUDGET_S = 120.0  # each notebook, end to end, on a 2-core machine

LEFTOVERS_CELL = '''\
import json as _json, os as _os

def _live_children(pid):
    kids = []
    for entry in _os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat") as f:
                    state, ppid = f.read().rsplit(")", 1)[1].split()[:2]
            except OSError:
                continue
            if int(ppid) == pid and state != "Z":
                kids.append(int(entry))
    return kids + [g for k in kids for g in _live_children(k)]

print(_json.dumps({"kernel": _os.getpid(), "children": _live_children(_os.getpid())}))
'''


def _paths() -> list:
    return sorted(NOTEBOOKS.glob("*.ipynb"))


def _stream(nb, name: str = None) -> str:
    return "".join(o.get("text", "") for c in nb.cells if c.cell_type == "code"
                   for o in c.outputs if o.output_type == "stream" and
                   (name is None or o.name == name))


def _rich(nb) -> list:
    """The data dicts of every display_data / execute_result, in order."""
    return [o.data for c in nb.cells if c.cell_type == "code" for o in c.outputs
            if o.output_type in ("display_data", "execute_result")]


def _widget_text(nb, prefix: str) -> list:
    """text/plain of the widget outputs whose text starts with `prefix`."""
    return [d["text/plain"] for d in _rich(nb) if WIDGET in d and
            d.get("text/plain", "").startswith(prefix)]


def _bar_text(nb, prefix: str) -> list:
    """text/plain of the progress bars whose text starts with `prefix`; a closed bar is
    static HTML (no widget view), so a saved notebook shows how it ended."""
    bars = [d for d in _rich(nb) if d.get("text/plain", "").startswith(prefix)]
    for d in bars:
        assert WIDGET not in d and "nbc-progress-snapshot" in d.get("text/html", ""), d
    return [d["text/plain"] for d in bars]


def test_the_tutorials_are_there():
    assert [p.stem for p in _paths()] == EXPECTED
    index = (NOTEBOOKS / "README.md").read_text()
    for name in EXPECTED:
        assert f"{name}.ipynb" in index, f"notebooks/README.md does not list {name}"


@pytest.mark.parametrize("path", _paths(), ids=lambda p: p.stem)
def test_stored_without_outputs(path):
    nb = nbformat.read(path, as_version=4)
    nbformat.validate(nb)
    assert nb.metadata.kernelspec.name == "python3"
    code = [c for c in nb.cells if c.cell_type == "code"]
    assert code and all(c.outputs == [] and c.execution_count is None for c in code)
    assert any(c.cell_type == "markdown" for c in nb.cells)


def _run(path: Path, cwd: Path):
    """Executes a copy of the notebook with the leftovers cell appended; (nb, seconds,
    leftovers report)."""
    nb = nbformat.read(path, as_version=4)
    nb.cells.append(nbformat.v4.new_code_cell(LEFTOVERS_CELL))
    start = time.monotonic()
    NotebookClient(nb, timeout=int(BUDGET_S), startup_timeout=60, kernel_name="python3",
                   resources={"metadata": {"path": str(cwd)}}).execute()
    seconds = time.monotonic() - start
    report = json.loads(nb.cells.pop().outputs[0]["text"])
    return nb, seconds, report


@pytest.mark.parametrize("path", _paths(), ids=lambda p: p.stem)
def test_notebook_runs_and_shows_what_it_says(path, tmp_path):
    cwd = tmp_path / "cwd"
    cwd.mkdir()
    nb, seconds, report = _run(path, cwd)
    try:
        assert report["children"] == [], "the notebook left processes running"
    finally:
        kill_pids(report["children"])
    assert wait_gone([report["kernel"]]) == [], "the kernel outlived the notebook"
    assert seconds < BUDGET_S, f"{path.stem} took {seconds:.0f}s"
    assert not any(o.output_type == "error" for c in nb.cells if c.cell_type == "code"
                   for o in c.outputs)
    assert list(cwd.iterdir()) == [], "the notebook wrote into its working folder"
    CHECKS[path.stem](nb)


def check_quickstart(nb) -> None:
    out, err = _stream(nb, "stdout"), _stream(nb, "stderr")
    assert "matches NumPy: True" in out
    # log_device_placement names every op's device, on stderr
    assert "y: (MatMul): /job:localhost/replica:0/task:0/device:CPU:0" in err
    assert re.search(r"^ {4}y +\d+ µs$", out, re.M), out  # the traced step lists y


def check_cluster_and_placement(nb) -> None:
    out = _stream(nb, "stdout")
    total, expected = re.search(r"total = ([\d.]+) \(NumPy: ([\d.]+)\)", out).groups()
    assert total == expected
    assert [d for d in _rich(nb) if "Cluster 'demo'" in d.get("text/plain", "")]
    for prefix in ("PlacementView (requested)", "PlacementView (actual)", "Timeline:",
                   "Cluster 'demo'"):
        shown = [d for d in _rich(nb) if WIDGET in d and
                 d.get("text/plain", "").startswith(prefix)]
        assert shown, f"no widget output whose text starts with {prefix!r}"
        assert all("text/html" in d for d in shown), prefix
    [before] = _widget_text(nb, "PlacementView (requested)")
    assert "3 devices" in before and "/job:worker/task:1" in before
    events = int(re.search(r"op events: (\d+)", out).group(1))
    assert events >= 6  # at least the matmul, add, relu, square, sum and the reads
    assert "stopped demo" in out


def check_parameter_server_training(nb) -> None:
    out = _stream(nb, "stdout")
    assert "exit codes: [0, 0]" in out
    # StopAtStepHook ends both at the shared global step 300, however they split it
    split = json.loads(re.search(r"steps per worker: (\[\d+, \d+\])", out).group(1))
    final = int(re.search(r"after (\d+) global steps", out).group(1))  # read from the ps
    assert all(n > 0 for n in split) and final == sum(split) and 300 <= final <= 304, \
        (split, final)
    assert re.search(r"latest checkpoint: model\.ckpt-\d+", out)
    first, last = map(float, re.search(r"first 10 steps ([\d.]+), of the last 10 ([\d.]+)",
                                       out).groups())
    assert last < 0.5 * first and "loss fell: True" in out
    assert "every step of both workers counted: True" in out
    [bar] = _bar_text(nb, "training ")
    assert bar.startswith("training 300/300 steps loss="), bar
    # the TensorBoard section: our event file, read by TensorBoard's EventAccumulator
    assert "TensorBoard reads scalars ['eval_accuracy', 'eval_loss'] histograms " \
           "['hidden_weights', 'softmax_weights'] and the graph: True" in out
    assert re.search(rf"eval_loss [\d.]+ at global step {final}\b", out), out
    assert "headless: %tensorboard --logdir " in out


def check_coordinator_fault_tolerance(nb) -> None:
    out = _stream(nb, "stdout")
    states = [json.loads(line.replace("'", '"')) for line in out.splitlines()
              if line.startswith("{'/job:")]
    after_kill, after_restart = states
    assert after_kill["/job:worker/task:1"] != "up" and after_kill["/job:worker/task:0"] == "up"
    assert set(after_restart.values()) == {"up"}
    assert "finished 400 of 400 steps" in out
    assert "final loss lower than the first: True" in out
    assert _widget_text(nb, "Cluster 'cluster-")  # the live dashboard was displayed
    # closed at the end, the dashboard's snapshot still shows the kill and the recovery
    [closed] = [d["text/plain"] for d in _rich(nb) if WIDGET not in d and
                "snapshot: closed at" in d.get("text/plain", "")]
    changes = closed.split("  changes:\n", 1)[1].splitlines()
    worker_1 = [line.split(" UTC ", 1)[1] for line in changes if "/job:worker/task:1:" in line]
    assert worker_1[0] == "/job:worker/task:1: up → failed (killed by SIGKILL)", changes
    assert worker_1[-1].endswith("→ up"), changes
    for bar in _bar_text(nb, "scheduled functions "):  # shown when join took > 0.5 s
        assert bar.startswith("scheduled functions 400/400 done"), bar


def check_cluster_builder(nb) -> None:
    out = _stream(nb, "stdout")
    assert _widget_text(nb, "ClusterBuilder")
    assert "{'worker': 2, 'ps': 2}" in out and "%%tfserver cluster cluster" in out
    assert "total = 60.0 (NumPy: 60.0)" in out
    assert "tasks that ran ops: ['/job:ps/replica:0/task:0', '/job:ps/replica:0/task:1', " \
           "'/job:worker/replica:0/task:0', '/job:worker/replica:0/task:1']" in out
    assert "task states: ['stopped', 'stopped', 'stopped', 'stopped']" in out


def check_gpu_placement(nb) -> None:
    out = _stream(nb, "stdout")
    assert "matches: True" in out
    if os.environ.get("NBCLUSTER_EXPECT_GPU") == "1":  # scripts/gpu_check.sh, on a GPU host
        assert "This machine has a GPU" in out, out
    if "This machine has a GPU" in out:
        assert "ran on the GPU as requested" in out
        assert "product and norm on the GPU: True" in out
    else:
        assert "No GPU here (CPU only)" in out
        assert "refused: Cannot assign a device for operation" in out
        assert "product and norm on the CPU: True" in out


def _slurm_answers() -> bool:
    import shutil
    import subprocess
    return shutil.which("sinfo") is not None and subprocess.run(
        ["sinfo", "-h"], capture_output=True, timeout=30).returncode == 0


def check_slurm(nb) -> None:
    out = _stream(nb, "stdout")
    assert "#SBATCH --ntasks=3" in out and "#SBATCH --time=10" in out
    if not _slurm_answers():  # .ci/run starts a local Slurm, so CI takes the branch below
        assert "No Slurm here" in out
        return
    assert "Slurm here: partition" in out
    total, expected = re.search(r"total = ([\d.]+) \(NumPy: ([\d.]+)\)", out).groups()
    assert total == expected == "144.0"
    assert _widget_text(nb, "Cluster 'hpc'")
    assert "worker:1 back at the same address: True" in out
    assert "states: ['up', 'up', 'up']" in out
    assert re.search(r"refused: Slurm job \d+ PENDING \(PartitionConfig", out), out
    assert "exit codes: [0, 0, 0]" in out and "in the queue after stop: nothing" in out


CHECKS = {"01_quickstart": check_quickstart,
          "02_cluster_and_placement": check_cluster_and_placement,
          "03_parameter_server_training": check_parameter_server_training,
          "04_coordinator_fault_tolerance": check_coordinator_fault_tolerance,
          "05_cluster_builder": check_cluster_builder,
          "06_gpu_placement": check_gpu_placement,
          "07_slurm": check_slurm}
