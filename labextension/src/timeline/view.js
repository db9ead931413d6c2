// Timeline geometry: pure functions of (data, window, width), no DOM, so node can test them.
//
// data is the widget's `_data` trait (timeline.py's view_data): lanes
// [{device, color, rows}], ops [{lane, row, name, op, start, end, outputs}],
// transfers [{src, dst, send, recv, tensor, bytes, start, end}], duration.
// A window is [t0, t1] in µs from the step's first start.

export const ROW_H = 18;      // one executor thread's bars
export const LANE_PAD = 6;    // above and below a lane's rows
export const LANE_MIN_H = 34; // room for the two-line device label
export const MIN_BAR_W = 2;   // a 0 µs op is still a visible tick
export const MIN_SPAN_US = 0.5;

export function fullWindow(data) {
  return [0, Math.max(data.duration || 0, 1)];
}

export function windowOf(data, window) {
  if (Array.isArray(window) && window.length === 2 && window[1] > window[0]) {
    return [window[0], window[1]];
  }
  return fullWindow(data);
}

// x(t) maps µs to pixels of a plot `width` wide; inv is its inverse.
export function scaleFor(window, width) {
  const [t0, t1] = window;
  const k = width / (t1 - t0);
  return { k, x: (t) => (t - t0) * k, inv: (px) => t0 + px / k };
}

export function formatUs(us) {
  const a = Math.abs(us);
  if (a >= 1e6) return `${trim(us / 1e6)} s`;
  if (a >= 1e3) return `${trim(us / 1e3)} ms`;
  return `${trim(us)} µs`;
}

function trim(v) {
  return String(Number(v.toPrecision(4)));
}

export function formatBytes(n) {
  const units = [["GiB", 2 ** 30], ["MiB", 2 ** 20], ["KiB", 2 ** 10]];
  for (const [unit, size] of units) {
    if (n >= size) return `${(n / size).toFixed(1)} ${unit}`;
  }
  return `${n} B`;
}

export const TICK_CHAR_W = 6.7;  // px per character of the 11px axis font
export const LABEL_CHAR_W = 6.1; // px per character of the 10px transfer-size font
export const LABEL_H = 11;

// Axis ticks at a 1/2/5 × 10^n µs step, about `minPx` pixels apart. A label
// starts just right of its tick (anchor "start") unless it would run more than
// `margin` px past the plot's right edge: then it ends just left of it ("end").
export function ticksFor(window, width, minPx = 80, margin = 6) {
  const [t0, t1] = window;
  const raw = ((t1 - t0) * minPx) / Math.max(width, 1);
  const p = 10 ** Math.floor(Math.log10(raw));
  const step = [1, 2, 5, 10].map((m) => m * p).find((s) => s >= raw);
  const { x } = scaleFor(window, width);
  const ticks = [];
  for (let t = Math.ceil(t0 / step) * step; t <= t1 + step * 1e-9; t += step) {
    const v = Number(t.toPrecision(12));
    const label = formatUs(v);
    const past = x(v) + 2 + label.length * TICK_CHAR_W > width + margin;
    ticks.push({ t: v, x: x(v), label, anchor: past ? "end" : "start" });
  }
  return ticks;
}

// Each lane's top y and height (rows of bars, at least the label's height).
export function laneLayout(lanes, top = 0) {
  let y = top;
  const out = lanes.map((lane) => {
    const h = Math.max(LANE_MIN_H, (lane.rows || 1) * ROW_H + 2 * LANE_PAD);
    const box = { y, h };
    y += h;
    return box;
  });
  return { lanes: out, height: y - top };
}

function rowY(layout, lane, row) {
  return layout.lanes[lane].y + LANE_PAD + row * ROW_H;
}

// Bars that meet the window: {i, x, y, w, h}; zero-length ops get MIN_BAR_W.
export function barsFor(data, window, width, layout) {
  const { x } = scaleFor(window, width);
  const bars = [];
  data.ops.forEach((op, i) => {
    if (op.end < window[0] || op.start > window[1]) return;
    const x0 = x(op.start);
    const w = Math.max(x(op.end) - x0, MIN_BAR_W);
    bars.push({ i, x: x0, y: rowY(layout, op.lane, op.row) + 2, w, h: ROW_H - 4 });
  });
  return bars;
}

// One curve per transfer, from its send's start (source row) to its recv's
// end (destination row); `d` is an SVG path.
export function arrowsFor(data, window, width, layout) {
  const { x } = scaleFor(window, width);
  const arrows = [];
  data.transfers.forEach((tr, i) => {
    if (tr.end < window[0] || tr.start > window[1]) return;
    const send = data.ops[tr.send];
    const recv = data.ops[tr.recv];
    const x1 = x(tr.start);
    const x2 = x(tr.end);
    const y1 = rowY(layout, tr.src, send ? send.row : 0) + ROW_H / 2;
    const y2 = rowY(layout, tr.dst, recv ? recv.row : 0) + ROW_H / 2;
    const bend = (y2 - y1) / 2;
    const d = `M${r(x1)},${r(y1)} C${r(x1)},${r(y1 + bend)} `
      + `${r(x2)},${r(y2 - bend)} ${r(x2)},${r(y2)}`;
    arrows.push({ i, d, x1, y1, x2, y2, mid: { x: (x1 + x2) / 2, y: (y1 + y2) / 2 } });
  });
  return arrows;
}

function r(v) {
  return Math.round(v * 10) / 10;
}

// Zoom by `factor` (< 1 zooms in) keeping time `at` under the pointer, inside `full`.
export function zoomAt(window, full, at, factor) {
  const span = Math.min(Math.max((window[1] - window[0]) * factor, MIN_SPAN_US),
    full[1] - full[0]);
  const frac = (at - window[0]) / (window[1] - window[0]);
  let t0 = at - frac * span;
  t0 = Math.min(Math.max(t0, full[0]), full[1] - span);
  return [t0, t0 + span];
}

// The window moved by dt µs (a horizontal wheel or shift+wheel), inside `full`.
export function panBy(window, full, dt) {
  const span = window[1] - window[0];
  const t0 = Math.min(Math.max(window[0] + dt, full[0]), full[1] - span);
  return [t0, t0 + span];
}

// The window a drag from px0 to px1 selects, or null for a click (under 4 px).
export function windowFromDrag(window, width, px0, px1) {
  if (Math.abs(px1 - px0) < 4) return null;
  const { inv } = scaleFor(window, width);
  const a = inv(Math.max(0, Math.min(px0, px1)));
  const b = inv(Math.min(width, Math.max(px0, px1)));
  return b - a >= MIN_SPAN_US ? [a, b] : [a, a + MIN_SPAN_US];
}

// "/job:worker/replica:0/task:1" and "/device:CPU:0": a lane label's two lines.
export function splitDevice(name) {
  const at = name.indexOf("/device:");
  return at > 0 ? [name.slice(0, at), name.slice(at)] : [name, ""];
}

export function opTooltip(data, i) {
  const op = data.ops[i];
  const lines = [op.name, `op: ${op.op || "?"}`, `device: ${data.lanes[op.lane].device}`,
    `start: ${formatUs(op.start)}`, `duration: ${formatUs(op.end - op.start)}`];
  if (op.outputs.length) lines.push(`outputs: ${op.outputs.join("; ")}`);
  return lines;
}

export function transferTooltip(data, i) {
  const tr = data.transfers[i];
  return [`${tr.tensor} (${formatBytes(tr.bytes)})`,
    `from: ${data.lanes[tr.src].device}`, `to: ${data.lanes[tr.dst].device}`,
    `send start: ${formatUs(tr.start)}`, `recv end: ${formatUs(tr.end)}`,
    `in flight: ${formatUs(tr.end - tr.start)}`];
}

// Where to draw labels (boxes {x, y, w, h}: top-left and size) so that none
// overlaps another: each keeps its place if free, else moves up or down by
// whole label heights (at most `tries` steps each way) inside [top, bottom];
// a label with no free place gets null (its text is in the tooltip anyway).
// `obstacles` are boxes already drawn that no label may cover.
export function placeLabels(boxes, top, bottom, tries = 2, gap = 1, obstacles = []) {
  const placed = [...obstacles];  // drawn already (the bars' labels): kept clear of
  const hits = (b) => placed.some((p) => b.x < p.x + p.w + gap && p.x < b.x + b.w + gap
    && b.y < p.y + p.h + gap && p.y < b.y + b.h + gap);
  return boxes.map((box) => {
    for (let step = 0; step <= 2 * tries; step += 1) {
      const dy = (step % 2 ? -1 : 1) * Math.ceil(step / 2) * (box.h + gap);
      const b = { ...box, y: box.y + dy };
      if (b.y < top || b.y + b.h > bottom || hits(b)) continue;
      placed.push(b);
      return b;
    }
    return null;
  });
}

export const OP_CHAR_W = 6.1;  // px per character of the 10px bar-label font

/** `name` cut with an ellipsis to fit `room` px ("" when not even 3 characters fit). */
export function elide(name, room, charW = OP_CHAR_W) {
  const fits = Math.floor(room / charW);
  if (fits < 3) return "";
  return name.length <= fits ? name : `${name.slice(0, fits - 1)}…`;
}

/** The label of each bar that has room for one: {i, x, y (baseline), w, text}, inside
 *  the bar's visible part (so, bars of a row never overlapping, labels never do). */
export function barLabels(data, bars, width) {
  const out = [];
  for (const b of bars) {
    const left = Math.max(b.x, 0);
    const room = Math.min(b.x + b.w, width) - left - 6;
    const text = elide(data.ops[b.i].name, room);
    if (text) out.push({ i: b.i, x: left + 3, y: b.y + b.h - 4, w: text.length * OP_CHAR_W, text });
  }
  return out;
}

/** The runs that meet the window, in pixels: {i, x0, x1, label} (one run: none). */
export function runBands(data, window, width) {
  const runs = data.runs || [];
  if (runs.length < 2) return [];
  const { x } = scaleFor(window, width);
  return runs.map((run, i) => ({ i, x0: x(run.start), x1: x(run.end), label: run.label }))
    .filter((b) => b.x1 >= 0 && b.x0 <= width);
}
