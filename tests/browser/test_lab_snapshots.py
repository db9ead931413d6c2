"""Failures fail and widgets never lie, as a JupyterLab user sees them.

A failing %%tfserver cell stops Run All; a closed dashboard, and one whose kernel is
shut down, become their static snapshots (no task "up" after the shutdown); the
notebook saved then and reopened shows them and no "Error displaying widget"; the
builder's local/SSH toggle sits on one line.
"""
from __future__ import annotations

import json

import pytest
from lab_page import (
    STDERR_OUTPUT,
    WIDGET_ERROR_TEXT,
    cell_report,
    kernel_pids,
    notebook_page,
    page_faults,
    run_all,
    servers_of,
    shutdown_kernel,
    write_notebook,
)

from process_checks import kill_pids, wait_gone

PlaywrightTimeout = pytest.importorskip(
    "playwright.sync_api", reason="playwright is not installed (.ci/run installs the dev "
    "extras, and Debian's chromium)").TimeoutError

pytestmark = pytest.mark.timeout(300)

WIDGET = "application/vnd.jupyter.widget-view+json"
DASHBOARD_ROWS = ".jp-OutputArea-output tr.nbc-task"
# not awaited (evaluate has no timeout): the outcome lands on window.__nbcSaved
SAVE_JS = """() => {
  window.__nbcSaved = 'pending';
  window.jupyterapp.shell.currentWidget.context.save().then(
    () => { window.__nbcSaved = 'done'; }, e => { window.__nbcSaved = 'failed: ' + e; });
}"""


def test_a_failing_magic_stops_run_all(jupyter_lab, browser, shots):
    write_notebook(jupyter_lab["root"] / "fails.ipynb", [
        "%load_ext nbcluster", "%%tfserver cluster bad\nps 1\nworker: 1", "print('after')"])
    try:
        with notebook_page(browser, jupyter_lab, "fails.ipynb") as (page, errors):
            run_all(page, timeout_s=60)
            load, bad, after = cell_report(page)
            assert load["count"] is not None and not load["errors"]
            assert bad["errors"] == ["TfServerError: line 1: 'ps 1': expected 'job: count' "
                                     "or 'job: [addresses]', e.g. 'worker: 2'"]
            assert after["count"] is None, "Run All went on past the failing cell"
            shown = page.locator(STDERR_OUTPUT).all_inner_texts()
            assert [t.strip() for t in shown] == [
                "tfserver: error: line 1: 'ps 1': expected 'job: count' or "
                "'job: [addresses]', e.g. 'worker: 2'"]  # one line, no frames
            shots("failed-cell", page)
            assert page_faults(errors) == []
    finally:
        shutdown_kernel(jupyter_lab, "fails.ipynb")


def _saved_outputs(path) -> list:
    cells = json.loads(path.read_text())["cells"]
    return [o for c in cells if c["cell_type"] == "code" for o in c["outputs"]]


def test_closed_and_stopped_widgets_leave_snapshots_that_a_reopened_notebook_shows(
        jupyter_lab, browser, shots):
    """The cluster's dashboard is closed by a cell, a second one stays live until the
    kernel is shut down (from the server, as closing a notebook does); each leaves its
    snapshot in place, and the notebook saved then reopens with no widget error.

    (A restart asked from the notebook page is not covered: JupyterLab drops every
    output future before asking the server, so what the kernel sends while stopping
    reaches no cell.)"""
    path = write_notebook(jupyter_lab["root"] / "snap.ipynb", [
        "%load_ext nbcluster", "%%tfserver cluster snap\nworker: 2",
        "from nbcluster.jupyter import ClusterDashboard\nlive = ClusterDashboard(snap)\nlive",
        "import time\nfrom nbcluster.jupyter import display\n"
        "t = time.monotonic()\n"
        "while 'up' not in display.dashboard_for(snap).states.values() and "
        "time.monotonic() - t < 30: time.sleep(0.1)\n"
        "display.dashboard_for(snap).close()"])
    kernels_before, ours = kernel_pids(jupyter_lab), set()
    try:
        with notebook_page(browser, jupyter_lab, "snap.ipynb") as (page, errors):
            assert run_all(page, timeout_s=90) == "done"
            closed = ".jp-OutputArea-output:has-text('snapshot: closed at')"
            page.wait_for_selector(closed, timeout=30_000)
            assert page.locator(f"{closed} tr.nbc-task.nbc-state-up").count() == 2
            page.wait_for_function(
                f"() => document.querySelectorAll('{DASHBOARD_ROWS}.nbc-state-up').length "
                f"=== 4", timeout=60_000)  # the closed one's snapshot, and the live one
            ours = servers_of(kernel_pids(jupyter_lab) - kernels_before)
            shots("closed-and-live", page)
            shutdown_kernel(jupyter_lab, "snap.ipynb")
            stopped = ".jp-OutputArea-output:has-text('snapshot: kernel stopped')"
            try:
                page.wait_for_selector(stopped, timeout=60_000)
            except PlaywrightTimeout:
                pytest.fail(f"no snapshot at shutdown: {page.inner_text('body')[-800:]}")
            assert page.locator(f"{stopped} tr.nbc-task.nbc-state-up").count() == 0
            assert page.locator(f"{stopped} tr.nbc-task.nbc-state-stopped").count() == 2
            shots("after-shutdown", page)
            page.evaluate(SAVE_JS)
            page.wait_for_function("() => window.__nbcSaved !== 'pending'", timeout=30_000)
            assert page.evaluate("() => window.__nbcSaved") == "done"
            assert page_faults(errors) == []
        assert wait_gone(ours, timeout=15) == [], "the shutdown left task processes running"
        shown = [o for o in _saved_outputs(path)
                 if "nbc-dashboard-table" in "".join(o.get("data", {}).get("text/html", ""))]
        assert len(shown) == 2 and all(WIDGET not in o["data"] for o in shown)

        with notebook_page(browser, jupyter_lab, "snap.ipynb") as (page, errors):
            page.wait_for_selector(".jp-OutputArea-output:has-text('snapshot: kernel stopped')",
                                   timeout=30_000)
            assert page.locator(".jp-OutputArea-output:has-text('snapshot: closed at')").count()
            assert WIDGET_ERROR_TEXT not in page.inner_text("body")
            shots("reopened", page)
            assert page_faults(errors) == []
    finally:
        shutdown_kernel(jupyter_lab, "snap.ipynb")
        kill_pids(ours)


def test_the_builder_toggle_stays_on_one_line(jupyter_lab, browser, shots):
    write_notebook(jupyter_lab["root"] / "toggle.ipynb", [
        "from nbcluster.jupyter import ClusterBuilder\nClusterBuilder(name='t')"])
    try:
        with notebook_page(browser, jupyter_lab, "toggle.ipynb",
                           viewport=(1000, 900)) as (page, errors):
            assert run_all(page, timeout_s=60) == "done"
            buttons = page.locator(".nbcluster-builder .widget-toggle-buttons button")
            buttons.first.wait_for(timeout=30_000)
            boxes = [buttons.nth(i).bounding_box() for i in range(buttons.count())]
            assert [b is not None for b in boxes] == [True, True]
            assert abs(boxes[0]["y"] - boxes[1]["y"]) < 1, boxes  # side by side
            assert boxes[1]["x"] > boxes[0]["x"] + boxes[0]["width"] - 1, boxes
            shots("toggle", page.locator(".nbcluster-builder"))
            assert page_faults(errors) == []
    finally:
        shutdown_kernel(jupyter_lab, "toggle.ipynb")
