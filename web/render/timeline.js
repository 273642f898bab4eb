// The 1F1B timeline of one estimate: SVG (page and export), canvas (PNG export), data table.
// A plan can have hundreds of thousands of events (stages x micro-batches x 4); beyond
// AGGREGATE_ABOVE events the chart draws "marks" instead (timelineMarks): events closer than a
// pixel merge, so the number of SVG elements stays bounded. The Chrome trace export keeps every event.
import { s, h, fmtTime, fmt, fmtInt } from '../dom.js';
import { KIND_COLOR, KIND_LABEL } from './colors.js';
import { COMM_KINDS, KINDS } from '../exports.js';

const ROW = 34;
const LEFT = 70;
const TOP = 8;
const AXIS = 26;
const LEGEND = 24;
const NOTE = 18;
const LANE_Y = { compute: 2, comm: 20 };
const LANE_H = { compute: 16, comm: 9 };

/** up to this many events every event is its own bar (with a tooltip); above, marks are merged */
export const AGGREGATE_ABOVE = 3000;
/** aggregated charts use at most this many bars (the merge distance doubles until they fit) */
export const MAX_BARS = 3000;
/** the data table lists at most this many stages; the rest is summed in one row */
export const MAX_TABLE_STAGES = 128;

function niceStep(range, target = 8) {
  const raw = range / target;
  const p = 10 ** Math.floor(Math.log10(raw || 1));
  for (const m of [1, 2, 5, 10]) if (m * p >= raw) return m * p;
  return 10 * p;
}

function layout(est, width, note) {
  const stages = Math.max(1, (est.stages || []).length);
  // A loop, not Math.max(...spread): a long timeline (hundreds of thousands of events) would
  // overflow the call stack as spread arguments.
  let T = Math.max(est.iteration_time_s || 0, 1e-9);
  for (const e of est.timeline || []) if (e.end_s > T) T = e.end_s;
  const plotW = width - LEFT - 12;
  const x = (t) => LEFT + (t / T) * plotW;
  const top = TOP + (note ? NOTE : 0);
  const height = top + stages * ROW + AXIS + LEGEND;
  return { stages, T, plotW, x, height, top };
}

const laneOf = (kind) => (COMM_KINDS.has(kind) ? 'comm' : 'compute');

/**
 * The bars to draw for a timeline `plotW` pixels wide.
 * Returns {bars, aggregated, mergePx, events}; a bar is {stage, lane, kind, start_s, end_s, y0, y1,
 * count, busy_s, kinds:{kind: busy_s}, mb:[first, last] | null, event?}. y0/y1 are fractions of the
 * lane's height measured from its bottom (1 = full height).
 *
 * Up to AGGREGATE_ABOVE events: one full-height bar per event. Above, per stage and lane (compute,
 * communication), in time order:
 *  1. consecutive events of the same kind whose gap is under the merge distance become one run;
 *  2. consecutive runs narrower than the merge distance, with gaps under it, become one mixed mark.
 * A merged mark is drawn as one bar per kind, stacked, each as high as that kind's share of the
 * mark's duration, so idle time inside a mark shows as a lower bar. The merge distance starts at
 * one pixel and doubles until there are at most MAX_BARS bars (or it reaches the plot's width: a
 * plan with a thousand stages keeps a few bars per stage).
 */
export function timelineMarks(est, { plotW = 878, T = null } = {}) {
  const events = est.timeline || [];
  let span = T;
  if (!(span > 0)) {
    span = Math.max(est.iteration_time_s || 0, 1e-9);
    for (const e of events) if (e.end_s > span) span = e.end_s;
  }
  if (events.length <= AGGREGATE_ABOVE) {
    return {
      aggregated: false, mergePx: 0, events: events.length,
      bars: events.map((e) => ({ stage: e.stage, lane: laneOf(e.kind), kind: e.kind, start_s: e.start_s, end_s: e.end_s, y0: 0, y1: 1,
        count: 1, busy_s: e.end_s - e.start_s, kinds: { [e.kind]: e.end_s - e.start_s }, mb: mbRange(e, null), event: e })),
    };
  }
  const tracks = new Map();
  for (const e of events) {
    const key = `${e.stage}/${laneOf(e.kind)}`;
    if (!tracks.has(key)) tracks.set(key, []);
    tracks.get(key).push(e);
  }
  const sorted = [...tracks.values()].map((list) => list.sort((a, b) => a.start_s - b.start_s || a.end_s - b.end_s));
  let best = null;
  for (let mergePx = 1; ; mergePx *= 2) {
    const dt = (mergePx * span) / Math.max(1, plotW);
    const bars = [];
    for (const list of sorted) for (const m of mergeTrack(list, dt)) pushBars(bars, m);
    // within budget: done; otherwise keep the fewest bars seen (a plan with a thousand stages
    // keeps a few bars per stage however far it merges)
    if (!best || bars.length < best.bars.length) best = { aggregated: true, mergePx, events: events.length, bars };
    if (bars.length <= MAX_BARS || mergePx >= plotW) return best;
  }
}

function mbRange(e, r) {
  const mb = e.micro_batch;
  if (mb === null || mb === undefined) return r;
  if (!r) return [mb, mb];
  return [Math.min(r[0], mb), Math.max(r[1], mb)];
}

function mergeTrack(list, dt) {
  // 1. same-kind runs
  const runs = [];
  let r = null;
  for (const e of list) {
    const d = Math.max(0, e.end_s - e.start_s);
    if (r && e.kind === r.kind && e.start_s - r.end_s < dt) {
      r.end_s = Math.max(r.end_s, e.end_s);
      r.count += 1;
      r.kinds[e.kind] += d;
      r.mb = mbRange(e, r.mb);
    } else {
      if (r) runs.push(r);
      r = { stage: e.stage, lane: laneOf(e.kind), kind: e.kind, start_s: e.start_s, end_s: e.end_s, count: 1, kinds: { [e.kind]: d }, mb: mbRange(e, null), event: e };
    }
  }
  if (r) runs.push(r);
  // 2. runs narrower than dt, close together, become mixed marks
  const marks = [];
  let m = null;
  for (const run of runs) {
    const small = run.end_s - run.start_s < dt;
    if (m && m.small && small && run.start_s - m.end_s < dt) {
      m.end_s = Math.max(m.end_s, run.end_s);
      m.count += run.count;
      for (const [k, v] of Object.entries(run.kinds)) m.kinds[k] = (m.kinds[k] || 0) + v;
      m.mb = run.mb ? mbRange({ micro_batch: run.mb[0] }, mbRange({ micro_batch: run.mb[1] }, m.mb)) : m.mb;
      m.kind = null;
    } else {
      if (m) marks.push(m);
      m = { ...run, kinds: { ...run.kinds }, small };
    }
  }
  if (m) marks.push(m);
  return marks;
}

function pushBars(bars, m) {
  const dur = Math.max(m.end_s - m.start_s, 1e-15);
  const busy = Object.values(m.kinds).reduce((a, b) => a + b, 0);
  const base = { stage: m.stage, lane: m.lane, start_s: m.start_s, end_s: m.end_s, count: m.count, busy_s: busy, kinds: m.kinds, mb: m.mb };
  if (m.count === 1) {
    bars.push({ ...base, kind: Object.keys(m.kinds)[0], y0: 0, y1: 1, event: m.event });
    return;
  }
  // stacked by kind, in the legend's order; heights are shares of the duration (at most 1 in all)
  const scale = 1 / Math.max(dur, busy);
  let y = 0;
  for (const k of KINDS) {
    if (!(k in m.kinds)) continue;
    const hgt = m.kinds[k] * scale;
    bars.push({ ...base, kind: k, y0: y, y1: Math.min(1, y + hgt) });
    y += hgt;
  }
}

function barBox(b, L) {
  const y0 = L.top + b.stage * ROW + LANE_Y[b.lane];
  const H = LANE_H[b.lane];
  // a merged bar is at least 1 px high so that a short burst stays visible
  const hgt = Math.min(H, Math.max(1, (b.y1 - b.y0) * H));
  const y = Math.max(y0, y0 + H - b.y0 * H - hgt);
  const x = L.x(b.start_s);
  const w = Math.max(0.5, L.x(b.end_s) - x);
  return { x, y, w, h: hgt };
}

function barTitle(b) {
  const head = `stage ${b.stage}`;
  if (b.event) {
    const e = b.event;
    const mb = e.micro_batch === null || e.micro_batch === undefined ? '' : ` micro-batch ${e.micro_batch}`;
    return `${head} ${KIND_LABEL[e.kind] || e.kind}${mb}: ${fmtTime(e.start_s)} – ${fmtTime(e.end_s)}`;
  }
  const parts = KINDS.filter((k) => k in b.kinds).map((k) => `${KIND_LABEL[k]} ${fmtTime(b.kinds[k])}`).join(', ');
  const mb = b.mb ? (b.mb[0] === b.mb[1] ? `, micro-batch ${b.mb[0]}` : `, micro-batches ${b.mb[0]}–${b.mb[1]}`) : '';
  const share = b.end_s > b.start_s ? ` (busy ${Math.min(100, (100 * b.busy_s) / (b.end_s - b.start_s)).toFixed(0)}%)` : '';
  return `${head} ${b.lane === 'comm' ? 'communication' : 'compute'}, ${fmtInt(b.count)} events merged${mb}: ${fmtTime(b.start_s)} – ${fmtTime(b.end_s)}; ${parts}${share}`;
}

/** one sentence describing an aggregated chart (shown in the figure and written into exports) */
export function aggregationNote(marks) {
  if (!marks.aggregated) return '';
  return `${fmtInt(marks.events)} events drawn as ${fmtInt(marks.bars.length)} bars: events closer than ${marks.mergePx} px are merged (bar height = share of time busy). The Chrome trace export has every event.`;
}

/** the plot's horizontal geometry in SVG units for a chart `width` wide (the zoom maps pointers with it) */
export function timelineGeometry(width) {
  return { left: LEFT, plotW: width - LEFT - 12 };
}

/** the iteration's span: the iteration time or the last event's end, whichever is later */
export function timelineSpan(est) {
  let T = Math.max(est.iteration_time_s || 0, 1e-9);
  for (const e of est.timeline || []) if (e.end_s > T) T = e.end_s;
  return T;
}

/**
 * The events inside the window [t0, t1], clipped to it and shifted so that t0 is 0: the chart of a
 * zoomed view is the chart of this estimate (and merges only what the window holds).
 */
export function windowed(est, t0, t1) {
  const timeline = [];
  for (const e of est.timeline || []) {
    if (e.end_s <= t0 || e.start_s >= t1) continue;
    timeline.push({ ...e, start_s: Math.max(e.start_s, t0) - t0, end_s: Math.min(e.end_s, t1) - t0 });
  }
  return { ...est, timeline, iteration_time_s: t1 - t0 };
}

/**
 * SVG of the timeline. standalone: explicit colours and a background so the file renders alike
 * anywhere, and the aggregation note as text; otherwise text takes the page's colour through CSS
 * classes and the note is in data-note (the page puts it in the figure's caption).
 * view: {t0, t1}, the time window to draw (default: the whole iteration).
 */
export function timelineSvg(est0, { width = 960, standalone = false, view = null } = {}) {
  const span = timelineSpan(est0);
  const zoomed = view && (view.t0 > 1e-12 || view.t1 < span * (1 - 1e-9));
  const offset = zoomed ? view.t0 : 0;
  const est = zoomed ? windowed(est0, view.t0, view.t1) : est0;
  const L0 = layout(est, width, false);
  const marks = timelineMarks(est, { plotW: L0.plotW, T: L0.T });
  const note = aggregationNote(marks);
  // the page shows the note in the figure's caption (data-note); an exported file carries it as text
  const L = layout(est, width, Boolean(note && standalone));
  const ink = standalone ? '#222' : null;
  const svg = s('svg', { xmlns: 'http://www.w3.org/2000/svg', viewBox: `0 0 ${width} ${L.height}`, width, height: L.height,
    class: 'timeline-svg', role: 'img', 'data-events': marks.events, 'data-bars': marks.bars.length, 'data-note': note || null,
    'data-t0': offset, 'data-t1': offset + L.T,
    'aria-label': `Pipeline timeline: ${L.stages} stages, iteration ${fmtTime(est0.iteration_time_s)}${zoomed ? `, showing ${fmtTime(offset)} to ${fmtTime(offset + L.T)}` : ''}.${note ? ` ${note}` : ''} A table with the same data follows.` });
  if (standalone) svg.append(s('rect', { x: 0, y: 0, width, height: L.height, fill: '#ffffff' }));
  if (note && standalone) svg.append(s('text', { x: LEFT, y: TOP + 10, 'font-size': 11, 'font-family': 'sans-serif', fill: ink, class: 'tl-text tl-muted tl-note' }, note));
  for (let i = 0; i < L.stages; i++) {
    const y0 = L.top + i * ROW;
    svg.append(s('rect', { x: LEFT, y: y0, width: L.plotW, height: ROW - 4, fill: standalone ? '#f3f3f3' : null, class: 'tl-lane' }));
    svg.append(s('text', { x: 6, y: y0 + 15, 'font-size': 12, 'font-family': 'sans-serif', fill: ink, class: 'tl-text' }, `stage ${i}`));
    svg.append(s('text', { x: 6, y: y0 + 27, 'font-size': 9, 'font-family': 'sans-serif', fill: ink, class: 'tl-text tl-muted' }, 'comm'));
  }
  const g = s('g', {});
  for (const b of marks.bars) {
    const r = barBox(b, L);
    g.append(s('rect', { x: r.x.toFixed(2), y: r.y.toFixed(2), width: r.w.toFixed(2), height: r.h.toFixed(2), fill: KIND_COLOR[b.kind] || '#999',
      class: `tl-ev tl-${b.kind}${b.event ? '' : ' tl-agg'}` }, s('title', {}, barTitle(b))));
  }
  svg.append(g);
  const axisY = L.top + L.stages * ROW + 4;
  svg.append(s('line', { x1: LEFT, x2: LEFT + L.plotW, y1: axisY, y2: axisY, stroke: ink || 'currentColor', class: 'tl-axis' }));
  const step = niceStep(L.T);
  const digits = Math.max(3, Math.ceil(-Math.log10(step)) + 1);
  for (let a = Math.ceil((offset - 1e-12) / step) * step; a <= offset + L.T + 1e-12; a += step) {
    const xx = L.x(a - offset);
    svg.append(s('line', { x1: xx, x2: xx, y1: axisY, y2: axisY + 4, stroke: ink || 'currentColor', class: 'tl-axis' }));
    svg.append(s('text', { x: xx, y: axisY + 16, 'font-size': 10, 'text-anchor': 'middle', 'font-family': 'sans-serif', fill: ink, class: 'tl-text' }, `${fmt(a, digits)} s`));
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

/** PNG via canvas drawing (no image decoding, so it works under img-src 'self'); the same bars as the SVG. */
export function timelinePng(est, { width = 1400, scale = 1 } = {}) {
  const L0 = layout(est, width, false);
  const marks = timelineMarks(est, { plotW: L0.plotW, T: L0.T });
  const note = aggregationNote(marks);
  const L = layout(est, width, Boolean(note));
  const canvas = document.createElement('canvas');
  canvas.width = width * scale;
  canvas.height = L.height * scale;
  const c = canvas.getContext('2d');
  c.scale(scale, scale);
  c.fillStyle = '#ffffff';
  c.fillRect(0, 0, width, L.height);
  if (note) {
    c.font = '11px sans-serif';
    c.fillStyle = '#555';
    c.fillText(note, LEFT, TOP + 10);
  }
  c.font = '12px sans-serif';
  for (let i = 0; i < L.stages; i++) {
    const y0 = L.top + i * ROW;
    c.fillStyle = '#f3f3f3';
    c.fillRect(LEFT, y0, L.plotW, ROW - 4);
    c.fillStyle = '#222';
    c.fillText(`stage ${i}`, 6, y0 + 15);
  }
  for (const b of marks.bars) {
    const r = barBox(b, L);
    c.fillStyle = KIND_COLOR[b.kind] || '#999';
    c.fillRect(r.x, r.y, r.w, r.h);
  }
  const axisY = L.top + L.stages * ROW + 4;
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

/** Per-stage busy time, event count and bubble share (one pass over the events): the text alternative to the chart. */
export function timelineStats(est) {
  const T = est.iteration_time_s || 0;
  const n = (est.stages || []).length;
  const rows = Array.from({ length: n }, (_, i) => ({ stage: i, events: 0, ...Object.fromEntries(KINDS.map((k) => [k, 0])) }));
  for (const e of est.timeline || []) {
    const r = rows[e.stage];
    if (!r) continue;
    r.events += 1;
    r[e.kind] = (r[e.kind] || 0) + (e.end_s - e.start_s);
  }
  return rows.map((r) => {
    const compute = r.forward + r.backward + r.optimizer;
    return { ...r, compute, idle: Math.max(0, T - compute), idle_share: T > 0 ? Math.max(0, T - compute) / T : 0 };
  });
}

/** The data table: one row per stage (at most MAX_TABLE_STAGES; the others summed in a last row). */
export function timelineTable(est) {
  const all = timelineStats(est);
  const shown = all.length > MAX_TABLE_STAGES ? all.slice(0, MAX_TABLE_STAGES - 1) : all;
  const rest = all.slice(shown.length);
  const cells = (r) => [
    h('td', {}, fmtInt(r.events)),
    [r.forward, r.backward, r.send_forward, r.send_backward, r.dp_sync, r.optimizer].map((v) => h('td', {}, fmtTime(v))),
    h('td', {}, `${fmtTime(r.idle)} (${(100 * r.idle_share).toFixed(1)}%)`)];
  const body = h('tbody', {}, shown.map((r) => h('tr', {}, h('th', { scope: 'row' }, String(r.stage)), cells(r))));
  if (rest.length) {
    const sum = { events: 0, idle: 0 };
    for (const k of KINDS) sum[k] = 0;
    for (const r of rest) { sum.events += r.events; sum.idle += r.idle; for (const k of KINDS) sum[k] += r[k]; }
    const T = est.iteration_time_s || 0;
    sum.idle_share = T > 0 ? sum.idle / (T * rest.length) : 0;
    body.append(h('tr', { class: 'tl-rest' }, h('th', { scope: 'row' }, `${rest[0].stage}–${rest.at(-1).stage} (${rest.length} stages, summed)`), cells(sum)));
  }
  const events = (est.timeline || []).length;
  return h('table', { class: 'data', 'data-testid': 'timeline-table' },
    h('caption', {}, `Time per stage in one iteration, ${fmtInt(events)} events (compute stream idle time = pipeline bubble + waiting)`),
    h('thead', {}, h('tr', {}, ['stage', 'events', 'forward', 'backward', 'send act.', 'send grad.', 'DP all-reduce', 'optimizer', 'compute idle'].map((t) => h('th', { scope: 'col' }, t)))),
    body);
}
