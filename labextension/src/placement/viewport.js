// Pan and zoom arithmetic of the placement view: a transform {x, y, k} maps
// layout coordinates p to frame pixels x + k·p. Pure functions: node can run them.

export const MARGIN = 8;
export const FONT_PX = 11;          // the labels' font size at scale 1
export const READABLE_PX = 10;      // no label is drawn smaller on open
export const READABLE_K = READABLE_PX / FONT_PX + 0.005;

/** The scale that fits a W×H layout into a w-wide frame at most hMax tall
 *  (never enlarged past 1). */
export function fitScale(W, H, w, hMax) {
  return Math.min(1, (w - MARGIN) / Math.max(W, 1), (hMax - MARGIN) / Math.max(H, 1));
}

/** The frame height for a layout H tall drawn at scale k (at least 120 px). */
export function frameHeight(H, k, hMax) {
  return Math.min(hMax, Math.max(120, H * k + MARGIN));
}

/** The transform that shows a W×H layout at scale k in a w×h frame: centred
 *  where it fits; else starting at its top-left corner. */
export function placeAt(W, H, w, h, k) {
  const along = (size, room) => (size <= room ? (room - size) / 2 : MARGIN / 2);
  return { k, x: along(W * k, w), y: along(H * k, h) };
}

/** The transform that centres layout point (px, py) in a w×h frame at scale k. */
export function centreOn(px, py, w, h, k) {
  return { k, x: w / 2 - px * k, y: h / 2 - py * k };
}

/** The part of the layout a transform shows in a w×h frame: {x, y, width, height}. */
export function visibleRect(t, w, h) {
  return { x: -t.x / t.k, y: -t.y / t.k, width: w / t.k, height: h / t.k };
}

/** Whether box b ({x, y, width, height}, centre x, y) lies wholly inside r (top-left x, y). */
export function inside(b, r, slack = 0.5) {
  return b.x - b.width / 2 >= r.x - slack && b.y - b.height / 2 >= r.y - slack
    && b.x + b.width / 2 <= r.x + r.width + slack && b.y + b.height / 2 <= r.y + r.height + slack;
}

/** The transform after a wheel step of `deltaY` around frame point (px, py). */
export function zoomAround(t, px, py, deltaY) {
  const k = Math.max(0.05, Math.min(4, t.k * Math.exp(-deltaY * 0.0015)));
  return { k, x: px - ((px - t.x) * k) / t.k, y: py - ((py - t.y) * k) / t.k };
}
