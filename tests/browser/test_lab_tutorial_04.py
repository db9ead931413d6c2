"""Tutorial 04 after Run All in JupyterLab: the dashboard shows what its text says, the worker
killed (and why) and its recovery, not a blank table of stopped tasks."""
from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from lab_page import (
    WIDGET_ERROR_TEXT,
    kernel_pids,
    notebook_page,
    problems,
    run_all,
    servers_of,
    shutdown_kernel,
)

from process_checks import kill_pids, wait_gone

pytest.importorskip("playwright.sync_api", reason="playwright is not installed (.ci/run "
                    "installs the dev extras, and Debian's chromium)")

pytestmark = pytest.mark.timeout(300)

TUTORIAL = Path(__file__).resolve().parents[2] / "notebooks" / \
    "04_coordinator_fault_tolerance.ipynb"
CLOSED = ".jp-OutputArea-output:has-text('snapshot: closed at')"


def test_tutorial_04_shows_the_kill_and_the_recovery_after_run_all(jupyter_lab, browser, shots):
    shutil.copyfile(TUTORIAL, jupyter_lab["root"] / TUTORIAL.name)
    kernels_before, ours = kernel_pids(jupyter_lab), set()
    try:
        with notebook_page(browser, jupyter_lab, TUTORIAL.name,
                           viewport=(1400, 1400)) as (page, errors):
            try:
                assert run_all(page, timeout_s=200) == "done"
                ours = servers_of(kernel_pids(jupyter_lab) - kernels_before)
                assert problems(page, errors) == []
                snapshot = page.locator(CLOSED).first
                snapshot.wait_for(timeout=30_000)
                events = snapshot.locator("li.nbc-event")
                texts = [events.nth(i).inner_text() for i in range(events.count())]
                worker_1 = [t for t in texts if "/job:worker/task:1:" in t]
                assert worker_1 and "up → failed (killed by SIGKILL)" in worker_1[0], texts
                assert worker_1[-1].endswith("→ up"), texts
                # the table: every task up when it was closed (before cluster.stop())
                assert snapshot.locator("tr.nbc-task.nbc-state-up").count() == 3
                assert WIDGET_ERROR_TEXT not in page.inner_text("body")
                snapshot.scroll_into_view_if_needed()
                shots("dashboard-snapshot", snapshot)
            finally:
                shots("page", page)
    finally:
        shutdown_kernel(jupyter_lab, TUTORIAL.name)
        assert wait_gone(ours, timeout=20) == []
        kill_pids(ours)
