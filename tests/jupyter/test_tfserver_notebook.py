"""Jupyter tier: the magics in a real kernel, a notebook run headless with nbclient.

The notebook loads the extension, starts a 1 ps + 1 worker cluster, runs a
step on it, prints the task pids and stops it; afterwards the kernel and
every task process must be gone.
"""
from __future__ import annotations

import json

import nbformat
import pytest
from nbclient import NotebookClient
from nbclient.exceptions import CellExecutionError

from process_checks import alive, wait_gone

pytestmark = pytest.mark.timeout(180)

CELLS = [
    "%load_ext nbcluster.jupyter",
    "%%tfserver cluster demo\nps: 1\nworker: 1",
    """\
import json, os
import numpy as np
import nbcluster as tf
with tf.Graph().as_default():
    with tf.device("/job:ps/task:0"):
        w = tf.Variable(np.full((2, 2), 3.0, np.float32), name="w")
    with tf.device("/job:worker/task:0"):
        y = tf.reduce_sum(tf.matmul(tf.ones([1, 2]), w))
    with tf.Session(demo.target("worker", 0)) as sess:
        sess.run(tf.global_variables_initializer())
        print(json.dumps({"y": float(sess.run(y)), "kernel": os.getpid(),
                          "tasks": [s.pid for s in demo.status()]}))""",
    "%tfserver stop demo",
    "%tfserver list",
]


def _text(cell, name: str = None) -> str:
    return "".join(o.get("text", "") for o in cell.outputs
                   if o.output_type == "stream" and (name is None or o.name == name))


def test_notebook_cluster_step_and_stop(tmp_path):
    nb = nbformat.v4.new_notebook(metadata={"kernelspec": {
        "name": "python3", "display_name": "Python 3", "language": "python"}})
    nb.cells = [nbformat.v4.new_code_cell(source) for source in CELLS]
    NotebookClient(nb, timeout=120, startup_timeout=60, kernel_name="python3",
                   resources={"metadata": {"path": str(tmp_path)}}).execute()
    load, start, step, stop, listed = nb.cells

    assert not load.outputs
    # the cluster's display (a start-up slower than 0.5 s also shows a progress bar)
    [shown] = [o for o in start.outputs if o.output_type == "display_data"
               and "Cluster 'demo'" in o.data.get("text/plain", "")]
    assert "<table" in shown.data["text/html"] and "worker" in shown.data["text/html"]
    assert "Cluster 'demo'" in shown.data["text/plain"]
    assert shown.data["text/plain"].count(" up ") == 2

    facts = json.loads(_text(step, "stdout"))
    assert facts["y"] == 12.0 and len(facts["tasks"]) == 2
    assert not any(o.output_type == "error" for c in nb.cells for o in c.outputs)
    assert _text(stop, "stdout").strip() == "stopped demo"
    assert _text(listed, "stdout").strip() == "no clusters or servers started in this kernel"
    # Stopped by the magic, before the kernel went: nothing left for the parent watch.
    assert wait_gone(facts["tasks"], timeout=1.0) == []
    assert wait_gone([facts["kernel"]]) == [], "the kernel outlived the notebook"


def test_kernel_shutdown_stops_what_is_running(tmp_path):
    nb = nbformat.v4.new_notebook(metadata={"kernelspec": {
        "name": "python3", "display_name": "Python 3", "language": "python"}})
    nb.cells = [nbformat.v4.new_code_cell(source) for source in [
        "%load_ext nbcluster",  # the package root's hook, as DESIGN.md's notebooks write it
        "%%tfserver cluster left\nworker: 2",
        "import json, os; print(json.dumps([os.getpid()] + [s.pid for s in left.status()]))",
    ]]
    NotebookClient(nb, timeout=120, startup_timeout=60, kernel_name="python3",
                   resources={"metadata": {"path": str(tmp_path)}}).execute()
    pids = json.loads(_text(nb.cells[2], "stdout"))
    assert len(pids) == 3 and all(isinstance(p, int) for p in pids)
    assert wait_gone(pids) == [], [p for p in pids if alive(p)]


def test_a_failing_magic_stops_run_all(tmp_path):
    """Run All stops at a failing %tfserver cell (red, one plain line, no frames), as at
    any error: the cells after it do not run."""
    nb = nbformat.v4.new_notebook(metadata={"kernelspec": {
        "name": "python3", "display_name": "Python 3", "language": "python"}})
    nb.cells = [nbformat.v4.new_code_cell(source) for source in [
        "%load_ext nbcluster",
        "%%tfserver cluster demo\nworker: 1",
        "import json; print(json.dumps(list(demo.pids.values())))",
        "%tfserver logs demo nope:0",
        "print('not reached')",
        "%%tfserver cluster other\nps 1\nworker: 1",
    ]]
    client = NotebookClient(nb, timeout=120, startup_timeout=60, kernel_name="python3",
                            resources={"metadata": {"path": str(tmp_path)}})
    with pytest.raises(CellExecutionError) as info:
        client.execute()
    assert "tfserver: error: demo has no task nope:0" in str(info.value)
    pids, bad, after = json.loads(_text(nb.cells[2])), nb.cells[3], nb.cells[4]
    [error] = [o for o in bad.outputs if o.output_type == "error"]
    assert error.ename == "TfServerError"
    assert error.traceback == ["tfserver: error: demo has no task nope:0 (tasks: worker:0)"]
    assert not after.outputs and after.execution_count is None
    assert len(pids) == 1 and wait_gone(pids) == []  # the kernel went, and its tasks

    # the same with a bad cluster body, run from its cell on (allow_errors shows each cell)
    nb.cells = [nb.cells[0], nb.cells[5], nb.cells[4]]
    NotebookClient(nb, timeout=120, startup_timeout=60, kernel_name="python3",
                   allow_errors=True, resources={"metadata": {"path": str(tmp_path)}}).execute()
    [error] = [o for o in nb.cells[1].outputs if o.output_type == "error"]
    assert error.traceback == ["tfserver: error: line 1: 'ps 1': expected 'job: count' or "
                               "'job: [addresses]', e.g. 'worker: 2'"]
    assert _text(nb.cells[2]) == "not reached\n"  # allow_errors: it ran, as asked
