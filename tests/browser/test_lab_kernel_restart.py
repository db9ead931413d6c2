"""Widgets never lie across a kernel restart asked from the notebook page: the dashboard and
the progress bars become static snapshots that say the kernel is gone (its tasks shown
stopped, and really gone), and the notebook saved then reopens with no widget error."""
from __future__ import annotations

import json

import pytest
from lab_page import (
    WIDGET_ERROR_TEXT,
    kernel_pids,
    notebook_page,
    page_faults,
    run_all,
    servers_of,
    shutdown_kernel,
    write_notebook,
)

from process_checks import kill_pids, wait_gone

pytest.importorskip("playwright.sync_api", reason="playwright is not installed (.ci/run "
                    "installs the dev extras, and Debian's chromium)")

pytestmark = pytest.mark.timeout(300)

WIDGET = "application/vnd.jupyter.widget-view+json"
GONE = ".jp-OutputArea-output:has-text('kernel gone (restarted from the page)')"
FINISHED = ".nbc-progress-snapshot:has-text('finished'):has-text('3/3')"
# neither awaited (evaluate has no timeout): the outcomes land on window
RESTART_JS = """() => {
  window.__nbcRestart = 'pending';
  window.jupyterapp.shell.currentWidget.sessionContext.restartKernel().then(
    () => { window.__nbcRestart = 'done'; }, e => { window.__nbcRestart = 'failed: ' + e; });
}"""
SAVE_JS = """() => {
  window.__nbcSaved = 'pending';
  window.jupyterapp.shell.currentWidget.context.save().then(
    () => { window.__nbcSaved = 'done'; }, e => { window.__nbcSaved = 'failed: ' + e; });
}"""
IDLE_JS = """() => {
  const k = window.jupyterapp.shell.currentWidget.sessionContext.session?.kernel;
  return !!k && k.connectionStatus === 'connected' && k.status === 'idle';
}"""


def test_a_restart_from_the_page_turns_the_widgets_into_kernel_gone_snapshots(
        jupyter_lab, browser, shots):
    path = write_notebook(jupyter_lab["root"] / "restart.ipynb", [
        "%load_ext nbcluster", "%%tfserver cluster rs\nworker: 2",
        "from nbcluster.progress import Progress\n"
        "with Progress(3, 'finished', mode='widget', min_interval=0) as done:\n"
        "    for _ in range(3): done.update()",
        "open_bar = Progress(10, 'unfinished', mode='widget', min_interval=0)\n"
        "open_bar.update(4)"])
    kernels_before, ours = kernel_pids(jupyter_lab), set()
    try:
        with notebook_page(browser, jupyter_lab, "restart.ipynb") as (page, errors):
            try:
                assert run_all(page, timeout_s=90) == "done"
                page.wait_for_function(
                    "() => document.querySelectorAll('.jp-OutputArea-output "
                    "tr.nbc-task.nbc-state-up').length === 2", timeout=60_000)
                # the closed bar is static already; the open one is a live widget
                assert page.locator(FINISHED).count() == 1
                page.locator(".jp-OutputArea-output .jupyter-widgets.widget-hprogress").wait_for(
                    timeout=10_000)
                ours = servers_of(kernel_pids(jupyter_lab) - kernels_before)
                assert len(ours) == 2, ours
                shots("before-restart", page)

                page.evaluate(RESTART_JS)
                page.wait_for_selector(GONE, timeout=30_000)
                dashboard = page.locator(f"{GONE}:has(tr.nbc-task)")
                assert dashboard.count() == 1
                assert dashboard.locator("tr.nbc-task.nbc-state-up").count() == 0
                assert dashboard.locator("tr.nbc-task.nbc-state-stopped").count() == 2
                assert "the tasks it started were stopped with it" in dashboard.inner_text()
                bar = page.locator(f"{GONE}:has-text('unfinished')")
                assert bar.count() == 1 and "4/10" in bar.inner_text()
                # no live widget view is left in the notebook
                assert page.locator(f".jp-OutputArea-output[data-mime-type='{WIDGET}']").count() \
                    == 0
                page.wait_for_function("() => window.__nbcRestart !== 'pending'", timeout=60_000)
                assert page.evaluate("() => window.__nbcRestart") == "done"
                page.wait_for_function(IDLE_JS, timeout=60_000)
                shots("after-restart", page)
                assert wait_gone(ours, timeout=20) == [], "the restart left task processes running"
                page.evaluate(SAVE_JS)
                page.wait_for_function("() => window.__nbcSaved !== 'pending'", timeout=30_000)
                assert page.evaluate("() => window.__nbcSaved") == "done"
                assert page_faults(errors) == []
            finally:
                shots("page", page)
        outputs = [o for c in json.loads(path.read_text())["cells"] if c["cell_type"] == "code"
                   for o in c["outputs"]]
        assert all(WIDGET not in o.get("data", {}) for o in outputs), outputs
        assert sum("kernel gone" in "".join(o.get("data", {}).get("text/html", ""))
                   for o in outputs) == 2

        with notebook_page(browser, jupyter_lab, "restart.ipynb") as (page, errors):
            page.wait_for_selector(GONE, timeout=30_000)
            assert page.locator(f"{GONE} tr.nbc-task.nbc-state-stopped").count() == 2
            assert page.locator(FINISHED).count() == 1
            assert WIDGET_ERROR_TEXT not in page.inner_text("body")
            shots("reopened", page)
            assert page_faults(errors) == []
    finally:
        shutdown_kernel(jupyter_lab, "restart.ipynb")
        kill_pids(ours)
