// The what-if's pure parts in node: the worker pool (with fake workers), the scenario variants,
// marginal rows, scaling series and chart scales, the plan comparison; and, with the wasm module,
// the variants searched through the pool's protocol equal the core's own searches of them.
//   node --test tests/web/whatif-pure.test.mjs   (POSEIDON_BUILD_WASM=build-wasm for the module part)
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { WorkerPool, poolSize, MAX_POOL } from '../../web/pool.js';
import { whatIfSpec, whatIfOptions, scaleNodes, variantCluster, outcome, marginalRows, scalingSeries, niceTicks, linearScale, chartGeometry,
  SCALE_FACTORS, WHATIF_TIME_LIMIT_S } from '../../web/whatif.js';
import { compareRows, comparePairs, defaultPair, distinctPair, equivalentPlans, COMPARE_FIGURES } from '../../web/compare.js';
import { formatUsd, trainingCost } from '../../web/cost.js';

const ROOT = path.resolve(path.dirname(new URL(import.meta.url).pathname), '../..');

/** a fake worker.js: 'ready' after init, a result after `delay` ms echoing the job; records what it saw */
function fakeFactory({ delay = 5, failOn = null } = {}) {
  const made = [];
  let running = 0;
  let maxRunning = 0;
  const spawn = () => {
    const w = { onmessage: null, onerror: null, terminated: false, jobs: [] };
    w.postMessage = (msg) => {
      if (w.terminated) return;
      if (msg.type === 'init') { setTimeout(() => !w.terminated && w.onmessage({ data: { type: 'ready', module: msg.module } }), 1); return; }
      w.jobs.push(msg);
      running++;
      maxRunning = Math.max(maxRunning, running);
      setTimeout(() => {
        if (w.terminated) return;
        running--;
        if (failOn !== null && msg.n === failOn) { w.onerror({ message: 'boom', preventDefault() {} }); return; }
        w.onmessage({ data: { type: 'progress', id: msg.id, progress: { evaluated: 1 } } });
        w.onmessage({ data: { type: 'result', id: msg.id, result: { n: msg.n } } });
      }, delay + (msg.n % 3));
    };
    w.terminate = () => { if (!w.terminated && w.jobs.length && running > 0) running--; w.terminated = true; };
    made.push(w);
    return w;
  };
  return { spawn, made, maxRunning: () => maxRunning };
}

test('pool size: min(cores, 8), at least 1', () => {
  assert.equal(MAX_POOL, 8);
  assert.deepStrictEqual([undefined, 0, 1, 2, 4, 8, 16, 64, 'x'].map(poolSize), [1, 1, 1, 2, 4, 8, 8, 8, 1]);
});

test('pool: every job runs once on at most `size` workers, each worker initialised once with the module', async () => {
  const f = fakeFactory();
  const pool = new WorkerPool({ size: 3, spawn: f.spawn, init: () => ({ type: 'init', module: 'compiled' }) });
  const progress = [];
  const results = await Promise.all(Array.from({ length: 20 }, (_, n) => pool.run({ type: 'plan', n }, (p) => progress.push(p))));
  assert.deepStrictEqual(results.map((r) => r.n), Array.from({ length: 20 }, (_, n) => n));
  assert.equal(f.made.length, 3, 'three workers for twenty jobs');
  assert.ok(f.maxRunning() <= 3);
  assert.equal(progress.length, 20);
  assert.deepStrictEqual(f.made.flatMap((w) => w.jobs.map((j) => j.n)).sort((a, b) => a - b), Array.from({ length: 20 }, (_, n) => n));
  assert.deepStrictEqual(pool.status(), { size: 3, workers: 3, busy: 0, queued: 0, spawned: 3 });
  // fewer jobs than workers: no more workers than jobs
  const g = fakeFactory();
  const small = new WorkerPool({ size: 8, spawn: g.spawn });
  await Promise.all([small.run({ n: 1 }), small.run({ n: 2 })]);
  assert.equal(g.made.length, 2);
});

test('pool: cancelAll rejects queued and running jobs, terminates only the busy workers; the pool works afterwards', async () => {
  const f = fakeFactory({ delay: 50 });
  const pool = new WorkerPool({ size: 2, spawn: f.spawn });
  const idle = new WorkerPool({ size: 2, spawn: f.spawn });
  await idle.run({ n: 0 });
  const jobs = Array.from({ length: 6 }, (_, n) => pool.run({ n }).then(() => 'done', (e) => (e.cancelled ? 'cancelled' : e.message)));
  await new Promise((r) => setTimeout(r, 15)); // two running, four queued
  assert.equal(pool.status().busy, 2);
  pool.cancelAll();
  idle.cancelAll();
  assert.deepStrictEqual(await Promise.all(jobs), Array(6).fill('cancelled'));
  assert.equal(f.made.filter((w) => w.terminated).length, 2, 'the two busy workers are terminated, the idle one is kept');
  assert.equal(idle.status().workers, 1);
  assert.deepStrictEqual((await pool.run({ n: 7 })).n, 7, 'a fresh worker takes the next job');
  assert.equal(pool.status().spawned, 3);
});

test('pool: a worker that fails rejects its own job only; the others finish', async () => {
  const f = fakeFactory({ failOn: 2 });
  const pool = new WorkerPool({ size: 2, spawn: f.spawn });
  const out = await Promise.all(Array.from({ length: 5 }, (_, n) => pool.run({ n }).then((r) => r.n, (e) => e.message)));
  assert.match(out[2], /boom/);
  assert.deepStrictEqual(out.filter((x) => typeof x === 'number'), [0, 1, 3, 4]);
});

const cluster3 = { id: 'x', name: 'three', groups: [{ device: 'a100-sxm4-80gb', nodes: 4, gpus_per_node: 8 }, { device: 'v100-sxm2-32gb', nodes: 1, gpus_per_node: 8 }, { device: 't4-16gb', nodes: 2, gpus_per_node: 4 }] };
const scenario = { model: 'gpt3-1.7b', training: { global_batch_size: 64 }, cluster: 'x' };

test('what-if variants: each group removed, one node less and more, and its scaling points; one job per distinct cluster', () => {
  assert.deepStrictEqual(SCALE_FACTORS, [0, 0.25, 0.5, 0.75, 1, 1.5, 2]);
  assert.deepStrictEqual(scaleNodes(4), [0, 1, 2, 3, 4, 6, 8]);
  assert.deepStrictEqual(scaleNodes(1), [0, 1, 2]);
  assert.deepStrictEqual(scaleNodes(2), [0, 1, 2, 3, 4]);
  const spec = whatIfSpec(scenario, [cluster3], { skipCurrent: true });
  assert.equal(spec.current, '4,1,2');
  assert.equal(spec.base.id, undefined, 'a variant is not the preset');
  const g = spec.groups;
  assert.deepStrictEqual(g.map((x) => [x.removed, x.minus, x.plus]), [['0,1,2', '3,1,2', '5,1,2'], ['4,0,2', '4,0,2', '4,2,2'], ['4,1,0', '4,1,1', '4,1,3']]);
  assert.deepStrictEqual(g[0].scale.map((p) => [p.nodes, p.gpus, p.key]), [[0, 0, '0,1,2'], [1, 8, '1,1,2'], [2, 16, '2,1,2'], [3, 24, '3,1,2'], [4, 32, '4,1,2'], [6, 48, '6,1,2'], [8, 64, '8,1,2']]);
  const keys = spec.jobs.map((j) => j.key);
  assert.equal(new Set(keys).size, keys.length, 'no cluster searched twice');
  assert.ok(!keys.includes('4,1,2'), 'the current cluster is on screen already');
  // 0..8 nodes of group 0 (6 besides 4) + 5 (plus); group 1: 0, 2; group 2: 0, 1, 3, 4
  assert.equal(keys.length, 6 + 1 + 2 + 4);
  // a removed group is left out of its variant's cluster: plan group indices refer to that cluster
  const removed = spec.jobs.find((j) => j.key === '4,0,2');
  assert.deepStrictEqual(removed.scenario.cluster.groups.map((x) => [x.device, x.nodes]), [['a100-sxm4-80gb', 4], ['t4-16gb', 2]]);
  assert.equal(removed.scenario.model, 'gpt3-1.7b');
  assert.deepStrictEqual(removed.scenario.training, scenario.training);
  assert.equal(variantCluster(spec.base, [0, 0, 0]), null);
  assert.ok(whatIfSpec(scenario, [cluster3]).jobs.some((j) => j.key === '4,1,2'), 'without a search on screen, the current cluster is a job too');
  // one group: removing it leaves nothing
  const one = whatIfSpec({ ...scenario, cluster: { groups: [{ device: 'a100-sxm4-80gb', nodes: 1, gpus_per_node: 8 }] } }, [], { skipCurrent: true });
  assert.deepStrictEqual([one.groups[0].removed, one.groups[0].minus, one.groups[0].plus], [null, null, '2']);
  assert.equal(whatIfSpec({ ...scenario, cluster: 'nope' }, [cluster3]), null);
  assert.deepStrictEqual(whatIfOptions({ time_limit_s: 10, tp_per_stage: true }), { top: 1, baselines: false, threads: 1, time_limit_s: WHATIF_TIME_LIMIT_S, tp_per_stage: true });
  assert.equal(whatIfOptions({ time_limit_s: 0.5 }).time_limit_s, 0.5);
  // the precision and FSDP left to the search stay left to it in every what-if
  const free = whatIfOptions({ precisions: ['bf16', 'fp8'], fsdp: 'any' });
  assert.deepStrictEqual([free.precisions, free.fsdp], [['bf16', 'fp8'], 'any']);
  assert.deepStrictEqual(whatIfOptions({ precisions: 'any' }).precisions, 'any');
  assert.equal(whatIfOptions({ fsdp: 'fixed' }).fsdp, undefined);
});

const est = (tps, stages) => ({ tokens_per_s: tps, iteration_time_s: 1e5 / tps, num_gpus: stages.reduce((a, s) => a + s.gpus, 0), mfu: 0.4, memory_fits: true,
  plan: { micro_batch_size: 8, num_micro_batches: 8 }, stages });
const st = (group, device, gpus, layers = 12) => ({ group, device, gpus, tp: 1, dp: gpus, num_layers: layers, samples_per_replica: 1, forward_s: 0.01, backward_s: 0.02, memory_GiB: 20, memory_capacity_GiB: 80 });

test('marginal rows and scaling series: changes against the current cluster, costs with the variant\'s own groups', () => {
  const spec = whatIfSpec(scenario, [cluster3], { skipCurrent: true });
  const outcomes = new Map();
  outcomes.set(spec.current, outcome({ plans: [est(1000, [st(0, 'a100-sxm4-80gb', 32), st(1, 'v100-sxm2-32gb', 8)])], stats: { complete: true } }));
  // without the V100 group the plan's group 1 is the T4 group of that variant's cluster
  outcomes.set('4,0,2', outcome({ plans: [est(900, [st(0, 'a100-sxm4-80gb', 32), st(1, 't4-16gb', 8)])], stats: { complete: false } }));
  outcomes.set('0,1,2', outcome({ plans: [], stats: { complete: true } }));
  outcomes.set('4,1,0', outcome({ error: { message: 'bad' } }));
  const prices = { 'a100-sxm4-80gb': 2, 'v100-sxm2-32gb': 1, 't4-16gb': 0.5 };
  const rows = marginalRows(spec, outcomes, (e, c) => trainingCost(e, c, { prices }));
  const v = rows[1].removedCell;
  assert.equal(v.tokensPerS, 900);
  assert.equal(v.delta, -100);
  assert.ok(Math.abs(v.deltaShare + 0.1) < 1e-12);
  assert.equal(v.complete, false);
  assert.ok(Math.abs(v.usdPer1M - ((32 * 2 + 8 * 0.5) / 3600 / 900) * 1e6) < 1e-9, 'priced with the variant\'s T4s, not the V100s');
  assert.equal(rows[1].minusCell.key, '4,0,2', 'one node less of a one-node group = removed');
  assert.equal(rows[0].removedCell.status, 'none');
  assert.equal(rows[0].removedCell.delta, -1000);
  assert.equal(rows[2].removedCell.status, 'error');
  assert.equal(rows[0].plusCell.status, 'pending');
  const series = scalingSeries(spec, outcomes);
  assert.deepStrictEqual(series[1].points.map((p) => [p.x, p.y, p.status, p.current]), [[0, 900, 'plan', false], [8, 1000, 'plan', true]]);
  assert.deepStrictEqual(series[0].points.map((p) => [p.x, p.y, p.status]), [[0, 0, 'none'], [32, 1000, 'plan']], 'pending points are left out');
});

test('chart scales: nice ticks cover the data, points inside the plot box', () => {
  assert.deepStrictEqual(niceTicks(0, 64, 6), [0, 20, 40, 60, 80]);
  assert.deepStrictEqual(niceTicks(0, 1, 4), [0, 0.5, 1]);
  assert.deepStrictEqual(niceTicks(0, 123456, 4), [0, 50000, 100000, 150000]);
  assert.deepStrictEqual(niceTicks(0, 0, 4), [0, 0.5, 1]);
  const s = linearScale(0, 10, 100, 200);
  assert.equal(s(5), 150);
  const g = chartGeometry([{ group: 0, label: 'a', points: [{ x: 0, y: 0 }, { x: 16, y: 5000 }, { x: 32, y: 9000 }] }], { width: 500, height: 200 });
  assert.equal(g.xTicks.at(-1) >= 32 && g.yTicks.at(-1) >= 9000, true);
  for (const p of g.lines[0].points) {
    assert.ok(p.cx >= g.margin.left && p.cx <= 500 - g.margin.right);
    assert.ok(p.cy >= g.margin.top && p.cy <= 200 - g.margin.bottom);
  }
  assert.equal(g.lines[0].points[0].cy, 200 - g.margin.bottom, 'zero tokens/s on the axis');
  assert.match(g.lines[0].d, /^M[\d.]+,[\d.]+L[\d.]+,[\d.]+L[\d.]+,[\d.]+$/);
});

test('compare: figures that differ, the better side by direction, stages side by side', () => {
  const a = { ...est(1000, [st(0, 'a100-sxm4-80gb', 8, 16), st(1, 'v100-sxm2-32gb', 8, 8)]), breakdown: { bubble_s: 0.1, dp_comm_s: 0.02, bottleneck_stage: 1 } };
  const b = { ...est(1200, [st(0, 'a100-sxm4-80gb', 8, 24)]), breakdown: { bubble_s: 0, dp_comm_s: 0.02, bottleneck_stage: 0 } };
  const rows = compareRows(a, b, { usdPer1M: 3, days: 10, totalUsd: 100 }, { usdPer1M: 2, days: 8, totalUsd: 80 });
  assert.deepStrictEqual(rows.map((r) => r.key), COMPARE_FIGURES.map((f) => f[0]));
  const by = Object.fromEntries(rows.map((r) => [r.key, r]));
  assert.deepStrictEqual([by.tokens_per_s.better, by.iteration_time_s.better, by.usd_per_1m.better, by.bubble_s.better], ['b', 'b', 'b', 'b']);
  assert.equal(by.dp_comm_s.differs, false);
  assert.equal(by.dp_comm_s.better, null);
  assert.equal(by.num_gpus.differs, true);
  assert.equal(by.num_gpus.better, null, 'more GPUs is neither better nor worse');
  assert.equal(by.layers.a, '16 / 8');
  assert.equal(by.devices.b, 'a100-sxm4-80gb');
  assert.equal(by.mfu.differs, false);
  assert.equal(by.schedule.a, '1F1B');
  assert.equal(by.schedule.differs, false);
  // plans that differ only in their model chunks per stage: the schedule row tells them apart
  const chunks = compareRows(a, { ...a, plan: { ...a.plan, schedule: 'interleaved-1f1b', virtual_stages: 2 } });
  assert.deepStrictEqual(chunks.filter((r) => r.differs).map((r) => [r.key, r.a, r.b]), [['schedule', '1F1B', 'interleaved 1F1B, 2 chunks per stage']]);
  // plans of a search that freed the precision and FSDP: the choices row tells them apart
  const fp8 = compareRows({ ...a, plan: { ...a.plan, precision: 'bf16', fsdp: false } }, { ...a, plan: { ...a.plan, precision: 'fp8', fsdp: false } });
  assert.deepStrictEqual(fp8.filter((r) => r.differs).map((r) => [r.key, r.a, r.b]), [['choices', 'bf16, no FSDP', 'fp8, no FSDP']]);
  assert.equal(by.choices.a, null);
  // no prices: the cost rows are empty on both sides and never "better"
  const noCost = compareRows(a, b);
  assert.deepStrictEqual(noCost.filter((r) => r.key === 'usd_per_1m').map((r) => [r.a, r.b, r.differs, r.better]), [[null, null, false, null]]);
  // a plan with unpriced GPUs: its dollar figures are lower bounds, never "better"
  const partial = compareRows(a, b, { usdPer1M: 3, days: 10, totalUsd: 100 }, { usdPer1M: 2, days: 8, totalUsd: 80, partial: true, missing: ['custom-1'] });
  const usd = partial.find((r) => r.key === 'usd_per_1m');
  assert.deepStrictEqual([usd.differs, usd.better, usd.partial], [true, null, { a: false, b: true }]);
  assert.equal(partial.find((r) => r.key === 'days').better, 'b', 'days do not depend on prices');
  // the bottleneck is a stage's index: shown as is, never as a change in %
  assert.equal(by.bottleneck.format, 'index');
  // and the stage count is a count: no change in % either ("4 vs 2", not "-50 %")
  assert.equal(by.stages.format, 'count');
  // micro-batch per replica: one value when all stages agree, else every stage's (repeats kept)
  const mb = (...per) => compareRows({ ...a, stages: per.map((n, i) => ({ ...st(i, 'a100-sxm4-80gb', 8, 8), samples_per_replica: n })) }, a).find((r) => r.key === 'mb_replica').a;
  assert.equal(mb(2, 2, 2), '2');
  assert.equal(mb(2, 2, 1, 1), '2 / 2 / 1 / 1');
  // two costs that differ read differently: digits are added until they do
  assert.deepStrictEqual(distinctPair(0.1212, 0.1224, formatUsd), ['$0.121', '$0.122']);
  assert.deepStrictEqual(distinctPair(0.12121, 0.12124, formatUsd), ['$0.12121', '$0.12124']);
  assert.deepStrictEqual(distinctPair(2.001, 2.004, formatUsd), ['$2.001', '$2.004']);
  assert.deepStrictEqual(distinctPair(0.5, 0.5, formatUsd), ['$0.500', '$0.500']);
  const pairs = comparePairs(a, b);
  assert.equal(pairs.length, 2);
  assert.deepStrictEqual(pairs[0].differs, ['layers']);
  assert.equal(pairs[1].b, null);
  assert.ok(pairs[1].differs.length > 0);
  assert.deepStrictEqual(defaultPair(5), [0, 1]);
  assert.deepStrictEqual(defaultPair(1), [0, 0]);
  // layer splits of the same stages at the same time fold into the first; the default pair skips them
  const split = (layers, time, tp = 1) => ({ iteration_time_s: time,
    plan: { micro_batch_size: 4, num_micro_batches: 32, stages: layers.map((l) => ({ group: 0, num_layers: l, tp, dp: 2 })) } });
  const plans = [split([9, 8, 9, 6], 0.8217789536), split([9, 9, 8, 6], 0.8217789536), split([9, 9, 8, 6], 0.8217789536, 2),
    split([9, 9, 9, 5], 0.8221), split([8, 9, 9, 6], 0.8217789536)];
  assert.deepStrictEqual(equivalentPlans(plans), [-1, 0, -1, -1, 0]);
  assert.deepStrictEqual(defaultPair(5, equivalentPlans(plans)), [0, 2]);
  assert.deepStrictEqual(defaultPair(2, [-1, 0]), [0, 1]);
});

test('the what-if jobs through the pool protocol: each variant\'s best plan equals the core\'s own search of it', async (t) => {
  if (!process.env.POSEIDON_BUILD_WASM) { t.skip('POSEIDON_BUILD_WASM not set'); return; }
  const { loadModule } = await import('./load-module.mjs');
  const M = await loadModule();
  const presets = JSON.parse(M.presets());
  const demo = JSON.parse(fs.readFileSync(path.join(ROOT, 'docs/examples/demo.scenario.json'), 'utf8'));
  const spec = whatIfSpec(demo, presets.clusters, { skipCurrent: false });
  assert.ok(spec.jobs.length >= 4);
  // a fake worker that runs the module in this process, one job at a time (worker.js's 'plan')
  const spawn = () => {
    const w = { terminate() {} };
    w.postMessage = (msg) => setTimeout(() => {
      if (msg.type === 'init') { w.onmessage({ data: { type: 'ready' } }); return; }
      w.onmessage({ data: { type: 'result', id: msg.id, result: JSON.parse(M.plan(JSON.stringify(msg.scenario), JSON.stringify(msg.options))) } });
    }, 0);
    return w;
  };
  const pool = new WorkerPool({ size: 2, spawn });
  const options = whatIfOptions({ time_limit_s: 10 });
  const results = await Promise.all(spec.jobs.map((j) => pool.run({ type: 'plan', scenario: j.scenario, options })));
  for (const [k, j] of spec.jobs.entries()) {
    const direct = JSON.parse(M.plan(JSON.stringify(j.scenario), JSON.stringify({ top: 1, baselines: false })));
    assert.equal(results[k].error, undefined, j.key);
    assert.equal(results[k].plans[0]?.tokens_per_s, direct.plans[0]?.tokens_per_s, `variant ${j.key}`);
  }
  const removed = outcome(results[spec.jobs.findIndex((j) => j.key === spec.groups[1].removed)]);
  assert.equal(removed.status, 'plan', 'the A100 node alone trains gpt3-1.7b');
  assert.ok(removed.est.stages.every((s) => s.device === 'a100-sxm4-80gb'));
});
