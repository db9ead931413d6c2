// Transfers bundled per pair of devices: every transfer edge from one device
// box to another becomes one edge between the two boxes, labelled with how
// many tensors it carries and their total bytes. A training step sends a
// tensor per variable each way; drawn one by one they are a tangle.
// Pure functions: node can run them.
import { formatBytes } from "./format.js";

export const BUNDLE_MIN = 2;  // edges between two devices that make a bundle

/** The box an edge end is bundled at: the innermost job/task/device box
 *  holding node `id` (scope boxes are skipped: the bundle is per device);
 *  null for a node outside every box (the client's feeds and fetches). */
export function deviceBoxOf(id, parentOf, kindOf) {
  for (let at = parentOf.get(id); at; at = parentOf.get(at)) {
    if (kindOf.get(at) !== "scope") return at;
  }
  return null;
}

/** The view ({groups, nodes, edges}) with its edges between two
 *  device boxes replaced by one edge per (source box, target box).
 *
 *  Control edges between two devices join the bundle (a send of no bytes);
 *  a pair of devices with a single edge between them keeps it.
 *  A bundle: {id: "bundle:<src>><dst>", source, target (box ids), kind:
 *  "transfer", bundle: true, count (op edges), tensors (distinct), bytes
 *  (their total, null when no size is known), control (control edges),
 *  label "3 tensors · 1.2 KiB", members (the edges it replaces)}. Other
 *  edges are kept as they are. */
export function bundleTransfers(view) {
  const parentOf = new Map();
  const kindOf = new Map();
  for (const g of view.groups || []) { parentOf.set(g.id, g.parent || null); kindOf.set(g.id, g.kind); }
  for (const n of view.nodes || []) parentOf.set(n.id, n.parent || null);
  const kept = [];
  const bundles = new Map();
  for (const edge of view.edges || []) {
    // control edges between devices are sends too (of no bytes): bundled alike
    const a = deviceBoxOf(edge.source, parentOf, kindOf);
    const b = deviceBoxOf(edge.target, parentOf, kindOf);
    if (!a || !b || a === b) { kept.push(edge); continue; }
    const key = `${a}>${b}`;
    if (!bundles.has(key)) bundles.set(key, { source: a, target: b, members: [] });
    bundles.get(key).members.push(edge);
  }
  const out = [...kept];
  for (const [key, { source, target, members }] of bundles) {
    // one edge alone keeps its ends at the ops (and a small graph its compound layout)
    if (members.length < BUNDLE_MIN) { out.push(...members); continue; }
    const sizes = new Map();  // distinct tensors: one sent to two consumers counts once
    for (const edge of members) {
      if (edge.kind !== "transfer") continue;
      const known = edge.sizes && Object.keys(edge.sizes).length ? Object.entries(edge.sizes)
        : (edge.tensors || [edge.id]).map((t, i) => [`${edge.id}:${t}`, i ? null : edge.bytes]);
      for (const [tensor, bytes] of known) {
        if (!sizes.has(tensor) || sizes.get(tensor) === null) sizes.set(tensor, bytes ?? null);
      }
    }
    const values = [...sizes.values()].filter((v) => v !== null && v !== undefined);
    const bytes = values.length ? values.reduce((x, y) => x + y, 0) : null;
    const tensors = sizes.size;
    const count = members.reduce((n, e) => n + (e.count || 1), 0);
    const control = members.filter((e) => e.kind === "control")
      .reduce((n, e) => n + (e.count || 1), 0);
    const label = tensors ? `${tensors} tensor${tensors === 1 ? "" : "s"} · ${formatBytes(bytes)}`
      : `${control} control`;
    out.push({ id: `bundle:${key}`, source, target, kind: "transfer", bundle: true, count,
               tensors, bytes, control, label, members });
  }
  return { ...view, edges: out };
}

/** Perpendicular offsets (px, along each edge's own left-hand normal) for
 *  bundles drawn between the same two boxes: A→B and B→A become two lines
 *  side by side rather than one: edge id -> offset. */
export function pairOffsets(edges, gap = 14) {
  const pairs = new Map();
  for (const e of edges) {
    if (!e.bundle) continue;
    const key = [e.source, e.target].sort().join("\0");
    pairs.set(key, (pairs.get(key) || 0) + 1);
  }
  const out = new Map();
  for (const e of edges) {
    if (!e.bundle) continue;
    out.set(e.id, pairs.get([e.source, e.target].sort().join("\0")) > 1 ? gap / 2 : 0);
  }
  return out;
}
