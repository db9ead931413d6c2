// The minimap of a large placement graph: the whole layout drawn small (an SVG
// <use> of the stage's content) with a rectangle for what the frame shows;
// clicking or dragging in it moves the view there. Needs a document.
import { svgEl } from "./draw.js";
import { visibleRect } from "./viewport.js";

const WIDTH = 180;
const MAX_H = 140;

/** A minimap inside `frame` showing element `contentId`; `moveTo(x, y)`
 *  centres the view on a layout point. Returns {el, update(layout, t, w, h)}. */
export function createMinimap(frame, contentId, moveTo) {
  const el = svgEl("svg", { class: "nbc-minimap", width: WIDTH, height: MAX_H });
  const back = svgEl("rect", { class: "nbc-minimap-back", x: 0, y: 0, width: "100%", height: "100%" });
  const use = svgEl("use", { href: `#${contentId}` });
  const view = svgEl("rect", { class: "nbc-minimap-view" });
  el.append(back, use, view);
  frame.append(el);
  let scale = 1;
  let drag = false;
  const jump = (e) => {
    const r = el.getBoundingClientRect();
    moveTo((e.clientX - r.left) / scale, (e.clientY - r.top) / scale);
  };
  el.addEventListener("pointerdown", (e) => {
    e.stopPropagation();
    drag = true;
    if (el.setPointerCapture) el.setPointerCapture(e.pointerId);
    jump(e);
  });
  el.addEventListener("pointermove", (e) => { if (drag) jump(e); });
  el.addEventListener("pointerup", () => { drag = false; });
  el.addEventListener("wheel", (e) => e.stopPropagation());
  return {
    el,
    /** Shows the map when the frame shows less than the whole layout. */
    update(layout, t, w, h) {
      const W = Math.max(layout.width || 1, 1);
      const H = Math.max(layout.height || 1, 1);
      const r = visibleRect(t, w, h);
      const whole = r.x <= 0.5 && r.y <= 0.5 && r.x + r.width >= W - 0.5 && r.y + r.height >= H - 0.5;
      el.style.display = whole ? "none" : "block";
      if (whole) return;
      scale = Math.min(WIDTH / W, MAX_H / H);
      el.setAttribute("width", Math.ceil(W * scale));
      el.setAttribute("height", Math.ceil(H * scale));
      use.setAttribute("transform", `scale(${scale})`);
      const x0 = Math.max(0, r.x);
      const y0 = Math.max(0, r.y);
      view.setAttribute("x", x0 * scale);
      view.setAttribute("y", y0 * scale);
      view.setAttribute("width", Math.max(2, (Math.min(W, r.x + r.width) - x0) * scale));
      view.setAttribute("height", Math.max(2, (Math.min(H, r.y + r.height) - y0) * scale));
    },
  };
}
