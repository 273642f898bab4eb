// The pipeline timeline of one estimate: SVG (page and export), canvas (PNG export), data table.
// What is drawn (lanes per resource, bars, chunk labels, legend) comes from one display list
// (scene.js), so the page, the SVG file and the PNG show the same; beyond AGGREGATE_ABOVE events
// the bars are merged marks (marks.js). The Chrome trace export keeps every event.
import { s, h, fmtTime, fmtInt } from '../dom.js';
import { KIND_LABEL } from './colors.js';
import { KINDS, resourceOf } from '../exports.js';
import { timelineScene } from './scene.js';
import { withExchanges } from './exchanges.js';

export { timelineMarks, aggregationNote, AGGREGATE_ABOVE, MAX_BARS } from './marks.js';
export { timelineGeometry, timelineSpan, windowed, timelineScene, laneLayout, legendKinds, chunkCount } from './scene.js';

/** the data table lists at most this many stages; the rest is summed in one row */
export const MAX_TABLE_STAGES = 128;

const r2 = (v) => (typeof v === 'number' ? v.toFixed(2) : v);

/**
 * SVG of the timeline. standalone: explicit colours and a background so the file renders alike
 * anywhere, and the aggregation note as text; otherwise text and lanes take the page's colours
 * through CSS classes and the note is in data-note (the page puts it in the figure's caption).
 * view: {t0, t1}, the time window to draw (default: the whole iteration); title: the files' line
 * saying what was planned (web/context.js), drawn at the top and the SVG's <title>.
 */
export function timelineSvg(est0, { width = 960, standalone = false, view = null, title = '' } = {}) {
  const sc = timelineScene(est0, { width, view, withNote: standalone, title });
  const svg = s('svg', { xmlns: 'http://www.w3.org/2000/svg', viewBox: `0 0 ${width} ${sc.height}`, width, height: sc.height,
    class: 'timeline-svg', role: 'img', 'data-events': sc.marks.events, 'data-bars': sc.marks.bars.length, 'data-note': sc.note || null,
    'data-t0': sc.offset, 'data-t1': sc.offset + sc.T, 'data-chunks': sc.chunks, 'aria-label': title ? `${title}. ${sc.label}` : sc.label });
  // the file's title (viewers show it as the document's name) names what was planned too
  if (title) svg.append(s('title', {}, `Poseidon plan: ${title}`));
  if (standalone) svg.append(s('rect', { x: 0, y: 0, width, height: sc.height, fill: '#ffffff' }));
  const color = (it) => (standalone || !it.themed ? it.fill : null);
  for (const it of sc.items) {
    if (it.t === 'rect') {
      svg.append(s('rect', { x: r2(it.x), y: r2(it.y), width: r2(it.w), height: r2(it.h), fill: color(it), class: it.cls,
        'data-chunk': it.chunk ?? null, 'data-lane': it.lane ?? null }, it.title ? s('title', {}, it.title) : null));
    } else if (it.t === 'text') {
      svg.append(s('text', { x: r2(it.x), y: r2(it.y), 'font-size': it.size, 'font-family': 'sans-serif', 'text-anchor': it.anchor ?? null,
        fill: color(it), class: it.cls, 'aria-hidden': it.cls === 'tl-chunk' ? 'true' : null }, it.text));
    } else {
      svg.append(s('line', { x1: r2(it.x1), x2: r2(it.x2), y1: r2(it.y1), y2: r2(it.y2), stroke: standalone ? it.stroke : 'currentColor', class: it.cls }));
    }
  }
  return svg;
}

/** PNG via canvas drawing (no image decoding, so it works under img-src 'self'); the same display list as the SVG file. */
export function timelinePng(est, { width = 1400, scale = 1, title = '' } = {}) {
  const sc = timelineScene(est, { width, withNote: true, title });
  const canvas = document.createElement('canvas');
  canvas.width = width * scale;
  canvas.height = sc.height * scale;
  const c = canvas.getContext('2d');
  c.scale(scale, scale);
  c.fillStyle = '#ffffff';
  c.fillRect(0, 0, width, sc.height);
  for (const it of sc.items) {
    if (it.t === 'rect') {
      c.fillStyle = it.fill;
      c.fillRect(it.x, it.y, it.w, it.h);
    } else if (it.t === 'text') {
      c.font = `${it.size}px sans-serif`;
      c.textAlign = it.anchor === 'middle' ? 'center' : 'left';
      c.fillStyle = it.fill;
      c.fillText(it.text, it.x, it.y);
    } else {
      c.fillStyle = it.stroke;
      c.fillRect(Math.min(it.x1, it.x2), Math.min(it.y1, it.y2), Math.max(1, Math.abs(it.x2 - it.x1)), Math.max(1, Math.abs(it.y2 - it.y1)));
    }
  }
  return canvas;
}

/** the table's columns: the six kinds of plain 1F1B always, the others when the timeline has them */
function tableKinds(est) {
  const seen = new Set();
  for (const e of est.timeline || []) seen.add(e.kind);
  const base = ['forward', 'backward', 'send_forward', 'send_backward', 'dp_sync', 'optimizer'];
  return [...KINDS.filter((k) => base.includes(k) || seen.has(k)), ...[...seen].filter((k) => !KINDS.includes(k)).sort()];
}

/**
 * Per-stage event count, time per kind, busy time per resource and the compute stream's idle time
 * (one pass over the events): the text alternative to the chart.
 */
export function timelineStats(estIn) {
  const est = withExchanges(estIn);
  const T = est.iteration_time_s || 0;
  const n = (est.stages || []).length;
  const kinds = tableKinds(est);
  const rows = Array.from({ length: n }, (_, i) => ({ stage: i, events: 0, busy: {}, ...Object.fromEntries(kinds.map((k) => [k, 0])) }));
  for (const e of est.timeline || []) {
    const r = rows[e.stage];
    if (!r) continue;
    const d = e.end_s - e.start_s;
    r.events += 1;
    r[e.kind] = (r[e.kind] || 0) + d;
    const res = resourceOf(e);
    r.busy[res] = (r.busy[res] || 0) + d;
  }
  return rows.map((r) => {
    const compute = r.busy.compute || 0;
    return { ...r, compute, idle: Math.max(0, T - compute), idle_share: T > 0 ? Math.max(0, T - compute) / T : 0 };
  });
}

const COLUMN = { forward: 'forward', backward: 'backward', ep_a2a: 'all-to-all', send_forward: 'send act.', send_backward: 'send grad.', dp_sync: 'DP all-reduce',
  grad_bucket: 'grad. buckets', param_gather: 'param. gather', embedding_sync: 'tied emb. all-reduce', optimizer: 'optimizer' };

/** The data table: one row per stage (at most MAX_TABLE_STAGES; the others summed in a last row). */
export function timelineTable(estIn) {
  const est = withExchanges(estIn);
  const all = timelineStats(est);
  const kinds = tableKinds(est);
  const shown = all.length > MAX_TABLE_STAGES ? all.slice(0, MAX_TABLE_STAGES - 1) : all;
  const rest = all.slice(shown.length);
  const cells = (r) => [
    h('td', {}, fmtInt(r.events)),
    kinds.map((k) => h('td', {}, fmtTime(r[k] || 0))),
    h('td', {}, `${fmtTime(r.idle)} (${(100 * r.idle_share).toFixed(1)}%)`)];
  const body = h('tbody', {}, shown.map((r) => h('tr', {}, h('th', { scope: 'row' }, String(r.stage)), cells(r))));
  if (rest.length) {
    const sum = { events: 0, idle: 0 };
    for (const k of kinds) sum[k] = 0;
    for (const r of rest) { sum.events += r.events; sum.idle += r.idle; for (const k of kinds) sum[k] += r[k] || 0; }
    const T = est.iteration_time_s || 0;
    sum.idle_share = T > 0 ? sum.idle / (T * rest.length) : 0;
    body.append(h('tr', { class: 'tl-rest' }, h('th', { scope: 'row' }, `${rest[0].stage}–${rest.at(-1).stage} (${rest.length} stages, summed)`), cells(sum)));
  }
  const events = (est.timeline || []).length;
  return h('table', { class: 'data', 'data-testid': 'timeline-table' },
    h('caption', {}, `Time per stage in one iteration, ${fmtInt(events)} events (compute stream idle time = pipeline bubble + waiting; communication runs on its own streams)`),
    h('thead', {}, h('tr', {}, ['stage', 'events', ...kinds.map((k) => COLUMN[k] ?? KIND_LABEL[k] ?? k), 'compute idle'].map((t) => h('th', { scope: 'col' }, t)))),
    body);
}
