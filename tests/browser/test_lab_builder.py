"""The ClusterBuilder driven by its own buttons in JupyterLab: Launch brings up the
designed tasks (the embedded dashboard turns them green), Stop ends them."""
from __future__ import annotations

import pytest
from lab_page import (
    kernel_pids,
    notebook_page,
    problems,
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

BUILDER = ".nbcluster-builder"
ROWS = f"{BUILDER} .nbcluster-dashboard tr.nbc-task"
# every dashboard row inside the builder, by the state class nbc-state-<state>
STATES_JS = f"""() => [...document.querySelectorAll('{ROWS}')].map(tr =>
  ([...tr.classList].find(c => c.startsWith('nbc-state-')) || 'none').slice(10))"""


def _wait_states(page, test: str, what: str) -> list:
    try:
        page.wait_for_function(f"() => {{ const s = ({STATES_JS})(); return {test}; }}",
                               timeout=60_000)
    except PlaywrightTimeout:
        pytest.fail(f"builder's dashboard never showed {what}: {page.evaluate(STATES_JS)}")
    return page.evaluate(STATES_JS)


def test_launch_and_stop_buttons_run_the_designed_cluster(jupyter_lab, browser, shots):
    write_notebook(jupyter_lab["root"] / "builder.ipynb", [
        "from nbcluster.jupyter import ClusterBuilder\n"
        "builder = ClusterBuilder(name='clicked')\n"
        "builder.remove_job('worker')\n"
        "builder.add_job('worker', tasks=1)\n"
        "builder",
    ])
    kernels_before, ours = kernel_pids(jupyter_lab), set()
    try:
        with notebook_page(browser, jupyter_lab, "builder.ipynb",
                           viewport=(1400, 1200)) as (page, errors):
            try:
                assert run_all(page, timeout_s=60) == "done"
                root = page.locator(BUILDER)
                root.wait_for(timeout=30_000)
                # the design, and the cell that reproduces it, are shown before launching
                assert "%%tfserver cluster clicked" in root.locator("textarea").first.input_value()
                shots("design", root)

                root.locator("button:has-text('Launch')").click()
                states = _wait_states(page, "s.length === 2 && s.every(x => x === 'up')",
                                      "both tasks up")
                assert states == ["up", "up"]
                ours = servers_of(kernel_pids(jupyter_lab) - kernels_before)
                assert len(ours) == 2, f"task processes of the notebook's kernel: {ours}"
                shots("launched", root)

                root.locator("button:has-text('Stop')").click()
                _wait_states(page, "s.length === 0 || s.every(x => x !== 'up')",
                             "the tasks gone after Stop")
                assert wait_gone(ours, timeout=15) == [], "Stop left task processes running"
                shots("stopped", root)
                assert problems(page, errors) == []
            finally:
                shots("page", page)
        shutdown_kernel(jupyter_lab, "builder.ipynb")
    finally:
        kill_pids(ours)
