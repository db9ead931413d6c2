// The search box's logic: which op names match a query, and which scopes to
// open so the op is drawn by itself. Pure functions: node can run them.

const NUMBERED = /^(.*?[^\d])(\d+)$/;
export const SERIES_MARK = "*";  // as placement_scopes.py: "layer_*" folds layer_0, layer_1, …

/** Names matching `query` (case-insensitive): exact first, then those that
 *  end with it ("…/w" for "w"), then prefix, then substring; at most `limit`. */
export function findOps(names, query, limit = 200) {
  const q = String(query || "").trim().toLowerCase();
  if (!q) return [];
  const ranked = [[], [], [], []];
  for (const name of names || []) {
    const n = name.toLowerCase();
    if (n === q) ranked[0].push(name);
    else if (n.endsWith(`/${q}`)) ranked[1].push(name);
    else if (n.startsWith(q)) ranked[2].push(name);
    else if (n.includes(q)) ranked[3].push(name);
  }
  return ranked.flat().slice(0, limit);
}

/** The `expanded` entries that show op `name` unfolded: every enclosing
 *  scope ("a", "a/b"), the name itself (an op may share its name with a
 *  scope: "w" beside "w/read"), and the series of each numbered one
 *  ("layer_*" for "layer_3"). */
export function scopesToOpen(name) {
  const parts = String(name).split("/");
  const out = [];
  for (let i = 1; i <= parts.length; i += 1) {
    const path = parts.slice(0, i).join("/");
    const m = NUMBERED.exec(parts[i - 1]);
    if (m) out.push([...parts.slice(0, i - 1), `${m[1]}${SERIES_MARK}`].join("/"));
    out.push(path);
  }
  return out;
}

/** The drawn node that shows op `name`: the op itself, else the folded scope
 *  or series holding it (the deepest); null when none. */
export function nodeFor(nodes, name) {
  let best = null;
  for (const n of nodes || []) {
    if (n.kind === "op" && n.name === name) return n;
    if (n.kind !== "scope" || !n.scope) continue;
    const holds = n.scope.endsWith(SERIES_MARK)
      ? seriesHolds(n.scope, name) : name === n.scope || name.startsWith(`${n.scope}/`);
    if (holds && (!best || n.scope.length > best.scope.length)) best = n;
  }
  return best;
}

function seriesHolds(series, name) {
  const stem = series.slice(0, -SERIES_MARK.length);
  if (!name.startsWith(stem)) return false;
  const rest = name.slice(stem.length);
  return /^\d+(\/|$)/.test(rest);
}
