// The placement view's pieces: SVG elements for boxes, edges and nodes, and
// tooltip text. The describe/format functions are pure; the draw functions
// need a document when called (never at import time).
import { LINE_H, fitTitle, labelLines } from "./boxes.js";
import { inkOn } from "./colors.js";
import { formatBytes, formatMicros } from "./format.js";

export { formatBytes, formatMicros } from "./format.js";

const SVG_NS = "http://www.w3.org/2000/svg";
export const TINT = 0.14;  // a device box's fill opacity

/** An SVG element with attributes and optional text. */
export function svgEl(tag, attrs = {}, text = undefined) {
  const elem = document.createElementNS(SVG_NS, tag);
  for (const [key, value] of Object.entries(attrs)) elem.setAttribute(key, String(value));
  if (text !== undefined) elem.textContent = text;
  return elem;
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
  if (edge.bundle) {
    lines.push(`${edge.tensors} tensor${edge.tensors === 1 ? "" : "s"} sent, ` +
      `${formatBytes(edge.bytes)} in all (${edge.count} op edges` +
      `${edge.control ? `, ${edge.control} control` : ""})`);
    lines.push(`from ${edge.source.replace(/^\w+:/, "")}`, `to ${edge.target.replace(/^\w+:/, "")}`);
    const tensors = edge.members.flatMap((m) => m.tensors || []);
    for (const tensor of tensors.slice(0, 8)) lines.push(`  ${tensor}`);
    if (tensors.length > 8) lines.push(`  … ${tensors.length - 8} more`);
    return lines;
  }
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
  // the innermost box (a device, or a task merged with its one device) is tinted
  // with its device's colour; job and other boxes are outlines on the frame's colour
  const tinted = grp.color && grp.color.toUpperCase() !== "#FFFFFF"
    && (grp.kind === "device" || grp.kind === "task" || grp.kind === "scope");
  const rect = svgEl("rect", { x, y, width: grp.width, height: grp.height, rx: 6,
    fill: tinted ? grp.color : "none", "fill-opacity": tinted ? TINT : 0 });
  if (tinted) rect.style.stroke = grp.color;
  g.append(rect);
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

/** Lines of a label as tspans, each starting again at x. */
function appendLines(text, lines, x) {
  if (lines.length === 1) { text.textContent = lines[0]; return; }
  lines.forEach((line, i) => text.append(svgEl("tspan", { x, dy: i ? LINE_H : 0 }, line)));
}

/** The points moved `offset` px along the left-hand normal of first → last. */
export function shiftPoints(points, offset) {
  if (!offset || points.length < 2) return points;
  const a = points[0];
  const b = points[points.length - 1];
  const len = Math.hypot(b.x - a.x, b.y - a.y) || 1;
  const nx = -(b.y - a.y) / len;
  const ny = (b.x - a.x) / len;
  return points.map((p) => ({ x: p.x + nx * offset, y: p.y + ny * offset }));
}

/** An edge's path (path.nbc-edge, or path.nbc-edge-transfer between devices;
 *  a bundle of transfers also .nbc-bundle) and its label. */
export function drawEdge(edge, uid, hover, offset = 0) {
  const points = shiftPoints(edge.points, offset);
  const d = points.map((p, i) => `${i ? "L" : "M"}${p.x.toFixed(1)},${p.y.toFixed(1)}`)
    .join(" ");
  const cls = edge.kind === "transfer" ? "nbc-edge-transfer"
    : edge.kind === "control" ? "nbc-edge nbc-edge-control" : "nbc-edge";
  // fill as an attribute too: the minimap's <use> copy does not get the CSS
  const path = svgEl("path", { d, fill: "none", class: edge.bundle ? `${cls} nbc-bundle` : cls,
    "marker-end": `url(#nbc-arrow-${edge.bundle ? "bundle" : edge.kind}-${uid})`,
    "data-id": edge.id });
  if (edge.bundle) path.style.strokeWidth = `${Math.min(6, 1.6 + Math.log2((edge.tensors || 0) + 1) * 0.6)}`;
  hover(path, describeEdge(edge));
  if (!edge.label || edge.labelX === undefined) return [path];
  let x = edge.labelX;
  let y = edge.labelY + 4;
  let anchor = "middle";
  if (edge.bundle && points.length >= 2) {
    // beside its own line, on the side it is shifted to: the two directions
    // of a pair of devices print their labels on opposite sides
    const a = points[0];
    const b = points[points.length - 1];
    const len = Math.hypot(b.x - a.x, b.y - a.y) || 1;
    const nx = -(b.y - a.y) / len;
    const ny = (b.x - a.x) / len;
    const mid = { x: (a.x + b.x) / 2, y: (a.y + b.y) / 2 };
    x = mid.x + nx * 6;
    y = mid.y + ny * 10 + 4;
    anchor = Math.abs(nx) < 0.3 ? "middle" : nx > 0 ? "start" : "end";
  }
  const lines = labelLines(edge);
  const text = svgEl("text", { x, y: y - ((lines.length - 1) * LINE_H) / 2, "text-anchor": anchor,
    class: edge.kind === "transfer" ? "nbc-edge-label nbc-transfer-label" : "nbc-edge-label" });
  appendLines(text, lines, x);
  hover(text, describeEdge(edge));
  return [path, text];
}

/** An op or a folded scope (g.nbc-node) filled `fill` (its device's colour
 *  unless given), its label black or white by contrast; clicking a scope opens it. */
export function drawNode(node, onToggle, hover, fill = node.color) {
  const client = node.client ? " nbc-node-client" : "";
  const g = svgEl("g", { class: `nbc-node nbc-node-${node.kind}${client}`, "data-id": node.id,
    "data-name": node.name || "" });
  g.append(svgEl("rect", { x: node.x - node.width / 2, y: node.y - node.height / 2,
    width: node.width, height: node.height, rx: node.kind === "scope" ? 2 : 10, fill }));
  const lines = labelLines(node).map((l) => (l.length > 48 ? `${l.slice(0, 47)}…` : l));
  const text = svgEl("text", { x: node.x, y: node.y + 4 - ((lines.length - 1) * LINE_H) / 2,
    "text-anchor": "middle" });
  appendLines(text, lines, node.x);
  text.style.fill = inkOn(fill);  // a style: the theme's CSS must not override it
  g.append(text);
  if (node.kind === "scope") {
    g.addEventListener("click", (e) => { e.stopPropagation(); onToggle(node.scope); });
  }
  hover(g, describeNode(node));
  return g;
}
