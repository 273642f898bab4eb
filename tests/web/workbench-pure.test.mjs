// The page's pure modules behind the planning workbench (issue 12), in node: the critical path and
// idle GPUs (web/explain.js), time to train and cost (web/cost.js), and Megatron-LM layout strings
// (web/megatron.js, web/exports.js). Split from pure.test.mjs, which keeps the rest.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { megatronArgs } from '../../web/exports.js';

import { criticalPath, emptyStageSentences, gpuUsage, idleReasons, stageBusy, hasBreakdown, BREAKDOWN_PARTS, searchDoneText } from '../../web/explain.js';
import { contextLine, contextParts, gpusByType, renameDevices, shortDeviceName } from '../../web/context.js';
import { parseTokens, formatTokens, trainingCost, sortPlans, priceOf, gpusByDevice, presetPrices, formatUsd, formatCost, unpricedNote, formatDuration,
  formatDays, tokensPhrase, MAX_TOKENS, TOKENS_RANGE_MESSAGE, tokensProblem, parsePrice, priceProblem } from '../../web/cost.js';
import { pipelineLayout, nearestEvenSplit } from '../../web/megatron.js';

const ROOT = path.resolve(path.dirname(new URL(import.meta.url).pathname), '../..');

const twoStage = {
  iteration_time_s: 1, tokens_per_s: 100000, num_gpus: 12, mfu: 0.4,
  plan: { micro_batch_size: 4, num_micro_batches: 8, stages: [{ group: 0, num_layers: 16, tp: 1, dp: 4 }, { group: 1, num_layers: 8, tp: 2, dp: 4 }] },
  breakdown: { bottleneck_stage: 1, compute_s: 0.8, tp_comm_s: 0.05, bubble_s: 0.1, pp_comm_s: 0.01, dp_comm_s: 0.03, optimizer_s: 0.01 },
  stages: [
    { index: 0, device: 'a100-sxm4-80gb', group: 0, tp: 1, dp: 4, gpus: 4, num_layers: 16, forward_s: 0.03, backward_s: 0.06, samples_per_replica: 1 },
    { index: 1, device: 'v100-sxm2-32gb', group: 1, tp: 2, dp: 4, gpus: 8, num_layers: 8, forward_s: 0.035, backward_s: 0.071, samples_per_replica: 1,
      replicas: [{ group: 1, tp: 2, count: 4, samples: 1, device: 'v100-sxm2-32gb' }] },
  ],
};
const cluster16 = { groups: [{ device: 'a100-sxm4-80gb', nodes: 1, gpus_per_node: 8 }, { device: 'v100-sxm2-32gb', nodes: 1, gpus_per_node: 8 }] };

test('critical path: the bottleneck stage, the breakdown parts as shares, per-stage busy time', () => {
  const cp = criticalPath(twoStage);
  assert.equal(cp.bottleneck, 1);
  assert.deepStrictEqual(cp.parts.map((p) => p.key), BREAKDOWN_PARTS.map((p) => p.key));
  assert.ok(Math.abs(cp.parts.reduce((a, p) => a + p.share, 0) - 1) < 1e-9);
  const busy = stageBusy(twoStage);
  assert.ok(Math.abs(busy[1].busy_s - 8 * 0.106) < 1e-12);
  assert.match(cp.sentences[0], /^Stage 1, v100-sxm2-32gb, bounds the iteration/);
  assert.match(cp.sentences.join(' '), /pipeline bubble/);
  assert.equal(criticalPath({ ...twoStage, breakdown: undefined }), null);
  // a DP-bound plan with tied embeddings: the sentence says how much is the embedding all-reduce
  const tied = { ...twoStage, breakdown: { ...twoStage.breakdown, bubble_s: 0.02, dp_comm_s: 0.11 },
    stages: twoStage.stages.map((st) => ({ ...st, embedding_sync_s: 0.08 })) };
  assert.match(criticalPath(tied).sentences.join(' '), /gradient all-reduce after the last backward \(of which 80\.00 ms is the tied-embedding all-reduce/);
  assert.doesNotMatch(criticalPath({ ...tied, stages: twoStage.stages }).sentences.join(' '), /tied-embedding/);
  // the breakdown counts only the sends the bottleneck stage waits for: the label and its explanation say so
  const pp = BREAKDOWN_PARTS.find((p) => p.key === 'pp_comm_s');
  assert.equal(pp.label, 'exposed pipeline sends');
  assert.match(pp.title, /overlap with compute are not counted/);
  assert.deepStrictEqual(emptyStageSentences(twoStage), []);
});

test('critical path: a stage without blocks is said to hold only the embedding, the head, or to forward', () => {
  const st = (i, n) => ({ ...twoStage.stages[0], index: i, num_layers: n, device: i === 1 ? 't4-16gb' : 'a100-sxm4-80gb' });
  const est = { ...twoStage, stages: [st(0, 0), st(1, 0), st(2, 12), st(3, 0)] };
  const s = emptyStageSentences(est);
  assert.equal(s.length, 3);
  assert.match(s[0], /^Stage 0, a100-sxm4-80gb, holds no transformer block: only the embedding\.$/);
  assert.match(s[1], /^Stage 1, t4-16gb, holds no transformer block: it only forwards activations/);
  assert.match(s[2], /^Stage 3, .*only the output layer and the loss/);
  assert.ok(criticalPath({ ...est, breakdown: { ...twoStage.breakdown, bottleneck_stage: 2 } }).sentences.some((x) => /forwards activations/.test(x)));
  assert.deepStrictEqual(emptyStageSentences({ ...twoStage, stages: [st(0, 0)] }), []);
});

test('GPUs used and idle, per group, with reasons', () => {
  const u = gpuUsage(twoStage, cluster16);
  assert.deepStrictEqual(u.groups.map((g) => [g.used, g.total, g.idle]), [[4, 8, 4], [8, 8, 0]]);
  assert.equal(u.idle, 4);
  const r = idleReasons(twoStage, cluster16, { plans: [twoStage, { ...twoStage, num_gpus: 16, iteration_time_s: 1.05 }], baselines: [], stats: { infeasible: { memory: 3 } } }, 32);
  assert.ok(r.reasons.some((x) => /one sample per data-parallel replica/.test(x)));
  assert.ok(r.reasons.some((x) => /Plan #2 uses 16 GPUs and is 5\.0% slower/.test(x)));
  assert.ok(r.reasons.some((x) => /3 for memory/.test(x)));
  // counts read with thousands separators, as the search statistics show them
  const many = idleReasons(twoStage, cluster16, { plans: [twoStage], baselines: [], stats: { infeasible: { memory: 4180 } } }, 32);
  assert.ok(many.reasons.some((x) => /4,180 for memory/.test(x)));
  assert.deepStrictEqual(idleReasons({ ...twoStage, num_gpus: 16 }, { groups: [{ device: 'x', nodes: 2, gpus_per_node: 8 }] }).reasons, []);
});

test('time to train and cost: token budgets, prices, sorting', () => {
  assert.equal(parseTokens('1T'), 1e12);
  assert.equal(parseTokens('300B'), 3e11);
  assert.equal(parseTokens('2.5e12'), 2.5e12);
  assert.equal(parseTokens('1,000,000'), 1e6);
  assert.equal(parseTokens('15T tokens'), 1.5e13);
  assert.equal(parseTokens(''), null);
  assert.ok(Number.isNaN(parseTokens('lots')));
  assert.ok(Number.isNaN(parseTokens('-5B')));
  assert.equal(formatTokens(1.5e12), '1.5T');
  // default prices come from the device presets: each priced preset names its source (a provider
  // page and the instance) and the date; the others have none and the page asks for one
  const devices = fs.readdirSync(path.join(ROOT, 'presets/devices')).map((f) => ({ id: f.replace(/\.json$/, ''), ...JSON.parse(fs.readFileSync(path.join(ROOT, 'presets/devices', f), 'utf8')) }));
  const defaults = presetPrices(devices);
  for (const d of devices) {
    if (d.price_usd_per_gpu_hour === undefined) {
      assert.equal(d.price_source, undefined, d.id);
      assert.equal(defaults[d.id], undefined, d.id);
      continue;
    }
    assert.ok(d.price_usd_per_gpu_hour > 0 && d.price_usd_per_gpu_hour < 100, d.id);
    assert.match(d.price_source, /^https:\/\/\S+ : \S.{20,}/, `${d.id}: the provider's page and what was priced`);
    assert.match(d.price_as_of, /^20\d\d-\d\d-\d\d$/, d.id);
    assert.deepStrictEqual(defaults[d.id], { usd: d.price_usd_per_gpu_hour, source: d.price_source, asOf: d.price_as_of });
  }
  assert.ok(Object.keys(defaults).length >= 10, 'most devices have a public on-demand price');
  // AWS p4d.24xlarge: $32.7726 per hour for 8 GPUs
  assert.ok(Math.abs(defaults['a100-sxm4-40gb'].usd - 32.7726 / 8) < 1e-4);
  assert.equal(priceOf('a100-sxm4-80gb', { 'a100-sxm4-80gb': 2 }, defaults), 2);
  assert.equal(priceOf('a100-sxm4-40gb', {}, defaults), defaults['a100-sxm4-40gb'].usd);
  assert.equal(priceOf('a100-sxm4-40gb', {}), null, 'without the presets there is no default');
  assert.equal(priceOf('custom-1', {}, defaults), null);
  assert.equal(trainingCost(twoStage, { groups: [{ device: 'a100-sxm4-40gb', nodes: 1, gpus_per_node: 8 }, { device: 'a100-sxm4-40gb', nodes: 1, gpus_per_node: 8 }] },
    { defaults }).usdPerHour, 12 * defaults['a100-sxm4-40gb'].usd);
  assert.deepStrictEqual([...gpusByDevice(twoStage, cluster16)], [['a100-sxm4-80gb', 4], ['v100-sxm2-32gb', 8]]);
  assert.deepStrictEqual([...gpusByDevice(twoStage, cluster16, { includeIdle: true })], [['a100-sxm4-80gb', 8], ['v100-sxm2-32gb', 8]]);
  // context parallelism: a replica is tp x cp GPUs (stage 0 as 1 x 2cp x 4 on all 8 A100s)
  const withCp = { ...twoStage, stages: [{ ...twoStage.stages[0], cp: 2, gpus: 8 }, twoStage.stages[1]] };
  assert.deepStrictEqual([...gpusByDevice(withCp, cluster16)], [['a100-sxm4-80gb', 8], ['v100-sxm2-32gb', 8]]);
  const prices = { 'a100-sxm4-80gb': 2, 'v100-sxm2-32gb': 1 };
  const c = trainingCost(twoStage, cluster16, { tokens: 1e12, prices });
  assert.equal(c.usdPerHour, 4 * 2 + 8 * 1);
  assert.ok(Math.abs(c.days - 1e12 / 1e5 / 86400) < 1e-9);
  assert.ok(Math.abs(c.usdPer1M - (16 / 3600 / 1e5) * 1e6) < 1e-12);
  assert.ok(Math.abs(c.totalUsd - 16 * 1e12 / 1e5 / 3600) < 1e-6);
  const idle = trainingCost(twoStage, cluster16, { tokens: 1e12, prices, includeIdle: true });
  assert.equal(idle.usdPerHour, 8 * 2 + 8 * 1);
  assert.deepStrictEqual(trainingCost(twoStage, { groups: [{ device: 'custom-1', nodes: 1, gpus_per_node: 8 }, cluster16.groups[1]] }, { prices: {}, defaults }).missing, ['custom-1']);
  // messages name the devices (a custom one by its name, as the price table does)
  assert.deepStrictEqual(trainingCost(twoStage, { groups: [{ device: 'custom-1', nodes: 1, gpus_per_node: 8 }, cluster16.groups[1]] },
    { prices: {}, defaults, label: (ref) => (ref === 'custom-1' ? 'My GPU' : ref) }).missingLabels, ['My GPU']);
  // a faster plan on dearer GPUs: sorted by time it is first, by cost second
  const fast = { ...twoStage, iteration_time_s: 1 / 1.2, tokens_per_s: 1.2e5, num_gpus: 16,
    stages: [{ ...twoStage.stages[0], dp: 8, gpus: 8, replicas: undefined }, twoStage.stages[1]] };
  const pricesB = { 'a100-sxm4-80gb': 10, 'v100-sxm2-32gb': 1 };
  assert.deepStrictEqual(sortPlans([twoStage, fast], 'time', cluster16, { prices: pricesB }), [1, 0]);
  assert.deepStrictEqual(sortPlans([twoStage, fast], 'cost', cluster16, { prices: pricesB }), [0, 1]);
  // with a batch tolerance the plans train different batches: fastest is the most tokens/s, the
  // search's ranking, not the shortest iteration (a 110-sample plan of 1.406 s beats 108 in 1.383 s)
  const b108 = { iteration_time_s: 1.383, tokens_per_s: 108 * 2048 / 1.383, plan: { micro_batch_size: 4, num_micro_batches: 27 } };
  const b110 = { iteration_time_s: 1.406, tokens_per_s: 110 * 2048 / 1.406, plan: { micro_batch_size: 2, num_micro_batches: 55 } };
  assert.deepStrictEqual(sortPlans([b108, b110], 'time', cluster16, {}), [1, 0]);
  assert.equal(formatUsd(1234.4), '$1,234');
  assert.equal(formatUsd(2.5e6), '$2.50M');
  // three significant digits: different costs read differently
  assert.equal(formatUsd(0.1212), '$0.121');
  assert.equal(formatUsd(0.1224), '$0.122');
  assert.equal(formatUsd(0.0421), '$0.0421');
  assert.equal(formatUsd(0.17), '$0.170', 'trailing zeros kept');
  assert.equal(formatUsd(3.37e12), '$3.37T');
  // unpriced GPUs: the cost counts the priced ones only, shown as a lower bound, sorted after known costs
  const unpriced = { groups: [cluster16.groups[0], { ...cluster16.groups[1], device: 'custom-1' }] };
  const part = trainingCost(twoStage, unpriced, { prices: { 'a100-sxm4-80gb': 2 } });
  assert.equal(part.partial, true);
  assert.deepStrictEqual(part.missing, ['custom-1']);
  assert.equal(formatCost(part), `≥ ${formatUsd(part.usdPer1M)}`);
  assert.match(unpricedNote(part), /No price for custom-1: its GPUs are not counted/);
  assert.equal(formatCost(trainingCost(twoStage, unpriced, {})), 'unknown');
  // a price field with text that is not a price: no dollar figures for a plan on that device, not the last valid price's
  const bad = trainingCost(twoStage, unpriced, { tokens: 1e9, prices: { 'a100-sxm4-80gb': 2, 'custom-1': 1 }, invalid: ['custom-1'], label: (r) => `label of ${r}` });
  assert.deepStrictEqual([bad.usdPerHour, bad.usdPer1M, bad.totalUsd, bad.invalid], [null, null, null, ['label of custom-1']]);
  assert.equal(formatCost(bad), '–');
  assert.ok(Number.isFinite(bad.days), 'the time to train does not depend on prices');
  assert.deepStrictEqual(trainingCost(twoStage, unpriced, { prices: { 'a100-sxm4-80gb': 2, 'custom-1': 1 }, invalid: ['h100-sxm5-80gb'] }).invalid, [], 'a device the plan does not use');
  assert.equal(formatCost(c), formatUsd(c.usdPer1M));
  assert.equal(unpricedNote(c), null);
  // plan 0 uses only A100s (priced, dear), plan 1 also the unpriced GPUs (cheaper as far as known): plan 0 first
  const a100only = { ...twoStage, stages: [twoStage.stages[0]] };
  const both = { ...twoStage, tokens_per_s: 1e6 };
  assert.ok(trainingCost(both, unpriced, { prices: { 'a100-sxm4-80gb': 2 } }).usdPer1M < trainingCost(a100only, unpriced, { prices: { 'a100-sxm4-80gb': 2 } }).usdPer1M);
  assert.deepStrictEqual(sortPlans([both, a100only], 'cost', unpriced, { prices: { 'a100-sxm4-80gb': 2 } }), [1, 0]);
  // token budgets: a bounded range, one token in the singular, short runs in hours or less
  assert.ok(Number.isNaN(parseTokens('1e30')), 'beyond 1e16 the field shows the range');
  assert.equal(parseTokens('1e16'), MAX_TOKENS);
  assert.ok(Number.isNaN(parseTokens('0.5')));
  // a count is whole: a fraction of a token is refused, a suffix's float noise is rounded away
  assert.ok(Number.isNaN(parseTokens('5.5')));
  assert.equal(tokensProblem('5.5'), `5.5 is not a whole number of tokens; expected ${TOKENS_RANGE_MESSAGE}`);
  assert.equal(parseTokens('1.1T'), 1.1e12);
  assert.ok(Number.isInteger(parseTokens('1.23456789123T')));
  assert.match(TOKENS_RANGE_MESSAGE, /from 1 to 10,000T \(1e16\)/);
  // the messages name the value typed and what is allowed, as the core's do
  assert.equal(tokensProblem('1T'), '');
  assert.equal(tokensProblem(''), '');
  assert.equal(tokensProblem('-5'), `-5 is out of range; expected ${TOKENS_RANGE_MESSAGE}`);
  assert.equal(tokensProblem('1e30'), `1e30 is out of range; expected ${TOKENS_RANGE_MESSAGE}`);
  assert.equal(tokensProblem('lots'), `"lots" is not a number of tokens; expected ${TOKENS_RANGE_MESSAGE}`);
  assert.equal(parsePrice('$2.5'), 2.5);
  assert.equal(parsePrice(' '), null);
  assert.ok(Number.isNaN(parsePrice('-3')));
  assert.equal(parsePrice('2e0'), 2);
  assert.equal(parsePrice('1e9'), 1e9);
  assert.equal(priceProblem('1e9'), '');
  assert.equal(priceProblem('1e999'), '1e999 is out of range; expected US dollars per GPU-hour, a finite number >= 0, e.g. 2.5');
  assert.equal(priceProblem('2.5'), '');
  assert.equal(priceProblem('-3'), '-3 is out of range; expected US dollars per GPU-hour, a finite number >= 0, e.g. 2.5');
  assert.equal(priceProblem('abc'), '"abc" is not a price; expected US dollars per GPU-hour, a finite number >= 0, e.g. 2.5');
  assert.equal(tokensPhrase(1), '1 token');
  assert.equal(tokensPhrase(3e11), '300B tokens');
  assert.equal(formatDuration(5.2 * 3600), '5.2 hours');
  assert.equal(formatDuration(90), '1.5 minutes');
  assert.equal(formatDuration(1), '1 second');
  assert.equal(formatDuration(1e-5), '< 0.1 seconds');
  assert.equal(formatDuration(3 * 86400), '3 days');
  assert.equal(formatDays(0.01), '< 0.1');
  assert.equal(formatDays(77.44), '77.4');
});

test('Megatron-LM: layout strings and the nearest even split', () => {
  assert.equal(pipelineLayout([3, 2, 2]), 'Ettt|tt|ttL');
  assert.deepStrictEqual(nearestEvenSplit(24, 4), { layers: [6, 6, 6, 6], flags: [] });
  const odd = nearestEvenSplit(26, 4);
  assert.deepStrictEqual(odd.layers, [7, 6, 6, 7]);
  assert.equal(odd.layers.reduce((a, b) => a + b, 0), 26);
  const st = (i, n) => ({ ...twoStage.stages[0], index: i, num_layers: n });
  const model = { num_layers: 24, hidden_size: 1024, num_attention_heads: 16, seq_length: 2048 };
  const r = megatronArgs({ ...twoStage, stages: [st(0, 16), st(1, 3), st(2, 2), st(3, 3)] }, { model, training: {} });
  assert.match(r.text, /--pipeline-model-parallel-layout 'Et{16}\|ttt\|tt\|tttL'/);
  assert.match(r.notes.join(' '), /nearest even split is 6\/6\/6\/6/);
  // only the first and last stages differ: Megatron's first/last-stage flags
  const fl = megatronArgs({ ...twoStage, stages: [st(0, 16), st(1, 5), st(2, 3)] }, { model, training: {} });
  assert.match(fl.text, /--decoder-first-pipeline-num-layers 16 \\\n  --decoder-last-pipeline-num-layers 3/);
  assert.equal(fl.split, 'first-last');
});

test("a search's progress report carries an all-zero breakdown: it is no breakdown (no empty bar, no stage 0 named)", () => {
  const zero = { ...twoStage, breakdown: { bottleneck_stage: 0, compute_s: 0, tp_comm_s: 0, bubble_s: 0, pp_comm_s: 0, dp_comm_s: 0, optimizer_s: 0 } };
  assert.equal(hasBreakdown(zero), false);
  assert.equal(criticalPath(zero), null);
  assert.equal(hasBreakdown({ ...twoStage, breakdown: undefined }), false);
  assert.equal(hasBreakdown(twoStage), true);
  assert.equal(criticalPath(twoStage).bottleneck, 1);
});

const PRESETS = {
  models: [JSON.parse(fs.readFileSync(path.join(ROOT, 'presets/models/gpt3-1.7b.json'), 'utf8')), { id: 'llama3-8b', name: 'Llama 3 8B' }],
  clusters: ['demo-mixed-16', 'mixed-h100-a100-4090'].map((id) => JSON.parse(fs.readFileSync(path.join(ROOT, `presets/clusters/${id}.json`), 'utf8'))),
  devices: fs.readdirSync(path.join(ROOT, 'presets/devices')).map((f) => JSON.parse(fs.readFileSync(path.join(ROOT, 'presets/devices', f), 'utf8'))),
};

test('context line: model, GPUs by type, global batch, precision and stack of a scenario', () => {
  assert.equal(contextLine({ model: 'gpt3-1.7b', cluster: 'demo-mixed-16', training: { global_batch_size: 64, precision: 'bf16' } }, PRESETS),
    "GPT-3 style 1.7B (Megatron-LM SC'21) · 8 × A100 SXM4 80GB + 8 × V100 SXM2 32GB · global batch 64 · bf16 · megatron-core");
  assert.equal(gpusByType('mixed-h100-a100-4090', PRESETS), '16 × H100 SXM5 80GB + 32 × A100 SXM4 80GB + 32 × RTX 4090 24GB');
  // groups of one device type add up; inline, calibrated and modified devices are named as such
  const cluster = { name: 'x', groups: [
    { device: 'h100-sxm5-80gb', nodes: 4, gpus_per_node: 8 }, { device: 'a100-sxm4-80gb', nodes: 4, gpus_per_node: 8 },
    { device: 'h100-sxm5-80gb', nodes: 4, gpus_per_node: 8 }, { device: { name: 'My card', memory_GiB: 24 }, nodes: 2, gpus_per_node: 4 },
    { device: { base: 'v100-sxm2-32gb', calibration: { runs: 2 } }, nodes: 1, gpus_per_node: 8 }, { device: { base: 't4-16gb', fp16_tflops: 60 }, nodes: 1, gpus_per_node: 1 }] };
  const p = contextParts({ model: { name: 'Mine', num_layers: 2 }, cluster, training: { global_batch_size: 1536, global_batch_tolerance: 0.02, precision: 'fp16', stack: { base: 'megatron-lm-2021' } } }, PRESETS);
  assert.deepStrictEqual(p, { model: 'Mine', gpus: '64 × H100 SXM5 80GB + 32 × A100 SXM4 80GB + 8 × My card + 8 × V100 SXM2 32GB (calibrated) + 1 × T4 16GB (modified)',
    batch: 'global batch 1,536 ± 2 %', precision: 'fp16', stack: 'megatron-lm-2021 (modified)' });
  // what the core defaults: bf16, megatron-core; no scenario, no line
  assert.match(contextLine({ model: 'llama3-8b', cluster, training: { global_batch_size: 8 } }, PRESETS), /^Llama 3 8B · .* · global batch 8 · bf16 · megatron-core$/);
  assert.equal(contextLine(null, PRESETS), '');
  // the recomputation beside the precision, none left out (a searched choice reaches it through planScenario)
  const rc = (training) => contextParts({ model: 'llama3-8b', cluster, training: { global_batch_size: 8, ...training } }, PRESETS).precision;
  assert.equal(rc({ recompute: 'none' }), 'bf16');
  assert.equal(rc({ recompute: 'selective', precision: 'fp8' }), 'fp8, selective recompute');
  assert.equal(rc({ recompute: 'full' }), 'bf16, full recompute');
  assert.equal(rc({ recompute: 'full', recompute_num_layers: 1 }), 'bf16, recompute 1 block per stage');
  assert.equal(shortDeviceName('AMD Instinct MI300X 192GB'), 'MI300X 192GB');
  assert.equal(shortDeviceName('NVIDIA GeForce RTX 4090 24GB'), 'RTX 4090 24GB');
});

import { inWords, pathWords, expectedWords, detailText } from '../../web/words.js';
import { recordedRun, appendRun, RunsInputError } from '../../web/calibration.js';

test('the core\'s messages in a person\'s words (issue 36 item 9)', () => {
  const pr = (message, path = 'training.global_batch_size') => ({ path, message });
  // next to the field (no name), and in the summary (named by the label, else from the path)
  assert.equal(inWords(pr('"abc" is a string; expected an integer in [1, 100000000]'), null), '"abc" is not a number. Enter a whole number from 1 to 100,000,000.');
  assert.equal(inWords(pr('"abc" is a string; expected an integer in [1, 100000000]'), 'global batch (samples)'), 'Global batch (samples): "abc" is not a number. Enter a whole number from 1 to 100,000,000.');
  assert.equal(inWords(pr('0 is out of range; expected an integer in [1, 100000000]'), null), '0 is too small. Enter a whole number from 1 to 100,000,000.');
  assert.equal(inWords(pr('1000000000.0 is out of range; expected an integer in [1, 100000000]'), null), '1,000,000,000 is too large. Enter a whole number from 1 to 100,000,000.');
  assert.equal(inWords(pr('1.5 is not an integer; expected an integer in [1, 100000000]'), null), '1.5 is not a whole number. Enter a whole number from 1 to 100,000,000.');
  assert.equal(inWords(pr('is null; expected an integer in [1, 100000000]'), null), 'This field is empty. Enter a whole number from 1 to 100,000,000.');
  assert.equal(inWords(pr('"bf17" is not allowed; expected one of "bf16", "fp16", "fp32" (did you mean "bf16"?)', 'training.precision'), null),
    '"bf17" is not one of the choices. Choose one of bf16, fp16, fp32. Did you mean bf16?');
  assert.equal(inWords(pr('true is a boolean; expected an integer in [1, 10]'), null), 'true is a yes/no value. Enter a whole number from 1 to 10.');
  // "not allowed" against a rule that is no list of choices says the rule, not "the choices"
  assert.equal(inWords(pr('0 is not allowed; expected an int N from 1 to 10000 (blocks 0, N, 2N, ... are MoE) or an array of 4 flags 0/1, one per block (num_layers 4)', 'model.moe_layer_freq'), null),
    '0 is not allowed. Enter an int N from 1 to 10000 (blocks 0, N, 2N, ... are MoE) or an array of 4 flags 0/1, one per block (num_layers 4).');
  // a message it does not know keeps its words, keys in words
  assert.equal(inWords(pr('24 does not divide hidden_size 2305', 'model.num_attention_heads')), 'Attention heads: 24 does not divide hidden size 2305');
  assert.equal(pathWords('cluster.groups[1].nodes'), 'Group 1: nodes');
  assert.equal(pathWords('devices.custom-1.memory_GiB'), 'Custom device custom-1: memory (GiB)');
  assert.equal(expectedWords('a finite number > 0 and <= 1000000 (dense TFLOP/s), or "none"').words, 'a number above 0 and at most 1,000,000 (dense TFLOP/s)');
  // the page review's odd ones out (2026-12-06): a huge batch, a dropout above 1, an emptied name
  assert.equal(inWords(pr('1e+30 is beyond 2^53; expected an integer in [1, 100000000]'), null), '1e+30 is too large. Enter a whole number from 1 to 100,000,000.');
  assert.equal(inWords(pr('2 is out of range; expected a finite number >= 0 and <= 1', 'model.hidden_dropout'), null), '2 is too large. Enter a number from 0 to 1.');
  assert.equal(inWords(pr('is missing; expected a string', 'model.name'), 'Name'), 'Name is empty. Enter some text.');
});

test('a message the words already say is not repeated in brackets: the detail names only the path', () => {
  const fp8 = { path: 'training.precision', message: '"fp8" cannot run on cluster.groups[0] (v100-sxm2-32gb): the device has no fp8_tflops; every group trains in the one precision, so choose one all its GPUs run (bf16 runs everywhere)' };
  const words = inWords(fp8, 'precision');
  assert.ok(words.startsWith('Precision: "fp8" cannot run on cluster.groups[0]'), words);
  assert.equal(detailText(words, fp8.message, fp8.path), 'training.precision');
  assert.equal(detailText(inWords(fp8, null), fp8.message, fp8.path), 'training.precision', 'next to the field too');
  // keys put in words by inWords still count as the same message
  const heads = { path: 'model.num_attention_heads', message: '24 does not divide hidden_size 2305' };
  assert.equal(detailText(inWords(heads), heads.message, heads.path), 'model.num_attention_heads');
  // a reworded message keeps the core's line; no path: the message alone, or nothing
  const gbs = { path: 'training.global_batch_size', message: '"abc" is a string; expected an integer in [1, 100000000]' };
  assert.equal(detailText(inWords(gbs, null), gbs.message, gbs.path), `training.global_batch_size: ${gbs.message}`);
  assert.equal(detailText('something else', 'the core says', ''), 'the core says');
  assert.equal(detailText('X: the core says', 'the core says', ''), '');
});

test('device names with brackets are never put in brackets (no "Stage 0 (GB200 (…))")', () => {
  const gb = 'GB200 (Grace Blackwell, NVL72 rack)';
  const est = { ...twoStage, stages: twoStage.stages.map((st, i) => ({ ...st, device: i ? gb : 'H100 SXM5 80GB' })) };
  const said = [...criticalPath(est).sentences, ...idleReasons(est, { groups: [...cluster16.groups, { device: gb, nodes: 1, gpus_per_node: 4 }] }).reasons];
  assert.match(said[0], /^Stage 1, GB200 \(Grace Blackwell, NVL72 rack\), bounds the iteration/);
  assert.match(said.join(' '), /Group 2, GB200 \(Grace Blackwell, NVL72 rack\), is not used at all/);
  const empty = emptyStageSentences({ stages: [{ index: 0, num_layers: 0, device: gb }, { index: 1, num_layers: 4, device: gb }] });
  assert.match(empty[0], /^Stage 0, GB200 \(Grace Blackwell, NVL72 rack\), holds no transformer block/);
  for (const x of [...said, ...empty]) assert.doesNotMatch(x, /\([^()]*\(/, `nested brackets: ${x}`);
  // the core's advice labels, renamed: a bracketed name in brackets is set off by commas
  const names = [['gb200-186gb', gb], ['NVIDIA GB200 (Grace Blackwell, NVL72 rack)', gb], ['a100-sxm4-80gb', 'A100 SXM4 80GB']];
  assert.equal(renameDevices('group 0 (NVIDIA GB200 (Grace Blackwell, NVL72 rack)): 18 -> 36 nodes', names), `group 0, ${gb}: 18 -> 36 nodes`);
  assert.equal(renameDevices('stage 1 (gb200-186gb) is slow', names), `stage 1, ${gb}, is slow`);
  assert.equal(renameDevices('on (gb200-186gb)', names), `on, ${gb}`);
  assert.equal(renameDevices('group 1 (a100-sxm4-80gb): 2 -> 4 nodes', names), 'group 1 (A100 SXM4 80GB): 2 -> 4 nodes', 'a name without brackets keeps them');
  // the Megatron-LM notes and the node-rank comment
  const cluster = { groups: [{ device: 'h100', nodes: 1, gpus_per_node: 4 }, { device: 'gb200', nodes: 1, gpus_per_node: 4 }] };
  const two = { ...twoStage, num_gpus: 8, plan: { ...twoStage.plan, stages: [{ group: 0, num_layers: 16, tp: 1, dp: 4 }, { group: 1, num_layers: 8, tp: 1, dp: 4 }] },
    stages: [{ ...twoStage.stages[0], device: 'h100' }, { ...twoStage.stages[1], device: 'gb200', tp: 1, gpus: 4, replicas: undefined }] };
  const m = megatronArgs(two, { model: { num_layers: 24, hidden_size: 1024, num_attention_heads: 16, vocab_size: 32000, seq_length: 1024 }, training: {} },
    { cluster, deviceName: (d) => (d === 'gb200' ? gb : 'H100') });
  for (const x of [...m.notes, ...m.text.split('\n').filter((l) => l.startsWith('#'))]) assert.doesNotMatch(x, /\([^()]*\(/, `nested brackets: ${x}`);
  assert.match(m.notes.join(' '), /different device types: H100, GB200 \(Grace Blackwell, NVL72 rack\)\./);
});

test('the status line when a search ends gives its counts; without a plan it does not repeat the headline', () => {
  const stats = { elapsed_s: 0.412, evaluated: 0, pruned: 1234, complete: true };
  assert.equal(searchDoneText(stats, { found: false }), 'Done in 412.00 ms: evaluated 0 plans · pruned 1,234 branches; no plan fits.');
  assert.doesNotMatch(searchDoneText(stats, { found: false }), /feasible|what would make/i);
  assert.equal(searchDoneText({ ...stats, evaluated: 56, workers: 4, complete: false }),
    'Done in 412.00 ms (time limit reached: best found so far): evaluated 56 plans · pruned 1,234 branches on 4 workers.');
  assert.match(searchDoneText({ ...stats, complete: false }, { found: false }), /\(time limit reached\): .*; no plan fits\.$/);
});

test('record what this plan measured: a run from the plan on screen, refused values name their field (issue 36 item 8)', () => {
  const plan = { micro_batch_size: 8, num_micro_batches: 8, stages: [{ group: 0, num_layers: 24, tp: 1, dp: 8 }] };
  const run = recordedRun(plan, ' 1.32 ', '13.9', { name: 'n', global_batch_size: 128 });
  assert.deepStrictEqual(run, { name: 'n', iteration_time_s: 1.32, peak_memory_GiB: 13.9, global_batch_size: 128, plan });
  assert.equal(recordedRun(plan, '2', '').peak_memory_GiB, undefined, 'peak memory is optional');
  for (const [t, m, re] of [['', '', /^Measured seconds per iteration: enter/], ['abc', '', /^Measured seconds per iteration: "abc" is not a number/],
    ['0', '', /^Measured seconds per iteration: 0 is out of range/], ['1e7', '', /out of range/], ['1', 'x', /^Peak memory per GPU \(GiB\): "x" is not a number/],
    ['1', '-2', /^Peak memory per GPU \(GiB\): -2 is out of range/]]) {
    assert.throws(() => recordedRun(plan, t, m), (e) => e instanceof RunsInputError && re.test(e.message), `${t} / ${m}`);
  }
  assert.throws(() => recordedRun(null, '1', ''), /No plan on screen/);
  // appended to the runs text: an empty text starts a document, a document keeps its runs, other text is refused
  const one = JSON.parse(appendRun('', run));
  assert.equal(one.runs.length, 1);
  const two = JSON.parse(appendRun(JSON.stringify({ name: 'mine', runs: [run] }), run));
  assert.equal(two.name, 'mine');
  assert.equal(two.runs.length, 2);
  assert.throws(() => appendRun('{x', run), /The runs field \(RUNS\.json\) is not valid JSON/);
  assert.throws(() => appendRun('[1]', run), /is not a runs document/);
  assert.throws(() => appendRun(JSON.stringify({ runs: Array(100).fill(run) }), run), /already holds 100 runs/);
});

test('batchHint reads the core note on an awkward exact batch back into numbers and words', async () => {
  const { batchHint } = await import('../../web/explain.js');
  // the note of `poseidon plan` on docs/examples/page.scenario.json with a global batch of 1021
  const note = 'training.global_batch_size 1021 is odd, where the largest group has 72 GPUs: every stage\'s data-parallel degree divides the batch, '
    + 'so plans may run fewer replicas and more stages than at 1024; training.global_batch_tolerance 0.003 lets the search train any batch from 1018 to 1024, '
    + '1024 among them, ranked by tokens/s';
  const hint = batchHint({ notes: ['expert parallelism: 8 expert grids searched', note] });
  assert.deepEqual([hint.batch, hint.factor, hint.gpus, hint.near, hint.tolerance, hint.lo, hint.hi], [1021, 1, 72, 1024, 0.003, 1018, 1024]);
  assert.equal(hint.text, 'A global batch of 1,021 samples is odd, and the largest group has 72 GPUs: every stage\'s data parallelism divides the batch, '
    + 'so these plans may run fewer replicas and more stages than at 1,024. A batch tolerance of 0.003 lets the search train any batch from 1,018 to 1,024, ranked by tokens/s.');
  const even = batchHint({ notes: [note.replace('1021 is odd', '1000 has only 8 as its power-of-two factor').replace('0.003', '0.024').replace('from 1018', 'from 976')] });
  assert.deepEqual([even.batch, even.factor, even.tolerance, even.lo], [1000, 8, 0.024, 976]);
  assert.match(even.text, /^A global batch of 1,000 samples has only 8 as its power-of-two factor/);
  assert.equal(batchHint({ notes: ['expert parallelism: 8 expert grids searched'] }), null);
  assert.equal(batchHint(undefined), null);
});

test('pageNote: the core notes that name the CLI in the page\'s words; others unchanged', async () => {
  const { pageNote } = await import('../../web/explain.js');
  assert.equal(pageNote('timeline of the best plan left out: 194086 events, over 50000 (estimate gives it in full)'),
    'The search result leaves out the best plan\'s timeline (194,086 events, over its cap of 50,000); the page asks the engine for it when it draws the plan.');
  assert.match(pageNote('MoE host wait: per micro-batch stage 0 22.05 ms of its 41.77 ms forward wait for the host (the dispatcher waits on the host for the token counts; '
    + 'training.cuda_graph_impl "full_iteration" removes it), so a forward may take longer than its backward'), /; CUDA graphs "full_iteration" under Training removes it\), so/);
  assert.equal(pageNote('expert parallelism: 8 expert grids searched'), 'expert parallelism: 8 expert grids searched');
});
