"""Jupyter tier: in a real kernel, a widget's display ends as a static snapshot.

Closed in a later cell, the dashboard's output in the saved notebook is the
snapshot HTML and no widget view (so reopening shows no "Error displaying
widget"); at kernel shutdown each display gets its snapshot as an
update_display_data before the kernel replies to the shutdown request, while
the front end still listens.
"""
from __future__ import annotations

import json
import queue
import time

import nbformat
import pytest
from jupyter_client.manager import start_new_kernel
from nbclient import NotebookClient

from process_checks import wait_gone

pytestmark = pytest.mark.timeout(180)

WIDGET = "application/vnd.jupyter.widget-view+json"


def test_a_saved_notebook_holds_the_snapshot_of_a_closed_dashboard(tmp_path):
    nb = nbformat.v4.new_notebook(metadata={"kernelspec": {
        "name": "python3", "display_name": "Python 3", "language": "python"}})
    nb.cells = [nbformat.v4.new_code_cell(source) for source in [
        "%load_ext nbcluster",
        "%%tfserver cluster demo\nworker: 1",
        "from nbcluster.jupyter import display\ndisplay.dashboard_for(demo).close()",
        "%tfserver stop demo",
    ]]
    NotebookClient(nb, timeout=120, startup_timeout=60, kernel_name="python3",
                   resources={"metadata": {"path": str(tmp_path)}}).execute()
    path = tmp_path / "saved.ipynb"
    nbformat.write(nb, path)
    saved = nbformat.read(path, as_version=4)
    [shown] = [o for o in saved.cells[1].outputs if o.output_type == "display_data"
               and "Cluster 'demo'" in o.data.get("text/plain", "")]
    assert WIDGET not in shown.data
    assert "snapshot: closed at" in shown.data["text/html"]
    assert 'class="nbc-task nbc-state-up" data-task="/job:worker/task:0"' in \
        shown.data["text/html"]
    assert not saved.cells[2].outputs  # the update went to the displaying cell


def _run(kc, code: str) -> str:
    msg_id = kc.execute(code)
    reply = kc.get_shell_msg(timeout=60)
    assert reply["content"]["status"] == "ok", reply["content"]
    return msg_id


def _drain(kc, until: float) -> list:
    messages = []
    while time.monotonic() < until:
        try:
            messages.append(kc.get_iopub_msg(timeout=0.5))
        except queue.Empty:
            break
    return messages


def test_kernel_shutdown_replaces_the_dashboard_with_its_snapshot(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    km, kc = start_new_kernel(kernel_name="python3", startup_timeout=60)
    try:
        _run(kc, "%load_ext nbcluster")
        shown_in = _run(kc, "%%tfserver cluster demo\nworker: 1")
        pids_in = _run(kc, "import json; print(json.dumps(list(demo.pids.values())))")
        before = _drain(kc, time.monotonic() + 30)
        [pids] = [json.loads(m["content"]["text"]) for m in before
                  if m["msg_type"] == "stream" and m["parent_header"].get("msg_id") == pids_in]
        # the dashboard is the cell's last widget: a slow start shows a progress bar first
        display_id = [m["content"]["transient"]["display_id"] for m in before
                      if m["msg_type"] == "display_data" and
                      m["parent_header"].get("msg_id") == shown_in and
                      WIDGET in m["content"]["data"]][-1]
        kc.shutdown()
        deadline = time.monotonic() + 30
        after = []
        while time.monotonic() < deadline and km.is_alive():
            after += _drain(kc, deadline)
        after += _drain(kc, time.monotonic() + 1)
    finally:
        kc.stop_channels()
        km.shutdown_kernel(now=True)
    kinds = [m["msg_type"] for m in after]
    updates = [i for i, m in enumerate(after) if m["msg_type"] == "update_display_data"
               and m["content"]["transient"]["display_id"] == display_id]
    assert len(updates) == 1, kinds
    assert updates[0] < kinds.index("shutdown_reply"), kinds  # not from atexit, too late
    data = after[updates[0]]["content"]["data"]
    assert WIDGET not in data and "snapshot: kernel stopped at" in data["text/html"]
    assert "nbc-state-up" not in data["text/html"]
    assert "the tasks it started were stopped with it" in data["text/html"]
    assert len(pids) == 1 and wait_gone(pids) == []
