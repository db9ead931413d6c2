"""Driving a notebook in JupyterLab from Playwright, and finding the processes its kernels own.

Every wait here is bounded (Playwright's `evaluate` has no timeout of its own, so no call
awaits a JupyterLab promise that could hang; results land on `window` and are polled).
"""
from __future__ import annotations

import contextlib
import json
import urllib.request
from pathlib import Path
from typing import Optional

import nbformat

from process_checks import process_table

WAIT_KERNEL_JS = """async (path) => {
  let nb = null;
  for (let i = 0; i < 300 && !nb; i++) {
    const w = window.jupyterapp.shell.currentWidget;
    if (w && w.context && w.context.path === path) nb = w;
    else await new Promise(r => setTimeout(r, 100));
  }
  if (!nb) return 'notebook ' + path + ' never became the current widget';
  await nb.context.ready; await nb.sessionContext.ready;
  for (let i = 0; i < 600; i++) {
    const k = nb.sessionContext.session && nb.sessionContext.session.kernel;
    if (k && k.connectionStatus === 'connected' && k.status === 'idle') return 'ready';
    await new Promise(r => setTimeout(r, 100));
  }
  return 'the kernel never became connected and idle';
}"""

# Its boolean result is not trusted (a run with a raising cell once resolved true): the
# cells' own outputs and execution counts say how the run went (see `problems`).
START_RUN_JS = """([command, active]) => {
  const nb = window.jupyterapp.shell.currentWidget;
  if (active !== null) nb.content.activeCellIndex = active;
  window.__nbcRun = 'pending';
  window.jupyterapp.commands.execute(command).then(
    () => { window.__nbcRun = 'done'; }, err => { window.__nbcRun = 'failed: ' + err; });
}"""

KERNEL_IDLE_JS = """() => {
  const k = window.jupyterapp.shell.currentWidget.sessionContext.session.kernel;
  return k.status === 'idle';
}"""

CELLS_JS = """() => {
  const cells = window.jupyterapp.shell.currentWidget.content.model.cells;
  const report = [];
  for (let i = 0; i < cells.length; i++) {
    const c = cells.get(i);
    if (c.type !== 'code') continue;
    const outs = c.outputs.toJSON();
    report.push({
      index: i, count: c.executionCount, source: c.sharedModel.getSource().slice(0, 120),
      errors: outs.filter(o => o.output_type === 'error').map(o => o.ename + ': ' + o.evalue),
      mimes: outs.flatMap(o => Object.keys(o.data || {})),
    });
  }
  return report;
}"""

# JupyterLab renders an `error` output as stderr text (a red traceback), the same
# mimetype as a warning, so the DOM check looks for the traceback text in stderr outputs
# (which also catches a traceback a background thread printed); the model check in
# `problems` finds error outputs by their output_type.
STDERR_OUTPUT = ".jp-OutputArea-output[data-mime-type='application/vnd.jupyter.stderr']"
TRACEBACK_OUTPUT = f"{STDERR_OUTPUT}:has-text('Traceback (most recent call last)')"
WIDGET_ERROR_TEXT = "Error displaying widget"


# Whether the pointer at (x, y) reaches element e itself; both scripts below define it.
_REACHES_JS = """const reaches = (e, x, y) => { const top = document.elementFromPoint(x, y);
    return top !== null && (top === e || e.contains(top)); };"""

# A point (in viewport pixels) where the pointer reaches the element itself, not a
# label or arrow drawn over it, or null. Points on a 5x5 grid over the part of its box
# inside the viewport are tried, centre first; a path is tried along its length.
REACHABLE_POINT_JS = """e => {
  """ + _REACHES_JS + """
  const points = [];
  if (e.getTotalLength) {
    const m = e.getScreenCTM(), n = e.getTotalLength();
    for (const f of [0.5, 0.4, 0.6, 0.3, 0.7, 0.2, 0.8]) {
      const p = e.getPointAtLength(n * f);
      points.push([m.a * p.x + m.c * p.y + m.e, m.b * p.x + m.d * p.y + m.f]);
    }
  } else {
    const r = e.getBoundingClientRect();
    const left = Math.max(r.left, 0), right = Math.min(r.right, innerWidth);
    const top = Math.max(r.top, 0), bottom = Math.min(r.bottom, innerHeight);
    if (right - left < 2 || bottom - top < 2) return null;
    for (const fy of [0.5, 0.3, 0.7, 0.1, 0.9])
      for (const fx of [0.5, 0.3, 0.7, 0.1, 0.9])
        points.push([left + (right - left) * fx, top + (bottom - top) * fy]);
  }
  const hit = points.find(([x, y]) => reaches(e, x, y));
  return hit ? { x: hit[0], y: hit[1] } : null;
}"""


def hover_reachable(target) -> Optional[dict]:
    """Moves the pointer onto `target` (a Locator) at a point where it reaches the element
    itself, as a user would; returns that point ({"x", "y"}), or None (the pointer
    unmoved) where every point tried is covered. Unlike Locator.hover, which aims at the
    centre of the box and retries until its timeout when something else is drawn there."""
    target.scroll_into_view_if_needed()
    point = target.evaluate(REACHABLE_POINT_JS)
    if point is not None:
        target.page.mouse.move(point["x"], point["y"])
    return point


POINT_REACHES_JS = """([e, p]) => { """ + _REACHES_JS + """
  return reaches(e, p.x, p.y); }"""


def still_reaches(target, point: dict) -> bool:
    """Whether the pointer's `point` still reaches `target`: False where the page moved
    under it since (a redraw, a scroll, an output that grew above it)."""
    return target.evaluate(POINT_REACHES_JS, point)


def write_notebook(path: Path, sources: list) -> Path:
    """Writes a python3 notebook whose code cells are `sources`, without outputs."""
    nb = nbformat.v4.new_notebook(metadata={"kernelspec": {
        "name": "python3", "display_name": "Python 3", "language": "python"}})
    nb.cells = [nbformat.v4.new_code_cell(s) for s in sources]
    nbformat.write(nb, str(path))
    return path


@contextlib.contextmanager
def notebook_page(browser, lab: dict, name: str, viewport=(1400, 1000)):
    """Opens `name` (relative to the lab root) in a fresh page with its kernel ready.

    Yields (page, page_errors): page_errors collects the page's uncaught exceptions.
    """
    page = browser.new_page(viewport={"width": viewport[0], "height": viewport[1]})
    page.set_default_timeout(60_000)
    page_errors: list = []
    page.on("pageerror", lambda exc: page_errors.append(_with_origin(exc)))
    # A workspace of its own: the server keeps workspaces, and a restored one would bring
    # back an earlier test's notebook as the current widget.
    workspace = "".join(ch if ch.isalnum() else "-" for ch in name)
    try:
        page.goto(f"{lab['url']}/lab/workspaces/{workspace}/tree/{name}"
                  f"?reset&token={lab['token']}")
        page.wait_for_selector(".jp-Notebook .jp-Cell")
        # Running before the kernel's websocket is up opens "Select Kernel" and runs nothing.
        assert page.evaluate(WAIT_KERNEL_JS, name) == "ready"
        yield page, page_errors
    finally:
        page.close()


def run_all(page, timeout_s: float) -> str:
    """Runs every cell, waits for the run and then for the kernel to go idle.

    Returns "done", or "failed: <why>" when JupyterLab's run command itself failed.
    """
    return run_command(page, "notebook:run-all-cells", timeout_s)


def run_command(page, command: str, timeout_s: float, active: int | None = None) -> str:
    """Runs JupyterLab's `command` (e.g. "notebook:run-all-above") with cell `active`
    selected first; waits for it and then for the kernel to go idle. Returns as run_all."""
    page.evaluate(START_RUN_JS, [command, active])
    page.wait_for_function("() => window.__nbcRun !== 'pending'", timeout=timeout_s * 1000)
    page.wait_for_function(KERNEL_IDLE_JS, timeout=30_000)
    return page.evaluate("() => window.__nbcRun")


def cell_report(page) -> list:
    """Per code cell: index, execution count, source head, error outputs, output mimetypes."""
    return page.evaluate(CELLS_JS)


def _with_origin(exc) -> str:
    """An uncaught page exception with the frames it came from, so a failure names its
    source (ours under labextension/, or JupyterLab's) without a rerun."""
    frames = [line.strip() for line in (exc.stack or "").splitlines()[1:4]]
    return f"{exc} [{'; '.join(frames)}]" if frames else str(exc)


# ipywidgets 8.1's Box view (HBox/VBox) creates each child view asynchronously and, when one
# is ready, reads its panel's `widgets`; a box whose output was replaced meanwhile (a
# dashboard's snapshot, a re-run cell) has no layout left, so the late child throws there.
# The box is already off the page and nothing shown is wrong; the frames say it is that
# code (jupyterlab-manager's bundle), never ours.
_IPYWIDGETS_BOX_RACE = ("Cannot read properties of null (reading 'widgets')",
                        "@jupyter-widgets/jupyterlab-manager/static/")


def _upstream_box_race(error: str) -> bool:
    message, _, frames = error.partition(" [")
    return message == _IPYWIDGETS_BOX_RACE[0] and _IPYWIDGETS_BOX_RACE[1] in frames \
        and "nbcluster" not in frames


def page_faults(page_errors: list) -> list:
    """The page's uncaught exceptions, less ipywidgets' own box race (above)."""
    return [e for e in page_errors if not _upstream_box_race(e)]


def problems(page, page_errors: list, ran_before: int | None = None) -> list:
    """Everything that says the run or the rendering went wrong, as readable lines.

    Cells from index `ran_before` on need not have run yet (None: every cell must have).
    """
    found = [f"pageerror: {e}" for e in page_faults(page_errors)]
    for cell in cell_report(page):
        due = ran_before is None or cell["index"] < ran_before
        if cell["count"] is None and due:
            found.append(f"cell {cell['index']} never ran: {cell['source']!r}")
        found += [f"cell {cell['index']} raised {e}" for e in cell["errors"]]
    tracebacks = page.locator(TRACEBACK_OUTPUT)
    found += [f"traceback rendered: {text[-300:]!r}" for text in tracebacks.all_inner_texts()]
    if WIDGET_ERROR_TEXT in page.inner_text("body"):
        found.append(f"{WIDGET_ERROR_TEXT!r} on the page")
    if page.locator(".jp-Dialog").count():
        found.append(f"dialog open: {page.inner_text('.jp-Dialog')!r}")
    return found


def descendants(ancestor: int) -> set:
    """Pids of every process below `ancestor` in the process tree."""
    table, found, frontier = process_table(), set(), {ancestor}
    while frontier:
        frontier = {pid for pid, (ppid, _) in table.items() if ppid in frontier} - found
        found |= frontier
    return found


def shutdown_kernel(lab: dict, path: str) -> None:
    """Ends the session (and so the kernel) JupyterLab runs for notebook `path`."""
    def call(method: str, url: str):
        request = urllib.request.Request(f"{lab['url']}{url}", method=method,
                                         headers={"Authorization": f"token {lab['token']}"})
        with urllib.request.urlopen(request, timeout=10) as reply:
            return json.loads(reply.read() or b"null")
    for session in call("GET", "/api/sessions"):
        if session["path"] == path:
            call("DELETE", f"/api/sessions/{session['id']}")


def kernel_pids(lab: dict) -> set:
    """Pids of the lab server's ipykernel processes."""
    table = process_table()
    return {pid for pid in descendants(lab["pid"])
            if any("ipykernel" in arg for arg in table.get(pid, (0, []))[1])}


def servers_of(kernels: set) -> set:
    """Task processes (`python -m nbcluster.server`) below `kernels` or told to exit with
    one of them (so also those a dead kernel left behind, reparented)."""
    below = set()
    for pid in kernels:
        below |= descendants(pid)
    flags = {f"--exit-with-parent={pid}" for pid in kernels}
    return {pid for pid, (_, argv) in process_table().items()
            if "nbcluster.server" in argv and (pid in below or flags & set(argv))}
