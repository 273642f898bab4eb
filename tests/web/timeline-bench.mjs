// Figures (not a timed test): the time to build the timeline chart (merging into bars and the
// display list) and the Chrome trace for ~86,000-event plans, 1F1B and interleaved with buckets.
//   node tests/web/timeline-bench.mjs
import { timelineScene, timelineMarks } from '../../web/render/timeline.js';
import { chromeTrace } from '../../web/exports.js';
function big(stages, m, V) {
  const tl = []; const f = 0.001;
  for (let s = 0; s < stages; s++) { let t = s * f;
    for (let j = 0; j < m; j++) for (let c = 0; c < V; c++) {
      tl.push({ stage: s, kind: 'forward', micro_batch: j, chunk: c, start_s: t, end_s: t + f });
      tl.push({ stage: s, kind: 'send_forward', micro_batch: j, chunk: c, start_s: t + f, end_s: t + 1.1 * f });
      tl.push({ stage: s, kind: 'backward', micro_batch: j, chunk: c, start_s: t + 1.2 * f, end_s: t + 3.2 * f });
      tl.push({ stage: s, kind: 'send_backward', micro_batch: j, chunk: c, start_s: t + 3.2 * f, end_s: t + 3.3 * f });
      t += 3.3 * f; }
    for (let b = 0; b < 4; b++) tl.push({ stage: s, kind: 'grad_bucket', micro_batch: null, bucket: b, start_s: t - (4 - b) * f, end_s: t - (3.5 - b) * f });
    tl.push({ stage: s, kind: 'optimizer', micro_batch: null, start_s: t, end_s: t + 20 * f }); }
  let T = 0; for (const e of tl) T = Math.max(T, e.end_s);
  return { iteration_time_s: T, plan: { virtual_stages: V }, stages: Array.from({ length: stages }, () => ({})), timeline: tl };
}
for (const [s, m, V] of [[8, 2700, 1], [8, 1350, 2]]) {
  const est = big(s, m, V);
  for (let rep = 0; rep < 3; rep++) {
    const t0 = performance.now(); const sc = timelineScene(est, { width: 960 }); const t1 = performance.now(); chromeTrace(est); const t2 = performance.now();
    console.log(`${s} stages x ${m} mb x V${V}: ${est.timeline.length} events -> ${sc.marks.bars.length} bars, ${sc.items.length} items; scene ${(t1 - t0).toFixed(0)} ms, trace ${(t2 - t1).toFixed(0)} ms`);
  }
}
