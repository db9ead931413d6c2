// What the placement layout lays out, before dagre sees it: box titles (short
// where the enclosing box already says the rest), the width a title needs,
// the client's feeds and fetches taken out of their tall `/job:client` box, and
// task boxes that hold one device box folded into it.
// Pure functions: node can run them.

export const CHAR_W = 6.6;       // px per character of the 11px monospace label font
export const TITLE_PAD = 14;     // px a box needs beside its title (6 left, 8 right)
export const CLIENT_JOB = "/job:client";

/** The title drawn on a box: "/task:0" inside "/job:worker", else the whole label. */
export function boxTitle(grp, parent) {
  const label = String(grp.label || "");
  const outer = parent ? String(parent.label || "") : "";
  return outer && label.startsWith(`${outer}/`) ? label.slice(outer.length) : label;
}

/** The width (px) a box needs so that its title stays inside it. */
export function titleWidth(title) {
  return String(title || "").length * CHAR_W + TITLE_PAD;
}

/** The title cut to `width` px with an ellipsis (the whole title when it fits). */
export function fitTitle(title, width) {
  const text = String(title || "");
  const chars = Math.floor((width - TITLE_PAD) / CHAR_W);
  if (text.length <= chars) return text;
  return chars >= 2 ? `${text.slice(0, chars - 1)}…` : "";
}

/** The view as the layout takes it: groups get `title`; the client's box (and any
 *  box inside it) is dropped and its feed/fetch nodes become top-level nodes
 *  marked `client: true`, so dagre puts feeds above their consumers and fetches
 *  below their producers instead of stretching one box over the whole height. */
export function prepareView(view) {
  const groups = view.groups || [];
  const byId = new Map(groups.map((g) => [g.id, g]));
  const dropped = new Set();
  const isClient = (g) => g.label === CLIENT_JOB || g.id === `job:${CLIENT_JOB}`;
  const underClient = (g) => {
    for (let at = g; at; at = at.parent ? byId.get(at.parent) : null) {
      if (isClient(at)) return true;
    }
    return false;
  };
  for (const g of groups) if (underClient(g)) dropped.add(g.id);
  // A task box around a single device box costs a nesting level (two label rows
  // and dagre's border ranks) and says nothing: the device box takes its place.
  const inner = new Map();  // task id -> its one device group
  for (const g of groups) {
    if (g.kind !== "task" || dropped.has(g.id)) continue;
    const kids = groups.filter((k) => k.parent === g.id);
    const ops = (view.nodes || []).some((n) => n.parent === g.id);
    if (kids.length === 1 && kids[0].kind === "device" && !ops) inner.set(g.id, kids[0]);
  }
  const kept = [];
  for (const g of groups) {
    if (dropped.has(g.id) || inner.has(g.id)) continue;
    const parent = g.parent ? byId.get(g.parent) : null;
    if (parent && inner.has(parent.id)) {  // the device box of a merged task
      const outer = parent.parent ? byId.get(parent.parent) : null;
      kept.push({ ...g, parent: parent.parent || null, label: `${parent.label}${g.label}`,
                  title: `${boxTitle(parent, outer)}${g.label}` });
    } else {
      kept.push({ ...g, title: boxTitle(g, parent) });
    }
  }
  const nodes = (view.nodes || []).map((n) => (dropped.has(n.parent)
    ? { ...n, parent: null, client: true }
    : { ...n, client: n.device === CLIENT_JOB }));
  return { groups: kept, nodes, edges: view.edges || [] };
}

export const LINE_H = 13;  // px between two lines of a label

/** A drawn label's lines: a folded scope "gradients/ (495 ops)" and a bundle
 *  "90 tensors · 84.1 KiB" on two (narrower boxes, narrower gaps); else one. */
export function labelLines(item) {
  const label = String(item.label || "");
  if (item.bundle) return label.split(" · ");
  const at = item.kind === "scope" ? label.lastIndexOf(" (") : -1;
  return at > 0 ? [label.slice(0, at), label.slice(at + 1)] : [label];
}
