// The wasm module in node: same JSON as the native CLI, errors as values, progress and cancel.
//   POSEIDON_BUILD_WASM=build-wasm POSEIDON_CLI=build/core/poseidon node --test tests/web/module.test.mjs
import { test, before } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { loadModule } from './load-module.mjs';
import { exampleScenarios, presetScenarios } from './scenarios.mjs';
import { PROFILE_PRESET_IDS } from '../../web/profile.js';

const CLI = process.env.POSEIDON_CLI;
const NO_CLI = 'POSEIDON_CLI is not set: the comparison with the native CLI is skipped (set it to build/core/poseidon)';
const PLAN_TIME_LIMIT_S = 1;
let M;
let presets;
let tmp;

before(async () => {
  M = await loadModule();
  presets = JSON.parse(M.presets());
  tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'poseidon-web-'));
});

function cli(args) {
  const r = spawnSync(CLI, args, { encoding: 'utf8', maxBuffer: 256 * 1024 * 1024 });
  return { code: r.status, stdout: r.stdout, stderr: r.stderr };
}

function writeJson(name, obj) {
  const f = path.join(tmp, name);
  fs.writeFileSync(f, JSON.stringify(obj));
  return f;
}

const searchMissing = (res) => /not implemented/.test(res?.error?.message ?? '');

test('version and presets', () => {
  assert.match(M.version(), /^\d+\.\d+/);
  for (const kind of ['devices', 'models', 'clusters', 'profiles']) {
    assert.ok(Array.isArray(presets[kind]) && presets[kind].length > 0, kind);
    for (const p of presets[kind]) assert.equal(typeof p.id, 'string');
  }
  // the page's fallback list of profile presets names the same ones
  assert.deepStrictEqual(presets.profiles.map((p) => p.id).sort(), [...PROFILE_PRESET_IDS].sort());
  if (CLI) assert.equal(cli(['version']).stdout.trim().split(/\s+/).pop(), M.version());
});

test('estimate: every preset model and cluster, and the examples, as the native CLI', async (t) => {
  const cases = [...exampleScenarios().filter((c) => c.plan), ...presetScenarios(presets)];
  assert.ok(cases.length >= presets.models.length + presets.clusters.length);
  if (!CLI) t.diagnostic(NO_CLI);
  let compared = 0;
  for (const c of cases) {
    const out = M.estimate(JSON.stringify(c.scenario), JSON.stringify(c.plan));
    const res = JSON.parse(out);
    assert.ok(!res.error, `${c.name}: ${JSON.stringify(res.error)}`);
    assert.ok(res.iteration_time_s > 0 && Array.isArray(res.timeline) && res.stages.length === c.plan.stages.length, c.name);
    if (!CLI) continue;
    const r = cli(['estimate', writeJson('s.json', c.scenario), '--plan', writeJson('p.json', c.plan), '--json']);
    assert.equal(r.code, 0, `${c.name}: CLI exit ${r.code}: ${r.stderr}`);
    const native = JSON.parse(r.stdout);
    assert.deepStrictEqual(res, native, `${c.name}: wasm and CLI estimates differ`);
    compared++;
  }
  t.diagnostic(`${cases.length} scenarios estimated${CLI ? `, ${compared} identical to the CLI` : ''}`);
});

function planCases() {
  const demo = presets.models.find((m) => m.id === 'gpt3-1.7b') ?? presets.models[0];
  return [
    ...exampleScenarios().map((c) => ({ name: c.name, scenario: c.scenario })),
    ...presets.clusters.map((cl) => ({ name: `cluster ${cl.id}`, scenario: { model: demo.id, training: { global_batch_size: 64 }, cluster: cl.id } })),
  ];
}

const withoutElapsed = (r) => ({ ...r, stats: { ...r.stats, elapsed_s: 0 } });

test('plan: the examples and every preset cluster, as the native CLI when both searches complete', async (t) => {
  if (!CLI) t.diagnostic(NO_CLI);
  let compared = 0;
  let incomplete = 0;
  for (const c of planCases()) {
    const options = { top: 3, exhaustive: false, time_limit_s: PLAN_TIME_LIMIT_S };
    const res = JSON.parse(M.plan(JSON.stringify(c.scenario), JSON.stringify(options)));
    if (searchMissing(res)) { t.skip(`the core's search is not implemented yet: ${res.error.message}`); return; }
    assert.ok(!res.error, `${c.name}: ${JSON.stringify(res.error)}`);
    assert.ok(Array.isArray(res.plans) && Array.isArray(res.baselines) && res.stats, c.name);
    assert.ok(res.plans.length <= 3, c.name);
    for (const p of res.plans) assert.ok(p.plan && p.iteration_time_s > 0, c.name);
    // best first: times within one tie bucket (3e-8, relative) rank by the plan (docs/search.md, "Ties")
    for (let i = 1; i < res.plans.length; i++) assert.ok(res.plans[i - 1].iteration_time_s <= res.plans[i].iteration_time_s * (1 + 3e-8), `${c.name}: plans sorted`);
    if (res.plans[0]) {
      // the best plan re-estimated gives the same numbers
      const again = JSON.parse(M.estimate(JSON.stringify(c.scenario), JSON.stringify(res.plans[0].plan)));
      assert.equal(again.iteration_time_s, res.plans[0].iteration_time_s, `${c.name}: re-estimate`);
    }
    if (!CLI) continue;
    const r = cli(['plan', writeJson('s.json', c.scenario), '--top', '3', '--time-limit', String(PLAN_TIME_LIMIT_S), '--threads', '1', '--json']);
    assert.ok(r.code === 0 || r.code === 3, `${c.name}: CLI exit ${r.code}: ${r.stderr}`);
    if (r.code === 3) { assert.equal(res.plans.length, 0, `${c.name}: CLI found no plan, wasm did`); continue; }
    const native = JSON.parse(r.stdout);
    if (res.stats.complete && native.stats.complete) {
      assert.deepStrictEqual(withoutElapsed(res), withoutElapsed(native), `${c.name}: wasm and CLI searches differ`);
      compared++;
    } else {
      incomplete++;
    }
  }
  t.diagnostic(`${compared} complete searches identical to the CLI; ${incomplete} hit the ${PLAN_TIME_LIMIT_S} s limit (not compared)`);
});

test('plan: progress reports and cancelling returns the best so far, marked incomplete', (t) => {
  const scenario = JSON.stringify({ model: 'gpt3-175b', training: { global_batch_size: 1536 }, cluster: presets.clusters.find((c) => c.id === 'mixed-a100-v100') ? 'mixed-a100-v100' : presets.clusters[0].id });
  const reports = [];
  const res = JSON.parse(M.plan(scenario, JSON.stringify({ top: 2, time_limit_s: 2 }), (text) => {
    reports.push(JSON.parse(text));
    return reports.length < 3;
  }));
  if (searchMissing(res)) { t.skip(`the core's search is not implemented yet: ${res.error.message}`); return; }
  assert.ok(!res.error, JSON.stringify(res.error));
  assert.ok(reports.length >= 1, 'progress was reported');
  for (const p of reports) {
    assert.equal(typeof p.evaluated, 'number');
    assert.equal(typeof p.pruned, 'number');
    assert.ok('best' in p && 'best_iteration_time_s' in p);
  }
  if (reports.length === 3) assert.equal(res.stats.complete, false, 'a cancelled search is marked incomplete');
  // a callback that throws must not break the module
  const again = JSON.parse(M.plan(scenario, JSON.stringify({ top: 1, time_limit_s: 0.2 }), () => true));
  assert.ok(!again.error);
});

test('bad input comes back as an error object naming the path; nothing throws', () => {
  const good = { model: 'gpt3-1.7b', training: { global_batch_size: 64 }, cluster: 'demo-mixed-16' };
  const goodPlan = exampleScenarios().find((c) => c.plan)?.plan ?? { micro_batch_size: 8, num_micro_batches: 8, stages: [{ group: 0, num_layers: 24, tp: 1, dp: 8 }] };
  const cases = [
    ['', JSON.stringify(goodPlan)],
    ['{', JSON.stringify(goodPlan)],
    ['[]', JSON.stringify(goodPlan)],
    ['null', JSON.stringify(goodPlan)],
    [JSON.stringify({ ...good, model: 'no-such-model' }), JSON.stringify(goodPlan)],
    [JSON.stringify({ ...good, cluster: 'no-such-cluster' }), JSON.stringify(goodPlan)],
    [JSON.stringify({ ...good, training: { global_batch_size: 0 } }), JSON.stringify(goodPlan)],
    [JSON.stringify({ ...good, training: { global_batch_size: 64, precison: 'bf16' } }), JSON.stringify(goodPlan)],
    [JSON.stringify({ ...good, training: { global_batch_size: '64' } }), JSON.stringify(goodPlan)],
    [JSON.stringify({ ...good, training: { global_batch_size: 1e300 } }), JSON.stringify(goodPlan)],
    [JSON.stringify(good), '{'],
    [JSON.stringify(good), JSON.stringify({ ...goodPlan, stages: [] })],
    [JSON.stringify(good), JSON.stringify({ ...goodPlan, stages: goodPlan.stages.map((s) => ({ ...s, tp: 3 })) })],
    [JSON.stringify(good), JSON.stringify({ ...goodPlan, micro_batch_size: -1 })],
    [JSON.stringify(good), '[' .repeat(10000)],
    ['\uFFFF\u0000', '{}'],
  ];
  for (const [s, p] of cases) {
    const res = JSON.parse(M.estimate(s, p));
    assert.ok(res.error, `expected an error for ${s.slice(0, 80)} / ${p.slice(0, 80)}`);
    assert.equal(typeof res.error.message, 'string');
    assert.ok(res.error.message.length > 0);
    assert.equal(typeof res.error.path, 'string');
    const pr = JSON.parse(M.plan(s, '{"time_limit_s":0.2}'));
    assert.ok(pr.error || s === JSON.stringify(good), `plan: expected an error for ${s.slice(0, 80)}`);
  }
  const bad = JSON.parse(M.estimate(JSON.stringify({ ...good, training: { global_batch_size: 0 } }), JSON.stringify(goodPlan)));
  assert.match(bad.error.path, /training\.global_batch_size/);
  const opts = JSON.parse(M.plan(JSON.stringify(good), '{"top":"x"}'));
  assert.ok(opts.error, 'bad options are an error');
});

test('estimate with a measured profile (preset and inline): per-stage sources, as the native CLI', (t) => {
  const id = 'llama3.2-1b-a100-illustrative';
  const inline = JSON.parse(fs.readFileSync(path.join(path.dirname(new URL(import.meta.url).pathname), `../../presets/profiles/${id}.json`), 'utf8'));
  const base = { model: 'llama3.2-1b', training: { global_batch_size: 16 }, cluster: 'dgx-a100-1' };
  const plan = { micro_batch_size: 4, num_micro_batches: 4, stages: [{ group: 0, num_layers: 8, tp: 1, dp: 1 }, { group: 0, num_layers: 8, tp: 2, dp: 2 }] };
  const analytic = JSON.parse(M.estimate(JSON.stringify(base), JSON.stringify(plan)));
  assert.ok(!analytic.error, JSON.stringify(analytic.error));
  for (const st of analytic.stages) for (const v of Object.values(st.source ?? {})) assert.equal(v, 'analytic');
  if (!CLI) t.diagnostic(NO_CLI);
  for (const profile of [id, inline]) {
    const sc = { ...base, profile };
    const res = JSON.parse(M.estimate(JSON.stringify(sc), JSON.stringify(plan)));
    assert.ok(!res.error, JSON.stringify(res.error));
    assert.notEqual(res.iteration_time_s, analytic.iteration_time_s, 'the profile changes the estimate');
    // the page's stage table reads these (web/profile.js, sourceSummary)
    assert.equal(res.stages[0].source.forward, 'interpolated');
    assert.equal(res.stages[1].source.forward, 'profile');
    for (const k of ['forward', 'backward', 'optimizer', 'links']) assert.ok(k in res.stages[0].source, k);
    if (!CLI) continue;
    const r = cli(['estimate', writeJson('s.json', sc), '--plan', writeJson('p.json', plan), '--json']);
    assert.equal(r.code, 0, r.stderr);
    assert.deepStrictEqual(res, JSON.parse(r.stdout));
  }
});

test('calibrate: moves a perturbed efficiency to (near) the truth from synthetic runs; the result estimates; errors as values; as the native CLI', (t) => {
  const base = { model: 'gpt3-1.7b', training: { global_batch_size: 64 }, cluster: 'dgx-a100-1' };
  const cluster = structuredClone(presets.clusters.find((c) => c.id === 'dgx-a100-1'));
  cluster.groups[0].device = { base: cluster.groups[0].device, matmul_efficiency: 0.5, memory_bw_efficiency: 0.6 };
  delete cluster.id;
  const truth = { ...base, cluster };
  const stage = (layers, tp, dp) => ({ group: 0, num_layers: layers, tp, dp });
  const plans = [
    { micro_batch_size: 1, num_micro_batches: 64, stages: [stage(24, 1, 1)] },
    { micro_batch_size: 8, num_micro_batches: 8, stages: [stage(24, 1, 8)] },
    { micro_batch_size: 16, num_micro_batches: 4, stages: [stage(12, 2, 2), stage(12, 2, 2)] },
    { micro_batch_size: 4, num_micro_batches: 16, stages: [stage(24, 8, 1)] },
    { micro_batch_size: 2, num_micro_batches: 32, stages: [stage(24, 4, 2)] },
    { micro_batch_size: 2, num_micro_batches: 32, stages: [stage(8, 1, 1), stage(8, 1, 1), stage(8, 1, 1)] },
  ];
  const runs = {
    runs: plans.map((plan, i) => {
      const e = JSON.parse(M.estimate(JSON.stringify(truth), JSON.stringify(plan)));
      assert.ok(!e.error, JSON.stringify(e.error));
      return { name: `plan ${i}`, plan, iteration_time_s: e.iteration_time_s };
    }),
  };
  const res = JSON.parse(M.calibrate(JSON.stringify(base), JSON.stringify(runs)));
  assert.ok(!res.error, JSON.stringify(res.error));
  const mm = res.report.devices[0].parameters.matmul_efficiency;
  assert.equal(mm.status, 'fitted');
  // the fit's prior keeps it a little short of the truth (docs/calibration.md, "The fit")
  assert.ok(Math.abs(mm.to / 0.5 - 1) < 0.05, `matmul_efficiency ${mm.to}`);
  assert.ok(res.report.rms_log_error_after < res.report.rms_log_error_before / 5 && res.report.rms_log_error_before > 0.05);
  assert.equal(res.scenario.model, 'gpt3-1.7b', 'what was not calibrated stays as written');
  assert.equal(res.scenario.cluster.groups[0].device.calibration.source, 'poseidon calibrate');
  // the calibrated scenario estimates each run as the report says
  plans.forEach((plan, i) => {
    const e = JSON.parse(M.estimate(JSON.stringify(res.scenario), JSON.stringify(plan)));
    assert.ok(!e.error, JSON.stringify(e.error));
    assert.equal(e.iteration_time_s, res.report.runs[i].predicted_after_s);
  });
  // bad runs come back as an error object naming the path
  for (const [text, where] of [['', 'runs'], ['{"runs": []}', 'runs.runs'], [JSON.stringify({ runs: [{ plan: plans[0], iteration_time_s: -1 }] }), 'runs.runs[0].iteration_time_s']]) {
    const err = JSON.parse(M.calibrate(JSON.stringify(base), text));
    assert.ok(err.error, `expected an error for ${text}`);
    assert.equal(err.error.path, where);
  }
  if (!CLI) { t.diagnostic(NO_CLI); return; }
  const out = path.join(tmp, 'calibrated.json');
  const r = cli(['calibrate', writeJson('s.json', base), '--runs', writeJson('runs.json', runs), '--out', out, '--json']);
  assert.equal(r.code, 0, r.stderr);
  assert.deepStrictEqual(JSON.parse(r.stdout), res.report);
  assert.deepStrictEqual(JSON.parse(fs.readFileSync(out, 'utf8')), res.scenario);
});

test('advise: for a scenario without a feasible plan, which changes make one fit; each reported plan fits its variant', () => {
  const cluster = { name: 'small mixed', groups: [{ device: 'a100-sxm4-40gb', nodes: 1, gpus_per_node: 4, inter_node_bw_GBps: 100 },
    { device: 'v100-sxm2-16gb', nodes: 1, gpus_per_node: 4, inter_node_bw_GBps: 100 }] };
  const sc = { model: 'llama3-8b', training: { global_batch_size: 8 }, cluster };
  const a = JSON.parse(M.advise(JSON.stringify(sc), JSON.stringify({ time_limit_s: 1, total_time_limit_s: 10 })));
  assert.equal(a.feasible_now, false);
  assert.ok(a.infeasible.memory > 0);
  const ids = a.variants.map((v) => v.id);
  for (const id of ['recompute_selective', 'recompute_full', 'distributed_optimizer', 'sequence_parallel', 'memory_savers',
    'more_nodes_group_0', 'more_nodes_group_1', 'more_nodes_all', 'smaller_micro_batch']) assert.ok(ids.includes(id), id);
  for (const v of a.variants) {
    assert.ok(['feasible', 'infeasible', 'not_applicable', 'skipped'].includes(v.status));
    if (v.status !== 'feasible') { assert.equal(v.best, null); continue; }
    // apply the changes and estimate the reported plan: it fits, with the same throughput
    const variant = structuredClone(sc);
    for (const [p, value] of Object.entries(v.changes)) {
      const g = /^cluster\.groups\[(\d+)\]\.nodes$/.exec(p);
      if (g) variant.cluster.groups[Number(g[1])].nodes = value;
      else variant.training[p.replace(/^training\./, '')] = value;
    }
    const e = JSON.parse(M.estimate(JSON.stringify(variant), JSON.stringify(v.best.plan)));
    assert.equal(e.memory_fits, true, v.id);
    assert.equal(e.tokens_per_s, v.best.tokens_per_s, v.id);
  }
  assert.equal(a.variants.find((v) => v.id === 'recompute_full').status, 'feasible');
  // a scenario that has a plan needs no advice; bad input is an error value
  assert.equal(JSON.parse(M.advise(JSON.stringify({ model: 'gpt3-1.7b', training: { global_batch_size: 64 }, cluster: 'demo-mixed-16' }), '{}')).feasible_now, true);
  const bad = JSON.parse(M.advise(JSON.stringify(sc), JSON.stringify({ time_limit: 1 })));
  assert.match(bad.error.path, /options/);
  assert.ok(JSON.parse(M.advise('{', '{}')).error);
});
