// The timeline's pure modules in node: small plans draw every event and large ones merge into a
// bounded number of bars, zoom and pan, the files' titles and notes, device and lane colours, and
// the MoE all-to-all lane (split from pure.test.mjs; the timeline in the page: timeline.test.mjs).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { chromeTrace, planJson, resourceOf } from '../../web/exports.js';
import { timelineMarks, timelineStats, aggregationNote, AGGREGATE_ABOVE, MAX_BARS, windowed, timelineSpan, timelineScene } from '../../web/render/timeline.js';
import { zoomView, panView } from '../../web/render/zoom.js';
import { fmtTime } from '../../web/dom.js';
import { est } from './sample-estimate.mjs';

/** a synthetic 1F1B-like timeline: stages x micro-batches, forward/backward alternating, sends on the comm lane */
function bigEstimate(stages, mbs) {
  const timeline = [];
  const f = 1e-3;
  for (let s = 0; s < stages; s++) {
    let t = s * f;
    for (let m = 0; m < mbs; m++) {
      timeline.push({ stage: s, kind: 'forward', micro_batch: m, start_s: t, end_s: t + f });
      timeline.push({ stage: s, kind: 'send_forward', micro_batch: m, start_s: t + f, end_s: t + 1.1 * f });
      timeline.push({ stage: s, kind: 'backward', micro_batch: m, start_s: t + 1.2 * f, end_s: t + 3.2 * f });
      timeline.push({ stage: s, kind: 'send_backward', micro_batch: m, start_s: t + 3.2 * f, end_s: t + 3.3 * f });
      t += 3.5 * f;
    }
    timeline.push({ stage: s, kind: 'dp_sync', micro_batch: null, start_s: t, end_s: t + 20 * f });
    timeline.push({ stage: s, kind: 'optimizer', micro_batch: null, start_s: t + 20 * f, end_s: t + 40 * f });
  }
  let T = 0;
  for (const e of timeline) T = Math.max(T, e.end_s);
  return { iteration_time_s: T, stages: Array.from({ length: stages }, (_, i) => ({ index: i, device: 'a100', gpus: 1, tp: 1, dp: 1, num_layers: 1 })), timeline };
}

test('timeline: small plans draw every event; large ones merge into a bounded number of bars', () => {
  const small = timelineMarks(est, { plotW: 878 });
  assert.equal(small.aggregated, false);
  assert.equal(small.bars.length, est.timeline.length);
  assert.equal(aggregationNote(small), '');

  const big = bigEstimate(10, 2000); // 80,020 events
  assert.ok(big.timeline.length > AGGREGATE_ABOVE);
  const t0 = performance.now();
  const m = timelineMarks(big, { plotW: 878 });
  const ms = performance.now() - t0;
  assert.equal(m.aggregated, true);
  assert.equal(m.events, big.timeline.length);
  assert.ok(m.bars.length <= MAX_BARS, `${m.bars.length} bars`);
  assert.ok(m.bars.length < 200, `a regular 1F1B timeline merges into a few bars per stage (${m.bars.length})`);
  assert.match(aggregationNote(m), /80,020 events drawn as \d+ bars/);
  // nothing is lost: per stage and lane the merged bars count every event and all busy time
  for (let s = 0; s < 10; s++) {
    for (const lane of ['compute', 'p2p', 'dp']) {
      const evs = big.timeline.filter((e) => e.stage === s && resourceOf(e) === lane);
      const bars = m.bars.filter((b) => b.stage === s && b.lane === lane);
      const marks = new Map(bars.map((b) => [`${b.start_s}/${b.end_s}`, b]));
      assert.equal([...marks.values()].reduce((a, b) => a + b.count, 0), evs.length, `stage ${s} ${lane}: event count`);
      const busy = evs.reduce((a, e) => a + (e.end_s - e.start_s), 0);
      const drawn = [...marks.values()].reduce((a, b) => a + b.busy_s, 0);
      assert.ok(Math.abs(busy - drawn) < 1e-9 * evs.length, `stage ${s} ${lane}: busy time`);
      for (const e of evs) assert.ok(bars.some((b) => b.start_s <= e.start_s && b.end_s >= e.end_s), 'every event inside a bar');
      for (const b of bars) assert.ok(b.y0 >= 0 && b.y1 <= 1 + 1e-12 && b.y1 > b.y0, 'bar heights are shares');
    }
  }
  // the optimizer (wide, alone) stays its own full-height bar
  assert.ok(m.bars.some((b) => b.kind === 'optimizer' && b.count === 1 && b.y1 === 1));
  assert.ok(ms < 5000, `${ms} ms`);
  // a timeline with many stages still fits the bar budget (the merge distance grows)
  const wide = bigEstimate(400, 60);
  const mw = timelineMarks(wide, { plotW: 878 });
  assert.ok(mw.bars.length <= MAX_BARS || mw.mergePx >= 878, `${mw.bars.length} bars at ${mw.mergePx} px`);
  // the data table's numbers come from one pass; the Chrome trace keeps every event
  const stats = timelineStats(big);
  assert.equal(stats.length, 10);
  assert.equal(stats.reduce((a, r) => a + r.events, 0), big.timeline.length);
  const xs = JSON.parse(chromeTrace(big)).traceEvents.filter((e) => e.ph === 'X');
  assert.equal(xs.length, big.timeline.length);
});


test('timeline zoom: views stay inside the iteration; a window holds only its events', () => {
  const span = timelineSpan(est);
  assert.equal(span, 1);
  const v = zoomView({ t0: 0, t1: 1 }, 0.5, 0.5, span);
  assert.ok(Math.abs(v.t0 - 0.25) < 1e-12 && Math.abs(v.t1 - 0.75) < 1e-12);
  assert.deepStrictEqual(panView({ t0: 0.8, t1: 1 }, 0.5, span), { t0: 0.8, t1: 1 });
  assert.deepStrictEqual(zoomView({ t0: 0, t1: 1 }, 4, 0.3, span), { t0: 0, t1: 1 });
  const w = windowed(est, 0.12, 0.3);
  assert.ok(w.timeline.every((e) => e.start_s >= 0 && e.end_s <= 0.18 + 1e-12));
  assert.equal(w.timeline.length, 4);
  // a zoomed bar's tooltip gives the event's own times, as on the axis, not the window's
  const zoomedScene = timelineScene(est, { width: 960, view: { t0: 0.12, t1: 0.3 } });
  const titles = zoomedScene.items.filter((i) => i.t === 'rect' && i.title).map((i) => i.title);
  assert.ok(titles.length > 0);
  for (const e of w.timeline) {
    const text = `${fmtTime(e.whole_start_s)} – ${fmtTime(e.whole_end_s)}`;
    assert.ok(titles.some((t) => t.endsWith(text)), `a tooltip ends with ${text}: ${titles.join(' | ')}`);
  }
  // the axis speaks ms where the window ends before 1 s (as the tooltips do), s from there on
  const ticks = (sc) => sc.items.filter((i) => i.t === 'text' && i.cls === 'tl-text' && !/tl-legend/.test(i.cls)).map((i) => i.text).filter((x) => /\d (m?s)$/.test(x));
  assert.deepStrictEqual(ticks(zoomedScene), ['150 ms', '200 ms', '250 ms', '300 ms'], ticks(zoomedScene).join(' '));
  assert.ok(ticks(timelineScene(est, { width: 960 })).every((x) => / s$/.test(x)), 'the whole 1-s iteration in s');
});

test('files say what was planned: the timeline image\'s title line, the plan file\'s notes, the trace\'s metadata', () => {
  const ctx = 'Llama 3 8B · 64 × H100 SXM5 80GB · global batch 512 · bf16 · megatron-core';
  const plain = timelineScene(est, { width: 960, withNote: true });
  const titled = timelineScene(est, { width: 960, withNote: true, title: ctx });
  const title = titled.items.find((i) => i.t === 'text' && i.text === ctx);
  assert.ok(title, 'the title line is drawn');
  // above everything else, which moves down by the title's row
  const shift = titled.height - plain.height;
  assert.ok(shift > 0);
  assert.ok(titled.items.filter((i) => i !== title).every((i) => (i.y ?? i.y1) > title.y));
  assert.deepStrictEqual(titled.items.filter((i) => i !== title).map((i) => (i.y ?? i.y1) - shift), plain.items.map((i) => i.y ?? i.y1));
  const file = JSON.parse(planJson(est, { context: ctx, version: '0.1.0' }));
  assert.equal(file.notes, `Planned by Poseidon 0.1.0 for ${ctx}.`);
  assert.deepStrictEqual({ ...file, notes: undefined }, { ...est.plan, notes: undefined });
  const meta = JSON.parse(chromeTrace(est, 'Poseidon plan', { context: ctx })).otherData;
  assert.equal(meta.planned_for, ctx);
  assert.equal(meta.title, `Poseidon plan: ${ctx}`);
});

test('device colours are not timeline colours; lane labels are 11 px or more', async () => {
  const { DEVICE_COLORS, KIND_COLOR, UNKNOWN_COLOR, barColor } = await import('../../web/render/colors.js');
  // CIE L*a*b* from sRGB (D65), and the CIE76 distance: 15 and more reads as another colour at a glance
  const lab = (hex) => {
    const n = parseInt(hex.slice(1), 16);
    const [r, g, b] = [(n >> 16) & 255, (n >> 8) & 255, n & 255].map((v) => { const c = v / 255; return c <= 0.04045 ? c / 12.92 : ((c + 0.055) / 1.055) ** 2.4; });
    const f = (t) => (t > 0.008856 ? Math.cbrt(t) : 7.787 * t + 16 / 116);
    const [x, y, z] = [(r * 0.4124 + g * 0.3576 + b * 0.1805) / 0.95047, r * 0.2126 + g * 0.7152 + b * 0.0722, (r * 0.0193 + g * 0.1192 + b * 0.9505) / 1.08883];
    return [116 * f(y) - 16, 500 * (f(x) - f(y)), 200 * (f(y) - f(z))];
  };
  const dE = (a, b) => { const p = lab(a); const q = lab(b); return Math.hypot(p[0] - q[0], p[1] - q[1], p[2] - q[2]); };
  const timeline = [UNKNOWN_COLOR, ...Object.keys(KIND_COLOR).flatMap((k) => [0, 1, 2, 3].map((c) => barColor(k, c)))];
  for (const d of DEVICE_COLORS) {
    const near = timeline.filter((t) => dE(d, t) < 15);
    assert.deepStrictEqual(near, [], `device colour ${d} is not a timeline colour`);
  }
  for (let i = 0; i < DEVICE_COLORS.length; i++) {
    for (let j = i + 1; j < DEVICE_COLORS.length; j++) assert.ok(dE(DEVICE_COLORS[i], DEVICE_COLORS[j]) >= 15, `${DEVICE_COLORS[i]} and ${DEVICE_COLORS[j]} differ`);
  }
  const sc = timelineScene(est, { width: 960, withNote: true, title: 'x' });
  const labels = sc.items.filter((i) => i.t === 'text' && /tl-lane-label/.test(i.cls));
  assert.ok(labels.length > 0, 'the scene has lane labels');
  const names = sc.items.filter((i) => i.t === 'text' && (/tl-lane-label/.test(i.cls) || /^stage \d+$/.test(i.text)));
  assert.deepStrictEqual(names.filter((i) => i.size < 11).map((i) => `${i.text} ${i.size}`), [], 'lane and stage labels of 11 px or more');
  // each lane is as tall as its label, so labels of neighbouring lanes never overlap
  const ys = labels.map((l) => l.y).sort((a, b) => a - b);
  for (let k = 1; k < ys.length; k++) assert.ok(ys[k] - ys[k - 1] >= 11, `lane labels ${ys[k - 1]} and ${ys[k]} are 11 units apart or more`);
});


test('a device keeps its colour from plan to plan: the colour of its cluster group, not its place in the plan', async () => {
  const { DEVICE_COLORS, deviceColors } = await import('../../web/render/colors.js');
  // the demo's plans #1 (A100 stages first) and #2 (V100 stages first) drew the two devices in swapped colours
  const a100First = [{ device: 'A100', group: 0 }, { device: 'V100', group: 1 }];
  const v100First = [{ device: 'V100', group: 1 }, { device: 'V100', group: 1 }, { device: 'A100', group: 0 }];
  for (const stages of [a100First, v100First]) {
    const c = deviceColors(stages);
    assert.equal(c.get('A100'), DEVICE_COLORS[0]);
    assert.equal(c.get('V100'), DEVICE_COLORS[1]);
  }
  assert.deepStrictEqual([...deviceColors(v100First).keys()], ['V100', 'A100'], 'the legend in order of appearance');
  // a plan on group 1 alone: group 1's colour, as in the what-if chart
  assert.equal(deviceColors([{ device: 'V100', group: 1 }]).get('V100'), DEVICE_COLORS[1]);
  // mixed replicas: each device by its replica's group; no group known: colours in order
  const mixed = deviceColors([{ device: 'A100+V100', replicas: [{ device: 'V100', group: 1 }, { device: 'A100', group: 0 }] }]);
  assert.equal(mixed.get('A100'), DEVICE_COLORS[0]);
  assert.equal(mixed.get('V100'), DEVICE_COLORS[1]);
  assert.deepStrictEqual([...deviceColors([{ device: 'X' }, { device: 'Y' }]).values()], DEVICE_COLORS.slice(0, 2));
});

test('MoE plans: the all-to-all drawn on an "ep" lane inside each pass, block by block, summing to the stage\'s exchange time', async () => {
  const { withExchanges, EP_KIND } = await import('../../web/render/exchanges.js');
  const { stageResources } = await import('../../web/exports.js');
  const est = {
    iteration_time_s: 0.05,
    plan: { virtual_stages: 1, stages: [{ num_layers: 2 }, { num_layers: 1 }] },
    stages: [{ num_layers: 2, forward_ep_comm_s: 0.002, backward_ep_comm_s: 0.004 }, { num_layers: 1 }],
    timeline: [
      { stage: 0, kind: 'forward', micro_batch: 0, start_s: 0, end_s: 0.01, resource: 'compute' },
      { stage: 0, kind: 'backward', micro_batch: 0, start_s: 0.02, end_s: 0.04, resource: 'compute' },
      { stage: 1, kind: 'forward', micro_batch: 0, start_s: 0.01, end_s: 0.02, resource: 'compute' },
    ],
  };
  const out = withExchanges(est);
  assert.equal(withExchanges(est), out, 'memoised');
  const ex = out.timeline.filter((e) => e.kind === EP_KIND);
  // forward: blocks of 5 ms, 1 ms of exchanges each: dispatch after half the compute, combine last
  // backward: blocks of 10 ms, 2 ms each: the combine's backward first, the dispatch's after half the compute
  const spans = ex.map((e) => [e.phase, e.block, +e.start_s.toFixed(6), +e.end_s.toFixed(6)]);
  assert.deepStrictEqual(spans, [
    ['dispatch', 0, 0.002, 0.0025], ['combine', 0, 0.0045, 0.005], ['dispatch', 1, 0.007, 0.0075], ['combine', 1, 0.0095, 0.01],
    ['combine (backward)', 0, 0.02, 0.021], ['dispatch (backward)', 0, 0.025, 0.026], ['combine (backward)', 1, 0.03, 0.031], ['dispatch (backward)', 1, 0.035, 0.036],
  ]);
  assert.ok(ex.every((e) => e.resource === 'ep' && e.stage === 0 && e.micro_batch === 0 && e.derived));
  assert.deepStrictEqual(stageResources(out), [['compute', 'ep'], ['compute']]);
  // the table: the exchanges are busy time on their own lane, the compute stream's idle time unchanged
  const rows = timelineStats(est);
  assert.ok(Math.abs(rows[0].busy.ep - 0.006) < 1e-12 && Math.abs(rows[0].compute - 0.03) < 1e-12);
  // the trace has the lane; a dense estimate is left as it is
  assert.ok(JSON.parse(chromeTrace(est)).traceEvents.some((e) => e.name === 'thread_name' && e.args.name === 'ep'));
  // the chart (page, SVG, PNG): an "EP all-to-all" lane under stage 0's compute, and the kind in the legend
  const scene = timelineScene(est, { width: 960 });
  assert.ok(scene.items.some((it) => it.t === 'rect' && /tl-lane-ep\b/.test(it.cls)));
  assert.ok(scene.items.some((it) => it.t === 'text' && it.text === 'EP all-to-all'));
  assert.ok(scene.items.some((it) => it.t === 'text' && it.text === 'all-to-all (expert dispatch / combine)'));
  assert.ok(scene.items.some((it) => it.t === 'rect' && /tl-ep_a2a/.test(it.cls) && /dispatch, block 0, micro-batch 0/.test(it.title)));
  const dense = { ...est, stages: [{ num_layers: 2 }, { num_layers: 1 }] };
  assert.equal(withExchanges(dense), dense);
  // interleaved: a chunk's pass carries its chunk's share (chunk_layers 3 + 1 of 4 blocks)
  const il = { ...est, plan: { virtual_stages: 2, stages: [{ num_layers: 4, chunk_layers: [3, 1] }, { num_layers: 2 }] },
    stages: [{ num_layers: 4, forward_ep_comm_s: 0.004, backward_ep_comm_s: 0 }, { num_layers: 2 }],
    timeline: [{ stage: 0, kind: 'forward', micro_batch: 0, chunk: 0, start_s: 0, end_s: 0.006 }, { stage: 0, kind: 'forward', micro_batch: 0, chunk: 1, start_s: 0.006, end_s: 0.008 }] };
  const ilx = withExchanges(il).timeline.filter((e) => e.kind === EP_KIND);
  const sum = (c) => ilx.filter((e) => e.chunk === c).reduce((a, e) => a + e.end_s - e.start_s, 0);
  assert.equal(ilx.filter((e) => e.chunk === 0).length, 6);
  assert.ok(Math.abs(sum(0) - 0.003) < 1e-12 && Math.abs(sum(1) - 0.001) < 1e-12);
});
