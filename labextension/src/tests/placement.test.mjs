// Node tests of the placement view's pure logic (run: cd labextension && node --test src/tests/):
// transfers bundled per pair of devices, search and the scopes it opens, label
// colours' contrast, time colours, fit arithmetic, and the layout of a folded
// 2,000-op training graph's shape (three tasks, bundles between them).
import assert from "node:assert/strict";
import { test } from "node:test";

import { bundleTransfers, deviceBoxOf, pairOffsets } from "../placement/bundles.js";
import { contrast, inkOn, nodeFills, parseHex, timeColor } from "../placement/colors.js";
import { layoutData } from "../placement/layout.js";
import { findOps, nodeFor, scopesToOpen } from "../placement/search.js";
import { READABLE_K, centreOn, fitScale, inside, placeAt, visibleRect }
  from "../placement/viewport.js";

const PALETTE = ["#56B4E9", "#E69F00", "#009E73", "#F0E442", "#CC79A7", "#D55E00",
  "#8CD17D", "#B6992D", "#86BCB6", "#FF9D9A", "#A0CBE8", "#FFBE7D", "#DDDDDD", "#0072B2"];

/** A worker and two ps tasks; each layer's w and b live on a ps and travel to the worker. */
function trainingView(layers = 4) {
  const group = (id, kind, label, parent = null) => ({ id, kind, label, parent, color: "#E69F00" });
  const groups = [group("job:w", "job", "/job:worker"), group("task:w", "task", "/job:worker/task:0", "job:w"),
    group("job:ps", "job", "/job:ps"), group("task:p0", "task", "/job:ps/task:0", "job:ps"),
    group("task:p1", "task", "/job:ps/task:1", "job:ps")];
  const nodes = [];
  const edges = [];
  const op = (id, parent) => nodes.push({ id, label: id, kind: "op", name: id, op: "Identity",
    device: parent, parent, color: "#56B4E9" });
  op("x", "task:w");
  let prev = "x";
  for (let i = 0; i < layers; i += 1) {
    const ps = i % 2 ? "task:p1" : "task:p0";
    op(`w${i}`, ps);
    op(`mm${i}`, "task:w");
    edges.push({ source: prev, target: `mm${i}`, kind: "data", count: 1 });
    edges.push({ source: `w${i}`, target: `mm${i}`, kind: "transfer", count: 1,
      tensors: [`w${i}/read:0`], bytes: 1024, sizes: { [`${ps}>w${i}/read:0`]: 1024 } });
    // the gradient goes back to the variable's ps
    edges.push({ source: `mm${i}`, target: `w${i}`, kind: "transfer", count: 1,
      tensors: [`grad${i}:0`], bytes: 512, sizes: { [`w>grad${i}:0`]: 512 } });
    prev = `mm${i}`;
  }
  edges.push({ source: "w0", target: "w1", kind: "control", count: 2 });
  edges.push({ source: "w0", target: "w3", kind: "control", count: 1 });
  return { groups, nodes, edges: edges.map((e, i) => ({ ...e, id: `e${i}` })) };
}

test("transfers between the same two devices become one edge with a count and total bytes", () => {
  const view = trainingView(4);
  const out = bundleTransfers(view);
  const bundles = out.edges.filter((e) => e.bundle);
  const by = Object.fromEntries(bundles.map((b) => [`${b.source}>${b.target}`, b]));
  assert.deepEqual(Object.keys(by).sort(),
    ["task:p0>task:p1", "task:p0>task:w", "task:p1>task:w", "task:w>task:p0", "task:w>task:p1"]);
  assert.equal(by["task:p0>task:w"].tensors, 2);
  assert.equal(by["task:p0>task:w"].bytes, 2048);
  assert.equal(by["task:p0>task:w"].label, "2 tensors · 2.0 KiB");
  assert.equal(by["task:w>task:p1"].bytes, 1024);
  // a control edge between devices joins its pair's bundle, carrying no bytes
  assert.equal(by["task:p0>task:p1"].label, "3 control");
  assert.equal(by["task:p0>task:p1"].bytes, null);
  // edges inside one device stay as they were
  assert.deepEqual(out.edges.filter((e) => !e.bundle).map((e) => e.id).sort(),
    view.edges.filter((e) => e.kind === "data").map((e) => e.id).sort());
});

test("a single edge between two devices is not bundled", () => {
  const view = trainingView(1);
  const out = bundleTransfers({ ...view, edges: view.edges.filter((e) => e.id !== "e2") });
  assert.ok(!out.edges.some((e) => e.bundle));
  assert.equal(out.edges.length, view.edges.length - 1);
});

test("a tensor sent to two consumers on one device counts once in its bundle", () => {
  const view = trainingView(1);
  const dup = { ...view.edges[1], id: "dup", target: "x" };  // w0/read:0 again, to another op
  const out = bundleTransfers({ ...view, edges: [...view.edges, dup] });
  const b = out.edges.find((e) => e.id === "bundle:task:p0>task:w");
  assert.equal(b.tensors, 1);
  assert.equal(b.bytes, 1024);
  assert.equal(b.count, 2);
  assert.equal(b.members.length, 2);
});

test("bundles end at the device box, not at an open scope inside it; client nodes are not bundled", () => {
  const parentOf = new Map([["op", "scope:a"], ["scope:a", "task:w"], ["task:w", "job:w"],
    ["job:w", null], ["feed", null]]);
  const kindOf = new Map([["scope:a", "scope"], ["task:w", "task"], ["job:w", "job"]]);
  assert.equal(deviceBoxOf("op", parentOf, kindOf), "task:w");
  assert.equal(deviceBoxOf("feed", parentOf, kindOf), null);
});

test("the two directions between a pair of devices are drawn apart", () => {
  const out = bundleTransfers(trainingView(4));
  const offsets = pairOffsets(out.edges);
  assert.ok(offsets.get("bundle:task:p0>task:w") > 0);
  assert.ok(offsets.get("bundle:task:w>task:p0") > 0);  // along its own (opposite) normal
  assert.equal(offsets.get("bundle:task:p0>task:p1"), 0);  // one direction only
});

test("a bundled layout puts a job's tasks side by side, every node inside its box", () => {
  const l = layoutData(trainingView(6), "TB");
  assert.equal(l.mode, "nested");
  const box = Object.fromEntries(l.groups.map((g) => [g.id, g]));
  // the two ps tasks share a row, below the worker
  assert.ok(Math.abs(box["task:p0"].y - box["task:p1"].y) < 1);
  assert.ok(box["task:p0"].x + box["task:p0"].width / 2 < box["task:p1"].x - box["task:p1"].width / 2);
  for (const n of l.nodes) {
    const g = box[n.parent];
    const r = { x: g.x - g.width / 2, y: g.y - g.height / 2, width: g.width, height: g.height };
    assert.ok(inside(n, r), `${n.id} outside ${n.parent}`);
  }
  for (const e of l.edges.filter((x) => x.bundle)) assert.ok(e.points.length >= 2, e.id);
});

test("search ranks exact, then last-component, then prefix, then substring matches", () => {
  const names = ["gradients/layer_3/w_grad", "layer_3/w", "layer_3/w/read", "w", "layer_30/w"];
  assert.deepEqual(findOps(names, "w"), ["w", "layer_3/w", "layer_30/w",
    "gradients/layer_3/w_grad", "layer_3/w/read"]);
  assert.deepEqual(findOps(names, "LAYER_3/W"), ["layer_3/w", "layer_3/w/read",
    "gradients/layer_3/w_grad"]);
  assert.deepEqual(findOps(names, "  "), []);
  assert.deepEqual(findOps(names, "nothing"), []);
});

test("opening an op's scopes names every enclosing scope and the series of numbered ones", () => {
  assert.deepEqual(scopesToOpen("gradients/layer_3/MatMul"), ["gradients", "gradients/layer_*",
    "gradients/layer_3", "gradients/layer_3/MatMul"]);
  assert.deepEqual(scopesToOpen("w"), ["w"]);
});

test("the node shown for an op is the op, else the deepest folded scope or series holding it", () => {
  const nodes = [{ id: "a", kind: "scope", scope: "gradients" },
    { id: "b", kind: "scope", scope: "gradients/layer_*" },
    { id: "c", kind: "op", name: "gradients/layer_3/MatMul" }];
  assert.equal(nodeFor(nodes, "gradients/layer_3/MatMul").id, "c");
  assert.equal(nodeFor(nodes, "gradients/layer_4/MatMul").id, "b");
  assert.equal(nodeFor(nodes, "gradients/layer_x/MatMul").id, "a");
  assert.equal(nodeFor(nodes, "other"), null);
});

test("a node's label is black or white, whichever gives at least 4.5:1 on its fill", () => {
  for (const fill of [...PALETTE, "#000000", "#FFFFFF", "#777777", "#808080", "#1976D2"]) {
    const ink = parseHex(inkOn(fill));
    assert.ok(contrast(ink, parseHex(fill)) >= 4.5, `${fill} -> ${inkOn(fill)}`);
  }
  assert.equal(inkOn("#FFFFCC"), "#000000");
  assert.equal(inkOn("#800026"), "#FFFFFF");
  for (let us = 0; us <= 1000; us += 37) {
    const fill = timeColor(us, 1000);
    assert.ok(contrast(parseHex(inkOn(fill)), parseHex(fill)) >= 4.5, fill);
  }
});

test("colour by time runs pale to dark with the time; untimed nodes are grey", () => {
  const lum = (c) => parseHex(c).reduce((a, b) => a + b, 0);
  assert.ok(lum(timeColor(10, 1000)) > lum(timeColor(500, 1000)));
  assert.ok(lum(timeColor(500, 1000)) > lum(timeColor(1000, 1000)));
  const fills = nodeFills([{ id: "a", time_us: 5, color: "#56B4E9" },
    { id: "b", time_us: null, color: "#56B4E9" }], "time");
  assert.equal(fills.get("b"), "#DDDDDD");
  assert.equal(nodeFills([{ id: "a", time_us: 5, color: "#56B4E9" }], "device").get("a"), "#56B4E9");
});

test("fitting: readable scale, centred when it fits, a centred point stays centred", () => {
  assert.ok(READABLE_K * 11 >= 10);
  assert.equal(fitScale(500, 300, 1000, 600), 1);
  assert.ok(Math.abs(fitScale(2000, 300, 1008, 600) - 0.5) < 1e-9);
  const t = placeAt(500, 300, 1000, 400, 1);
  assert.deepEqual(t, { k: 1, x: 250, y: 50 });
  const c = centreOn(300, 200, 800, 400, 2);
  const r = visibleRect(c, 800, 400);
  assert.deepEqual([r.x + r.width / 2, r.y + r.height / 2], [300, 200]);
});
