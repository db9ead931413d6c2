// Layout of a placement view by dagre: every position comes from a dagre run.
// Small views are one compound graph (boxes are parents via setParent), so
// edges between boxes are routed by dagre too. Compound dagre slows down fast
// with long edges (a folded 2,000-op training graph: 7 s for 127 nodes), so
// bigger views are laid out box by box: each box's children by one dagre run
// (child boxes as nodes of the size their own run gave), edges lifted to the
// children they come from; an edge inside one box keeps dagre's route, one
// between boxes is drawn straight from node to node. Transfers between two
// devices are first bundled into one box-to-box edge (bundles.js).
import dagre from "@dagrejs/dagre";
import { CHAR_W, LINE_H, labelLines, prepareView, titleWidth } from "./boxes.js";
import { bundleTransfers } from "./bundles.js";

export { CHAR_W } from "./boxes.js";
export const NODE_H = 26;
export const GROUP_LABEL = 16;  // px above a box's content for its label
const COMPOUND_MAX_NODES = 60;
const COMPOUND_MAX_EDGES = 120;
const SPACING = { nodesep: 18, ranksep: 36, edgesep: 8 };
const PAD = 10;
const ACROSS = { TB: "LR", BT: "RL", LR: "TB", RL: "BT" };
const TITLE_PASSES = 3;  // compound layouts rerun to widen boxes narrower than their title

/** Width and height dagre reserves for a drawn node. */
export function nodeSize(node) {
  const lines = labelLines(node);
  const chars = Math.max(...lines.map((l) => Math.min(l.length, 48)));
  return { width: Math.max(48, chars * CHAR_W + 18), height: NODE_H + (lines.length - 1) * LINE_H };
}

function edgeLabelSize(edge) {
  if (!edge.label) return {};
  const lines = labelLines(edge);
  return { width: Math.max(...lines.map((l) => l.length)) * CHAR_W + 6,
           height: 14 + (lines.length - 1) * LINE_H, labelpos: "c" };
}

/** Runs dagre on a view ({groups, nodes, edges}); returns positioned copies
 *  ({width, height, groups, nodes, edges}; centres x, y; edges get points). */
export function layoutData(view, rankdir = "TB", mode = "auto") {
  const v = mode === "compound" ? prepareView(view) : bundleTransfers(prepareView(view));
  // dagre's compound layout takes no edge that ends at a box: bundles go nested
  const bundled = v.edges.some((e) => e.bundle);
  const small = v.nodes.length <= COMPOUND_MAX_NODES && v.edges.length <= COMPOUND_MAX_EDGES
    && !bundled;
  let out = null;
  if (mode === "compound" || (mode === "auto" && small)) {
    try {
      out = { ...layoutCompound(v, rankdir), mode: "compound" };
    } catch (err) {
      if (mode === "compound") throw err;
    }
  }
  out = out || { ...layoutNested(v, rankdir), mode: "nested" };
  // dagre reports -Infinity for an empty graph
  const finite = (x) => (Number.isFinite(x) ? x : 0);
  return { ...out, width: finite(out.width), height: finite(out.height) };
}

/** Dagre on the whole view as one compound graph. A box narrower than its title
 *  gets an invisible spacer child as wide as what it lacks, and dagre runs again. */
function layoutCompound(view, rankdir) {
  const spacers = new Map();  // group id -> spacer width
  let g = null;
  for (let pass = 0; pass <= TITLE_PASSES; pass += 1) {
    g = compoundGraph(view, rankdir, spacers);
    dagre.layout(g);
    let short = false;
    for (const grp of view.groups) {
      const lack = titleWidth(grp.title) - g.node(grp.id).width;
      if (lack <= 0.5 || pass === TITLE_PASSES) continue;
      short = true;
      // Top-down a new spacer adds its width and nodesep beside the row it joins;
      // left-right it joins a column, which is only as wide as its widest node.
      const had = spacers.get(grp.id);
      const across = rankdir === "LR" || rankdir === "RL";
      spacers.set(grp.id, had ? had + lack
        : across ? titleWidth(grp.title) : Math.max(1, lack - SPACING.nodesep));
    }
    if (!short) break;
  }
  const box = (id) => {
    const n = g.node(id);
    return { x: n.x, y: n.y, width: n.width, height: n.height };
  };
  return {
    width: g.graph().width || 0,
    height: g.graph().height || 0,
    groups: view.groups.map((grp) => {
      const b = box(grp.id);  // room for the label above the content
      return { ...grp, ...b, y: b.y - GROUP_LABEL / 2, height: b.height + GROUP_LABEL };
    }),
    nodes: view.nodes.map((node) => ({ ...node, ...box(node.id) })),
    edges: view.edges.map((edge) => {
      const e = g.edge(edge.source, edge.target, edge.id);
      return { ...edge, points: e.points || [], labelX: e.x, labelY: e.y };
    }),
  };
}

function compoundGraph(view, rankdir, spacers) {
  const g = new dagre.graphlib.Graph({ compound: true, multigraph: true });
  // dagre halves ranksep between nested box borders: leave room for labels
  // Left to right, box borders are dagre dummies spaced by edgesep: room for titles
  const across = rankdir === "LR" || rankdir === "RL";
  g.setGraph({ rankdir, ...SPACING, ranksep: 40, marginx: PAD, marginy: PAD + GROUP_LABEL,
               ...(across ? { edgesep: SPACING.edgesep + GROUP_LABEL + 4 } : {}) });
  for (const grp of view.groups) g.setNode(grp.id, {});
  for (const grp of view.groups) if (grp.parent) g.setParent(grp.id, grp.parent);
  for (const node of view.nodes) {
    g.setNode(node.id, nodeSize(node));
    if (node.parent) g.setParent(node.id, node.parent);
  }
  for (const [id, width] of spacers) {
    g.setNode(`spacer:${id}`, { width, height: 1 });
    g.setParent(`spacer:${id}`, id);
  }
  for (const edge of view.edges) {
    g.setEdge(edge.source, edge.target, { ...edgeLabelSize(edge) }, edge.id);
  }
  return g;
}

/** Where the segment from a box's centre towards (x, y) leaves the box. */
export function clip(box, x, y) {
  const dx = x - box.x;
  const dy = y - box.y;
  if (!dx && !dy) return { x: box.x, y: box.y };
  const s = Math.min(dx ? box.width / 2 / Math.abs(dx) : Infinity,
                     dy ? box.height / 2 / Math.abs(dy) : Infinity);
  return { x: box.x + dx * s, y: box.y + dy * s };
}

function layoutNested(view, rankdir) {
  const { groups, nodes, edges } = view;
  const isGroup = new Set(groups.map((g) => g.id));
  const parentOf = new Map();
  const children = new Map();
  for (const item of [...groups, ...nodes]) {
    const parent = item.parent && isGroup.has(item.parent) ? item.parent : "";
    parentOf.set(item.id, parent);
    if (!children.has(parent)) children.set(parent, []);
    children.get(parent).push(item.id);
  }
  const childOf = (id, cluster) => {  // the child of `cluster` that holds `id`
    let at = id;
    while (at !== undefined && parentOf.get(at) !== cluster) at = parentOf.get(at) || undefined;
    return at;
  };
  const byId = new Map(nodes.map((n) => [n.id, n]));
  const titleOf = new Map(groups.map((g) => [g.id, g.title]));
  const kindOf = new Map(groups.map((g) => [g.id, g.kind]));
  const size = new Map();
  const local = new Map();   // id -> centre within its parent's content area
  const routes = new Map();  // edge id -> {cluster, points, x, y}
  const layoutCluster = (cluster) => {
    const kids = children.get(cluster) || [];
    for (const kid of kids) if (isGroup.has(kid)) layoutCluster(kid);
    const g = new dagre.graphlib.Graph({ multigraph: true });
    // copies: dagre writes x and y into the labels it is given
    const sizeOf = (kid) => (isGroup.has(kid) ? size.get(kid) : nodeSize(byId.get(kid)));
    for (const kid of kids) {
      const { width, height } = sizeOf(kid);
      g.setNode(kid, { width, height });
    }
    const lifted = new Set();
    // A job's tasks (boxes only, no ops) side by side: the edges between them
    // and another job then fan out instead of crossing one task to reach the next.
    const tasksOnly = cluster && kids.length > 1
      && kids.every((k) => isGroup.has(k) && kindOf.get(k) !== "scope");
    for (const edge of tasksOnly ? [] : edges) {
      const a = childOf(edge.source, cluster);
      const b = childOf(edge.target, cluster);
      if (!a || !b || a === b) continue;
      if (a === edge.source && b === edge.target) {
        g.setEdge(a, b, { ...edgeLabelSize(edge) }, edge.id);
        routes.set(edge.id, cluster);
      } else if (!lifted.has(`${a}\0${b}`)) {
        lifted.add(`${a}\0${b}`);
        g.setEdge(a, b, {}, `lifted:${a}\0${b}`);
      }
    }
    // Unconnected children (a ps box's variables, one folded scope per
    // layer) would all share one rank: lay them out across it instead.
    const across = !g.edgeCount() && kids.length > 6 && !tasksOnly ? ACROSS[rankdir] : rankdir;
    // room between side-by-side tasks for the labels of the bundles between them
    const between = tasksOnly ? edges.filter((e) => kids.includes(e.source) && kids.includes(e.target))
      : [];
    const nodesep = Math.max(SPACING.nodesep, ...between.map((e) => edgeLabelSize(e).width + 24 || 0));
    g.setGraph({ rankdir: across, ...SPACING, nodesep, marginx: PAD, marginy: PAD });
    dagre.layout(g);
    for (const kid of kids) local.set(kid, { x: g.node(kid).x, y: g.node(kid).y });
    for (const edge of edges) {
      if (routes.get(edge.id) === cluster) {
        const e = g.edge(edge.source, edge.target, edge.id);
        routes.set(edge.id, { cluster, points: e.points || [], x: e.x, y: e.y });
      }
    }
    // a box is at least as wide as its title; its content stays centred
    const content = g.graph().width || 0;
    const width = cluster ? Math.max(content, titleWidth(titleOf.get(cluster))) : content;
    size.set(cluster, { width, height: (g.graph().height || 0) + (cluster ? GROUP_LABEL : 0),
                        inset: (width - content) / 2 });
  };
  layoutCluster("");
  const origin = new Map([["", { x: 0, y: 0 }]]);  // top-left of each cluster's content
  const abs = new Map();
  const place = (cluster) => {
    const o = origin.get(cluster);
    for (const kid of children.get(cluster) || []) {
      const p = local.get(kid);
      const { width, height } = isGroup.has(kid) ? size.get(kid) : nodeSize(byId.get(kid));
      const b = { x: o.x + p.x, y: o.y + p.y, width, height };
      abs.set(kid, b);
      if (isGroup.has(kid)) {
        origin.set(kid, { x: b.x - b.width / 2 + size.get(kid).inset,
                          y: b.y - b.height / 2 + GROUP_LABEL });
        place(kid);
      }
    }
  };
  place("");
  return {
    width: size.get("").width,
    height: size.get("").height,
    groups: groups.map((grp) => ({ ...grp, ...abs.get(grp.id) })),
    nodes: nodes.map((node) => ({ ...node, ...abs.get(node.id) })),
    edges: edges.map((edge) => {
      const route = routes.get(edge.id);
      if (route && route.points) {
        const o = origin.get(route.cluster);
        const shift = (p) => ({ x: p.x + o.x, y: p.y + o.y });
        const label = route.x === undefined ? {} : shift(route);
        return { ...edge, points: route.points.map(shift), labelX: label.x, labelY: label.y };
      }
      const a = abs.get(edge.source);
      const b = abs.get(edge.target);
      if (!a || !b) return { ...edge, points: [] };
      const points = [clip(a, b.x, b.y), clip(b, a.x, a.y)];
      return { ...edge, points, labelX: (points[0].x + points[1].x) / 2,
               labelY: (points[0].y + points[1].y) / 2 };
    }),
  };
}
