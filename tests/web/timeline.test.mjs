// The timeline with a lane per resource (issue 13, "Shown"): lanes per stage derived from the
// event's resource or, without one, from its kind; unknown resources in lanes of their own; chunks
// of interleaved plans shaded and labelled; overlapped DP buckets; aggregation per lane; the
// Chrome trace with one track per (stage, resource); the page, its SVG and PNG files.
//   POSEIDON_BUILD_WASM=build-wasm node --test tests/web/timeline.test.mjs
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import { loadModule } from './load-module.mjs';
import { useBrowser, assertClean, demoScenario } from './harness.mjs';
import { chromeTrace, resourceOf, stageResources, KIND_RESOURCE, chunkOf } from '../../web/exports.js';
import { timelineScene, timelineStats, timelineMarks, laneLayout, legendKinds, MAX_BARS, AGGREGATE_ABOVE } from '../../web/render/timeline.js';
import { barColor, KIND_COLOR, KIND_LABEL, inkOn } from '../../web/render/colors.js';

// ---------------------------------------------------------------- synthetic timelines (contract)

/**
 * A 1F1B-like timeline of `stages` x `m` micro-batches with V chunks, sends, gradient buckets on
 * stage 0 (overlap_grad_reduce), a parameter all-gather and a DP sync elsewhere; `resource` on
 * every event as the contract writes it, or none (an older engine) when withResource is false.
 */
function contractTimeline({ stages = 3, m = 4, V = 2, f = 0.01, withResource = true, extra = [] } = {}) {
  const tl = [];
  for (let s = 0; s < stages; s++) {
    let t = s * f;
    for (let c = 0; c < V; c++) {
      for (let j = 0; j < m; j++) {
        tl.push({ stage: s, kind: 'forward', micro_batch: j, chunk: c, start_s: t, end_s: t + f });
        if (s < stages - 1 || c < V - 1) tl.push({ stage: s, kind: 'send_forward', micro_batch: j, chunk: c, start_s: t + f, end_s: t + 1.2 * f });
        t += f;
      }
    }
    for (let c = V - 1; c >= 0; c--) {
      for (let j = 0; j < m; j++) {
        tl.push({ stage: s, kind: 'backward', micro_batch: j, chunk: c, start_s: t, end_s: t + 2 * f });
        if (s > 0 || c > 0) tl.push({ stage: s, kind: 'send_backward', micro_batch: j, chunk: c, start_s: t + 2 * f, end_s: t + 2.2 * f });
        t += 2 * f;
      }
    }
    if (s === 0) {
      // the buckets run during the last backwards and replace dp_sync (contract)
      for (let b = 0; b < 3; b++) tl.push({ stage: s, kind: 'grad_bucket', micro_batch: null, bucket: b, start_s: t - (3 - b) * f, end_s: t - (2.5 - b) * f });
      tl.push({ stage: s, kind: 'param_gather', micro_batch: null, bucket: 0, start_s: 0, end_s: 0.5 * f });
    } else {
      tl.push({ stage: s, kind: 'dp_sync', micro_batch: null, chunk: 0, start_s: t, end_s: t + f });
      t += f;
    }
    tl.push({ stage: s, kind: 'optimizer', micro_batch: null, chunk: 0, start_s: t, end_s: t + f });
  }
  tl.push(...extra);
  if (withResource) for (const e of tl) e.resource ??= KIND_RESOURCE[e.kind];
  let T = 0;
  for (const e of tl) T = Math.max(T, e.end_s);
  return { iteration_time_s: T, plan: { schedule: V > 1 ? 'interleaved-1f1b' : '1f1b', virtual_stages: V, micro_batch_size: 1, num_micro_batches: m, stages: [] },
    stages: Array.from({ length: stages }, (_, i) => ({ index: i, device: 'a100', gpus: 1, tp: 1, dp: 1, num_layers: 2 })), timeline: tl };
}

const stripResource = (est) => ({ ...est, timeline: est.timeline.map(({ resource, ...e }) => { void resource; return e; }) });

test('lanes: one per resource per stage, compute first, the resource derived from the kind when absent', () => {
  const est = contractTimeline();
  const old = stripResource(est);
  assert.deepStrictEqual(stageResources(est), [['compute', 'p2p', 'dp'], ['compute', 'p2p', 'dp'], ['compute', 'p2p', 'dp']]);
  assert.deepStrictEqual(stageResources(old), stageResources(est), 'derived from kind = the core\'s resource');
  for (const [kind, res] of [['forward', 'compute'], ['backward', 'compute'], ['optimizer', 'compute'], ['send_forward', 'p2p'], ['send_backward', 'p2p'],
    ['dp_sync', 'dp'], ['grad_bucket', 'dp'], ['param_gather', 'dp'], ['embedding_sync', 'dp']]) assert.equal(resourceOf({ kind }), res, kind);
  // the same drawing with and without the key
  const a = timelineScene(est, { width: 960 });
  const b = timelineScene(old, { width: 960 });
  assert.deepStrictEqual(a.items, b.items);
  // geometry: lanes of a stage are stacked without overlap, compute taller, stages one under the other
  const L = laneLayout(est);
  for (const st of L.stages) {
    const lanes = [...st.lanes.values()];
    assert.equal(lanes.length, 3);
    assert.ok(lanes[0].h > lanes[1].h, 'compute lane taller');
    for (let i = 1; i < lanes.length; i++) assert.ok(lanes[i].y >= lanes[i - 1].y + lanes[i - 1].h, 'no overlap');
    assert.ok(lanes.at(-1).y + lanes.at(-1).h <= st.y + st.h);
  }
  // each bar sits in its stage's lane for its resource
  const lanesOf = new Map(L.stages.map((st, i) => [i, st.lanes]));
  const bars = a.items.filter((it) => it.t === 'rect' && /tl-ev/.test(it.cls));
  assert.equal(bars.length, est.timeline.length);
  for (const bar of bars) {
    const lane = lanesOf.get(bar.stage).get(bar.lane);
    assert.ok(bar.y >= lane.y - 1e-9 && bar.y + bar.h <= lane.y + lane.h + 1e-9, `${bar.title} inside its lane`);
  }
  // lane labels in the left column
  const texts = a.items.filter((it) => it.t === 'text').map((it) => it.text);
  for (const label of ['stage 0', 'stage 2', 'p2p sends', 'DP comm']) assert.ok(texts.includes(label), label);
});

test('an unknown resource (a future "tp") and an unknown kind get lanes and colours of their own', () => {
  const est = contractTimeline({ stages: 2, extra: [
    { stage: 1, kind: 'tp_allreduce', resource: 'tp', micro_batch: 0, start_s: 0.01, end_s: 0.02 },
    { stage: 0, kind: 'mystery', micro_batch: null, start_s: 0.0, end_s: 0.01 }] });
  assert.deepStrictEqual(stageResources(est), [['compute', 'p2p', 'dp', 'other'], ['compute', 'p2p', 'dp', 'tp']]);
  const sc = timelineScene(est, { width: 960 });
  const tp = sc.items.find((it) => it.t === 'rect' && it.lane === 'tp');
  assert.ok(tp && tp.fill === barColor('tp_allreduce'), 'drawn, grey');
  assert.match(tp.title, /^stage 1 · TP comm · tp_allreduce, micro-batch 0:/);
  assert.ok(sc.items.some((it) => it.t === 'text' && it.text === 'TP comm'));
  assert.ok(sc.items.some((it) => it.t === 'text' && it.cls.includes('tl-legend') && it.text === 'tp_allreduce'), 'unknown kind in the legend');
  const trace = JSON.parse(chromeTrace(est));
  const names = trace.traceEvents.filter((e) => e.ph === 'M' && e.name === 'thread_name').map((e) => `${e.pid}:${e.args.name}`);
  assert.ok(names.includes('1:tp') && names.includes('0:other'), names.join(' '));
});

test('chunks of an interleaved plan: shaded per chunk, labelled on wide bars, named in tooltips; whole-stage events are not', () => {
  const est = contractTimeline({ V: 2 });
  const sc = timelineScene(est, { width: 1600 });
  const bars = sc.items.filter((it) => it.t === 'rect' && /tl-ev/.test(it.cls));
  const fills = (kind, chunk) => new Set(bars.filter((b) => b.cls.includes(`tl-${kind}`) && b.chunk === chunk).map((b) => b.fill));
  for (const kind of ['forward', 'backward', 'send_forward']) {
    assert.deepStrictEqual([...fills(kind, 0)], [KIND_COLOR[kind]], `${kind} chunk 0 in the kind's colour`);
    assert.equal(fills(kind, 1).size, 1);
    assert.notEqual([...fills(kind, 1)][0], KIND_COLOR[kind], `${kind} chunk 1 shaded differently`);
  }
  assert.ok(bars.filter((b) => /tl-backward/.test(b.cls)).every((b) => new RegExp(`chunk ${b.chunk}`).test(b.title)));
  const labels = sc.items.filter((it) => it.cls === 'tl-chunk');
  assert.ok(labels.some((l) => l.text === 'c0') && labels.some((l) => l.text === 'c1'), 'c0 and c1 written on bars');
  for (const l of labels) assert.ok(l.fill === '#000000' || l.fill === '#ffffff');
  // the DP sync and the optimizer carry chunk 0 in the core's output but cover the whole stage
  for (const b of bars.filter((x) => /tl-(optimizer|dp_sync)/.test(x.cls))) {
    assert.equal(b.chunk, null);
    assert.doesNotMatch(b.title, /chunk/);
  }
  assert.equal(chunkOf({ kind: 'optimizer', chunk: 0, micro_batch: null }), null);
  assert.equal(sc.chunks, 2);
  assert.match(sc.label, /interleaved 1F1B, 2 model chunks per stage/);
  const legend = sc.items.filter((it) => it.t === 'text' && it.cls.includes('tl-legend')).map((it) => it.text);
  assert.ok(legend.includes('chunk 0') && legend.includes('chunk 1'));
  // the chunk swatches are the forward's: the legend says every kind is shaded alike (the
  // backward's darker chunk was a colour the legend did not show)
  assert.ok(legend.includes('model chunks, every kind shaded alike:'));
  // 1F1B: no chunk entries, no labels
  const plain = timelineScene(contractTimeline({ V: 1 }), { width: 1600 });
  assert.ok(!plain.items.some((it) => it.cls === 'tl-chunk' || it.text === 'chunk 0'));
  // many chunks: shades repeat every four, the legend says the bars are labelled
  const v8 = timelineScene(contractTimeline({ V: 8, m: 2, stages: 2 }), { width: 1600 });
  assert.ok(v8.items.some((it) => it.t === 'text' && /bars say c0–c7/.test(it.text)));
  // contrast of the label colour against its bar, for every kind and chunk shade
  const lum = (hex) => {
    const n = parseInt(hex.slice(1), 16);
    const l = [(n >> 16) & 255, (n >> 8) & 255, n & 255].map((v) => { const c = v / 255; return c <= 0.03928 ? c / 12.92 : ((c + 0.055) / 1.055) ** 2.4; });
    return 0.2126 * l[0] + 0.7152 * l[1] + 0.0722 * l[2];
  };
  for (const kind of Object.keys(KIND_COLOR)) {
    for (let c = 0; c < 4; c++) {
      const bg = barColor(kind, c);
      const [a, b] = [lum(bg), lum(inkOn(bg))].sort((x, y) => y - x);
      assert.ok((a + 0.05) / (b + 0.05) >= 4.5, `${kind} chunk ${c}: label contrast`);
    }
  }
});

test('overlapped DP communication: gradient buckets and the parameter all-gather on the dp lane, with their bucket', () => {
  const est = contractTimeline();
  const sc = timelineScene(est, { width: 960 });
  const buckets = sc.items.filter((it) => it.t === 'rect' && /tl-grad_bucket/.test(it.cls));
  assert.equal(buckets.length, 3);
  for (const b of buckets) {
    assert.equal(b.lane, 'dp');
    assert.equal(b.fill, KIND_COLOR.grad_bucket);
    assert.match(b.title, /^stage 0 · DP comm · gradient bucket \(overlapped\), bucket \d:/);
  }
  const gather = sc.items.find((it) => it.t === 'rect' && /tl-param_gather/.test(it.cls));
  assert.equal(gather.lane, 'dp');
  assert.deepStrictEqual(legendKinds(est), ['forward', 'backward', 'send_forward', 'send_backward', 'dp_sync', 'grad_bucket', 'param_gather', 'optimizer']);
  const legend = sc.items.filter((it) => it.t === 'text' && it.cls.includes('tl-legend')).map((it) => it.text);
  for (const k of ['grad_bucket', 'param_gather']) assert.ok(legend.includes(KIND_LABEL[k]), k);
  assert.notEqual(KIND_COLOR.grad_bucket, KIND_COLOR.dp_sync);
  // the legend lists only what the plan has
  const noBuckets = { ...est, timeline: est.timeline.filter((e) => !['grad_bucket', 'param_gather'].includes(e.kind)) };
  assert.ok(!legendKinds(noBuckets).includes('grad_bucket'));
  // the table gains their columns; compute idle counts only the compute stream
  const stats = timelineStats(est);
  assert.ok(Math.abs(stats[0].grad_bucket - 3 * 0.5 * 0.01) < 1e-12);
  const busy0 = est.timeline.filter((e) => e.stage === 0 && resourceOf(e) === 'compute').reduce((a, e) => a + e.end_s - e.start_s, 0);
  assert.ok(Math.abs(stats[0].compute - busy0) < 1e-12);
  // a narrow chart wraps its legend instead of running off the side
  const narrow = timelineScene(est, { width: 340 });
  for (const it of narrow.items.filter((x) => x.t === 'text' && x.cls.includes('tl-legend'))) assert.ok(it.x + it.text.length * 6.5 <= 340 + 60, it.text);
  assert.ok(narrow.height > sc.height);
});

test('aggregation stays per lane: every event counted in a bar of its own stage and resource; the bar budget holds', () => {
  const big = contractTimeline({ stages: 6, m: 700, V: 2, f: 0.001, extra: Array.from({ length: 500 }, (_, i) => ({ stage: 2, kind: 'tp_allreduce', resource: 'tp', micro_batch: i, start_s: i * 0.002, end_s: i * 0.002 + 0.001 })) });
  assert.ok(big.timeline.length > AGGREGATE_ABOVE);
  const m = timelineMarks(big, { plotW: 878 });
  assert.equal(m.aggregated, true);
  assert.ok(m.bars.length <= MAX_BARS);
  const lanes = new Set(big.timeline.map((e) => `${e.stage}/${resourceOf(e)}`));
  for (const key of lanes) {
    const [s, res] = key.split('/');
    const evs = big.timeline.filter((e) => e.stage === Number(s) && resourceOf(e) === res);
    const bars = m.bars.filter((b) => b.stage === Number(s) && b.lane === res);
    const marks = new Map(bars.map((b) => [`${b.start_s}/${b.end_s}`, b]));
    assert.equal([...marks.values()].reduce((a, b) => a + b.count, 0), evs.length, `${key}: event count`);
    const busy = evs.reduce((a, e) => a + (e.end_s - e.start_s), 0);
    assert.ok(Math.abs(busy - [...marks.values()].reduce((a, b) => a + b.busy_s, 0)) < 1e-9 * evs.length, `${key}: busy time`);
  }
  // merged marks remember the chunks they hold, for the tooltip
  const sc = timelineScene(big, { width: 960 });
  assert.ok(sc.items.some((it) => it.t === 'rect' && /tl-agg/.test(it.cls) && /chunks 0–1/.test(it.title)));
  assert.ok(sc.items.some((it) => it.t === 'rect' && it.lane === 'tp'), 'the unknown lane is drawn aggregated too');
});

test('zooming never moves a lane: the window is drawn in the whole plan\'s lanes', () => {
  const est = contractTimeline();
  const whole = timelineScene(est, { width: 960 });
  const zoomed = timelineScene(est, { width: 960, view: { t0: 0, t1: 0.02 } });
  const lanes = (sc) => sc.items.filter((it) => /tl-lane /.test(`${it.cls} `)).map((it) => `${it.cls}@${it.y}`);
  assert.deepStrictEqual(lanes(zoomed), lanes(whole));
  assert.equal(zoomed.height, whole.height);
  assert.ok(zoomed.zoomed);
});

test('Chrome trace: a process per stage, a thread per resource, sub-tracks where one resource overlaps; chunk and bucket in names and args', () => {
  const est = contractTimeline({ stages: 3, V: 2 });
  // two overlapping sends on stage 1's p2p stream
  est.timeline.push({ stage: 1, kind: 'send_forward', resource: 'p2p', micro_batch: 9, chunk: 1, start_s: 0.0305, end_s: 0.04 });
  const trace = JSON.parse(chromeTrace(est));
  const xs = trace.traceEvents.filter((e) => e.ph === 'X');
  assert.equal(xs.length, est.timeline.length, 'every event');
  assert.deepStrictEqual([...new Set(xs.map((e) => e.pid))].sort(), [0, 1, 2]);
  const threads = new Map();
  for (const e of trace.traceEvents.filter((x) => x.ph === 'M' && x.name === 'thread_name')) threads.set(`${e.pid}/${e.tid}`, e.args.name);
  for (const e of xs) {
    const name = threads.get(`${e.pid}/${e.tid}`);
    assert.ok(name === e.args.resource || name.startsWith(`${e.args.resource} `), `${e.name} on ${name}`);
    assert.equal(e.args.resource, resourceOf({ kind: e.args.kind }));
  }
  // a resource keeps its thread id in every process
  const tidOf = (res) => new Set(trace.traceEvents.filter((e) => e.ph === 'M' && e.name === 'thread_name' && e.args.name === res).map((e) => e.tid));
  for (const res of ['compute', 'p2p', 'dp']) assert.equal(tidOf(res).size, 1, res);
  assert.ok([...threads.values()].includes('p2p 2'), 'overlapping sends on a second p2p sub-track');
  // no overlap on a thread
  const byThread = new Map();
  for (const e of xs) { const k = `${e.pid}/${e.tid}`; if (!byThread.has(k)) byThread.set(k, []); byThread.get(k).push(e); }
  for (const list of byThread.values()) {
    list.sort((a, b) => a.ts - b.ts);
    for (let i = 1; i < list.length; i++) assert.ok(list[i].ts >= list[i - 1].ts + list[i - 1].dur - 1e-6, 'no overlap');
  }
  const f = xs.find((e) => e.args.kind === 'forward' && e.args.chunk === 1);
  assert.match(f.name, /^F mb\d+ c1$/);
  const b = xs.find((e) => e.args.kind === 'grad_bucket' && e.args.bucket === 2);
  assert.equal(b.name, 'grad bucket 2');
  assert.equal(b.args.resource, 'dp');
  assert.equal(xs.find((e) => e.args.kind === 'optimizer').name, 'optimizer', 'whole-stage events are not named by chunk');
  assert.equal(trace.otherData.schedule, 'interleaved-1f1b');
  assert.equal(trace.otherData.virtual_stages, 2);
});

// ---------------------------------------------------------------- the core's interleaved plans

const ilScenario = { ...demoScenario, training: { ...demoScenario.training, overlap_grad_reduce: true, distributed_optimizer: true, overlap_param_gather: true } };
const ilPlan = { micro_batch_size: 8, num_micro_batches: 8, schedule: 'interleaved-1f1b', virtual_stages: 2,
  stages: [{ group: 0, num_layers: 16, tp: 1, dp: 8 }, { group: 1, num_layers: 8, tp: 1, dp: 8 }] };

test("the core's interleaved estimate: chunks drawn apart, a lane per resource it uses, every event in the trace", async (t) => {
  const M = await loadModule();
  const est = JSON.parse(M.estimate(JSON.stringify(ilScenario), JSON.stringify(ilPlan)));
  assert.ok(!est.error, JSON.stringify(est.error));
  const hasResource = est.timeline.every((e) => typeof e.resource === 'string');
  const kinds = [...new Set(est.timeline.map((e) => e.kind))];
  t.diagnostic(`${est.timeline.length} events; resource on every event: ${hasResource}; kinds: ${kinds.join(', ')}`);
  if (hasResource) for (const e of est.timeline) if (KIND_RESOURCE[e.kind]) assert.equal(e.resource, KIND_RESOURCE[e.kind], `${e.kind}: the contract's resource`);
  assert.ok(est.timeline.some((e) => e.chunk === 1));
  const sc = timelineScene(est, { width: 1200 });
  const bars = sc.items.filter((it) => it.t === 'rect' && /tl-ev/.test(it.cls));
  const f0 = bars.find((b) => /tl-forward/.test(b.cls) && b.chunk === 0);
  const f1 = bars.find((b) => /tl-forward/.test(b.cls) && b.chunk === 1);
  assert.notEqual(f0.fill, f1.fill);
  for (const st of laneLayout(est).stages) assert.deepStrictEqual(st.resources.slice(0, 2), ['compute', 'p2p']);
  const trace = JSON.parse(chromeTrace(est));
  assert.equal(trace.traceEvents.filter((e) => e.ph === 'X').length, est.timeline.length);
  if (kinds.includes('grad_bucket')) {
    const buckets = est.timeline.filter((e) => e.kind === 'grad_bucket');
    assert.ok(buckets.every((e) => Number.isInteger(e.bucket) && resourceOf(e) === 'dp'));
    assert.ok(bars.some((b) => /tl-grad_bucket/.test(b.cls) && b.lane === 'dp'));
  } else {
    t.diagnostic('this core writes no grad_bucket events yet: drawn from the synthetic contract timeline above');
  }
});

// ---------------------------------------------------------------- in the page

const env = useBrowser();

test('the page draws the interleaved plan with its lanes and chunks; the SVG and PNG files follow; the trace has a track per resource', async (t) => {
  const { page, problems } = await env.open(t, await env.link({ m: ilScenario.model, c: ilScenario.cluster, t: ilScenario.training, p: ilPlan }));
  await page.waitForFunction(() => /Shared plan/.test(document.querySelector('[data-testid=best-plan]').textContent));
  await page.waitForSelector('#timeline svg rect.tl-ev');
  const svg = await page.$eval('#timeline svg', (el) => ({
    chunks: el.dataset.chunks,
    label: el.getAttribute('aria-label'),
    fills: [0, 1].map((c) => [...new Set([...el.querySelectorAll(`rect.tl-forward[data-chunk="${c}"]`)].map((r) => getComputedStyle(r).fill))]),
    laneLabels: [...el.querySelectorAll('text.tl-lane-label')].map((x) => x.textContent),
    chunkLabels: el.querySelectorAll('text.tl-chunk').length,
    lanes: [...new Set([...el.querySelectorAll('rect.tl-ev')].map((r) => r.dataset.lane))],
    title: el.querySelector('rect.tl-backward[data-chunk="1"] title')?.textContent ?? '',
  }));
  assert.equal(svg.chunks, '2');
  assert.match(svg.label, /interleaved 1F1B, 2 model chunks per stage/);
  assert.equal(svg.fills[0].length, 1);
  assert.equal(svg.fills[1].length, 1);
  assert.notEqual(svg.fills[0][0], svg.fills[1][0], 'chunk 1 drawn apart from chunk 0');
  assert.ok(svg.laneLabels.includes('p2p sends'), svg.laneLabels.join('|'));
  assert.ok(svg.chunkLabels > 0);
  assert.ok(svg.lanes.includes('compute') && svg.lanes.includes('p2p'));
  assert.match(svg.title, /^stage \d · compute · backward, micro-batch \d, chunk 1:/);
  const grab = async (id) => {
    const [dl] = await Promise.all([page.waitForEvent('download'), page.click(id)]);
    return fs.readFileSync(await dl.path());
  };
  const file = (await grab('#export-svg')).toString();
  assert.match(file, />chunk 1</);
  assert.match(file, />c1</);
  assert.match(file, />p2p sends</);
  assert.match(file, /data-lane="p2p"/);
  const png = await grab('#export-png');
  assert.ok(png.length > 1000 && png[1] === 0x50);
  const trace = JSON.parse(await grab('#export-trace'));
  const names = new Set(trace.traceEvents.filter((e) => e.ph === 'M' && e.name === 'thread_name').map((e) => e.args.name.replace(/ \d+$/, '')));
  assert.ok(names.has('compute') && names.has('p2p'), [...names].join(' '));
  assert.ok(trace.traceEvents.some((e) => e.ph === 'X' && e.args.chunk === 1));
  await assertClean(page, problems);
});
