"""The JupyterLab sidebar: a cluster a notebook starts shows up, task by task, and goes when
the notebook stops it, or stops when its Stop button is clicked twice (prebuilt lab
extension + the server extension, in real Chromium)."""
from __future__ import annotations

import pytest
from lab_page import (
    kernel_pids,
    notebook_page,
    problems,
    run_command,
    servers_of,
    shutdown_kernel,
    write_notebook,
)

from process_checks import alive, kill_pids, wait_gone

pytest.importorskip("playwright.sync_api", reason="playwright is not installed (.ci/run "
                    "installs the dev extras, and Debian's chromium)")

pytestmark = pytest.mark.timeout(240)

SIDEBAR_TAB = ".jp-SideBar.jp-mod-left li[data-id='nbcluster-sidebar']"
CLUSTER = "#nbcluster-sidebar .nbc-sidebar-cluster[data-name='sidebar-demo']"


def open_sidebar(page):
    """Shows the nbcluster panel in the left area (a click on an active tab would hide it)."""
    page.wait_for_selector(SIDEBAR_TAB)
    if page.locator("#nbcluster-sidebar").is_hidden():
        page.click(SIDEBAR_TAB)
    page.wait_for_selector("#nbcluster-sidebar", state="visible")


def test_sidebar_lists_the_notebooks_cluster_until_it_stops(jupyter_lab, browser, shots):
    name = "sidebar.ipynb"
    write_notebook(jupyter_lab["root"] / name, [
        "from nbcluster.launch import Cluster\n"
        "cluster = Cluster.local(ps=1, worker=2, name='sidebar-demo')\n"
        "sorted(cluster.pids.values())",
        "import nbcluster as tf\n"
        "graph = tf.Graph()\n"
        "with graph.as_default(), tf.device('/job:worker/task:1'):\n"
        "    y = tf.constant(2.0) * 3.0\n"
        "with tf.Session(cluster.target('worker', 0), graph=graph) as sess:\n"
        "    print([sess.run(y) for _ in range(3)])",
        "cluster.stop()",
    ])
    kernels_before, ours = kernel_pids(jupyter_lab), set()
    try:
        with notebook_page(browser, jupyter_lab, name) as (page, errors):
            try:
                open_sidebar(page)
                page.wait_for_selector("#nbcluster-sidebar .nbc-sidebar-empty:text-is("
                                       "'no clusters running')", timeout=15_000)
                assert run_command(page, "notebook:run-cell", 90, 0) == "done"
                kernels = kernel_pids(jupyter_lab) - kernels_before
                ours = servers_of(kernels)
                assert len(kernels) == 1 and len(ours) == 3, (kernels, ours)
                assert problems(page, errors, ran_before=1) == []

                # the sidebar polls every 2 s: the cluster appears without any reload
                page.locator(f"{CLUSTER} .nbc-sidebar-task.nbc-state-up").nth(2).wait_for(
                    timeout=15_000)
                cluster = page.locator(CLUSTER)
                assert cluster.locator(".nbc-sidebar-task").count() == 3
                text = cluster.inner_text()
                assert f"owner pid {next(iter(kernels))}" in text  # the notebook's kernel
                for pid in ours:
                    assert f"pid {pid}" in text
                for task in ("/job:ps/task:0", "/job:worker/task:0", "/job:worker/task:1"):
                    assert task in text
                # the step counters are live: three steps on worker:1 show within a poll or two
                assert run_command(page, "notebook:run-cell", 60, 1) == "done"
                assert problems(page, errors, ran_before=2) == []
                cluster.locator("[data-task='worker:1']:has-text('3 steps')").wait_for(
                    timeout=15_000)
                shots("sidebar", page)

                assert run_command(page, "notebook:run-cell", 60, 2) == "done"
                page.wait_for_selector(CLUSTER, state="detached", timeout=15_000)
                page.wait_for_selector("#nbcluster-sidebar .nbc-sidebar-empty",
                                       timeout=15_000)
                assert problems(page, errors) == []
                assert wait_gone(ours, timeout=20) == []  # stop() ended them
            finally:
                shots("page", page)
        shutdown_kernel(jupyter_lab, name)
    finally:
        kill_pids(ours)


def test_stop_in_the_sidebar_ends_the_cluster_after_a_second_click(jupyter_lab, browser, shots):
    name = "sidebar_stop.ipynb"
    write_notebook(jupyter_lab["root"] / name, [
        "from nbcluster.launch import Cluster\n"
        "cluster = Cluster.local(ps=1, worker=1, name='sidebar-stop')\n"
        "sorted(cluster.pids.values())",
        "print('states', sorted({s.state for s in cluster.status()}))",
    ])
    kernels_before, ours = kernel_pids(jupyter_lab), set()
    box = "#nbcluster-sidebar .nbc-sidebar-cluster[data-name='sidebar-stop']"
    try:
        with notebook_page(browser, jupyter_lab, name) as (page, errors):
            try:
                open_sidebar(page)
                assert run_command(page, "notebook:run-cell", 90, 0) == "done"
                ours = servers_of(kernel_pids(jupyter_lab) - kernels_before)
                assert len(ours) == 2, ours
                page.locator(f"{box} .nbc-sidebar-task.nbc-state-up").nth(1).wait_for(
                    timeout=15_000)
                button = page.locator(f"{box} button.nbc-sidebar-stop")
                button.click()  # the first click only asks
                page.wait_for_selector(f"{box} button.nbc-armed:text-is('Stop all tasks?')",
                                       timeout=5_000)
                page.wait_for_timeout(2_500)  # a poll redraws the sidebar: still armed
                assert page.locator(f"{box} button.nbc-armed").count() == 1
                assert all(alive(pid) for pid in ours)
                shots("armed", page)
                page.locator(f"{box} button.nbc-sidebar-stop").click()
                page.wait_for_selector(box, state="detached", timeout=20_000)
                assert wait_gone(ours, timeout=20) == []
                assert run_command(page, "notebook:run-cell", 60, 1) == "done"
                page.wait_for_selector(".jp-OutputArea-output:has-text(\"states ['stopped']\")",
                                       timeout=15_000)
                assert problems(page, errors) == []
            finally:
                shots("page", page)
        shutdown_kernel(jupyter_lab, name)
    finally:
        kill_pids(ours)
