// PlacementView's front end (an anywidget ES module): lays out the synced `view`
// with dagre (placement/boxes.js: titles, client feeds/fetches; placement/bundles.js:
// one edge per pair of devices; placement/layout.js: job -> task -> device boxes)
// and draws it as SVG with pan, zoom, a search box, a minimap, a legend and tooltips.
//
// On open the graph is fitted to the frame, and while it would need labels
// smaller than READABLE_PX the synced `budget` is lowered (Python folds more
// scopes and sends a new `view`); the frame refits when its width changes
// until the user pans or zooms. Clicking a folded scope, or an open scope's
// box, edits `expanded`; the search box opens the scopes around an op,
// centres it and rings it. Nothing here touches the DOM at import time.
import { CSS } from "./placement/style.js";
import { NO_TIME, nodeFills, timeGradient } from "./placement/colors.js";
import { drawEdge, drawGroup, drawNode, svgEl } from "./placement/draw.js";
import { pairOffsets } from "./placement/bundles.js";
import { formatMicros } from "./placement/format.js";
import { layoutData } from "./placement/layout.js";
import { createMinimap } from "./placement/minimap.js";
import { findOps, nodeFor, scopesToOpen } from "./placement/search.js";
import { READABLE_K, centreOn, fitScale, frameHeight, placeAt, zoomAround }
  from "./placement/viewport.js";

export { layoutData, nodeSize } from "./placement/layout.js";
export { describeEdge, describeNode, formatBytes } from "./placement/draw.js";

const MIN_BUDGET = 4;       // nodes per level: the coarsest fold asked for
const FOCUS_K = 1;          // scale a found op is shown at

/** A box's nesting depth, so outer boxes are drawn first (underneath). */
function depthOf(groups) {
  const byId = new Map(groups.map((g) => [g.id, g]));
  const depth = (g) => (g.parent && byId.has(g.parent) ? 1 + depth(byId.get(g.parent)) : 0);
  return depth;
}

function el(tag, cls, text) {
  const e = document.createElement(tag);
  if (cls) e.className = cls;
  if (text !== undefined) e.textContent = text;
  return e;
}

function render({ model, el: host }) {
  const uid = Math.random().toString(36).slice(2, 9);
  const root = el("div", "nbcluster-placement");
  const style = el("style");
  style.textContent = CSS;
  const bar = el("div", "nbc-toolbar");
  const summary = el("span", "nbc-summary");
  const search = el("input", "nbc-search");
  search.type = "search";
  search.placeholder = "find an op…";
  search.setAttribute("aria-label", "find an op");
  const found = el("span", "nbc-search-status");
  const colorBy = el("select", "nbc-color-by");
  for (const [value, text] of [["device", "colour: device"], ["time", "colour: time"]]) {
    const o = el("option", "", text);
    o.value = value;
    colorBy.append(o);
  }
  const button = (text, onclick) => {
    const b = el("button", "", text);
    b.addEventListener("click", onclick);
    return b;
  };
  bar.append(summary, search, found, colorBy,
    button("Fit", () => { moved = false; fit(0); }),
    button("Top-down / left-right", () => {
      model.set("rankdir", model.get("rankdir") === "LR" ? "TB" : "LR");
      model.save_changes();
    }),
    button("Fold all", () => { auto = false; setExpanded([]); }));
  const legend = el("div", "nbc-legend");
  const frame = el("div", "nbc-frame");
  const svg = svgEl("svg", { class: "nbc-svg", width: "100%" });
  const defs = svgEl("defs");
  for (const kind of ["data", "control", "transfer", "bundle"]) {
    // a bundle's head keeps one size however thick its line
    const size = kind === "bundle" ? { markerWidth: 12, markerHeight: 12, markerUnits: "userSpaceOnUse" }
      : { markerWidth: 7, markerHeight: 7 };
    const marker = svgEl("marker", { id: `nbc-arrow-${kind}-${uid}`, viewBox: "0 0 10 10",
      refX: 9, refY: 5, orient: "auto-start-reverse", class: `nbc-marker-${kind}`, ...size });
    const head = svgEl("path", { d: "M0,0 L10,5 L0,10 z" });
    head.style.fill = kind === "transfer" || kind === "bundle" ? "var(--jp-error-color1, #C0392B)"
      : "var(--jp-ui-font-color2, #555)";
    marker.append(head);
    defs.append(marker);
  }
  const stage = svgEl("g", { class: "nbc-stage" });
  const content = svgEl("g", { id: `nbc-content-${uid}` });
  stage.append(content);
  svg.append(defs, stage);
  const tip = el("div", "nbc-tooltip");
  frame.append(svg, tip);
  root.append(style, bar, legend, frame);
  host.append(root);
  const minimap = createMinimap(frame, `nbc-content-${uid}`, (x, y) => {
    moved = true;
    t = centreOn(x, y, frame.clientWidth || 800, height, t.k);
    apply();
  });

  let layout = { width: 0, height: 0, nodes: [] };
  let t = { x: 0, y: 0, k: 1 };
  let height = 120;
  let fittedWidth = 0;   // the frame width of the last fit (0: not attached then)
  let moved = false;     // the user panned or zoomed: a resize keeps their view
  let auto = true;       // still choosing the fold level (no click yet)
  let pending = null;    // an op the search box is opening
  const maxHeight = () => Math.max(360, Math.min(900, (window.innerHeight || 800) - 160));
  const apply = () => {
    stage.setAttribute("transform", `translate(${t.x},${t.y}) scale(${t.k})`);
    minimap.update(layout, t, frame.clientWidth || 800, height);
  };

  /** Scales the graph into the frame (no smaller than `minK`, never enlarged)
   *  and sizes the frame to it; returns the scale the whole graph would need. */
  function fit(minK = 0) {
    const w = frame.clientWidth;
    fittedWidth = w;
    const room = w || 800;
    const hMax = maxHeight();
    const whole = fitScale(layout.width, layout.height, room, hMax);
    const k = Math.max(Math.min(minK, 1), whole);
    height = frameHeight(layout.height, k, hMax);
    svg.setAttribute("height", height);
    t = placeAt(layout.width, layout.height, room, height, k);
    apply();
    return whole;
  }

  function setExpanded(list) {
    model.set("expanded", list);
    model.save_changes();
  }

  /** Lowers the fold budget while the graph needs unreadable text to fit. */
  function foldToFit(whole) {
    if (!auto || !fittedWidth || whole >= READABLE_K) return false;
    const budget = model.get("budget") || 0;
    if (budget <= MIN_BUDGET) return false;
    model.set("budget", Math.max(MIN_BUDGET, Math.floor(budget * 0.6)));
    model.save_changes();
    return true;
  }

  function showTip(event, lines) {
    tip.textContent = "";
    for (const line of lines) tip.append(el("div", "", line));
    tip.style.display = "block";
    // the frame clips: flip the tip to the pointer's other side where it would overflow
    const r = frame.getBoundingClientRect();
    const x = event.clientX - r.left;
    const y = event.clientY - r.top;
    const left = x + 12 + tip.offsetWidth > r.width ? x - 12 - tip.offsetWidth : x + 12;
    const top = y + 12 + tip.offsetHeight > r.height ? y - 12 - tip.offsetHeight : y + 12;
    tip.style.left = `${Math.max(0, left)}px`;
    tip.style.top = `${Math.max(0, top)}px`;
  }
  const hideTip = () => { tip.style.display = "none"; };
  const hover = (elem, lines) => {
    elem.addEventListener("mousemove", (e) => showTip(e, lines));
    elem.addEventListener("mouseleave", hideTip);
  };

  function drawLegend(view, colouring) {
    legend.textContent = "";
    if (colouring === "time") {
      const max = Math.max(0, ...layout.nodes.map((n) => n.time_us || 0));
      const grad = el("span", "nbc-gradient");
      grad.style.background = timeGradient();
      const none = el("span", "nbc-swatch");
      none.style.background = NO_TIME;
      legend.append(el("span", "", "time: 0"), grad,
        el("span", "", max ? formatMicros(max) : "(no step stats: pass a traced run_metadata)"));
      const item = el("span", "nbc-legend-item");
      item.append(none, "no time");
      legend.append(item);
      return;
    }
    for (const entry of view.legend || []) {
      const item = el("span", "nbc-legend-item");
      const swatch = el("span", "nbc-swatch");
      swatch.style.background = entry.color;
      item.append(swatch, `${entry.device} (${entry.ops})`);
      legend.append(item);
    }
  }

  function draw() {
    const view = model.get("view") || {};
    content.textContent = "";
    hideTip();
    const s = view.summary || {};
    summary.textContent = `${s.actual ? "actual" : "requested"} placement: ${s.ops || 0} ops ` +
      `on ${s.devices || 0} devices, ${s.transfers || 0} transfers; ${s.visible || 0} drawn`;
    const colouring = model.get("color_by") || "device";
    colorBy.value = colouring;
    try {
      layout = layoutData(view, model.get("rankdir") || "TB");
    } catch (err) {
      content.append(svgEl("text", { x: 10, y: 20 }, `layout failed: ${err}`));
      return;
    }
    drawLegend(view, colouring);
    const onToggle = (scope) => { auto = false; toggle(scope); };
    const depth = depthOf(layout.groups);
    for (const grp of [...layout.groups].sort((a, b) => depth(a) - depth(b))) {
      content.append(drawGroup(grp, onToggle, hover));
    }
    const offsets = pairOffsets(layout.edges);
    for (const edge of layout.edges) {
      content.append(...drawEdge(edge, uid, hover, offsets.get(edge.id) || 0));
    }
    const fills = nodeFills(layout.nodes, colouring);
    for (const node of layout.nodes) {
      content.append(drawNode(node, onToggle, hover, fills.get(node.id)));
    }
    const whole = fit(READABLE_K);
    if (pending) focusOn(pending);
    else if (!moved) settle(!fittedWidth || foldToFit(whole));  // unattached: not yet
  }

  /** data-settled on the root: "no" while a coarser fold is on its way (tests wait on it). */
  function settle(folding) {
    root.dataset.settled = folding ? "no" : "yes";
  }

  function toggle(scope) {
    const expanded = [...(model.get("expanded") || [])];
    const at = expanded.indexOf(scope);
    if (at >= 0) expanded.splice(at, 1); else expanded.push(scope);
    setExpanded(expanded);
  }

  /** Centres the node that shows op `name` and rings it. */
  function focusOn(name) {
    const node = nodeFor(layout.nodes, name);
    pending = null;
    for (const g of content.querySelectorAll(".nbc-found")) g.classList.remove("nbc-found");
    if (!node) return false;
    const g = content.querySelector(`g.nbc-node[data-id="${CSS_escape(node.id)}"]`);
    if (g) g.classList.add("nbc-found");
    moved = true;
    t = centreOn(node.x, node.y, frame.clientWidth || 800, height, Math.max(t.k, FOCUS_K));
    apply();
    return true;
  }

  let matches = [];
  let cursor = -1;
  let lastQuery = "";
  function runSearch() {
    const query = search.value.trim();
    if (query !== lastQuery) {
      lastQuery = query;
      matches = findOps((model.get("view") || {}).names || [], query);
      cursor = -1;
    }
    if (!matches.length) {
      found.textContent = query ? "no op" : "";
      return;
    }
    cursor = (cursor + 1) % matches.length;
    const name = matches[cursor];
    found.textContent = `${cursor + 1}/${matches.length}${matches.length >= 200 ? "+" : ""}`;
    search.title = name;
    auto = false;
    const expanded = model.get("expanded") || [];
    const want = [...new Set([...expanded, ...scopesToOpen(name)])];
    if (want.length === expanded.length) {
      focusOn(name);
    } else {
      pending = name;       // drawn when Python sends the view with those scopes open
      setExpanded(want);
    }
  }
  search.addEventListener("keydown", (e) => {
    if (e.key === "Enter") { e.preventDefault(); runSearch(); }
  });
  search.addEventListener("search", () => { if (search.value) runSearch(); });
  colorBy.addEventListener("change", () => {
    model.set("color_by", colorBy.value);
    model.save_changes();
  });

  // Pan by dragging the background, zoom with the wheel around the pointer.
  let drag = null;
  svg.addEventListener("pointerdown", (e) => {
    if (e.button !== 0) return;
    drag = { x: e.clientX - t.x, y: e.clientY - t.y };
    svg.classList.add("nbc-dragging");
  });
  const endDrag = () => { drag = null; svg.classList.remove("nbc-dragging"); };
  svg.addEventListener("pointermove", (e) => {
    if (!drag) return;
    moved = true;
    t = { ...t, x: e.clientX - drag.x, y: e.clientY - drag.y };
    apply();
  });
  svg.addEventListener("pointerup", endDrag);
  svg.addEventListener("pointerleave", endDrag);
  svg.addEventListener("wheel", (e) => {
    e.preventDefault();
    moved = true;
    const r = svg.getBoundingClientRect();
    t = zoomAround(t, e.clientX - r.left, e.clientY - r.top, e.deltaY);
    apply();
  }, { passive: false });

  // Fit again when the frame's width changes (JupyterLab may render before the
  // output is attached; the window or the panel may be resized), unless the
  // user has moved the view since.
  const resized = typeof ResizeObserver === "undefined" ? null : new ResizeObserver(() => {
    const w = frame.clientWidth;
    if (!w || Math.abs(w - fittedWidth) < 1) return;
    if (!fittedWidth || !moved) {
      const whole = fit(READABLE_K);
      if (!moved) settle(foldToFit(whole));
    } else {
      fittedWidth = w;
      apply();
    }
  });
  if (resized) resized.observe(frame);

  const events = ["change:view", "change:rankdir", "change:color_by"];
  for (const name of events) model.on(name, draw);
  draw();
  return () => {
    for (const name of events) model.off(name, draw);
    if (resized) resized.disconnect();
  };
}

/** An attribute value safe inside a CSS selector's quotes. */
function CSS_escape(value) {
  return String(value).replace(/["\\]/g, "\\$&");
}

export default { render };
