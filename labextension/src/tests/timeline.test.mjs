// Node tests of the timeline's pure logic (run: cd labextension && node --test src/tests/):
// bar labels elided inside their bars (so packed rows never overlap labels), and run bands.
import assert from "node:assert/strict";
import { test } from "node:test";

import { barLabels, barsFor, elide, laneLayout, placeLabels, runBands } from "../timeline/view.js";

function twoRuns() {
  // rows as timeline_view.py packs them: no two bars of a row overlap
  const op = (name, start, end, row, run, kind = "compute") => ({ lane: 0, row, run, kind, name,
    op: kind === "wait" ? "_Recv" : "MatMul", start, end, outputs: [] });
  return {
    lanes: [{ device: "/job:worker/replica:0/task:0/device:CPU:0", color: "#56B4E9", rows: 2 }],
    ops: [op("_recv_w_read_0", 0, 900, 0, 0, "wait"), op("layer_0/MatMul", 100, 400, 1, 0),
      op("layer_1/MatMul_with_a_long_name", 400, 420, 1, 0),
      op("_recv_w_read_0", 1000, 1900, 0, 1, "wait"), op("layer_0/MatMul", 1100, 1400, 1, 1)],
    transfers: [],
    runs: [{ label: "run 1 · 900 µs", start: 0, end: 900 }, { label: "run 2 · 900 µs", start: 1000, end: 1900 }],
    duration: 1900,
  };
}

test("elide keeps what fits and marks the cut", () => {
  assert.equal(elide("layer_0/MatMul", 200), "layer_0/MatMul");
  assert.equal(elide("layer_0/MatMul", 6.1 * 6 + 0.1), "layer…");
  assert.equal(elide("layer_0/MatMul", 12), "");
});

test("bar labels stay inside their bars, so no two labels overlap", () => {
  const data = twoRuns();
  const width = 760;
  const layout = laneLayout(data.lanes, 26);
  const bars = barsFor(data, [0, 1900], width, layout);
  const labels = barLabels(data, bars, width);
  assert.ok(labels.length >= 3);
  const barOf = new Map(bars.map((b) => [b.i, b]));
  for (const l of labels) {
    const b = barOf.get(l.i);
    assert.ok(l.x >= b.x && l.x + l.w <= b.x + b.w, `${l.text} leaves its bar`);
  }
  for (const a of labels) {
    for (const b of labels) {
      if (a === b || a.y !== b.y) continue;
      assert.ok(a.x + a.w <= b.x || b.x + b.w <= a.x, `${a.text} overlaps ${b.text}`);
    }
  }
  // the 20 µs op is too narrow for a label; its name is in the tooltip
  assert.ok(!labels.some((l) => l.i === 2));
});

test("a label is cut to the part of its bar inside the window", () => {
  const data = twoRuns();
  const layout = laneLayout(data.lanes, 26);
  const bars = barsFor(data, [300, 500], 400, layout);
  const labels = barLabels(data, bars, 400);
  const mm = labels.find((l) => l.i === 1);  // 100-400 µs: 0-200 px visible
  assert.ok(mm.x >= 0 && mm.x + mm.w <= 200, JSON.stringify(mm));
});

test("each of several runs gets a band where it lies; a single run none", () => {
  const data = twoRuns();
  const bands = runBands(data, [0, 1900], 950);
  assert.deepEqual(bands.map((b) => [b.i, b.x0, b.x1, b.label]),
    [[0, 0, 450, "run 1 · 900 µs"], [1, 500, 950, "run 2 · 900 µs"]]);
  assert.deepEqual(runBands(data, [1000, 1900], 900).map((b) => b.i), [1]);
  assert.deepEqual(runBands({ ...data, runs: data.runs.slice(0, 1) }, [0, 900], 900), []);
});

test("transfer size labels keep clear of the bars' labels", () => {
  const bar = { x: 10, y: 40, w: 120, h: 11 };
  const sizes = [{ x: 40, y: 40, w: 30, h: 11 }, { x: 300, y: 40, w: 30, h: 11 }];
  const spots = placeLabels(sizes, 0, 200, 2, 1, [bar]);
  assert.ok(spots[0] && (spots[0].y + 11 <= bar.y || spots[0].y >= bar.y + bar.h), "moved off");
  assert.deepEqual(spots[1], sizes[1]);  // nothing in its way: stays
  assert.equal(placeLabels([sizes[0]], 40, 51, 2, 1, [bar])[0], null);  // no room: dropped
});
