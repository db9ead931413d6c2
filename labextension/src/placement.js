// PlacementView's front end (an anywidget ES module): lays out the synced `view`
// with dagre (placement/boxes.js: titles, client feeds/fetches; placement/layout.js:
// job -> task -> device boxes) and draws it as SVG with pan, zoom, a legend and
// tooltips. A first draw fits the graph no smaller than MIN_FIT; "Fit" fits it all. Clicking a folded scope, or an open
// scope's box, edits the synced `expanded` list; Python sends back a new `view`.
// Nothing here touches the DOM at import time: `layoutData` runs under node too.
import { CSS } from "./placement/style.js";
import { drawEdge, drawGroup, drawNode, svgEl } from "./placement/draw.js";
import { layoutData } from "./placement/layout.js";

export { layoutData, nodeSize } from "./placement/layout.js";
export { describeEdge, describeNode, formatBytes } from "./placement/draw.js";

const MAX_HEIGHT = 640;  // px; a taller graph pans inside the frame
const MIN_FIT = 0.75;    // a first draw never shrinks labels below this; the user may zoom out
const MARGIN = 8;

/** A box's nesting depth, so outer boxes are drawn first (underneath). */
function depthOf(groups) {
  const byId = new Map(groups.map((g) => [g.id, g]));
  const depth = (g) => (g.parent && byId.has(g.parent) ? 1 + depth(byId.get(g.parent)) : 0);
  return depth;
}

/** The node nearest the graph's start: the top-most (left-most when `across`). */
function firstNode(nodes, across) {
  let best = null;
  for (const n of nodes || []) {
    if (!best || (across ? n.x < best.x || (n.x === best.x && n.y < best.y)
      : n.y < best.y || (n.y === best.y && n.x < best.x))) best = n;
  }
  return best;
}

function toggle(model, scope) {
  const expanded = [...(model.get("expanded") || [])];
  const at = expanded.indexOf(scope);
  if (at >= 0) expanded.splice(at, 1); else expanded.push(scope);
  model.set("expanded", expanded);
  model.save_changes();
}

function render({ model, el }) {
  const uid = Math.random().toString(36).slice(2, 9);
  const root = document.createElement("div");
  root.className = "nbcluster-placement";
  const style = document.createElement("style");
  style.textContent = CSS;
  const bar = document.createElement("div");
  bar.className = "nbc-toolbar";
  const summary = document.createElement("span");
  summary.className = "nbc-summary";
  const buttons = [["Fit", () => fit(0)], ["Top-down / left-right", () => {
    model.set("rankdir", model.get("rankdir") === "LR" ? "TB" : "LR");
    model.save_changes();
  }], ["Fold all", () => { model.set("expanded", []); model.save_changes(); }]];
  bar.append(summary, ...buttons.map(([text, onclick]) => {
    const b = document.createElement("button");
    b.textContent = text;
    b.addEventListener("click", onclick);
    return b;
  }));
  const legend = document.createElement("div");
  legend.className = "nbc-legend";
  const frame = document.createElement("div");
  frame.className = "nbc-frame";
  const svg = svgEl("svg", { class: "nbc-svg", width: "100%" });
  const defs = svgEl("defs");
  for (const [kind, color] of [["data", "#555"], ["control", "#999"], ["transfer", "#C0392B"]]) {
    const marker = svgEl("marker", { id: `nbc-arrow-${kind}-${uid}`, viewBox: "0 0 10 10",
      refX: 9, refY: 5, markerWidth: 7, markerHeight: 7, orient: "auto-start-reverse" });
    marker.append(svgEl("path", { d: "M0,0 L10,5 L0,10 z", fill: color }));
    defs.append(marker);
  }
  const stage = svgEl("g", { class: "nbc-stage" });
  svg.append(defs, stage);
  const tip = document.createElement("div");
  tip.className = "nbc-tooltip";
  frame.append(svg, tip);
  root.append(style, bar, legend, frame);
  el.append(root);

  let layout = { width: 0, height: 0 };
  let t = { x: 0, y: 0, k: 1 };
  const apply = () => stage.setAttribute("transform", `translate(${t.x},${t.y}) scale(${t.k})`);
  let fittedBlind = false;  // fitted before the frame had a width (not yet attached)
  /** Scales the graph into the frame (no smaller than `minK`, never enlarged) and
   *  sizes the frame to the scaled graph, up to MAX_HEIGHT. */
  function fit(minK = 0) {
    fittedBlind = !frame.clientWidth;
    const w = frame.clientWidth || 800;
    const W = layout.width || 1;
    const H = layout.height || 1;
    const k = Math.max(Math.min(minK, 1), Math.min(1, (w - MARGIN) / W, (MAX_HEIGHT - MARGIN) / H));
    const h = Math.min(MAX_HEIGHT, Math.max(120, H * k + MARGIN));
    svg.setAttribute("height", h);
    // Centre what fits. What does not starts at the graph's first rank (top, or
    // left), centred across on the first node there: a corner may well be empty.
    const across = model.get("rankdir") === "LR";
    const first = firstNode(layout.nodes, across);
    const place = (size, room, at, start) => {
      if (size <= room) return (room - size) / 2;
      if (start || !first) return MARGIN / 2;
      return Math.min(MARGIN / 2, Math.max(room - size - MARGIN / 2, room / 2 - at * k));
    };
    t = { k, x: place(W * k, w, first && first.x, across),
          y: place(H * k, h, first && first.y, !across) };
    apply();
  }

  function showTip(event, lines) {
    tip.textContent = "";
    for (const line of lines) {
      const div = document.createElement("div");
      div.textContent = line;
      tip.append(div);
    }
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

  function draw() {
    const view = model.get("view") || {};
    stage.textContent = "";
    hideTip();
    const s = view.summary || {};
    summary.textContent = `${s.actual ? "actual" : "requested"} placement: ${s.ops || 0} ops ` +
      `on ${s.devices || 0} devices, ${s.transfers || 0} transfers; ${s.visible || 0} drawn`;
    legend.textContent = "";
    for (const entry of view.legend || []) {
      const item = document.createElement("span");
      item.className = "nbc-legend-item";
      const swatch = document.createElement("span");
      swatch.className = "nbc-swatch";
      swatch.style.background = entry.color;
      item.append(swatch, `${entry.device} (${entry.ops})`);
      legend.append(item);
    }
    try {
      layout = layoutData(view, model.get("rankdir") || "TB");
    } catch (err) {
      stage.append(svgEl("text", { x: 10, y: 20 }, `layout failed: ${err}`));
      return;
    }
    const onToggle = (scope) => toggle(model, scope);
    const depth = depthOf(layout.groups);
    for (const grp of [...layout.groups].sort((a, b) => depth(a) - depth(b))) {
      stage.append(drawGroup(grp, onToggle, hover));
    }
    for (const edge of layout.edges) stage.append(...drawEdge(edge, uid, hover));
    for (const node of layout.nodes) stage.append(drawNode(node, onToggle, hover));
    fit(MIN_FIT);
  }

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
    t = { ...t, x: e.clientX - drag.x, y: e.clientY - drag.y };
    apply();
  });
  svg.addEventListener("pointerup", endDrag);
  svg.addEventListener("pointerleave", endDrag);
  svg.addEventListener("wheel", (e) => {
    e.preventDefault();
    const r = svg.getBoundingClientRect();
    const px = e.clientX - r.left;
    const py = e.clientY - r.top;
    const k = Math.max(0.05, Math.min(4, t.k * Math.exp(-e.deltaY * 0.0015)));
    t = { k, x: px - ((px - t.x) * k) / t.k, y: py - ((py - t.y) * k) / t.k };
    apply();
  }, { passive: false });

  // JupyterLab may render before the output is attached: fit again once it has a width.
  const resized = typeof ResizeObserver === "undefined" ? null
    : new ResizeObserver(() => { if (fittedBlind && frame.clientWidth) fit(MIN_FIT); });
  if (resized) resized.observe(frame);

  model.on("change:view", draw);
  model.on("change:rankdir", draw);
  draw();
  return () => {
    model.off("change:view", draw);
    model.off("change:rankdir", draw);
    if (resized) resized.disconnect();
  };
}

export default { render };
