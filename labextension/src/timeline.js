// Timeline's front end (an anywidget ES module): lanes of op bars, transfer arrows,
// a time axis, wheel / drag zoom, double-click reset and hover tooltips. Bars
// that wait for an input (a _Recv) are hatched, apart from compute; several
// runs sit side by side under a band naming each.
//
// Geometry lives in timeline/view.js (pure); this file only makes DOM nodes.
// DOM hooks the browser test relies on: div.nbcluster-timeline, g.nbc-lane,
// rect.nbc-op (rect.nbc-wait for waits), text.nbc-op-label, path.nbc-transfer,
// g.nbc-run (one per run when there are several).
import {
  LABEL_CHAR_W, LABEL_H, arrowsFor, barLabels, barsFor, elide, formatBytes, formatUs, fullWindow,
  panBy, laneLayout, opTooltip, placeLabels, runBands, scaleFor, splitDevice, ticksFor,
  transferTooltip, windowFromDrag, windowOf, zoomAt,
} from "./timeline/view.js";

const SVG = "http://www.w3.org/2000/svg";
const AXIS_TICKS = 26;
const RUN_H = 16;  // the band naming each run, above the ticks
const MAX_SIZE_LABELS = 40;  // transfers in view whose sizes are printed
const CSS = `
.nbcluster-timeline { position: relative; font: 11px var(--jp-code-font-family, monospace);
  color: var(--jp-ui-font-color1, #222); user-select: none; }
.nbcluster-timeline .nbc-tl-bar { display: flex; gap: 12px; padding: 2px 0 4px;
  color: var(--jp-ui-font-color2, #666); }
.nbcluster-timeline svg { display: block; overflow: visible; }
.nbcluster-timeline .nbc-lane-bg { fill: var(--jp-layout-color2, #f3f3f3); pointer-events: none; }
.nbcluster-timeline .nbc-lane:nth-child(odd) .nbc-lane-bg { fill: var(--jp-layout-color1, #fff); }
.nbcluster-timeline .nbc-lane-label { fill: currentColor; }
.nbcluster-timeline .nbc-op-label { fill: #000; font-size: 10px; pointer-events: none; }
.nbcluster-timeline .nbc-op-label.nbc-on-wait { fill: var(--jp-ui-font-color0, #000);
  paint-order: stroke; stroke: var(--jp-layout-color0, #fff); stroke-width: 3px; }
.nbcluster-timeline rect.nbc-op { stroke: rgba(0,0,0,.45); stroke-width: .5; cursor: default; }
.nbcluster-timeline rect.nbc-op.nbc-send { fill-opacity: .45; stroke-dasharray: 2 1; }
.nbcluster-timeline rect.nbc-op.nbc-wait { stroke: var(--jp-ui-font-color2, #777); stroke-width: .8;
  stroke-dasharray: 3 2; }
.nbcluster-timeline .nbc-run line { stroke: var(--jp-ui-font-color2, #777); stroke-dasharray: 4 3; }
.nbcluster-timeline .nbc-run text { fill: currentColor; font-weight: bold; }
.nbcluster-timeline .nbc-key { display: inline-block; width: 18px; height: 10px;
  vertical-align: middle; margin: 0 3px 0 8px; border: 1px solid var(--jp-ui-font-color2, #777); }
.nbcluster-timeline .nbc-key-wait { background: repeating-linear-gradient(45deg,
  var(--jp-ui-font-color2, #777) 0 2px, transparent 2px 5px); }
.nbcluster-timeline .nbc-key-compute { background: var(--jp-ui-font-color2, #777); }
.nbcluster-timeline rect.nbc-op:hover { stroke: #000; stroke-width: 1.5; }
.nbcluster-timeline .nbc-transfer { fill: none; stroke: #b3261e; stroke-width: 1.3;
  stroke-opacity: .85; pointer-events: none; }
.nbcluster-timeline .nbc-transfer-hit { fill: none; stroke: transparent; stroke-width: 8; }
.nbcluster-timeline .nbc-transfer-label { fill: #b3261e; font-size: 10px; pointer-events: none; }
.nbcluster-timeline .nbc-axis line { stroke: var(--jp-border-color1, #bbb); }
.nbcluster-timeline .nbc-axis text { fill: currentColor; }
.nbcluster-timeline .nbc-brush { fill: rgba(40,110,200,.18); stroke: rgba(40,110,200,.7); }
.nbcluster-timeline .nbc-tooltip { position: absolute; pointer-events: none; display: none;
  background: var(--jp-layout-color0, #fff); border: 1px solid var(--jp-border-color1, #999);
  padding: 4px 6px; white-space: pre; box-shadow: 0 1px 4px rgba(0,0,0,.25); z-index: 10; }
`;

function svg(tag, attrs = {}, parent = null) {
  const node = document.createElementNS(SVG, tag);
  for (const [k, v] of Object.entries(attrs)) node.setAttribute(k, String(v));
  if (parent) parent.appendChild(node);
  return node;
}

function labelWidth(lanes) {
  const longest = (lane) => Math.max(...splitDevice(lane.device).map((s) => s.length));
  const chars = Math.max(8, ...lanes.map(longest));
  return Math.min(280, Math.max(120, chars * 6.7 + 20));
}

function render({ model, el }) {
  const root = document.createElement("div");
  root.className = "nbcluster-timeline";
  const style = document.createElement("style");
  style.textContent = CSS;
  const bar = document.createElement("div");
  bar.className = "nbc-tl-bar";
  const range = document.createElement("span");
  const key = document.createElement("span");
  key.className = "nbc-tl-key";
  key.innerHTML = '<span class="nbc-key nbc-key-compute"></span>compute'
    + '<span class="nbc-key nbc-key-wait"></span>waiting for an input (_Recv)';
  const hint = document.createElement("span");
  hint.textContent = "wheel: zoom · shift+wheel: pan · drag: select a range · double-click: reset";
  bar.append(range, key, hint);
  const chart = svg("svg");
  const tip = document.createElement("div");
  tip.className = "nbc-tooltip";
  root.append(style, bar, chart, tip);
  el.appendChild(root);
  const clipId = `nbc-tl-clip-${Math.random().toString(36).slice(2)}`;
  const arrowId = `${clipId}-arrow`;
  let geom = null; // what the last draw used, for the pointer handlers

  function draw() {
    const data = model.get("_data") || { lanes: [], ops: [], transfers: [], duration: 0 };
    const width = Math.max(360, (el.clientWidth || root.clientWidth || 900) - 4);
    const labelW = labelWidth(data.lanes);
    const plotW = width - labelW - 8;
    const win = windowOf(data, model.get("window"));
    const AXIS_H = AXIS_TICKS + ((data.runs || []).length > 1 ? RUN_H : 0);
    const layout = laneLayout(data.lanes, AXIS_H);
    chart.replaceChildren();
    chart.setAttribute("width", width);
    chart.setAttribute("height", AXIS_H + layout.height + 2);
    const defs = svg("defs", {}, chart);
    svg("rect", { x: 0, y: 0, width: plotW, height: AXIS_H + layout.height },
      svg("clipPath", { id: clipId }, defs));
    svg("path", { d: "M0,0 L8,3 L0,6 z", fill: "#b3261e" },
      svg("marker", { id: arrowId, markerWidth: 8, markerHeight: 6, refX: 7, refY: 3,
        orient: "auto", markerUnits: "userSpaceOnUse" }, defs));
    data.lanes.forEach((lane, i) => {  // a wait's hatching, in its lane's colour
      const p = svg("pattern", { id: `${clipId}-hatch-${i}`, width: 6, height: 6,
        patternUnits: "userSpaceOnUse", patternTransform: "rotate(45)" }, defs);
      svg("rect", { width: 6, height: 6, fill: lane.color, "fill-opacity": 0.18 }, p);
      svg("line", { x1: 1, y1: 0, x2: 1, y2: 6, stroke: lane.color, "stroke-width": 2.2 }, p);
    });
    drawAxis(chart, win, plotW, labelW, layout.height, AXIS_H);
    drawRuns(chart, data, win, plotW, labelW, layout.height, AXIS_H);
    // an arrow's wide hit twin lies under the bars (and the lane backgrounds let the
    // pointer through to it): where the two overlap, the bar takes the hover
    const hits = svg("g", { class: "nbc-transfer-hits", transform: `translate(${labelW},0)`,
      "clip-path": `url(#${clipId})` }, chart);
    const { plots, opLabels } = drawLanes(chart, data, win, plotW, labelW, layout, width);
    const arrows = svg("g", { class: "nbc-transfers", transform: `translate(${labelW},0)`,
      "clip-path": `url(#${clipId})` }, chart);
    const labels = [];
    const drawn = arrowsFor(data, win, plotW, layout);
    // past a few dozen transfers their sizes are noise over the bars: zoom in
    // (or hover an arrow) to read them
    const sized = drawn.length <= MAX_SIZE_LABELS;
    for (const a of drawn) {
      svg("path", { class: "nbc-transfer", d: a.d, "marker-end": `url(#${arrowId})`,
        "data-transfer": a.i }, arrows);
      // a thin curve is hard to point at: a wide transparent twin takes the hover
      svg("path", { class: "nbc-transfer-hit", d: a.d, "data-transfer": a.i }, hits);
      if (sized && Math.hypot(a.x2 - a.x1, a.y2 - a.y1) > 60) {
        const text = formatBytes(data.transfers[a.i].bytes);
        labels.push({ text, x: a.mid.x + 4, y: a.mid.y - 3 - LABEL_H + 2,
          w: text.length * LABEL_CHAR_W, h: LABEL_H });
      }
    }
    // transfers that overlap in time would print their sizes on top of each other
    const spots = placeLabels(labels, AXIS_H, AXIS_H + layout.height, 2, 1, opLabels);
    labels.forEach((label, i) => {
      if (!spots[i]) return;
      svg("text", { class: "nbc-transfer-label", x: spots[i].x, y: spots[i].y + LABEL_H - 2 },
        arrows).textContent = label.text;
    });
    const brush = svg("rect", { class: "nbc-brush", x: 0, y: AXIS_H, width: 0,
      height: layout.height, visibility: "hidden" }, arrows);
    const whole = fullWindow(data);
    const runs = (data.runs || []).length;
    range.textContent = win[0] === whole[0] && win[1] === whole[1]
      ? (runs > 1 ? `${runs} runs side by side: ${formatUs(whole[1])}` : `whole step: ${formatUs(whole[1])}`)
      : `${formatUs(win[0])} – ${formatUs(win[1])} of ${formatUs(whole[1])}`;
    geom = { data, window: win, plotW, labelW, brush, plots };
  }

  function drawRuns(parent, data, win, plotW, labelW, lanesH, AXIS_H) {
    const g = svg("g", { class: "nbc-runs", transform: `translate(${labelW},0)`,
      "clip-path": `url(#${clipId})` }, parent);
    for (const band of runBands(data, win, plotW)) {
      const run = svg("g", { class: "nbc-run", "data-run": band.i }, g);
      svg("line", { x1: band.x0, x2: band.x0, y1: 0, y2: AXIS_H + lanesH }, run);
      const left = Math.max(band.x0, 0) + 3;
      const text = elide(band.label, Math.min(band.x1, plotW) - left - 3, 6.7);
      if (text) svg("text", { x: left, y: RUN_H - 4 }, run).textContent = text;
    }
  }

  function drawAxis(parent, win, plotW, labelW, lanesH, AXIS_H) {
    const axis = svg("g", { class: "nbc-axis", transform: `translate(${labelW},0)` }, parent);
    svg("line", { x1: 0, x2: plotW, y1: AXIS_H - 1, y2: AXIS_H - 1 }, axis);
    for (const t of ticksFor(win, plotW)) {
      svg("line", { x1: t.x, x2: t.x, y1: AXIS_H - 6, y2: AXIS_H + lanesH,
        "stroke-opacity": 0.35 }, axis);
      const text = svg("text", { x: t.x + 2, y: AXIS_H - 9 }, axis);
      text.textContent = t.label;
      // the last label may not fit right of its tick: end it there (measured when
      // the font is known, else ticksFor's estimate)
      const len = text.getComputedTextLength ? text.getComputedTextLength() : 0;
      if (len ? t.x + 2 + len > plotW + 4 : t.anchor === "end") {
        text.setAttribute("x", t.x - 2);
        text.setAttribute("text-anchor", "end");
      }
    }
  }

  function drawLanes(parent, data, win, plotW, labelW, layout, width) {
    const lanesG = svg("g", { class: "nbc-lanes" }, parent);
    const groups = data.lanes.map((lane, i) => {
      const box = layout.lanes[i];
      const g = svg("g", { class: "nbc-lane", "data-device": lane.device }, lanesG);
      svg("rect", { class: "nbc-lane-bg", x: 0, y: box.y, width, height: box.h }, g);
      svg("rect", { x: 0, y: box.y, width: 4, height: box.h, fill: lane.color }, g);
      const label = svg("text", { class: "nbc-lane-label", x: 8, y: box.y + 14 }, g);
      const [top, bottom] = splitDevice(lane.device);
      svg("tspan", { x: 8 }, label).textContent = top;
      svg("tspan", { x: 8, dy: 13 }, label).textContent = bottom;
      return svg("g", { transform: `translate(${labelW},0)`, "clip-path": `url(#${clipId})` }, g);
    });
    const bars = barsFor(data, win, plotW, layout);
    for (const b of bars) {
      const op = data.ops[b.i];
      const kind = op.kind || (op.op === "_Recv" ? "wait" : op.op === "_Send" ? "send" : "compute");
      svg("rect", { class: `nbc-op nbc-${kind}`, x: b.x, y: b.y, width: b.w, height: b.h,
        fill: kind === "wait" ? `url(#${clipId}-hatch-${op.lane})` : data.lanes[op.lane].color,
        "data-op": b.i, "data-kind": kind }, groups[op.lane]);
    }
    // rows are packed so that no two bars of a row overlap: each label stays
    // inside its own bar's visible part, and so clear of every other label
    const opLabels = [];
    for (const label of barLabels(data, bars, plotW)) {
      opLabels.push({ x: label.x, y: label.y - LABEL_H + 2, w: label.w, h: LABEL_H });
      const op = data.ops[label.i];
      const wait = op.kind === "wait";
      const text = svg("text", { class: wait ? "nbc-op-label nbc-on-wait" : "nbc-op-label",
        x: label.x, y: label.y }, groups[op.lane]);
      text.textContent = label.text;
    }
    return { plots: groups, opLabels };
  }

  function setWindow(w) {
    model.set("window", w);
    model.save_changes();
    draw();
  }

  function plotX(event) {
    const box = chart.getBoundingClientRect();
    return event.clientX - box.left - geom.labelW;
  }

  function onWheel(event) {
    if (!geom) return;
    const px = plotX(event);
    if (px < 0 || px > geom.plotW) return;
    event.preventDefault();
    const scale = scaleFor(geom.window, geom.plotW);
    const full = fullWindow(geom.data);
    if (event.shiftKey || Math.abs(event.deltaX) > Math.abs(event.deltaY)) {
      const dx = Math.abs(event.deltaX) > Math.abs(event.deltaY) ? event.deltaX : event.deltaY;
      setWindow(panBy(geom.window, full, dx / scale.k));
    } else {
      setWindow(zoomAt(geom.window, full, scale.inv(px), Math.exp(event.deltaY * 0.002)));
    }
  }

  let dragFrom = null;
  function onDown(event) {
    if (!geom || event.button !== 0) return;
    const px = plotX(event);
    if (px >= 0 && px <= geom.plotW) dragFrom = px;
  }

  function onMove(event) {
    const target = event.target;
    if (dragFrom !== null) {
      const px = Math.max(0, Math.min(geom.plotW, plotX(event)));
      geom.brush.setAttribute("x", Math.min(px, dragFrom));
      geom.brush.setAttribute("width", Math.abs(px - dragFrom));
      geom.brush.setAttribute("visibility", "visible");
    }
    let lines = null;
    if (target.dataset && target.dataset.op !== undefined) {
      lines = opTooltip(geom.data, Number(target.dataset.op));
    } else if (target.dataset && target.dataset.transfer !== undefined) {
      lines = transferTooltip(geom.data, Number(target.dataset.transfer));
    }
    showTip(event, lines);
  }

  function onUp(event) {
    if (dragFrom === null) return;
    const w = windowFromDrag(geom.window, geom.plotW, dragFrom, plotX(event));
    dragFrom = null;
    geom.brush.setAttribute("visibility", "hidden");
    if (w) setWindow(w);
  }

  function showTip(event, lines) {
    if (!lines) {
      tip.style.display = "none";
      return;
    }
    tip.textContent = lines.join("\n");
    tip.style.display = "block";
    const box = root.getBoundingClientRect();
    // keep the tip inside the widget: flip it left of / above the pointer where needed
    let left = event.clientX - box.left + 12;
    if (left + tip.offsetWidth > box.width) left = Math.max(0, left - tip.offsetWidth - 24);
    let top = event.clientY - box.top + 12;
    if (top + tip.offsetHeight > box.height) top = Math.max(0, top - tip.offsetHeight - 24);
    tip.style.left = `${left}px`;
    tip.style.top = `${top}px`;
  }

  chart.addEventListener("wheel", onWheel, { passive: false });
  chart.addEventListener("mousedown", onDown);
  chart.addEventListener("mousemove", onMove);
  chart.addEventListener("mouseleave", () => showTip(null, null));
  chart.addEventListener("dblclick", () => setWindow([]));
  window.addEventListener("mouseup", onUp);
  const redraw = () => draw();
  model.on("change:window", redraw);
  model.on("change:_data", redraw);
  const resize = typeof ResizeObserver === "function" ? new ResizeObserver(redraw) : null;
  if (resize) resize.observe(el);
  draw();
  return () => {
    window.removeEventListener("mouseup", onUp);
    model.off("change:window", redraw);
    model.off("change:_data", redraw);
    if (resize) resize.disconnect();
  };
}

export default { render };
