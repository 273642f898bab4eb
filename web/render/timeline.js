// The 1F1B timeline of one estimate: SVG (page and export), canvas (PNG export), data table.
import { s, h, fmtTime, fmt } from '../dom.js';
import { KIND_COLOR, KIND_LABEL } from './colors.js';
import { COMM_KINDS, KINDS } from '../exports.js';

const ROW = 34;
const LEFT = 70;
const TOP = 8;
const AXIS = 26;
const LEGEND = 24;

function niceStep(range, target = 8) {
  const raw = range / target;
  const p = 10 ** Math.floor(Math.log10(raw || 1));
  for (const m of [1, 2, 5, 10]) if (m * p >= raw) return m * p;
  return 10 * p;
}

function layout(est, width) {
  const stages = Math.max(1, (est.stages || []).length);
  // A loop, not Math.max(...spread): a long timeline (hundreds of thousands of events) would
  // overflow the call stack as spread arguments.
  let T = Math.max(est.iteration_time_s || 0, 1e-9);
  for (const e of est.timeline || []) if (e.end_s > T) T = e.end_s;
  const plotW = width - LEFT - 12;
  const x = (t) => LEFT + (t / T) * plotW;
  const height = TOP + stages * ROW + AXIS + LEGEND;
  return { stages, T, plotW, x, height };
}

function box(e, L) {
  const y0 = TOP + e.stage * ROW;
  const comm = COMM_KINDS.has(e.kind);
  const y = comm ? y0 + 20 : y0 + 2;
  const hgt = comm ? 9 : 16;
  const x = L.x(e.start_s);
  const w = Math.max(0.5, L.x(e.end_s) - x);
  return { x, y, w, h: hgt };
}

/**
 * SVG of the timeline. standalone: explicit colours and a background so the file renders alike
 * anywhere; otherwise text takes the page's colour through CSS classes.
 */
export function timelineSvg(est, { width = 960, standalone = false } = {}) {
  const L = layout(est, width);
  const ink = standalone ? '#222' : null;
  const svg = s('svg', { xmlns: 'http://www.w3.org/2000/svg', viewBox: `0 0 ${width} ${L.height}`, width, height: L.height,
    class: 'timeline-svg', role: 'img', 'aria-label': `Pipeline timeline: ${L.stages} stages, iteration ${fmtTime(est.iteration_time_s)}. A table with the same data follows.` });
  if (standalone) svg.append(s('rect', { x: 0, y: 0, width, height: L.height, fill: '#ffffff' }));
  for (let i = 0; i < L.stages; i++) {
    const y0 = TOP + i * ROW;
    svg.append(s('rect', { x: LEFT, y: y0, width: L.plotW, height: ROW - 4, fill: standalone ? '#f3f3f3' : null, class: 'tl-lane' }));
    svg.append(s('text', { x: 6, y: y0 + 15, 'font-size': 12, 'font-family': 'sans-serif', fill: ink, class: 'tl-text' }, `stage ${i}`));
    svg.append(s('text', { x: 6, y: y0 + 27, 'font-size': 9, 'font-family': 'sans-serif', fill: ink, class: 'tl-text tl-muted' }, 'comm'));
  }
  const g = s('g', {});
  for (const e of est.timeline || []) {
    const b = box(e, L);
    const mb = e.micro_batch === null || e.micro_batch === undefined ? '' : ` micro-batch ${e.micro_batch}`;
    g.append(s('rect', { x: b.x.toFixed(2), y: b.y, width: b.w.toFixed(2), height: b.h, fill: KIND_COLOR[e.kind] || '#999', class: `tl-ev tl-${e.kind}` },
      s('title', {}, `stage ${e.stage} ${KIND_LABEL[e.kind] || e.kind}${mb}: ${fmtTime(e.start_s)} – ${fmtTime(e.end_s)}`)));
  }
  svg.append(g);
  const axisY = TOP + L.stages * ROW + 4;
  svg.append(s('line', { x1: LEFT, x2: LEFT + L.plotW, y1: axisY, y2: axisY, stroke: ink || 'currentColor', class: 'tl-axis' }));
  const step = niceStep(L.T);
  for (let t = 0; t <= L.T + 1e-12; t += step) {
    const xx = L.x(t);
    svg.append(s('line', { x1: xx, x2: xx, y1: axisY, y2: axisY + 4, stroke: ink || 'currentColor', class: 'tl-axis' }));
    svg.append(s('text', { x: xx, y: axisY + 16, 'font-size': 10, 'text-anchor': 'middle', 'font-family': 'sans-serif', fill: ink, class: 'tl-text' }, `${fmt(t, 3)} s`));
  }
  let lx = LEFT;
  const ly = axisY + AXIS;
  for (const k of KINDS) {
    svg.append(s('rect', { x: lx, y: ly - 9, width: 10, height: 10, fill: KIND_COLOR[k] }));
    const label = KIND_LABEL[k];
    svg.append(s('text', { x: lx + 14, y: ly, 'font-size': 11, 'font-family': 'sans-serif', fill: ink, class: 'tl-text' }, label));
    lx += 24 + label.length * 6.5;
  }
  return svg;
}

/** PNG via canvas drawing (no image decoding, so it works under img-src 'self'). */
export function timelinePng(est, { width = 1400, scale = 1 } = {}) {
  const L = layout(est, width);
  const canvas = document.createElement('canvas');
  canvas.width = width * scale;
  canvas.height = L.height * scale;
  const c = canvas.getContext('2d');
  c.scale(scale, scale);
  c.fillStyle = '#ffffff';
  c.fillRect(0, 0, width, L.height);
  c.font = '12px sans-serif';
  for (let i = 0; i < L.stages; i++) {
    const y0 = TOP + i * ROW;
    c.fillStyle = '#f3f3f3';
    c.fillRect(LEFT, y0, L.plotW, ROW - 4);
    c.fillStyle = '#222';
    c.fillText(`stage ${i}`, 6, y0 + 15);
  }
  for (const e of est.timeline || []) {
    const b = box(e, L);
    c.fillStyle = KIND_COLOR[e.kind] || '#999';
    c.fillRect(b.x, b.y, b.w, b.h);
  }
  const axisY = TOP + L.stages * ROW + 4;
  c.fillStyle = '#222';
  c.fillRect(LEFT, axisY, L.plotW, 1);
  c.font = '10px sans-serif';
  c.textAlign = 'center';
  const step = niceStep(L.T);
  for (let t = 0; t <= L.T + 1e-12; t += step) c.fillText(`${fmt(t, 3)} s`, L.x(t), axisY + 16);
  c.textAlign = 'left';
  c.font = '11px sans-serif';
  let lx = LEFT;
  for (const k of KINDS) {
    c.fillStyle = KIND_COLOR[k];
    c.fillRect(lx, axisY + AXIS - 9, 10, 10);
    c.fillStyle = '#222';
    c.fillText(KIND_LABEL[k], lx + 14, axisY + AXIS);
    lx += 24 + KIND_LABEL[k].length * 6.5;
  }
  return canvas;
}

/** Per-stage busy time and bubble share: the text alternative to the chart. */
export function timelineStats(est) {
  const T = est.iteration_time_s || 0;
  return (est.stages || []).map((st, i) => {
    const sum = Object.fromEntries(KINDS.map((k) => [k, 0]));
    for (const e of est.timeline || []) if (e.stage === i) sum[e.kind] = (sum[e.kind] || 0) + (e.end_s - e.start_s);
    const compute = sum.forward + sum.backward + sum.optimizer;
    return { stage: i, ...sum, compute, idle: Math.max(0, T - compute), idle_share: T > 0 ? Math.max(0, T - compute) / T : 0 };
  });
}

export function timelineTable(est) {
  const rows = timelineStats(est);
  return h('table', { class: 'data' },
    h('caption', {}, 'Time per stage in one iteration (compute stream idle time = pipeline bubble + waiting)'),
    h('thead', {}, h('tr', {}, ['stage', 'forward', 'backward', 'send act.', 'send grad.', 'DP all-reduce', 'optimizer', 'compute idle'].map((t) => h('th', { scope: 'col' }, t)))),
    h('tbody', {}, rows.map((r) => h('tr', {},
      h('th', { scope: 'row' }, String(r.stage)),
      [r.forward, r.backward, r.send_forward, r.send_backward, r.dp_sync, r.optimizer].map((v) => h('td', {}, fmtTime(v))),
      h('td', {}, `${fmtTime(r.idle)} (${(100 * r.idle_share).toFixed(1)}%)`)))));
}
