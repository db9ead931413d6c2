"""The widgets as a user sees them: notebooks run in JupyterLab inside headless Chromium.

The harness tests prove the plumbing (ipywidgets and anywidget front ends load, error
outputs are detected); the tutorial test runs notebooks/02_cluster_and_placement.ipynb
and checks that the dashboard, placement graph and timeline render as live widgets.
"""
from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from lab_page import (
    STDERR_OUTPUT,
    TRACEBACK_OUTPUT,
    cell_report,
    hover_reachable,
    kernel_pids,
    notebook_page,
    problems,
    run_all,
    run_command,
    servers_of,
    shutdown_kernel,
    still_reaches,
    write_notebook,
)

from process_checks import kill_pids, wait_gone

PlaywrightTimeout = pytest.importorskip(
    "playwright.sync_api", reason="playwright is not installed (.ci/run installs the dev "
    "extras, and Debian's chromium)").TimeoutError

pytestmark = pytest.mark.timeout(300)

TUTORIAL = Path(__file__).resolve().parents[2] / "notebooks" / "02_cluster_and_placement.ipynb"

PROBE_WIDGET = '''\
import anywidget, traitlets
class Probe(anywidget.AnyWidget):
    _esm = """export default { render({ model, el }) {
      const d = document.createElement('div');
      d.className = 'nbc-probe';
      const show = () => { d.textContent = 'probe ' + model.get('value'); };
      show(); model.on('change:value', show); el.appendChild(d);
    } };"""
    value = traitlets.Int(3).tag(sync=True)
probe = Probe()
probe'''


def test_harness_renders_ipywidgets_and_anywidget(jupyter_lab, browser, shots):
    write_notebook(jupyter_lab["root"] / "harness.ipynb", [
        "import ipywidgets as w\nw.IntSlider(value=7, description='demo')",
        PROBE_WIDGET,
        "probe.value = 5",
        "import warnings; warnings.warn('only a warning')",
    ])
    with notebook_page(browser, jupyter_lab, "harness.ipynb") as (page, page_errors):
        assert run_all(page, timeout_s=60) == "done"
        slider = page.wait_for_selector(".jp-OutputArea-output .jupyter-widgets.widget-slider")
        assert "demo" in slider.inner_text()
        assert page.inner_text(".widget-readout") == "7"
        # the kernel's later assignment reached the view: the widget is live, not a snapshot
        page.wait_for_selector(".nbc-probe:text-is('probe 5')", timeout=10_000)
        assert "only a warning" in page.inner_text(STDERR_OUTPUT)
        shots("page", page)
        assert problems(page, page_errors) == []


def test_harness_detects_errors(jupyter_lab, browser):
    write_notebook(jupyter_lab["root"] / "raises.ipynb", [
        "x = 1", "raise ValueError('bad value 42')", "y = 2"])
    with notebook_page(browser, jupyter_lab, "raises.ipynb") as (page, page_errors):
        assert run_all(page, timeout_s=60) == "done"
        assert "bad value 42" in page.inner_text(TRACEBACK_OUTPUT)
        found = problems(page, page_errors)
        assert "cell 1 raised ValueError: bad value 42" in found
        assert any(p.startswith("traceback rendered:") and "bad value 42" in p for p in found)
        assert "cell 2 never ran: 'y = 2'" in found
        assert [c["count"] for c in cell_report(page)] == [1, 2, None]


# Where each widget's root sits: a widget view, or (when the widget manager failed) a
# static text/html fallback that may reuse the same class names.
OUTPUT_MIME_JS = """root => {
  const out = root.closest('.jp-OutputArea-output');
  return out ? (out.getAttribute('data-mime-type') || 'widget-view') : 'outside any output';
}"""


def test_tutorial_02_widgets_render_live(jupyter_lab, browser, shots):
    assert TUTORIAL.is_file(), f"{TUTORIAL} is missing"
    check_notebook_widgets(jupyter_lab, browser, shots, TUTORIAL)


def check_notebook_widgets(lab, browser, shots, source):
    """Runs notebook `source` in the lab and checks its dashboard, placement and timeline.

    Everything above the last code cell (the tutorials' clean-up) runs first, so the
    dashboard is checked while the cluster is up; the last cell then stops the cluster,
    and the dashboard must follow it live.
    """
    shutil.copyfile(source, lab["root"] / source.name)
    kernels_before, ours = kernel_pids(lab), set()
    try:
        with notebook_page(browser, lab, source.name, viewport=(1400, 1400)) as (page, errors):
            try:
                cleanup = max(cell["index"] for cell in cell_report(page))
                assert run_command(page, "notebook:run-all-above", 150, cleanup) == "done"
                kernels = kernel_pids(lab) - kernels_before
                ours = servers_of(kernels)
                assert kernels and ours, f"kernels {kernels}, their task processes {ours}"
                # fail fast, saying which cell raised
                assert problems(page, errors, ran_before=cleanup) == []
                check_dashboard(page, shots)
                check_placement(page, shots)
                check_timeline(page, shots)
                assert run_command(page, "notebook:run-cell", 60, cleanup) == "done"
                check_dashboard_follows_stop(page, shots)
                assert problems(page, errors) == []
            finally:
                shots("page", page)
        shutdown_kernel(lab, source.name)
        assert wait_gone(kernels, timeout=20) == [], "the notebook's kernel outlived its session"
        # task processes end with their kernel (--exit-with-parent), if not before
        assert wait_gone(ours | servers_of(kernels), timeout=20) == []
    finally:
        kill_pids(ours)


def _widget_root(page, selector: str, name: str):
    """The last element matching `selector`, once it is there; every match must sit in a
    widget view."""
    root = page.locator(selector).last
    root.wait_for(timeout=30_000)
    matches = page.locator(selector)
    for i in range(matches.count()):
        where = matches.nth(i).evaluate(OUTPUT_MIME_JS)
        assert where == "widget-view", f"{name} #{i} is not a live widget view: {where}"
    return root


def _tooltip_after_hover(root, targets) -> str:
    """Moves the pointer onto the first of `targets` it can reach, as a user would;
    returns the tooltip's text. Where the page moved under the pointer before the
    tooltip showed (a live widget redrew), the pointer moves onto the target again,
    as a user's would; a pointer still on the target with no tooltip fails."""
    tip = root.locator(".nbc-tooltip")
    for i in range(min(targets.count(), 30)):
        for _ in range(3):
            point = hover_reachable(targets.nth(i))
            if point is None:
                break  # covered: the next target
            try:
                tip.wait_for(state="visible", timeout=5_000)
                return tip.inner_text()
            except PlaywrightTimeout:
                if still_reaches(targets.nth(i), point):
                    raise
        else:
            raise AssertionError(f"the page moved under the pointer 3 times: {targets}")
    raise AssertionError(f"no element of {targets} can be hovered: all are covered")


DASHBOARD = ".nbcluster-dashboard:has(tr.nbc-task)"
# Each task row's state, from its class nbc-state-<state>.
ROW_STATES_JS = """root => [...root.querySelectorAll('tr.nbc-task')].map(tr =>
  ([...tr.classList].find(c => c.startsWith('nbc-state-')) || 'none').slice(10))"""


def _row_states(page) -> list:
    """The row states of every dashboard on the page, one list per dashboard."""
    roots = page.locator(DASHBOARD)
    return [roots.nth(i).evaluate(ROW_STATES_JS) for i in range(roots.count())]


def check_dashboard(page, shots) -> None:
    """Every dashboard shows each task up; the log button is answered by the kernel."""
    root = _widget_root(page, DASHBOARD, "ClusterDashboard")
    try:  # the first poll may still say "starting"
        page.wait_for_function(f"() => [...document.querySelectorAll('{DASHBOARD}')].every("
                               f"r => ({ROW_STATES_JS})(r).every(s => s === 'up'))",
                               timeout=10_000)
    except PlaywrightTimeout:
        pytest.fail(f"dashboard rows never all up: {_row_states(page)}")
    assert min(map(len, _row_states(page))) >= 2, _row_states(page)
    root.locator(".nbc-log-button").click()  # answered by Python in the kernel
    root.locator(".nbc-log pre").wait_for(timeout=15_000)
    assert "nbcluster.server" in root.locator(".nbc-log pre").inner_text()
    shots("dashboard", root)


def check_dashboard_follows_stop(page, shots) -> None:
    """After the clean-up cell the dashboards show no task up (pushed by their pollers)."""
    try:
        page.wait_for_function(f"() => [...document.querySelectorAll('{DASHBOARD}')].every("
                               f"r => ({ROW_STATES_JS})(r).every(s => s !== 'up'))",
                               timeout=10_000)
    except PlaywrightTimeout:
        pytest.fail(f"the last cell should stop the cluster, and the dashboard show it; "
                    f"rows: {_row_states(page)}")
    shots("dashboard-stopped", page.locator(DASHBOARD).last)


def check_placement(page, shots) -> None:
    """Every placement graph has nodes in device boxes; the last one drawn after the run
    has a cross-task edge, and a tooltip on hover."""
    root = _widget_root(page, "div.nbcluster-placement:has(path.nbc-edge-transfer)",
                        "PlacementView")
    _widget_root(page, "div.nbcluster-placement", "PlacementView")  # the others too
    views = page.locator("div.nbcluster-placement")
    for i in range(views.count()):
        assert views.nth(i).locator("g.nbc-node").count() >= 2, f"placement view {i}"
        assert views.nth(i).locator("g.nbc-group").count() >= 2, f"placement view {i}"
        shots(f"placement-{i}", views.nth(i))
    tip = _tooltip_after_hover(root, root.locator("g.nbc-node"))
    assert "device:" in tip, tip
    shots("placement-tooltip", root)


def check_timeline(page, shots) -> None:
    """The timeline: a lane per device, op bars, a transfer arrow, a tooltip on a bar."""
    root = _widget_root(page, "div.nbcluster-timeline", "Timeline")
    assert root.locator("g.nbc-lane").count() >= 2
    assert root.locator("rect.nbc-op").count() >= 2
    assert root.locator(".nbc-transfer").count() >= 1
    shots("timeline", root)
    tip = _tooltip_after_hover(root, root.locator("rect.nbc-op"))
    assert "device:" in tip and "duration:" in tip, tip
    shots("timeline-tooltip", root)
    tip = _tooltip_after_hover(root, root.locator("path.nbc-transfer-hit"))
    assert "from: " in tip and "to: " in tip and "in flight: " in tip, tip
