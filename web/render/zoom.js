// A zoomable timeline: wheel or pinch (a trackpad pinch arrives as a wheel with ctrlKey; two
// touch pointers are handled here) zooms around the pointer, dragging pans, and the keyboard
// (+, −, arrows, 0) does both while the chart has focus. Every view is redrawn by timelineSvg
// with the window's events only, so an aggregated chart shows more detail as it zooms in.
import { timelineSvg, timelineGeometry, timelineSpan } from './timeline.js';
import { fmtTime } from '../dom.js';

/** the view after zooming by `factor` (< 1 zooms in) around time `at`, kept inside [0, span] */
export function zoomView(view, factor, at, span) {
  const minW = Math.max(span * 1e-5, 1e-9);
  const w = Math.min(span, Math.max(minW, (view.t1 - view.t0) * factor));
  const r = (view.t1 - view.t0) > 0 ? (at - view.t0) / (view.t1 - view.t0) : 0.5;
  return clampView({ t0: at - r * w, t1: at - r * w + w }, span);
}

export function panView(view, dt, span) {
  return clampView({ t0: view.t0 + dt, t1: view.t1 + dt }, span);
}

function clampView(v, span) {
  const w = Math.min(span, v.t1 - v.t0);
  let t0 = Math.max(0, Math.min(v.t0, span - w));
  if (!Number.isFinite(t0)) t0 = 0;
  return { t0, t1: t0 + w };
}

/**
 * Draws `est`'s timeline into `box` and makes it zoomable. Returns a controller {zoom(factor),
 * pan(fraction), reset(), view, destroy()}; onDraw(svg, view) runs after every redraw.
 */
export function zoomableTimeline(box, est, { onDraw = () => {} } = {}) {
  const span = timelineSpan(est);
  let view = { t0: 0, t1: span };
  let width = 0;
  let frame = 0;
  const draw = () => {
    frame = 0;
    width = Math.max(320, Math.round(box.clientWidth || 960));
    const svg = timelineSvg(est, { width, view });
    box.replaceChildren(svg);
    onDraw(svg, view);
  };
  const redraw = () => { if (!frame) frame = requestAnimationFrame(draw); };
  draw();

  const timeAt = (clientX) => {
    const rect = box.getBoundingClientRect();
    const g = timelineGeometry(width);
    const x = ((clientX - rect.left) / Math.max(1, rect.width)) * width;
    const f = Math.min(1, Math.max(0, (x - g.left) / g.plotW));
    return view.t0 + f * (view.t1 - view.t0);
  };
  const setView = (v) => { view = v; redraw(); };

  const onWheel = (e) => {
    if (Math.abs(e.deltaX) > Math.abs(e.deltaY) || e.shiftKey) {
      e.preventDefault();
      const d = Math.abs(e.deltaX) > Math.abs(e.deltaY) ? e.deltaX : e.deltaY;
      setView(panView(view, (d / Math.max(1, box.clientWidth)) * (view.t1 - view.t0), span));
      return;
    }
    e.preventDefault();
    const scale = e.deltaMode === 1 ? 40 : e.deltaMode === 2 ? 400 : 1;
    setView(zoomView(view, Math.exp(e.deltaY * scale * (e.ctrlKey ? 0.01 : 0.002)), timeAt(e.clientX), span));
  };
  // pointers: one drags (pans), two pinch (zoom around their middle)
  const pointers = new Map();
  let start = null;
  const onDown = (e) => {
    if (e.button !== undefined && e.button !== 0) return;
    pointers.set(e.pointerId, e.clientX);
    box.setPointerCapture?.(e.pointerId);
    start = { view, xs: new Map(pointers) };
    box.classList.add('dragging');
  };
  const onMove = (e) => {
    if (!pointers.has(e.pointerId) || !start) return;
    pointers.set(e.pointerId, e.clientX);
    const rect = box.getBoundingClientRect();
    const perPx = (start.view.t1 - start.view.t0) / Math.max(1, rect.width * (timelineGeometry(width).plotW / width));
    if (pointers.size === 1) {
      const [id, x] = [...pointers.entries()][0];
      const x0 = start.xs.get(id);
      if (x0 === undefined) return;
      setView(panView(start.view, -(x - x0) * perPx, span));
    } else if (pointers.size >= 2) {
      const ids = [...pointers.keys()].slice(0, 2);
      const d0 = Math.abs((start.xs.get(ids[0]) ?? 0) - (start.xs.get(ids[1]) ?? 0));
      const d1 = Math.abs(pointers.get(ids[0]) - pointers.get(ids[1]));
      if (d0 > 10 && d1 > 10) {
        const mid = (pointers.get(ids[0]) + pointers.get(ids[1])) / 2;
        view = start.view;
        setView(zoomView(start.view, d0 / d1, timeAt(mid), span));
      }
    }
  };
  const onUp = (e) => {
    pointers.delete(e.pointerId);
    start = pointers.size ? { view, xs: new Map(pointers) } : null;
    if (!pointers.size) box.classList.remove('dragging');
  };
  const onKey = (e) => {
    const mid = (view.t0 + view.t1) / 2;
    const w = view.t1 - view.t0;
    if (e.key === '+' || e.key === '=') setView(zoomView(view, 0.5, mid, span));
    else if (e.key === '-' || e.key === '_') setView(zoomView(view, 2, mid, span));
    else if (e.key === 'ArrowLeft') setView(panView(view, -0.2 * w, span));
    else if (e.key === 'ArrowRight') setView(panView(view, 0.2 * w, span));
    else if (e.key === '0' || e.key === 'Home') setView({ t0: 0, t1: span });
    else return;
    e.preventDefault();
  };
  const resize = new ResizeObserver(() => { if (Math.round(box.clientWidth) !== width && box.clientWidth > 0) redraw(); });
  resize.observe(box);
  box.addEventListener('wheel', onWheel, { passive: false });
  box.addEventListener('pointerdown', onDown);
  box.addEventListener('pointermove', onMove);
  box.addEventListener('pointerup', onUp);
  box.addEventListener('pointercancel', onUp);
  box.addEventListener('keydown', onKey);
  return {
    get view() { return view; },
    span,
    zoom(factor) { setView(zoomView(view, factor, (view.t0 + view.t1) / 2, span)); },
    pan(fraction) { setView(panView(view, fraction * (view.t1 - view.t0), span)); },
    reset() { setView({ t0: 0, t1: span }); },
    describe() { return view.t0 <= 0 && view.t1 >= span ? '' : `showing ${fmtTime(view.t0)} – ${fmtTime(view.t1)} of ${fmtTime(span)}`; },
    destroy() {
      if (frame) cancelAnimationFrame(frame);
      resize.disconnect();
      box.removeEventListener('wheel', onWheel);
      box.removeEventListener('pointerdown', onDown);
      box.removeEventListener('pointermove', onMove);
      box.removeEventListener('pointerup', onUp);
      box.removeEventListener('pointercancel', onUp);
      box.removeEventListener('keydown', onKey);
    },
  };
}
