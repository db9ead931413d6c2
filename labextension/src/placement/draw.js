// The placement view's pieces: SVG elements for boxes, edges and nodes, and
// tooltip text. The describe/format functions are pure; the draw functions
// need a document when called (never at import time).
import { fitTitle } from "./boxes.js";

const SVG_NS = "http://www.w3.org/2000/svg";

/** An SVG element with attributes and optional text. */
export function svgEl(tag, attrs = {}, text = undefined) {
  const elem = document.createElementNS(SVG_NS, tag);
  for (const [key, value] of Object.entries(attrs)) elem.setAttribute(key, String(value));
  if (text !== undefined) elem.textContent = text;
  return elem;
}

/** "1.2 KiB" from a byte count ("? B" when unknown). */
export function formatBytes(n) {
  if (n === null || n === undefined) return "? B";
  const units = ["B", "KiB", "MiB", "GiB", "TiB"];
  let size = n;
  let unit = 0;
  while (size >= 1024 && unit < units.length - 1) { size /= 1024; unit += 1; }
  return unit === 0 ? `${n} B` : `${size.toFixed(1)} ${units[unit]}`;
}

/** "0.25 ms" or "17 µs" from microseconds. */
export function formatMicros(us) {
  if (us === null || us === undefined) return "";
  return us >= 1000 ? `${(us / 1000).toFixed(2)} ms` : `${us} µs`;
}

/** The tooltip lines of a drawn node: name, op type, dtype, shape, device, time. */
export function describeNode(node) {
  const lines = [node.name];
  if (node.kind === "scope") {
    lines.push(`name scope, ${node.count} ops (click to open)`);
  } else {
    lines.push(`op: ${node.op}`);
    if (node.dtype) lines.push(`dtype: ${node.dtype}`);
    if (node.shape) lines.push(`shape: ${node.shape}`);
  }
  lines.push(`device: ${node.device || "(unplaced)"}`);
  if (node.requested && node.requested !== node.device) lines.push(`requested: ${node.requested}`);
  if (node.time_us !== null && node.time_us !== undefined) {
    lines.push(`time: ${formatMicros(node.time_us)}` +
      (node.start_us !== null && node.start_us !== undefined
        ? ` (from +${formatMicros(node.start_us)})` : ""));
  }
  return lines;
}

/** The tooltip lines of an edge: what it carries and how much. */
export function describeEdge(edge) {
  const lines = [];
  if (edge.kind === "transfer") {
    lines.push(`transfer: ${formatBytes(edge.bytes)}`);
    for (const tensor of (edge.tensors || []).slice(0, 8)) lines.push(`  ${tensor}`);
    if ((edge.tensors || []).length > 8) lines.push(`  … ${edge.tensors.length - 8} more`);
  } else {
    lines.push(edge.kind === "control" ? "control dependency" : "data");
  }
  if (edge.count > 1) lines.push(`${edge.count} edges merged`);
  return lines;
}

/** A job/task/device box (g.nbc-group) or an open scope's box (g.nbc-scope-box). */
export function drawGroup(grp, onToggle, hover) {
  const cls = grp.kind === "scope" ? "nbc-scope-box" : `nbc-group nbc-group-${grp.kind}`;
  const g = svgEl("g", { class: cls, "data-id": grp.id });
  const x = grp.x - grp.width / 2;
  const y = grp.y - grp.height / 2;
  const tinted = grp.kind === "device" || grp.kind === "task";
  g.append(svgEl("rect", { x, y, width: grp.width, height: grp.height, rx: 6, fill: grp.color,
    "fill-opacity": tinted ? 0.12 : 0.04, stroke: grp.kind === "job" ? "#666" : grp.color }));
  // the layout makes boxes as wide as their titles; cut what still does not fit
  const title = grp.title || grp.label;
  const label = svgEl("text", { x: x + 6, y: y + 12, class: "nbc-group-label" },
    fitTitle(title, grp.width));
  label.append(svgEl("title", {}, grp.label));
  g.append(label);
  if (grp.kind === "scope") {
    g.addEventListener("click", (e) => { e.stopPropagation(); onToggle(grp.scope); });
    hover(g, [`${grp.scope}/ (open: click to fold)`]);
  }
  return g;
}

/** An edge's path (path.nbc-edge, or path.nbc-edge-transfer between devices) and its label. */
export function drawEdge(edge, uid, hover) {
  const d = edge.points.map((p, i) => `${i ? "L" : "M"}${p.x.toFixed(1)},${p.y.toFixed(1)}`)
    .join(" ");
  const cls = edge.kind === "transfer" ? "nbc-edge-transfer"
    : edge.kind === "control" ? "nbc-edge nbc-edge-control" : "nbc-edge";
  const path = svgEl("path", { d, class: cls,
    "marker-end": `url(#nbc-arrow-${edge.kind}-${uid})` });
  hover(path, describeEdge(edge));
  if (!edge.label || edge.labelX === undefined) return [path];
  const text = svgEl("text", { x: edge.labelX, y: edge.labelY + 4, "text-anchor": "middle",
    class: edge.kind === "transfer" ? "nbc-edge-label nbc-transfer-label" : "nbc-edge-label" },
  edge.label);
  hover(text, describeEdge(edge));
  return [path, text];
}

/** An op or a folded scope (g.nbc-node); clicking a scope opens it. */
export function drawNode(node, onToggle, hover) {
  const client = node.client ? " nbc-node-client" : "";
  const g = svgEl("g", { class: `nbc-node nbc-node-${node.kind}${client}`, "data-id": node.id });
  g.append(svgEl("rect", { x: node.x - node.width / 2, y: node.y - node.height / 2,
    width: node.width, height: node.height, rx: node.kind === "scope" ? 2 : 10,
    fill: node.color }));
  const label = node.label.length > 48 ? `${node.label.slice(0, 47)}…` : node.label;
  g.append(svgEl("text", { x: node.x, y: node.y + 4, "text-anchor": "middle" }, label));
  if (node.kind === "scope") {
    g.addEventListener("click", (e) => { e.stopPropagation(); onToggle(node.scope); });
  }
  hover(g, describeNode(node));
  return g;
}
