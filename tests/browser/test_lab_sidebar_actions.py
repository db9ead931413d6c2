"""The sidebar beyond a list: the New-cluster form starts a real cluster (owned by the Jupyter
server), its Dashboard and a task's Log open as main-area tabs, Restart restarts a task,
Insert connect code puts a cell into the notebook that really connects, Stop ends it; a
notebook's own cluster shows its owner, a killed task's reason, says why the sidebar cannot
restart it, and opens the notebook's Timeline as a panel."""
from __future__ import annotations

import json
import urllib.request

import pytest
from lab_page import (
    cell_report,
    notebook_page,
    page_faults,
    problems,
    run_command,
    shutdown_kernel,
    write_notebook,
)
from test_lab_sidebar import open_sidebar

from process_checks import alive, kill_pids, wait_gone

pytest.importorskip("playwright.sync_api", reason="playwright is not installed (.ci/run "
                    "installs the dev extras, and Debian's chromium)")

pytestmark = pytest.mark.timeout(300)

SIDEBAR = "#nbcluster-sidebar"


def _clusters(lab) -> list:
    request = urllib.request.Request(f"{lab['url']}/nbcluster/clusters",
                                     headers={"Authorization": f"token {lab['token']}"})
    with urllib.request.urlopen(request, timeout=20) as reply:
        return json.loads(reply.read())


def _pids(lab, name: str) -> dict:
    [entry] = [c for c in _clusters(lab) if c["name"] == name]
    return {(t["job"], t["index"]): t["pid"] for t in entry["tasks"]}


def _fill_form(page, jobs: list, name: str = "") -> None:
    """Fills the form's job rows with `jobs` [(name, count)] in order, then Start."""
    form = page.locator(f"{SIDEBAR} form.nbc-new-cluster")
    form.locator(".nbc-form-name").fill(name)
    rows = form.locator(".nbc-form-job")
    assert rows.count() == len(jobs)
    for i, (job, count) in enumerate(jobs):
        rows.nth(i).locator(".nbc-form-job-name").fill(job)
        rows.nth(i).locator(".nbc-form-job-count").fill(str(count))
    form.locator("button.nbc-form-start").click()


def test_the_form_starts_a_cluster_that_the_sidebar_opens_restarts_connects_and_stops(
        jupyter_lab, browser, shots):
    write_notebook(jupyter_lab["root"] / "connect.ipynb", ["import nbcluster as tf"])
    box = f"{SIDEBAR} .nbc-sidebar-cluster[data-name='formed']"
    pids: dict = {}
    try:
        with notebook_page(browser, jupyter_lab, "connect.ipynb") as (page, errors):
            try:
                open_sidebar(page)
                page.click(f"{SIDEBAR} button.nbc-sidebar-new")
                # a bad form: the server's 400 says which field, nothing starts
                _fill_form(page, [("ps", 1), ("bad job", 1)], "formed")
                error = page.locator(f"{SIDEBAR} .nbc-form-message.nbc-form-error")
                error.wait_for(timeout=15_000)
                assert "Bad new-cluster form: jobs: a job name is a letter" in \
                    error.inner_text() and "'bad job'" in error.inner_text()
                shots("bad-form", page.locator(SIDEBAR))
                assert _clusters(jupyter_lab) == []

                _fill_form(page, [("ps", 1), ("worker", 1)], "formed")
                page.locator(f"{box} .nbc-sidebar-task.nbc-state-up").nth(1).wait_for(
                    timeout=60_000)
                assert "started here" in page.inner_text(box)
                assert "2 tasks (2 up) · 2 CPU" in page.inner_text(box)
                pids = _pids(jupyter_lab, "formed")
                assert all(alive(pid) for pid in pids.values())
                shots("started", page.locator(SIDEBAR))

                # the dashboard as a main-area tab, from the REST data
                page.click(f"{box} button.nbc-sidebar-dashboard")
                panel = page.locator(".nbc-dashboard-panel")
                panel.locator("tr.nbc-task.nbc-state-up").nth(1).wait_for(timeout=15_000)
                assert page.locator(".lm-DockPanel-tabBar .lm-TabBar-tab:has-text("
                                    "'Dashboard: formed')").count() == 1
                shots("dashboard-panel", page)

                # a task's log in a tab
                page.click(f"{box} [data-task='worker:0'] button.nbc-sidebar-log")
                log = page.locator(".nbc-log-panel .nbc-log-text")
                page.wait_for_selector(".nbc-log-panel .nbc-log-text:has-text("
                                       "'serving /job:worker/task:0')", timeout=15_000)
                shots("log-tab", page)

                # restart, as %tfserver restart does: a new process at the same address
                page.click(f"{box} [data-task='worker:0'] button.nbc-sidebar-restart")
                page.wait_for_selector(f"{box} .nbc-sidebar-message:has-text("
                                       f"'/job:worker/task:0 restarted at grpc://')",
                                       timeout=60_000)
                after = _pids(jupyter_lab, "formed")
                assert after["worker", 0] != pids["worker", 0]
                assert after["ps", 0] == pids["ps", 0]
                assert wait_gone([pids["worker", 0]], timeout=10) == []
                pids = after
                page.click(".nbc-log-panel button.nbc-log-refresh")
                page.wait_for_function(
                    "() => (document.querySelector('.nbc-log-panel .nbc-log-text').textContent"
                    ".match(/serving \\/job:worker\\/task:0/g) || []).length === 2",
                    timeout=15_000)
                assert log.inner_text().count("serving /job:worker/task:0") == 2

                # insert connect code into the notebook, run it: it connects for real
                page.click(".lm-DockPanel-tabBar .lm-TabBar-tab:has-text('connect.ipynb')")
                page.click(f"{box} button.nbc-sidebar-insert")
                page.wait_for_selector(f"{box} .nbc-sidebar-message:has-text("
                                       f"'connect code inserted into connect.ipynb')")
                cells = cell_report(page)
                assert len(cells) == 2 and "tf.Cluster.connect(record=" in cells[1]["source"]
                assert run_command(page, "notebook:run-all-cells", 60) == "done"
                assert problems(page, errors) == []
                page.locator(".jp-OutputArea-output tr.nbc-task.nbc-state-up").nth(1).wait_for(
                    timeout=30_000)  # the connected cluster's dashboard, both tasks up
                shots("connected", page)

                # Stop: two clicks; the processes end; the dashboard tab says it ended
                page.click(f"{box} button.nbc-sidebar-stop")
                page.click(f"{box} button.nbc-sidebar-stop.nbc-armed")
                page.wait_for_selector(box, state="detached", timeout=30_000)
                assert wait_gone(list(pids.values()), timeout=20) == []
                page.click(".lm-DockPanel-tabBar .lm-TabBar-tab:has-text('Dashboard: formed')")
                page.wait_for_selector(".nbc-dashboard-panel .nbc-dashboard-ended:has-text("
                                       "'Cluster formed has ended')", timeout=15_000)
                ended = page.locator(".nbc-dashboard-panel")
                assert ended.locator("tr.nbc-task.nbc-state-ended").count() == 2
                assert ended.locator("td.nbc-state:text-is('up')").count() == 0
                assert "tasks up" not in ended.inner_text()
                shots("dashboard-ended", page)
                assert page_faults(errors) == []
            finally:
                shots("page", page)
    finally:
        shutdown_kernel(jupyter_lab, "connect.ipynb")
        kill_pids(list(pids.values()))


def test_a_notebooks_cluster_shows_its_owner_failure_and_timeline(jupyter_lab, browser, shots):
    write_notebook(jupyter_lab["root"] / "owned.ipynb", [
        "%load_ext nbcluster", "%%tfserver cluster owned\nps: 1\nworker: 1",
        "import nbcluster as tf\nfrom nbcluster.jupyter import Timeline\n"
        "graph = tf.Graph()\n"
        "with graph.as_default():\n"
        "    with tf.device('/job:ps/task:0'):\n"
        "        a = tf.constant([[1.0, 2.0]]) * 3.0\n"
        "    with tf.device('/job:worker/task:0'):\n"
        "        total = tf.reduce_sum(a * a)\n"
        "meta = tf.RunMetadata()\n"
        "with tf.Session(owned.target('worker', 0), graph=graph) as sess:\n"
        "    sess.run(total, options=tf.RunOptions(trace_level=tf.RunOptions.FULL_TRACE),\n"
        "             run_metadata=meta)\n"
        "Timeline(meta)",
        "owned.kill('worker', 0)"])
    box = f"{SIDEBAR} .nbc-sidebar-cluster[data-name='owned']"
    pids: dict = {}
    try:
        with notebook_page(browser, jupyter_lab, "owned.ipynb") as (page, errors):
            try:
                open_sidebar(page)
                assert run_command(page, "notebook:run-all-above", 90, 3) == "done"
                assert problems(page, errors, ran_before=3) == []
                page.locator(f"{box} .nbc-sidebar-task.nbc-state-up").nth(1).wait_for(
                    timeout=30_000)
                pids = _pids(jupyter_lab, "owned")
                assert "owned.ipynb" in page.inner_text(f"{box} .nbc-sidebar-cluster-owner")

                page.click(f"{box} button.nbc-sidebar-timeline")
                timeline = page.locator(".nbc-timeline-panel div.nbcluster-timeline")
                timeline.locator("rect.nbc-op").first.wait_for(timeout=30_000)
                assert "Timeline shown in owned.ipynb" in page.inner_text(".nbc-timeline-panel")
                shots("timeline-panel", page)

                page.click(".lm-DockPanel-tabBar .lm-TabBar-tab:has-text('owned.ipynb')")
                assert run_command(page, "notebook:run-cell", 60, 3) == "done"
                failure = page.locator(f"{box} [data-task='worker:0'] .nbc-sidebar-failure")
                failure.wait_for(timeout=30_000)  # the notebook's dashboard notes the exit
                assert failure.inner_text() == "/job:worker/task:0 was killed by SIGKILL"
                # its processes are the kernel's: the sidebar says where to restart it
                page.click(f"{box} [data-task='worker:0'] button.nbc-sidebar-restart")
                # "restarting …" first, then the server's answer: wait for the answer
                message = page.locator(f"{box} .nbc-sidebar-message",
                                       has_text="%tfserver restart owned worker:0")
                message.wait_for(timeout=15_000)
                assert "owned.ipynb" in message.inner_text()
                assert alive(pids["ps", 0])
                shots("owned", page.locator(SIDEBAR))
                assert page_faults(errors) == []
            finally:
                shots("page", page)
    finally:
        shutdown_kernel(jupyter_lab, "owned.ipynb")
        kill_pids([p for p in pids.values() if p])


def test_the_form_starts_an_ssh_cluster(jupyter_lab, browser, shots, sshd):
    import sys
    write_notebook(jupyter_lab["root"] / "ssh-form.ipynb", ["1"])
    box = f"{SIDEBAR} .nbc-sidebar-cluster[data-name='over-ssh']"
    pids: dict = {}
    try:
        with notebook_page(browser, jupyter_lab, "ssh-form.ipynb") as (page, errors):
            try:
                open_sidebar(page)
                page.click(f"{SIDEBAR} button.nbc-sidebar-new")
                form = page.locator(f"{SIDEBAR} form.nbc-new-cluster")
                form.locator(".nbc-form-launcher").select_option("ssh")
                assert form.locator(".nbc-form-ssh").is_visible()
                assert not form.locator(".nbc-form-slurm").is_visible()
                form.locator(".nbc-form-remove-job").first.click()  # no ps: one worker
                form.locator(".nbc-form-hosts").fill(sshd["host"])
                form.locator(".nbc-form-python").fill(sys.executable)
                form.locator(".nbc-form-port").fill(str(sshd["port"]))
                form.locator(".nbc-form-key").fill(sshd["key"])
                form.locator(".nbc-form-options").fill(
                    ", ".join(o for o in sshd["options"] if o != "-o"))
                _fill_form(page, [("worker", 1)], "over-ssh")
                page.locator(f"{box} .nbc-sidebar-task.nbc-state-up").wait_for(timeout=60_000)
                assert page.inner_text(f"{box} .nbc-sidebar-cluster-owner").startswith(
                    "ssh, started here")
                pids = _pids(jupyter_lab, "over-ssh")
                assert all(alive(pid) for pid in pids.values())
                shots("ssh-started", page.locator(SIDEBAR))
                page.click(f"{box} button.nbc-sidebar-stop")
                page.click(f"{box} button.nbc-sidebar-stop.nbc-armed")
                page.wait_for_selector(box, state="detached", timeout=30_000)
                assert wait_gone(list(pids.values()), timeout=20) == []
                assert page_faults(errors) == []
            finally:
                shots("page", page)
    finally:
        shutdown_kernel(jupyter_lab, "ssh-form.ipynb")
        kill_pids(list(pids.values()))
