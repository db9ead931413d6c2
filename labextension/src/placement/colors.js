// Colours of the placement view: node fills by device or by measured time,
// and the ink drawn on a fill, black or white, whichever contrasts more
// (WCAG 2 relative luminance): either gives at least 4.58:1 on any fill.
// Pure functions: node can run them.

/** [r, g, b] (0-255) from "#RGB" or "#RRGGBB"; null for anything else. */
export function parseHex(color) {
  const m = /^#([0-9a-f]{3}|[0-9a-f]{6})$/i.exec(String(color || "").trim());
  if (!m) return null;
  const hex = m[1].length === 3 ? [...m[1]].map((c) => c + c).join("") : m[1];
  return [0, 2, 4].map((i) => parseInt(hex.slice(i, i + 2), 16));
}

/** WCAG relative luminance of [r, g, b] (0-255). */
export function luminance([r, g, b]) {
  const lin = (c) => { const s = c / 255; return s <= 0.04045 ? s / 12.92 : ((s + 0.055) / 1.055) ** 2.4; };
  return 0.2126 * lin(r) + 0.7152 * lin(g) + 0.0722 * lin(b);
}

/** The WCAG contrast ratio of two [r, g, b] colours (1 to 21). */
export function contrast(a, b) {
  const [hi, lo] = [luminance(a), luminance(b)].sort((x, y) => y - x);
  return (hi + 0.05) / (lo + 0.05);
}

/** "#000000" or "#FFFFFF": the label colour for a node of fill `color`. */
export function inkOn(color) {
  const rgb = parseHex(color) || [221, 221, 221];
  return contrast(rgb, [0, 0, 0]) >= contrast(rgb, [255, 255, 255]) ? "#000000" : "#FFFFFF";
}

// A sequential scale, pale (fast) to dark red (slow): ColorBrewer YlOrRd.
const TIME_STOPS = ["#FFFFCC", "#FED976", "#FEB24C", "#FD8D3C", "#F03B20", "#BD0026", "#800026"];
export const NO_TIME = "#DDDDDD";

/** The fill for `us` microseconds where the slowest drawn node took `max`:
 *  square-root scaled (a few slow ops would otherwise leave the rest pale). */
export function timeColor(us, max) {
  if (us === null || us === undefined || !(max > 0)) return NO_TIME;
  const f = Math.sqrt(Math.max(0, Math.min(1, us / max))) * (TIME_STOPS.length - 1);
  const i = Math.min(Math.floor(f), TIME_STOPS.length - 2);
  const a = parseHex(TIME_STOPS[i]);
  const b = parseHex(TIME_STOPS[i + 1]);
  const mix = a.map((c, j) => Math.round(c + (b[j] - c) * (f - i)));
  return `#${mix.map((c) => c.toString(16).padStart(2, "0")).join("")}`.toUpperCase();
}

/** The gradient stops of the time legend, as CSS. */
export function timeGradient() {
  return `linear-gradient(to right, ${TIME_STOPS.join(", ")})`;
}

/** Each node's fill for a colouring: {id: colour}. "device" keeps the
 *  colours Python gave; "time" colours by time_us relative to the slowest. */
export function nodeFills(nodes, colorBy) {
  const out = new Map();
  const max = Math.max(0, ...nodes.map((n) => n.time_us || 0));
  for (const n of nodes) {
    out.set(n.id, colorBy === "time" && !n.client ? timeColor(n.time_us, max) : n.color);
  }
  return out;
}
