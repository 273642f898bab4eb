// The main search split over the worker pool (web/split-search.js; docs/web.md, "The pool for the
// main search"): its pure logic with fake workers, then, with the wasm module, slices merged by the
// core equal the single search on the preset scenarios (directly, and through splitSearch on a pool
// of workers that call the module as web/worker.js does).
//   POSEIDON_BUILD_WASM=build-wasm node --test tests/web/split-search.test.mjs
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { WorkerPool } from '../../web/pool.js';
import { splitSearch, sliceCount, kthKey, sliceOptions, combineProgress, SLICES_PER_WORKER, PROBE_S } from '../../web/split-search.js';
import { loadModule } from './load-module.mjs';
import { exampleScenarios } from './scenarios.mjs';

/**
 * A pool whose workers answer with `answer(msg)` (sync, may throw) after `delay` ms: a plan
 * slice gets one progress report first. Records every job and the most running at once.
 */
function fakePool(size, answer, { delay = 2 } = {}) {
  const seen = [];
  let running = 0;
  let maxRunning = 0;
  const spawn = () => {
    const w = { onmessage: null, onerror: null, terminated: false };
    w.postMessage = (msg) => {
      if (w.terminated) return;
      if (msg.type === 'init') { setTimeout(() => w.onmessage({ data: { type: 'ready' } }), 1); return; }
      seen.push(msg);
      running++;
      maxRunning = Math.max(maxRunning, running);
      setTimeout(() => {
        if (w.terminated) return;
        running--;
        try {
          const result = answer(msg);
          if (msg.type === 'plan' && result.found) w.onmessage({ data: { type: 'progress', id: msg.id, progress: { evaluated: 1, pruned: 2, best: result.best ?? null } } });
          w.onmessage({ data: { type: 'result', id: msg.id, result } });
        } catch (e) {
          w.onmessage({ data: { type: 'fatal', id: msg.id, error: { message: e.message } } });
        }
      }, delay);
    };
    w.terminate = () => {
      if (!w.terminated && running > 0) running--;
      w.terminated = true;
    };
    return w;
  };
  return { pool: new WorkerPool({ size, spawn }), seen, maxRunning: () => maxRunning };
}

/** a fake core: slice i finds the keys i + 1, i + 1.5 (below prune_above_s); merge: the k smallest */
function fakeCore(msg) {
  if (msg.type === 'merge') {
    const all = msg.shards.flatMap((s) => s.found).sort((a, b) => a.key - b.key).slice(0, msg.options.top);
    return { plans: all.map((f) => ({ iteration_time_s: f.key })), baselines: [], stats: { evaluated: msg.shards.length, complete: true } };
  }
  const o = msg.options;
  const found = [o.shard_index + 1, o.shard_index + 1.5].filter((k) => !(k > (o.prune_above_s ?? Infinity))).map((key) => ({ key, iteration_time_s: key, plan: {} }));
  return { shard: { index: o.shard_index, count: o.shard_count }, found, stats: { evaluated: 10, pruned: 5, complete: true },
    best: found.length ? { iteration_time_s: found[0].key, tokens_per_s: 1000 / found[0].key } : null };
}

test('slices: 2 per worker, the k-th key, slice options, combined progress', () => {
  assert.equal(SLICES_PER_WORKER, 2);
  assert.deepStrictEqual([1, 2, 8, 0].map(sliceCount), [2, 4, 16, 2]);
  assert.equal(kthKey([3, 1, 2], 2), 2);
  assert.equal(kthKey([3, 1], 3), Infinity);
  const o = sliceOptions({ top: 5, time_limit_s: 10, baselines: true, prune_above_s: 9 }, { index: 2, count: 8, threshold: Infinity, timeLimitS: 4 });
  assert.deepStrictEqual(o, { top: 5, time_limit_s: 4, baselines: false, shard_index: 2, shard_count: 8 });
  assert.equal(sliceOptions({}, { index: 0, count: 4, threshold: 1.25, timeLimitS: 1 }).prune_above_s, 1.25);
  const best = { iteration_time_s: 2, tokens_per_s: 9 };
  assert.deepStrictEqual(combineProgress({ evaluated: 10, pruned: 20 }, [{ evaluated: 1, pruned: 2 }, { evaluated: 3, pruned: 4 }], best, 1.5),
    { evaluated: 14, pruned: 26, elapsed_s: 1.5, best_iteration_time_s: 2, best });
});

test('splitSearch: every slice once on at most `size` workers, later slices with the best threshold, then one merge', async () => {
  const f = fakePool(3, fakeCore);
  const reports = [];
  const res = await splitSearch({ pool: f.pool, scenario: { model: 'x' }, options: { top: 3, time_limit_s: 30 }, onProgress: (p) => reports.push(p), probeS: 0 });
  const slices = f.seen.filter((m) => m.type === 'plan');
  const merges = f.seen.filter((m) => m.type === 'merge');
  assert.equal(slices.length, 6);
  assert.deepStrictEqual(slices.map((m) => m.options.shard_index).sort((a, b) => a - b), [...Array(6).keys()]);
  for (const m of slices) {
    assert.equal(m.options.shard_count, 6);
    assert.equal(m.options.baselines, false);
    assert.ok(m.options.time_limit_s > 0 && m.options.time_limit_s <= 30 - 1);
  }
  assert.ok(f.maxRunning() <= 3);
  // the first wave knows no plan; once two slices are back (4 keys), a new slice gets the 3rd best
  assert.ok(slices.slice(0, 3).every((m) => !('prune_above_s' in m.options)));
  assert.ok(slices.slice(4).every((m) => m.options.prune_above_s > 0));
  assert.equal(slices.at(-1).options.prune_above_s, 2);  // keys 1, 1.5, 2 of slices 0 and 1
  assert.equal(merges.length, 1);
  assert.equal(merges[0].shards.length, 6);
  assert.equal(merges[0].options.top, 3);
  assert.deepStrictEqual(res.plans.map((p) => p.iteration_time_s), [1, 1.5, 2]);
  assert.equal(res.stats.workers, 3);
  assert.equal(res.stats.slices, 6);
  assert.ok(res.stats.elapsed_s >= 0);
  // progress: counts grow, the best is the best seen
  assert.ok(reports.length >= 6);
  assert.equal(reports.at(-1).evaluated, 6 * 10);
  assert.equal(reports.at(-1).best.iteration_time_s, 1);
});

test('splitSearch: cancelling its tag rejects it and leaves other jobs of the pool running', async () => {
  const f = fakePool(2, fakeCore, { delay: 20 });
  const other = f.pool.run({ type: 'plan', options: { shard_index: 0, shard_count: 1 } }, null, 'whatif');
  const p = splitSearch({ pool: f.pool, scenario: {}, options: { top: 2 }, probeS: 0 });
  setTimeout(() => f.pool.cancel('search'), 5);
  await assert.rejects(p, (e) => e.cancelled === true);
  assert.equal((await other).shard.index, 0);
});

test('splitSearch: an input error is the result; a failing worker rejects', async () => {
  const bad = fakePool(2, () => ({ error: { path: 'scenario.model', message: 'unknown', problems: [] } }));
  const res = await splitSearch({ pool: bad.pool, scenario: {}, options: {} });  // (the probe's error)
  assert.equal(res.error.path, 'scenario.model');
  const broken = fakePool(2, (msg) => { if (msg.options?.shard_index === 3) throw new Error('boom'); return fakeCore(msg); });
  await assert.rejects(splitSearch({ pool: broken.pool, scenario: {}, options: {}, probeS: 0 }), /boom/);
});

test('splitSearch: out of time, the slices not started are left out; each slice gets the time left', async () => {
  let t = 0;
  const f = fakePool(2, (msg) => { t += 6000; return fakeCore(msg); });
  const res = await splitSearch({ pool: f.pool, scenario: {}, options: { top: 1, time_limit_s: 10 }, now: () => t, probeS: 0 });
  const slices = f.seen.filter((m) => m.type === 'plan');
  assert.deepStrictEqual(slices.map((m) => m.options.time_limit_s), [9, 9, 3]);
  assert.equal(f.seen.at(-1).shards.length, 3);
  assert.ok(f.seen.at(-1).options.time_limit_s > 0);
  assert.ok(res.plans.length === 1);
});

test('splitSearch: the search runs whole first; complete, it is merged alone, else its K-th key starts the slices and it joins their merge', async () => {
  const quick = fakePool(2, fakeCore);
  const res = await splitSearch({ pool: quick.pool, scenario: {}, options: { top: 2, time_limit_s: 10 } });
  assert.deepStrictEqual(quick.seen.map((m) => [m.type, m.options.shard_count, m.options.time_limit_s]), [['plan', 1, PROBE_S], ['merge', undefined, quick.seen[1].options.time_limit_s]]);
  assert.deepStrictEqual([res.stats.slices, res.stats.workers], [1, 1]);
  // a whole search the probe's time stops: 2 x 2 slices follow, all with its 2nd key (1.5): the
  // slices find its plans again, which must not count twice (that would give 1)
  const slow = fakePool(2, (msg) => {
    const r = fakeCore(msg);
    if (msg.type === 'plan' && msg.options.shard_count === 1) r.stats.complete = false;
    return r;
  });
  const reports = [];
  const res2 = await splitSearch({ pool: slow.pool, scenario: {}, options: { top: 2, time_limit_s: 10 }, onProgress: (p) => reports.push(p) });
  const slices = slow.seen.filter((m) => m.type === 'plan').slice(1);
  assert.equal(slices.length, 4);
  assert.ok(slices.every((m) => m.options.prune_above_s === 1.5 && m.options.shard_count === 4));
  assert.deepStrictEqual(slow.seen.at(-1).shards.map((x) => x.shard.count), [1, 4, 4, 4, 4], 'the stopped run is merged with the slices');
  assert.deepStrictEqual([res2.stats.slices, res2.stats.workers], [4, 2]);
  assert.equal(reports[0].evaluated, 1, "the probe's progress");
  // runFirst (the page's own worker) takes the whole run and the merge; a time limit under
  // 4 x PROBE_S runs whole, merged alone even when stopped
  const first = [];
  const short = fakePool(2, fakeCore);
  const res3 = await splitSearch({ pool: short.pool, scenario: {}, options: { top: 2, time_limit_s: 1 },
    runFirst: async (msg) => { first.push(msg); const r = fakeCore(msg); if (r.stats) r.stats.complete = false; return r; } });
  assert.deepStrictEqual(first.map((m) => [m.type, m.options.time_limit_s]), [['plan', 1 - 0.15 / 2], ['merge', first[1].options.time_limit_s]]);
  assert.equal(short.seen.length, 0, 'the pool is not used');
  assert.equal(res3.stats.slices, 1);
});

// ---- with the wasm module ----

let M = null;
let skip = false;
try {
  M = await loadModule();
} catch (e) {
  skip = `no wasm build: ${e.message}`;
}

const withoutStats = (r) => ({ ...r, stats: undefined });

function presetCases(presets) {
  const demo = presets.models.find((m) => m.id === 'gpt3-1.7b') ?? presets.models[0];
  return [
    ...exampleScenarios().map((c) => ({ name: c.name, scenario: c.scenario })),
    ...presets.clusters.map((cl) => ({ name: `cluster ${cl.id}`, scenario: { model: demo.id, training: { global_batch_size: 64 }, cluster: cl.id } })),
    { name: 'batch tolerance', scenario: { model: demo.id, training: { global_batch_size: 100, global_batch_tolerance: 0.1 }, cluster: 'demo-mixed-16' } },
    // an MoE model: each slice walks every expert grid (the best plan here has ep 8)
    { name: 'MoE', scenario: { model: 'mixtral-8x7b', training: { global_batch_size: 64 }, cluster: 'dgx-h100-16' } },
  ];
}

test('wasm: slices merged by the core equal the single search on the preset scenarios', { skip }, async (t) => {
  const presets = JSON.parse(M.presets());
  const options = { top: 5, time_limit_s: 30 };
  let compared = 0;
  for (const c of presetCases(presets)) {
    const sc = JSON.stringify(c.scenario);
    const whole = JSON.parse(M.plan(sc, JSON.stringify(options)));
    assert.ok(!whole.error, `${c.name}: ${JSON.stringify(whole.error)}`);
    if (!whole.stats.complete) continue;
    for (const count of [1, 2, 5]) {
      const shards = [];
      for (let i = 0; i < count; i++) {
        const s = JSON.parse(M.plan(sc, JSON.stringify({ ...options, baselines: false, shard_index: i, shard_count: count })));
        assert.ok(s.shard && !s.error, `${c.name}: ${JSON.stringify(s.error)}`);
        shards.push(s);
      }
      const merged = JSON.parse(M.merge(sc, JSON.stringify(options), JSON.stringify(shards)));
      assert.ok(!merged.error, `${c.name}: ${JSON.stringify(merged.error)}`);
      assert.equal(merged.stats.complete, true, c.name);
      assert.deepStrictEqual(withoutStats(merged), withoutStats(whole), `${c.name}: ${count} slices merged differ from the single search`);
    }
    compared++;
  }
  t.diagnostic(`${compared} scenarios: 1, 2 and 5 slices merged equal the single search`);
  assert.ok(compared >= presets.clusters.length);
  const moe = JSON.parse(M.plan(JSON.stringify(presetCases(presets).at(-1).scenario), JSON.stringify({ ...options, shard_index: 0, shard_count: 1 })));
  assert.ok(moe.found[0].plan.stages.every((st) => st.ep > 1), 'a slice of an MoE search finds the plans of ep > 1');
  // merge errors name the path
  const err = JSON.parse(M.merge(JSON.stringify(presetCases(presets)[0].scenario), '{}', '[{"shard":{"index":0,"count":1},"found":[{"key":"x"}],"stats":{}}]')).error;
  assert.match(err.path, /^shards\[0\]\.found\[0\]/);
});

test('wasm: splitSearch on a pool of module workers equals the single search', { skip }, async (t) => {
  const presets = JSON.parse(M.presets());
  // a worker as web/worker.js: plan and merge through the module, one job at a time
  const answer = (msg) => (msg.type === 'merge'
    ? JSON.parse(M.merge(JSON.stringify(msg.scenario), JSON.stringify(msg.options), JSON.stringify(msg.shards)))
    : JSON.parse(M.plan(JSON.stringify(msg.scenario), JSON.stringify(msg.options))));
  const options = { top: 5, time_limit_s: 30 };
  let compared = 0;
  let shared = 0; // searches whose later slices got a threshold from the earlier ones
  for (const c of presetCases(presets).slice(0, 8)) {
    const whole = JSON.parse(M.plan(JSON.stringify(c.scenario), JSON.stringify(options)));
    if (!whole.stats?.complete) continue;
    for (const [size, probeS] of [[2, 0], [3, 0], [2, PROBE_S], [2, 0.001]]) {  // 1 ms: the probe stops, its bound starts the slices
      const f = fakePool(size, answer, { delay: 0 });
      const res = await splitSearch({ pool: f.pool, scenario: c.scenario, options, probeS });
      assert.deepStrictEqual(withoutStats(res), withoutStats(whole), `${c.name}: ${size} workers, probe ${probeS} s`);
      assert.equal(res.stats.complete, true);
      if (f.seen.some((m) => m.type === 'plan' && m.options.prune_above_s > 0)) shared++;
      f.pool.close();
    }
    compared++;
  }
  t.diagnostic(`${compared} scenarios through the pool; ${shared} searches shared a threshold`);
  assert.ok(compared >= 4);
  assert.ok(shared >= 2);
});

test('wasm: a time limit the core refuses (0, -1, text, too long) is sent as typed, once, and the core names it', { skip }, async () => {
  const answer = (msg) => (msg.type === 'merge'
    ? JSON.parse(M.merge(JSON.stringify(msg.scenario), JSON.stringify(msg.options), JSON.stringify(msg.shards)))
    : JSON.parse(M.plan(JSON.stringify(msg.scenario), JSON.stringify(msg.options))));
  const scenario = { model: 'gpt3-1.7b', training: { global_batch_size: 64 }, cluster: 'demo-mixed-16' };
  for (const [typed, named] of [[0, /^0 is out of range; expected a finite number > 0(\.0)? and <= 86400/], [-1, /^-1 is out of range/],
    ['abc', /^"abc" is a string; expected a finite number/], [1e6, /^1000000 is out of range/]]) {
    for (const probeS of [PROBE_S, 0]) {
      const f = fakePool(2, answer, { delay: 0 });
      const res = await splitSearch({ pool: f.pool, scenario, options: { top: 5, time_limit_s: typed }, probeS, runFirst: (msg, p) => f.pool.run(msg, p, 'search') });
      assert.ok(res.error, `${typed}: ${JSON.stringify(res).slice(0, 200)}`);
      assert.equal(res.error.path, 'options.time_limit_s');
      assert.match(res.error.message, named, String(typed));
      assert.deepStrictEqual(f.seen.map((m) => [m.type, m.options.time_limit_s, m.options.shard_count]), [['plan', typed, undefined]], 'one call with the options as given');
      f.pool.close();
    }
  }
});
