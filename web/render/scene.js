// The timeline as a display list (rectangles, texts, lines in SVG units), drawn alike as SVG on the
// page, as a standalone SVG file and on a canvas for the PNG (render/timeline.js). Each stage has
// one lane per resource its events use (compute first, then p2p, dp, any other: a future "tp"
// gets its own lane), the resource taken from the event or derived from its kind. Chunks of an
// interleaved plan are shaded and labelled (colors.js). Pure: no DOM, tested in node.
import { fmt, fmtTime, fmtInt } from '../dom.js';
import { KINDS, stageResources, chunkOf } from '../exports.js';
import { KIND_LABEL, CHUNK_SHADE, barColor, inkOn, resourceLabel } from './colors.js';
import { timelineMarks, aggregationNote } from './marks.js';
import { withExchanges } from './exchanges.js';

const LEFT = 70;
const RIGHT = 12;
const TOP = 8;
const NOTE = 18;
const TITLE = 20;
const AXIS = 26;
const LEGEND_ROW = 18;
const COMPUTE_H = 16;
// a communication lane is as tall as its label: 11 px text is the smallest the page writes
const LANE_H = 12;
const LANE_LABEL_SIZE = 11;
const LANE_GAP = 2;
const PAD_TOP = 2;
const PAD_BOTTOM = 6;
/** a chunk label is written on bars at least this wide (SVG units) */
export const CHUNK_LABEL_MIN_W = 16;
// fixed colours of a standalone file (the page takes them from its theme through CSS classes)
const INK = '#222222';
const MUTED = '#555555';
const LANE_BG = '#f3f3f3';

/** the plot's horizontal geometry in SVG units for a chart `width` wide (the zoom maps pointers with it) */
export function timelineGeometry(width) {
  return { left: LEFT, plotW: width - LEFT - RIGHT };
}

/** the iteration's span: the iteration time or the last event's end, whichever is later */
export function timelineSpan(est) {
  let T = Math.max(est.iteration_time_s || 0, 1e-9);
  // a loop, not Math.max(...spread): hundreds of thousands of events would overflow the stack
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
    // the event's own times stay with it for its tooltip (the chart draws the clipped, shifted ones)
    timeline.push({ ...e, start_s: Math.max(e.start_s, t0) - t0, end_s: Math.min(e.end_s, t1) - t0, whole_start_s: e.whole_start_s ?? e.start_s, whole_end_s: e.whole_end_s ?? e.end_s });
  }
  return { ...est, timeline, iteration_time_s: t1 - t0 };
}

/** model chunks per stage: the plan's virtual_stages, else one more than the largest chunk seen */
export function chunkCount(est) {
  let v = Number.isInteger(est.plan?.virtual_stages) ? est.plan.virtual_stages : 1;
  for (const e of est.timeline || []) if (Number.isInteger(e.chunk) && e.chunk + 1 > v) v = e.chunk + 1;
  return v;
}

/** per stage: its top, height and lanes (resource → {y, h}), from the whole estimate so zooming never moves a lane */
export function laneLayout(est, top = TOP) {
  const per = stageResources(est);
  const n = Math.max(1, (est.stages || []).length, per.length);
  const stages = [];
  let y = top;
  for (let i = 0; i < n; i++) {
    const res = per[i]?.length ? per[i] : ['compute'];
    const lanes = new Map();
    let ly = y + PAD_TOP;
    for (const r of res) {
      const hh = r === 'compute' ? COMPUTE_H : LANE_H;
      lanes.set(r, { y: ly, h: hh });
      ly += hh + LANE_GAP;
    }
    const hgt = ly - LANE_GAP + PAD_BOTTOM - y;
    stages.push({ y, h: hgt, lanes, resources: res });
    y += hgt;
  }
  return { stages, bottom: y };
}

/** the kinds to list in the legend: those the timeline has, in the legend's order (unknown kinds last) */
export function legendKinds(est) {
  const seen = new Set();
  for (const e of est.timeline || []) seen.add(e.kind);
  if (!seen.size) return KINDS.slice();
  return [...KINDS.filter((k) => seen.has(k)), ...[...seen].filter((k) => !KINDS.includes(k)).sort()];
}

function niceStep(range, target = 8) {
  const raw = range / target;
  const p = 10 ** Math.floor(Math.log10(raw || 1));
  for (const m of [1, 2, 5, 10]) if (m * p >= raw) return m * p;
  return 10 * p;
}

const rangeText = (r, one, many) => (r ? (r[0] === r[1] ? `${one} ${r[0]}` : `${many} ${r[0]}–${r[1]}`) : null);

/**
 * the tooltip of a bar: stage, resource (lane), kind, micro-batch, chunk, bucket, times; offset: the
 * start of a zoomed view (its bars' times are from there), so that the times read as on the axis
 */
export function barTitle(b, offset = 0) {
  const head = `stage ${b.stage} · ${resourceLabel(b.lane)}`;
  if (b.event) {
    const e = b.event;
    const what = [KIND_LABEL[e.kind] || e.kind,
      e.phase ? `${e.phase}, block ${e.block}` : null,
      Number.isInteger(e.micro_batch) ? `micro-batch ${e.micro_batch}` : null,
      chunkOf(e) !== null ? `chunk ${e.chunk}` : null,
      Number.isInteger(e.bucket) ? `bucket ${e.bucket}` : null].filter(Boolean).join(', ');
    return `${head} · ${what}: ${fmtTime(e.whole_start_s ?? e.start_s + offset)} – ${fmtTime(e.whole_end_s ?? e.end_s + offset)}`;
  }
  const parts = Object.keys(b.kinds).map((k) => `${KIND_LABEL[k] || k} ${fmtTime(b.kinds[k])}`).join(', ');
  const ranges = [rangeText(b.mb, 'micro-batch', 'micro-batches'), rangeText(b.chunks, 'chunk', 'chunks'),
    rangeText(b.buckets, 'bucket', 'buckets')].filter(Boolean).map((t) => `, ${t}`).join('');
  const share = b.end_s > b.start_s ? ` (busy ${Math.min(100, (100 * b.busy_s) / (b.end_s - b.start_s)).toFixed(0)}%)` : '';
  return `${head} · ${fmtInt(b.count)} events merged${ranges}: ${fmtTime(b.start_s + offset)} – ${fmtTime(b.end_s + offset)}; ${parts}${share}`;
}

/** legend entries wrapped into rows of the chart's width: [{x, y, color, label, kind?, chunk?}] */
function legendItems(kinds, chunks, width, y0) {
  const entries = kinds.map((k) => ({ kind: k, color: barColor(k), label: KIND_LABEL[k] || k }));
  if (chunks > 1) {
    // the swatches show the forward's shades; every kind (the backward too) darkens the same way
    entries.push({ chunk: null, color: null, label: 'model chunks, every kind shaded alike:' });
    for (let c = 0; c < Math.min(chunks, CHUNK_SHADE.length); c++) entries.push({ chunk: c, color: barColor('forward', c), label: `chunk ${c}` });
    if (chunks > CHUNK_SHADE.length) entries.push({ chunk: null, color: null, label: `(shades repeat; bars say c0–c${chunks - 1})` });
  }
  let x = LEFT;
  let y = y0;
  const out = [];
  for (const e of entries) {
    const w = (e.color ? 24 : 10) + e.label.length * 6.5;
    if (x > LEFT && x + w > width - RIGHT) { x = LEFT; y += LEGEND_ROW; }
    out.push({ ...e, x, y });
    x += w;
  }
  return { items: out, bottom: y };
}

/**
 * The display list of `est0`'s timeline `width` units wide. view: {t0, t1}, the time window to draw
 * (default: the whole iteration). withNote: write the aggregation note as text at the top (files).
 * title: a line of text above everything (files: what was planned).
 * Items: {t:'rect', x, y, w, h, fill, cls, title?, themed?}, {t:'text', x, y, text, size, fill, cls,
 * anchor?, themed?}, {t:'line', x1, y1, x2, y2, stroke, cls}; themed items take the page's colours.
 */
export function timelineScene(estIn, { width = 960, view = null, withNote = false, title = '' } = {}) {
  const est0 = withExchanges(estIn);
  const span = timelineSpan(est0);
  const zoomed = Boolean(view && (view.t0 > 1e-12 || view.t1 < span * (1 - 1e-9)));
  const offset = zoomed ? view.t0 : 0;
  const est = zoomed ? windowed(est0, view.t0, view.t1) : est0;
  const T = zoomed ? view.t1 - view.t0 : span;
  const { plotW } = timelineGeometry(width);
  const x = (t) => LEFT + (t / T) * plotW;
  const marks = timelineMarks(est, { plotW, T });
  const note = aggregationNote(marks);
  // a file's title line (what was planned): an image seen alone still says what it is of
  const head = title ? TITLE : 0;
  const top = TOP + head + (note && withNote ? NOTE : 0);
  const L = laneLayout(est0, top);
  const chunks = chunkCount(est0);
  const items = [];
  if (title) items.push({ t: 'text', x: 6, y: TOP + 12, text: title, size: 13, fill: INK, cls: 'tl-text tl-title', themed: true });
  if (note && withNote) items.push({ t: 'text', x: LEFT, y: TOP + head + 10, text: note, size: 11, fill: MUTED, cls: 'tl-text tl-muted tl-note', themed: true });
  L.stages.forEach((st, i) => {
    let first = true;
    for (const [res, lane] of st.lanes) {
      items.push({ t: 'rect', x: LEFT, y: lane.y, w: plotW, h: lane.h, fill: LANE_BG, cls: `tl-lane tl-lane-${res.replace(/[^a-z0-9_-]/gi, '_')}`, themed: true });
      if (first) items.push({ t: 'text', x: 6, y: lane.y + 12, text: `stage ${i}`, size: 12, fill: INK, cls: 'tl-text', themed: true });
      else items.push({ t: 'text', x: 6, y: lane.y + 9.5, text: resourceLabel(res), size: LANE_LABEL_SIZE, fill: MUTED, cls: 'tl-text tl-muted tl-lane-label', themed: true });
      first = false;
    }
  });
  for (const b of marks.bars) {
    const st = L.stages[b.stage];
    const lane = st?.lanes.get(b.lane) ?? st?.lanes.values().next().value;
    if (!lane) continue;
    // a merged bar is at least 1 unit high so that a short burst stays visible
    const hgt = Math.min(lane.h, Math.max(1, (b.y1 - b.y0) * lane.h));
    const y = Math.max(lane.y, lane.y + lane.h - b.y0 * lane.h - hgt);
    const bx = x(b.start_s);
    const w = Math.max(0.5, x(b.end_s) - bx);
    const chunk = b.event ? chunkOf(b.event) : b.chunks && b.chunks[0] === b.chunks[1] ? b.chunks[0] : null;
    const fill = barColor(b.kind, chunk);
    items.push({ t: 'rect', x: bx, y, w, h: hgt, fill, cls: `tl-ev tl-${b.kind}${b.event ? '' : ' tl-agg'}`, title: barTitle(b, offset),
      chunk: Number.isInteger(chunk) ? chunk : null, lane: b.lane, stage: b.stage });
    if (b.event && Number.isInteger(chunk) && chunks > 1 && w >= CHUNK_LABEL_MIN_W) {
      items.push({ t: 'text', x: bx + w / 2, y: lane.y + lane.h / 2 + (lane.h > LANE_H ? 3.5 : 3), text: `c${chunk}`, size: lane.h > LANE_H ? 10 : 8,
        fill: inkOn(fill), cls: 'tl-chunk', anchor: 'middle' });
    }
  }
  const axisY = L.bottom + 2;
  items.push({ t: 'line', x1: LEFT, x2: LEFT + plotW, y1: axisY, y2: axisY, stroke: INK, cls: 'tl-axis' });
  const step = niceStep(T);
  // in ms when the window ends before 1 s, as the tooltips, the zoom range and the tables say it
  const ms = offset + T < 1;
  const digits = ms ? Math.max(0, Math.ceil(-Math.log10(step * 1e3)) + 1) : Math.max(3, Math.ceil(-Math.log10(step)) + 1);
  for (let a = Math.ceil((offset - 1e-12) / step) * step; a <= offset + T + 1e-12; a += step) {
    const xx = x(a - offset);
    if (Math.abs(a) < step * 1e-9) a = 0; // no "-0 s"
    items.push({ t: 'line', x1: xx, x2: xx, y1: axisY, y2: axisY + 4, stroke: INK, cls: 'tl-axis' });
    items.push({ t: 'text', x: xx, y: axisY + 16, text: ms ? `${fmt(a * 1e3, digits)} ms` : `${fmt(a, digits)} s`, size: 10, fill: INK, cls: 'tl-text', anchor: 'middle', themed: true });
  }
  const legend = legendItems(legendKinds(est0), chunks, width, axisY + AXIS);
  for (const e of legend.items) {
    if (e.color) items.push({ t: 'rect', x: e.x, y: e.y - 9, w: 10, h: 10, fill: e.color, cls: 'tl-key' });
    items.push({ t: 'text', x: e.x + (e.color ? 14 : 0), y: e.y, text: e.label, size: 11, fill: INK, cls: 'tl-text tl-legend', themed: true });
  }
  const schedule = chunks > 1 ? `interleaved 1F1B, ${chunks} model chunks per stage` : '1F1B';
  const laneNames = [...new Set(L.stages.flatMap((st) => st.resources))].map(resourceLabel).join(', ');
  return {
    width, height: legend.bottom + 8, items, marks, note, T, offset, zoomed, chunks, stages: L.stages.length,
    label: `Pipeline timeline (${schedule}): ${L.stages.length} stages, lanes ${laneNames}, iteration ${fmtTime(est0.iteration_time_s)}`
      + `${zoomed ? `, showing ${fmtTime(offset)} to ${fmtTime(offset + T)}` : ''}.${note ? ` ${note}` : ''} A table with the same data follows.`,
  };
}
