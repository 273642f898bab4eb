// Which bars a timeline draws. A plan can have hundreds of thousands of events (stages x
// micro-batches x chunks x 4); beyond AGGREGATE_ABOVE events, per stage and lane (one lane per
// resource: compute, p2p, dp, ...), events closer than the merge distance become "marks", so the
// number of SVG elements stays bounded. The Chrome trace export keeps every event.
import { fmtInt } from '../dom.js';
import { KINDS, resourceOf, chunkOf } from '../exports.js';

/** up to this many events every event is its own bar (with a tooltip); above, marks are merged */
export const AGGREGATE_ABOVE = 3000;
/** aggregated charts use at most this many bars (the merge distance doubles until they fit) */
export const MAX_BARS = 3000;

/** [min, max] of an integer key (micro_batch, chunk, bucket) over merged events, or null */
function range(v, r) {
  if (!Number.isInteger(v)) return r;
  if (!r) return [v, v];
  return [Math.min(r[0], v), Math.max(r[1], v)];
}
const joinRange = (a, b) => (b ? range(b[0], range(b[1], a)) : a);

/**
 * The bars to draw for a timeline `plotW` pixels wide.
 * Returns {bars, aggregated, mergePx, events}; a bar is {stage, lane, kind, start_s, end_s, y0, y1,
 * count, busy_s, kinds:{kind: busy_s}, mb:[first, last] | null, chunks, buckets, event?}. lane is
 * the resource (resourceOf). y0/y1 are fractions of the lane's height from its bottom (1 = full).
 *
 * Up to AGGREGATE_ABOVE events: one full-height bar per event. Above, per stage and lane, in time
 * order:
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
      bars: events.map((e) => ({ stage: e.stage, lane: resourceOf(e), kind: e.kind, start_s: e.start_s, end_s: e.end_s, y0: 0, y1: 1,
        count: 1, busy_s: e.end_s - e.start_s, kinds: { [e.kind]: e.end_s - e.start_s }, mb: range(e.micro_batch, null),
        chunks: range(chunkOf(e), null), buckets: range(e.bucket, null), event: e })),
    };
  }
  const tracks = new Map();
  for (const e of events) {
    const key = `${e.stage}/${resourceOf(e)}`;
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

function mergeTrack(list, dt) {
  // 1. same-kind runs (chunks of an interleaved plan merge: their range is kept for the tooltip)
  const runs = [];
  let r = null;
  for (const e of list) {
    const d = Math.max(0, e.end_s - e.start_s);
    if (r && e.kind === r.kind && e.start_s - r.end_s < dt) {
      r.end_s = Math.max(r.end_s, e.end_s);
      r.count += 1;
      r.kinds[e.kind] += d;
      r.mb = range(e.micro_batch, r.mb);
      r.chunks = range(chunkOf(e), r.chunks);
      r.buckets = range(e.bucket, r.buckets);
    } else {
      if (r) runs.push(r);
      r = { stage: e.stage, lane: resourceOf(e), kind: e.kind, start_s: e.start_s, end_s: e.end_s, count: 1, kinds: { [e.kind]: d },
        mb: range(e.micro_batch, null), chunks: range(chunkOf(e), null), buckets: range(e.bucket, null), event: e };
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
      m.mb = joinRange(m.mb, run.mb);
      m.chunks = joinRange(m.chunks, run.chunks);
      m.buckets = joinRange(m.buckets, run.buckets);
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
  const base = { stage: m.stage, lane: m.lane, start_s: m.start_s, end_s: m.end_s, count: m.count, busy_s: busy, kinds: m.kinds,
    mb: m.mb, chunks: m.chunks, buckets: m.buckets };
  if (m.count === 1) {
    bars.push({ ...base, kind: Object.keys(m.kinds)[0], y0: 0, y1: 1, event: m.event });
    return;
  }
  // stacked by kind, in the legend's order (kinds this page does not know last); heights are
  // shares of the duration (at most 1 in all)
  const scale = 1 / Math.max(dur, busy);
  let y = 0;
  const order = [...KINDS.filter((k) => k in m.kinds), ...Object.keys(m.kinds).filter((k) => !KINDS.includes(k))];
  for (const k of order) {
    const hgt = m.kinds[k] * scale;
    bars.push({ ...base, kind: k, y0: y, y1: Math.min(1, y + hgt) });
    y += hgt;
  }
}

/** one sentence describing an aggregated chart (shown in the figure and written into exports) */
export function aggregationNote(marks) {
  if (!marks.aggregated) return '';
  return `${fmtInt(marks.events)} events drawn as ${fmtInt(marks.bars.length)} bars: events closer than ${marks.mergePx} px are merged (bar height = share of time busy). The Chrome trace export has every event.`;
}
