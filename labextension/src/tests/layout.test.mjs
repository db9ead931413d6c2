// Node tests of the widgets' pure layout logic (run: cd labextension && node --test src/tests/):
// box titles and client nodes before dagre, title-wide boxes after it, and the
// timeline's label and tick placement.
import assert from "node:assert/strict";
import { test } from "node:test";

import { fitTitle, prepareView, titleWidth } from "../placement/boxes.js";
import { layoutData } from "../placement/layout.js";
import { placeLabels, ticksFor } from "../timeline/view.js";

const DEV = "/job:worker/replica:0/task:0/device:";

/** A worker task with two narrow devices, a ps task with one, and a client feed and fetch. */
function sampleView() {
  const group = (id, kind, label, parent = null) => ({ id, kind, label, parent, color: "#E69F00" });
  const op = (id, parent, device, extra = {}) => ({ id, label: id.slice(3), kind: "op",
    name: id.slice(3), op: "Identity", device, parent, color: "#E69F00", ...extra });
  return {
    groups: [
      group("job:w", "job", "/job:worker"),
      group("task:w0", "task", "/job:worker/task:0", "job:w"),
      group("dev:cpu", "device", "/device:CPU:0", "task:w0"),
      group("dev:gpu", "device", "/device:GPU:0", "task:w0"),
      group("job:ps", "job", "/job:ps"),
      group("task:ps0", "task", "/job:ps/task:0", "job:ps"),
      group("dev:ps", "device", "/device:CPU:0", "task:ps0"),
      group("job:/job:client", "job", "/job:client"),
    ],
    nodes: [
      op("op:v", "dev:ps", "/job:ps/replica:0/task:0/device:CPU:0"),
      op("op:a", "dev:cpu", `${DEV}CPU:0`),
      op("op:b", "dev:gpu", `${DEV}GPU:0`),
      op("op:x", "job:/job:client", "/job:client", { op: "_Feed" }),
      op("op:fetch:b:0", "job:/job:client", "/job:client", { op: "_Fetch" }),
    ],
    edges: [["op:x", "op:a"], ["op:v", "op:a"], ["op:a", "op:b"], ["op:b", "op:fetch:b:0"]]
      .map(([source, target], i) => ({ id: `e${i}`, source, target, kind: "data", count: 1 })),
  };
}

test("prepareView drops the client box and shortens or merges box titles", () => {
  const v = prepareView(sampleView());
  const byId = new Map(v.groups.map((g) => [g.id, g]));
  assert.equal(byId.has("job:/job:client"), false);
  for (const id of ["op:x", "op:fetch:b:0"]) {
    const node = v.nodes.find((n) => n.id === id);
    assert.equal(node.parent, null);
    assert.equal(node.client, true);
  }
  assert.equal(v.nodes.find((n) => n.id === "op:a").client, false);
  assert.equal(byId.get("task:w0").title, "/task:0");           // inside /job:worker
  assert.equal(byId.get("dev:cpu").title, "/device:CPU:0");
  assert.equal(byId.has("task:ps0"), false);                    // one device: merged
  assert.equal(byId.get("dev:ps").parent, "job:ps");
  assert.equal(byId.get("dev:ps").title, "/task:0/device:CPU:0");
  assert.equal(byId.get("dev:ps").label, "/job:ps/task:0/device:CPU:0");
});

test("fitTitle keeps short titles and cuts long ones with an ellipsis", () => {
  assert.equal(fitTitle("/job:ps", 200), "/job:ps");
  const cut = fitTitle("/job:worker/task:0/device:CPU:0", 100);
  assert.ok(cut.endsWith("…"), cut);
  assert.ok(titleWidth(cut) <= 100 + 1e-9, cut);
});

for (const [mode, rankdir] of [["compound", "TB"], ["compound", "LR"], ["nested", "TB"]]) {
  test(`${mode} ${rankdir} layout: every box is as wide as its title and holds its nodes`, () => {
    const out = layoutData(sampleView(), rankdir, mode);
    assert.equal(out.mode, mode);
    const byId = new Map(out.groups.map((g) => [g.id, g]));
    for (const grp of out.groups) {
      assert.ok(grp.width + 0.5 >= titleWidth(grp.title), `${grp.title}: ${grp.width}`);
    }
    for (const node of out.nodes.filter((n) => n.parent)) {
      const box = byId.get(node.parent);
      assert.ok(Math.abs(node.x - box.x) + node.width / 2 <= box.width / 2 + 0.5, node.id);
    }
  });
}

test("top-down, the client's feed is drawn above its consumer and the fetch below", () => {
  const out = layoutData(sampleView(), "TB", "compound");
  const y = (id) => out.nodes.find((n) => n.id === id).y;
  assert.ok(y("op:x") < y("op:a"));
  assert.ok(y("op:fetch:b:0") > y("op:b"));
});

test("placeLabels moves a colliding label off the other and drops one with no room", () => {
  const box = (x, y) => ({ x, y, w: 30, h: 11 });
  const [a, b, c] = placeLabels([box(100, 50), box(104, 52), box(300, 50)], 0, 200);
  assert.deepEqual(a, box(100, 50));
  assert.deepEqual(c, box(300, 50));
  assert.equal(b.x, 104);
  assert.ok(b.y + b.h < a.y || b.y > a.y + a.h, `moved to ${b.y}`);
  const tight = placeLabels([box(0, 0), box(0, 0)], 0, 11);
  assert.ok(tight[0]);
  assert.equal(tight[1], null);
});

test("ticksFor right-aligns only a last label that would pass the plot's edge", () => {
  const ticks = ticksFor([0, 10000], 750);
  assert.equal(ticks.at(-1).label, "10 ms");
  assert.equal(ticks.at(-1).anchor, "end");
  assert.ok(ticks.slice(0, -1).every((t) => t.anchor === "start"));
  assert.ok(ticksFor([0, 10500], 750).every((t) => t.anchor === "start"));
});
