"""PlacementView and Timeline at real size, in JupyterLab inside headless Chromium.

A 2,000-op training graph (a deep MLP, variables on 2 ps tasks) must open readable without
a click: every label drawn at 10 px or more, every node inside the frame; the dark theme's
labels must contrast 4.5:1 with what is under them (from computed styles); the search box
must find an op inside folded scopes; a narrower window must refit the view. A Timeline of
two traced `run` calls must show both side by side, with the _Recv waits hatched.
"""
from __future__ import annotations

import re

import pytest
from lab_page import (
    hover_reachable,
    notebook_page,
    problems,
    run_all,
    shutdown_kernel,
    write_notebook,
)

pytest.importorskip("playwright.sync_api", reason="playwright is not installed (.ci/run "
                    "installs the dev extras, and Debian's chromium)")

pytestmark = pytest.mark.timeout(300)

MLP = '''\
import numpy as np
import nbcluster as tf
from nbcluster.jupyter import PlacementView, Timeline

def mlp(layers, width=16):
    """A relu MLP trained by Adam, its variables spread over the 2 ps tasks."""
    graph = tf.Graph()
    with graph.as_default():
        with tf.device(tf.train.replica_device_setter(
                ps_tasks=2, worker_device="/job:worker/task:0")):
            x = tf.placeholder(tf.float32, [None, width], name="x")
            y = tf.placeholder(tf.float32, [None, 1], name="y")
            h = x
            for i in range(layers):
                with tf.variable_scope(f"layer_{i}"):
                    w = tf.get_variable("w", [width, width],
                                        initializer=tf.glorot_uniform_initializer())
                    b = tf.get_variable("b", [width], initializer=tf.zeros_initializer())
                    h = tf.nn.relu(tf.matmul(h, w) + b)
            with tf.variable_scope("out"):
                pred = tf.matmul(h, tf.get_variable("w", [width, 1]))
            loss = tf.reduce_mean(tf.square(pred - y), name="loss")
            step = tf.train.get_or_create_global_step()
            train = tf.train.AdamOptimizer(0.01).minimize(loss, global_step=step)
            init = tf.global_variables_initializer()
    return graph, x, y, train, init

big, *_ = mlp(42)
print(len(big.get_operations()), "ops")
view = PlacementView(big)
view'''

TRACED = '''\
graph, x, y, train, init = mlp(3)
options = tf.RunOptions(trace_level=tf.RunOptions.FULL_TRACE, output_partition_graphs=True)
metas = []
with tf.Session(viz.target("worker", 0), graph=graph) as sess:
    sess.run(init)
    for _ in range(2):
        metas.append(tf.RunMetadata())
        sess.run(train, {x: np.ones((8, 16), np.float32), y: np.ones((8, 1), np.float32)},
                 options=options, run_metadata=metas[-1])
timeline = Timeline(metas)
timeline'''

TIMED = "PlacementView(run_metadata=metas[1], graph=graph, color_by='time')"

# The label font sizes as drawn (computed size × the SVG's scale) and whether each node
# lies inside the frame, for one placement view.
MEASURE_JS = """root => {
  const frame = root.querySelector('.nbc-frame').getBoundingClientRect();
  const within = r => r.left >= frame.left - 0.5 && r.right <= frame.right + 0.5
    && r.top >= frame.top - 0.5 && r.bottom <= frame.bottom + 0.5;
  const sizes = [];
  for (const t of root.querySelectorAll('svg.nbc-svg text')) {
    const r = t.getBoundingClientRect();
    if (!t.textContent || !r.width || !within(r)) continue;
    sizes.push(parseFloat(getComputedStyle(t).fontSize) * t.getScreenCTM().a);
  }
  const nodes = [...root.querySelectorAll('g.nbc-node')];
  return { sizes, nodes: nodes.length,
           outside: nodes.filter(n => !within(n.getBoundingClientRect()))
                         .map(n => n.getAttribute('data-id')),
           minimap: getComputedStyle(root.querySelector('.nbc-minimap')).display,
           frameWidth: frame.width,
           transform: root.querySelector('.nbc-stage').getAttribute('transform') };
}"""

# WCAG contrast of each visible label with what is drawn under it: a node's label on its
# rect; a box title on the box's tint over the frame; an edge label on its halo (the
# frame's colour). Colours come from computed styles; alpha is composited.
CONTRAST_JS = """root => {
  const parse = c => { const m = c.match(/rgba?\\(([^)]+)\\)/); if (!m) return null;
    const v = m[1].split(/[ ,\\/]+/).filter(Boolean).map(Number);
    return [v[0], v[1], v[2], v.length > 3 ? v[3] : 1]; };
  const over = (top, bottom) => top.slice(0, 3).map((c, i) => c * top[3] + bottom[i] * (1 - top[3]))
    .concat([1]);
  const lum = c => { const f = x => { x /= 255; return x <= 0.04045 ? x / 12.92
    : Math.pow((x + 0.055) / 1.055, 2.4); }; return 0.2126 * f(c[0]) + 0.7152 * f(c[1]) + 0.0722 * f(c[2]); };
  const ratio = (a, b) => { const [h, l] = [lum(a), lum(b)].sort((x, y) => y - x); return (h + 0.05) / (l + 0.05); };
  const frameBg = parse(getComputedStyle(root.querySelector('.nbc-frame')).backgroundColor);
  const fillOf = (el, under) => { const s = getComputedStyle(el); const c = parse(s.fill);
    if (!c) return under; c[3] *= parseFloat(s.fillOpacity); return over(c, under); };
  const out = [];
  for (const t of root.querySelectorAll('svg.nbc-svg text')) {
    if (!t.textContent) continue;
    let under = frameBg;
    const node = t.closest('g.nbc-node');
    const box = t.closest('g.nbc-group, g.nbc-scope-box');
    if (node) under = fillOf(node.querySelector('rect'), frameBg);
    else if (box) under = fillOf(box.querySelector('rect'), frameBg);
    const ink = over(parse(getComputedStyle(t).fill), under);
    out.push({ text: t.textContent, kind: node ? 'node' : box ? 'box' : 'edge',
               ratio: ratio(ink, under) });
  }
  return { labels: out, light: document.body.dataset.jpThemeLight };
}"""

# Each label's box on screen (ops' and transfer sizes'), per timeline, for the overlap check.
LABEL_BOXES_JS = """root => { const plot = root.querySelector('svg').getBoundingClientRect();
  return [...root.querySelectorAll('text.nbc-op-label, text.nbc-transfer-label')]
    .map(t => { const r = t.getBoundingClientRect();
                return [r.left, r.top, r.right, r.bottom, t.textContent]; })
    .filter(b => b[2] > plot.left && b[0] < plot.right); }"""  # clipped ones are not drawn


def overlapping(boxes) -> list:
    found = []
    for i, a in enumerate(boxes):
        for b in boxes[i + 1:]:
            if a[0] < b[2] - 0.5 and b[0] < a[2] - 0.5 and a[1] < b[3] - 0.5 and b[1] < a[3] - 0.5:
                found.append((a[4], b[4]))
    return found


def settled(page, root) -> dict:
    """Waits until the view has chosen its fold level; returns MEASURE_JS's figures."""
    page.wait_for_function("r => r.dataset.settled === 'yes'", arg=root.element_handle(),
                           timeout=30_000)
    return root.evaluate(MEASURE_JS)


def test_graphs_at_real_size(jupyter_lab, browser, shots):
    write_notebook(jupyter_lab["root"] / "graphs.ipynb", [
        "%load_ext nbcluster", "%%tfserver cluster viz\nps: 2\nworker: 1", MLP, TRACED, TIMED,
        "%tfserver stop --all"])
    try:
        with notebook_page(browser, jupyter_lab, "graphs.ipynb",
                           viewport=(1400, 1000)) as (page, errors):
            assert run_all(page, timeout_s=200) == "done"
            assert problems(page, errors) == []
            views = page.locator("div.nbcluster-placement")
            assert views.count() == 2
            big = views.first
            big.scroll_into_view_if_needed()
            first = settled(page, big)
            shots("placement-2000-ops", big)
            summary = big.locator(".nbc-summary").inner_text()
            assert int(re.search(r"(\d+) ops", summary)[1]) >= 2000, summary
            # readable without a click: every label 10 px or more, every node in the frame
            assert first["nodes"] >= 8 and first["sizes"], first
            assert min(first["sizes"]) >= 10, sorted(first["sizes"])[:5]
            assert first["outside"] == [], first
            # transfers bundled: one edge per pair of devices, labelled count · bytes
            bundles = big.locator("path.nbc-bundle")
            assert 2 <= bundles.count() <= 6, bundles.count()
            assert big.locator("text.nbc-transfer-label",
                               has_text=re.compile(r"^\d+ tensors\s*[\d.]+ (B|KiB|MiB)$")).count() >= 2
            assert hover_reachable(bundles.first), "every point of the bundle is covered"
            tip = big.locator(".nbc-tooltip")
            tip.wait_for(state="visible", timeout=5_000)
            assert re.search(r"\d+ tensors? sent, [\d.]+ (B|KiB|MiB) in all", tip.inner_text())
            shots("placement-bundle-tooltip", big)
            page.mouse.move(0, 0)

            check_dark_contrast(page, big, shots)
            check_search(page, big, shots)
            check_refit_on_resize(page, big, first, shots)
            check_timeline(page, shots)
            timed = views.nth(1)
            timed.scroll_into_view_if_needed()
            settled(page, timed)
            assert timed.locator(".nbc-color-by").input_value() == "time"
            assert "time: 0" in timed.locator(".nbc-legend").inner_text()
            shots("placement-by-time", timed)
            assert problems(page, errors) == []
    finally:
        shutdown_kernel(jupyter_lab, "graphs.ipynb")


def check_dark_contrast(page, big, shots) -> None:
    page.evaluate("() => { window.jupyterapp.commands.execute('apputils:change-theme',"
                  " {theme: 'JupyterLab Dark'}); }")
    page.wait_for_function("() => document.body.dataset.jpThemeLight === 'false'",
                           timeout=30_000)
    page.wait_for_timeout(500)  # the theme's stylesheet applies after the flag
    report = big.evaluate(CONTRAST_JS)
    assert report["light"] == "false"
    kinds = {label["kind"] for label in report["labels"]}
    assert kinds == {"node", "box", "edge"}, kinds
    low = [label for label in report["labels"] if label["ratio"] < 4.5]
    assert low == [], low[:5]
    shots("placement-dark", big)
    page.evaluate("() => { window.jupyterapp.commands.execute('apputils:change-theme',"
                  " {theme: 'JupyterLab Light'}); }")
    page.wait_for_function("() => document.body.dataset.jpThemeLight === 'true'",
                           timeout=30_000)


def check_search(page, big, shots) -> None:
    search = big.locator("input.nbc-search")
    search.fill("layer_7/MatMul")
    search.press("Enter")
    found = big.locator("g.nbc-node.nbc-found")
    found.wait_for(timeout=30_000)
    assert found.get_attribute("data-name") == "layer_7/MatMul"
    # its scope is open (a box), the series around it too, and the op is in view
    assert big.locator("g.nbc-scope-box", has_text="layer_7/").count() >= 1
    frame = big.locator(".nbc-frame").bounding_box()
    box = found.bounding_box()
    assert frame["x"] <= box["x"] and box["x"] + box["width"] <= frame["x"] + frame["width"]
    assert frame["y"] <= box["y"] and box["y"] + box["height"] <= frame["y"] + frame["height"]
    assert big.locator(".nbc-search-status").inner_text().startswith("1/")
    shots("placement-search", big)
    big.get_by_role("button", name="Fold all").click()
    page.wait_for_function("r => !r.querySelector('g.nbc-scope-box')", arg=big.element_handle(),
                           timeout=30_000)


def check_refit_on_resize(page, big, first, shots) -> None:
    big.get_by_role("button", name="Fit").click()
    page.set_viewport_size({"width": 900, "height": 1000})
    page.wait_for_function("([r, w]) => r.querySelector('.nbc-frame').getBoundingClientRect()"
                           ".width < w - 100", arg=[big.element_handle(), first["frameWidth"]],
                           timeout=10_000)
    narrow = settled(page, big)
    assert narrow["transform"] != first["transform"]
    assert narrow["frameWidth"] < 900
    # fitted again: all in view, or (when even the coarsest fold is too wide for
    # readable text) readable with the minimap to move around
    assert narrow["outside"] == [] or (min(narrow["sizes"]) >= 10
                                       and narrow["minimap"] == "block"), narrow
    shots("placement-900px", page)
    page.set_viewport_size({"width": 1400, "height": 1000})


# the timeline redraws on a resize: its svg is as wide as its cell again
DRAWN_AT_CURRENT_WIDTH_JS = """r => { const svg = r.querySelector('svg');
  const want = Math.max(360, (r.parentElement.clientWidth || r.clientWidth || 900) - 4);
  return Math.abs(Number(svg.getAttribute('width')) - want) < 1; }"""

# the widest compute bar's span, 3 px either side, clamped to the plot (right of the labels)
WIDEST_BAR_JS = """r => { let best = null;
  for (const b of r.querySelectorAll('rect.nbc-compute')) {
    const box = b.getBoundingClientRect();
    if (!best || box.width > best.width) best = box; }
  const plot = r.querySelector('g.nbc-transfers');
  const labelW = Number(/translate\\(([\\d.]+)/.exec(plot.getAttribute('transform'))[1]);
  const svg = r.querySelector('svg').getBoundingClientRect();
  const plotLeft = svg.left + labelW;
  return { left: Math.max(best.left - 3, plotLeft + 1), right: best.right + 3,
           y: best.y + best.height / 2 }; }"""


def check_timeline(page, shots) -> None:
    root = page.locator("div.nbcluster-timeline").last
    root.scroll_into_view_if_needed()
    assert root.locator("g.nbc-run").count() == 2
    assert "2 runs side by side" in root.locator(".nbc-tl-bar").inner_text()
    waits = root.locator("rect.nbc-wait")
    assert waits.count() >= 2
    assert "url(#" in waits.first.get_attribute("fill")  # the hatch pattern
    computes = root.locator("rect.nbc-compute")
    assert computes.count() >= 2 and "url(" not in computes.first.get_attribute("fill")
    whole = root.evaluate(LABEL_BOXES_JS)
    assert overlapping(whole) == []
    shots("timeline-two-runs", root)
    # zoomed in: labels fit in the wider bars, still none overlapping.
    # The window was just resized: measure the bars only once they are drawn at this width.
    page.wait_for_function(DRAWN_AT_CURRENT_WIDTH_JS, arg=root.element_handle(), timeout=10_000)
    # drag-select the widest compute bar's span (a few px either side, but starting inside
    # the plot: a press left of it, on the lane labels, starts no selection): it then fills
    # the plot. On a loaded host a run is mostly waits and every compute bar may be drawn
    # at its minimum width, so one zoom can leave the widest still too narrow for its
    # label: the same drag on the zoomed view goes further, twice at most.
    for _ in range(3):
        window = root.locator(".nbc-tl-bar").inner_text()
        widest = root.evaluate(WIDEST_BAR_JS)
        page.mouse.move(widest["left"], widest["y"])
        page.mouse.down()
        page.mouse.move(widest["right"], widest["y"], steps=4)
        page.mouse.up()
        page.wait_for_function("([r, w]) => r.querySelector('.nbc-tl-bar').textContent"
                               ".includes(' of ') && r.querySelector('.nbc-tl-bar')"
                               ".textContent !== w", arg=[root.element_handle(), window],
                               timeout=10_000)
        page.wait_for_timeout(300)
        if root.locator("text.nbc-op-label").count():
            break
    shots("timeline-zoomed", root)
    zoomed = root.evaluate(LABEL_BOXES_JS)
    # the bar zoomed into fills the plot: it is labelled. (Bars labelled in the whole
    # view may now lie outside the span, so the count is not compared with it.)
    assert root.locator("text.nbc-op-label").count() >= 1, zoomed
    assert overlapping(zoomed) == []
    # a narrower window redraws the timeline to the new width
    wide = root.locator("svg").first.bounding_box()["width"]
    page.set_viewport_size({"width": 900, "height": 1000})
    page.wait_for_function("([r, w]) => r.querySelector('svg').getBoundingClientRect().width"
                           " < w - 100", arg=[root.element_handle(), wide], timeout=10_000)
    assert overlapping(root.evaluate(LABEL_BOXES_JS)) == []
    shots("timeline-900px", root)
    page.set_viewport_size({"width": 1400, "height": 1000})
