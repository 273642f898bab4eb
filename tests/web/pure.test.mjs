// The page's pure modules in node: exports, memory rows, Hugging Face config import, profiles, timelines
// and their zoom, the glossary (the workbench's explanations, cost and Megatron layouts:
// workbench-pure.test.mjs; share links and the calibration overrides they carry: share.test.mjs).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { MEMORY_COMPONENTS, memoryRows, memoryLevel, WARN_SHARE } from '../../web/render/memory.js';
import { chromeTrace, topPlansCsv, megatronArgs, planJson, resourceOf, stageSummary } from '../../web/exports.js';
import { modelFromHfConfig, HfConfigError } from '../../web/hf.js';
import { inputsFromScenario, ScenarioFileError } from '../../web/scenario-file.js';
import { PROFILE_PRESET_IDS, parseProfileText, ProfileInputError, clusterDeviceNames, profileMatch, profileDevices,
  sourceSummary, hasMeasuredSource } from '../../web/profile.js';
import { timelineMarks, timelineStats, aggregationNote, AGGREGATE_ABOVE, MAX_BARS } from '../../web/render/timeline.js';

const ROOT = path.resolve(path.dirname(new URL(import.meta.url).pathname), '../..');

const profile = { name: 'mine', devices: [{ device: 'a100-sxm4-80gb', points: [{ tp: 1, samples: 1, layer_forward_s: 0.006, layer_backward_s: 0.013 }] }] };

test('memory by component: seven labelled parts per stage, shares and warning levels', () => {
  assert.deepStrictEqual(MEMORY_COMPONENTS.map((c) => c.key), ['weights', 'gradients', 'optimizer', 'activations', 'temporary', 'allocator', 'overhead']);
  assert.equal(WARN_SHARE, 0.9);
  assert.deepStrictEqual([0.5, 0.9, 0.91, 1, 1.01, null].map(memoryLevel), ['ok', 'ok', 'warn', 'warn', 'over', 'ok']);
  const b = { weights: 10, gradients: 20, optimizer: 30, activations: 15, temporary: 2, allocator: 1, overhead: 3 };
  const est = { stages: [
    { index: 0, device: 'a100-sxm4-80gb', memory_GiB: 81, memory_capacity_GiB: 80, memory_breakdown_GiB: b },
    { index: 1, device: 'v100-sxm2-32gb', memory_GiB: 30, memory_capacity_GiB: 32, memory_breakdown_GiB: { ...b, weights: 1, gradients: 2, optimizer: 6, activations: 14, temporary: 3, allocator: 1, overhead: 3 } },
    { index: 2, device: 'x', memory_GiB: 10, memory_capacity_GiB: 80, memory_breakdown_GiB: { weights: 4, overhead: 3 } },
  ] };
  const rows = memoryRows(est);
  assert.deepStrictEqual(rows.map((r) => r.level), ['over', 'warn', 'ok']);
  assert.deepStrictEqual(rows[0].parts.map((p) => p.label), MEMORY_COMPONENTS.map((c) => c.label));
  assert.deepStrictEqual(rows[0].parts.map((p) => p.GiB), [10, 20, 30, 15, 2, 1, 3]);
  assert.equal(rows[0].other, 0, 'the parts add up to the total');
  assert.equal(rows[1].share, 30 / 32);
  // a part the core does not report counts 0, and the rest of the total is shown as "other"
  assert.deepStrictEqual(rows[2].parts.map((p) => p.GiB), [4, 0, 0, 0, 0, 0, 3]);
  assert.equal(rows[2].other, 3);
  assert.deepStrictEqual(memoryRows({}), []);
});

const est = {
  iteration_time_s: 1, tokens_per_s: 1000, mfu: 0.5, num_gpus: 16, memory_fits: true,
  stages: [{ index: 0, device: 'a100', gpus: 8, tp: 2, dp: 4, num_layers: 12 }, { index: 1, device: 'a100', gpus: 8, tp: 2, dp: 4, num_layers: 12 }],
  timeline: [
    { stage: 0, kind: 'forward', micro_batch: 0, start_s: 0, end_s: 0.1 },
    { stage: 0, kind: 'send_forward', micro_batch: 0, start_s: 0.1, end_s: 0.15 },
    { stage: 0, kind: 'send_backward', micro_batch: 0, start_s: 0.12, end_s: 0.2 },
    { stage: 0, kind: 'dp_sync', micro_batch: null, start_s: 0.5, end_s: 0.6 },
    { stage: 1, kind: 'forward', micro_batch: 0, start_s: 0.15, end_s: 0.25 },
    { stage: 1, kind: 'backward', micro_batch: 0, start_s: 0.25, end_s: 0.45 },
    { stage: 1, kind: 'optimizer', micro_batch: null, start_s: 0.9, end_s: 1 },
  ],
  plan: { micro_batch_size: 8, num_micro_batches: 4, schedule: '1f1b', stages: [{ group: 0, num_layers: 12, tp: 2, dp: 4 }, { group: 0, num_layers: 12, tp: 2, dp: 4 }] },
};

test('chrome trace: compute, p2p and dp on separate threads, no overlap on a thread', () => {
  const trace = JSON.parse(chromeTrace(est));
  const xs = trace.traceEvents.filter((e) => e.ph === 'X');
  assert.equal(xs.length, est.timeline.length);
  const tracks = new Map();
  for (const e of xs) {
    const comm = ['send_forward', 'send_backward', 'dp_sync'].includes(e.cat);
    assert.equal(e.tid >= 100, comm, `${e.name} on tid ${e.tid}`);
    const k = `${e.pid}/${e.tid}`;
    if (!tracks.has(k)) tracks.set(k, []);
    tracks.get(k).push(e);
  }
  for (const list of tracks.values()) {
    list.sort((a, b) => a.ts - b.ts);
    for (let i = 1; i < list.length; i++) assert.ok(list[i].ts >= list[i - 1].ts + list[i - 1].dur - 1e-6, 'no overlap');
  }
  for (const name of ['compute', 'p2p', 'dp']) assert.ok(trace.traceEvents.some((e) => e.ph === 'M' && e.name === 'thread_name' && e.args.name === name), name);
});

test('CSV, plan JSON, Megatron-LM args', () => {
  const csv = topPlansCsv([est, est]).trim().split('\n');
  assert.equal(csv.length, 3);
  assert.match(csv[0], /^rank,iteration_time_s,tokens_per_s/);
  assert.match(csv[1], /^1,1,1000,0.5,16,true,2,8,4,2x4 2x4,12 12,a100 a100,1f1b,1,2 2$/);
  assert.match(csv[0], /,devices_per_stage,schedule,virtual_stages,samples_per_replica_per_stage$/);
  // a search that freed the precision and FSDP: two more columns with each plan's choice
  const chosen = topPlansCsv([{ ...est, plan: { ...est.plan, precision: 'fp8', fsdp: true } }, est]).trim().split('\n');
  assert.match(chosen[0], /,samples_per_replica_per_stage,precision,fsdp$/);
  assert.match(chosen[1], /,2 2,fp8,true$/);
  assert.match(chosen[2], /,2 2,,$/);
  // one replica's micro-batch, as the estimate gives it per stage (mixed replicas: the slowest's)
  assert.match(topPlansCsv([{ ...est, stages: est.stages.map((st, i) => ({ ...st, samples_per_replica: i + 1 })) }]).trim().split('\n')[1], /,1 2$/);
  // plans that differ only in their model chunks differ in the CSV
  const interleaved = { ...est, plan: { ...est.plan, schedule: 'interleaved-1f1b', virtual_stages: 3 } };
  assert.match(topPlansCsv([est, interleaved]).trim().split('\n')[2], /,a100 a100,interleaved-1f1b,3,2 2$/);
  assert.deepStrictEqual(JSON.parse(planJson(est)), est.plan);
  const model = { num_layers: 24, hidden_size: 2048, num_attention_heads: 16, seq_length: 2048, vocab_size: 50257 };
  const ok = megatronArgs(est, { model, training: { global_batch_size: 32, precision: 'bf16' } });
  assert.ok(ok.ok);
  assert.match(ok.text, /--tensor-model-parallel-size 2/);
  assert.match(ok.text, /--pipeline-model-parallel-size 2/);
  assert.match(ok.text, /--micro-batch-size 2/);
  assert.match(ok.text, /--global-batch-size 32/);
  assert.deepStrictEqual(ok.unsupported, []);
  // per-stage TP: what maps is exported, TP is a loud placeholder and the page says why
  const hetero = structuredClone(est);
  hetero.stages[1].device = 'v100';
  hetero.stages[1].tp = 4;
  const no = megatronArgs(hetero, { model, training: {} });
  assert.equal(no.ok, true);
  assert.match(no.text, /--tensor-model-parallel-size "\$\{TP:\?/);
  assert.match(no.unsupported.join(' '), /tensor parallelism differs/);
  assert.match(no.notes.join(' '), /different device types/);
  // ...there is no rank order to give, and the note does not point to one
  assert.doesNotMatch(no.notes.join(' '), /node ranks in the command/);
  // DP per stage: every stage's replicas are equal, the stages' micro-batch per replica differs, and that is the reason given
  const dps = structuredClone(est);
  dps.stages[1].dp = 2;
  dps.stages[1].gpus = 4;
  const mixedDp = megatronArgs(dps, { model, training: {} });
  assert.match(mixedDp.unsupported.join(' '), /the micro-batch per replica differs between stages \(2\/4: their DP differs/);
  assert.doesNotMatch(mixedDp.unsupported.join(' '), /unevenly/);
});

test('Hugging Face config.json import', () => {
  const llama = JSON.stringify({ _name_or_path: 'meta-llama/Llama-2-7b-hf', model_type: 'llama', num_hidden_layers: 32, hidden_size: 4096,
    num_attention_heads: 32, num_key_value_heads: 32, intermediate_size: 11008, vocab_size: 32000, max_position_embeddings: 4096,
    hidden_act: 'silu', rope_theta: 10000, tie_word_embeddings: false });
  const { model } = modelFromHfConfig(llama);
  assert.deepStrictEqual(model, { name: 'meta-llama/Llama-2-7b-hf', num_layers: 32, hidden_size: 4096, num_attention_heads: 32, num_kv_heads: 32,
    ffn_hidden_size: 11008, vocab_size: 32000, seq_length: 4096, gated_mlp: true, tied_embeddings: false, position_embedding: 'rope', rope_theta: 10000, bias: false,
    hidden_dropout: 0, attention_dropout: 0 });
  // Llama 3 without a name: its rope_theta comes along; a 128K context window becomes an 8192 sequence
  const llama3 = modelFromHfConfig(JSON.stringify({ architectures: ['LlamaForCausalLM'], model_type: 'llama', num_hidden_layers: 32, hidden_size: 4096,
    num_attention_heads: 32, num_key_value_heads: 8, intermediate_size: 14336, vocab_size: 128256, max_position_embeddings: 131072, rope_theta: 500000 }));
  assert.equal(llama3.model.rope_theta, 500000);
  assert.equal(llama3.model.seq_length, 8192);
  // Gemma: a head dimension other than hidden / heads is named; its embeddings are tied by default
  const gemma = modelFromHfConfig(JSON.stringify({ model_type: 'gemma', num_hidden_layers: 28, hidden_size: 3072, num_attention_heads: 16, head_dim: 256,
    intermediate_size: 24576, vocab_size: 256000, max_position_embeddings: 8192 }));
  assert.match(gemma.notes.join(' '), /head_dim 256 × 16 heads = 4096 is not hidden_size 3072/);
  assert.equal(gemma.model.tied_embeddings, true);
  const gpt2 = modelFromHfConfig(JSON.stringify({ model_type: 'gpt2', n_layer: 48, n_embd: 1600, n_head: 25, n_positions: 1024, vocab_size: 50257, activation_function: 'gelu_new',
    resid_pdrop: 0.1, attn_pdrop: 0.1 })).model;
  assert.equal(gpt2.hidden_dropout, 0.1);
  assert.equal(gpt2.attention_dropout, 0.1);
  // OPT: dropout on hidden states, none on attention; a value that is no probability is reported, not imported
  const opt = modelFromHfConfig(JSON.stringify({ model_type: 'opt', num_hidden_layers: 24, hidden_size: 1024, num_attention_heads: 16, vocab_size: 50272,
    max_position_embeddings: 2048, dropout: 0.1, attention_dropout: 0.0 })).model;
  assert.deepStrictEqual([opt.hidden_dropout, opt.attention_dropout], [0.1, 0]);
  const odd = modelFromHfConfig(JSON.stringify({ model_type: 'gpt2', n_layer: 2, n_embd: 64, n_head: 2, n_positions: 64, vocab_size: 10, resid_pdrop: '0.1' }));
  assert.equal(odd.model.hidden_dropout, undefined);
  assert.match(odd.notes.join(' '), /resid_pdrop is not a probability; hidden_dropout was left at Megatron's default 0.1/);
  assert.equal(gpt2.num_layers, 48);
  assert.equal(gpt2.tied_embeddings, true);
  assert.equal(gpt2.position_embedding, 'learned');
  assert.equal(gpt2.gated_mlp, false);
  assert.throws(() => modelFromHfConfig('{nope'), HfConfigError);
  assert.throws(() => modelFromHfConfig('[1]'), HfConfigError);
  // a config without the shape of a language model is refused, naming what it lacks (the page keeps the model)
  assert.throws(() => modelFromHfConfig('{"model_type":"bert"}'), (e) => e instanceof HfConfigError
    && ['num_hidden_layers', 'hidden_size', 'num_attention_heads', 'vocab_size'].every((k) => e.message.includes(k)) && /model is unchanged/.test(e.message));
  assert.throws(() => modelFromHfConfig(JSON.stringify({ model_type: 'gpt2', n_layer: 2, n_embd: 64, n_head: '2', n_positions: 1024 })),
    (e) => e instanceof HfConfigError && /num_attention_heads/.test(e.message) && /vocab_size/.test(e.message) && !/hidden_size/.test(e.message));
  // a key that is there but not a number is named with its value
  assert.throws(() => modelFromHfConfig(JSON.stringify({ model_type: 'gpt2', n_layer: '32', n_embd: 64, n_head: 2, vocab_size: 100 })),
    (e) => e instanceof HfConfigError && e.message.includes('num_hidden_layers (or n_layer, num_layers), which is the string "32"') && !/hidden_size/.test(e.message));
  // a rope_theta that is not a positive number is left out with a note, not silently
  const oddRope = modelFromHfConfig(JSON.stringify({ model_type: 'llama', num_hidden_layers: 2, hidden_size: 64, num_attention_heads: 2, vocab_size: 100, rope_theta: 'abc' }));
  assert.equal(oddRope.model.rope_theta, undefined);
  assert.ok(oddRope.notes.some((n) => /^rope_theta "abc" is not a positive number; it was left out/.test(n)), oddRope.notes.join(' | '));
});

test('scenario files: presets, {"base"} overrides, inline devices, profiles; errors name the JSON path', () => {
  const presets = { models: [{ id: 'gpt3-1.7b', name: 'GPT-3 1.7B', hidden_size: 2304 }], clusters: [{ id: 'demo-mixed-16', name: 'demo', groups: [{ device: 'a100-sxm4-80gb', nodes: 1, gpus_per_node: 8, inter_node_bw_GBps: 100 }] }],
    devices: [{ id: 'a100-sxm4-80gb', name: 'A100 80GB', memory_GiB: 80, source: 'x', price_usd_per_gpu_hour: 4 }] };
  const demo = fs.readFileSync(path.join(ROOT, 'docs/examples/demo.scenario.json'), 'utf8');
  const a = inputsFromScenario(demo, presets, []);
  assert.equal(a.modelPreset, 'gpt3-1.7b');
  assert.deepStrictEqual(a.model, presets.models[0]);
  assert.equal(a.clusterPreset, 'demo-mixed-16');
  assert.deepStrictEqual(a.training, JSON.parse(demo).training);
  assert.equal(a.profile, null);
  const inline = { name: 'X', memory_GiB: 24 };
  const b = inputsFromScenario(JSON.stringify({ model: { base: 'gpt3-1.7b', hidden_size: 2048 }, training: { global_batch_size: 8 }, profile: 'p1',
    cluster: { name: 'c', groups: [{ device: { base: 'a100-sxm4-80gb', memory_GiB: 40 }, nodes: 1 }, { device: inline, nodes: 2 }, { device: inline, nodes: 3 }, { device: 'a100-sxm4-80gb' }] } }), presets, ['p1']);
  assert.equal(b.modelPreset, 'gpt3-1.7b');
  assert.equal(b.model.hidden_size, 2048);
  assert.equal(b.clusterPreset, null);
  assert.deepStrictEqual(b.cluster.groups.map((g) => g.device), ['custom-1', 'custom-2', 'custom-2', 'a100-sxm4-80gb']);
  assert.deepStrictEqual(b.devices['custom-1'], { name: 'A100 80GB', memory_GiB: 40 }, 'the preset with its override, without its id, source and price');
  assert.deepStrictEqual(b.devices['custom-2'], inline);
  assert.deepStrictEqual(b.profile, { preset: 'p1' });
  assert.deepStrictEqual(inputsFromScenario(JSON.stringify({ ...JSON.parse(demo), profile: { devices: [] } }), presets).profile, { value: { devices: [] } });
  const refused = (sc, re) => assert.throws(() => inputsFromScenario(typeof sc === 'string' ? sc : JSON.stringify(sc), presets, ['p1']),
    (e) => e instanceof ScenarioFileError && re.test(e.message), String(re));
  const ok = JSON.parse(demo);
  refused('{nope', /not valid JSON/);
  refused([1], /^\(top level\): is an array/);
  refused({ ...ok, modle: 1 }, /^modle: unknown key/);
  refused({ cluster: ok.cluster, training: ok.training }, /^model: missing/);
  refused({ ...ok, model: 'gpt5' }, /^model: "gpt5" is not a model preset/);
  refused({ ...ok, model: 3 }, /^model: is number 3; a model preset id or an object/);
  refused({ ...ok, cluster: { base: 'nope' } }, /^cluster\.base: "nope" is not a cluster preset/);
  refused({ ...ok, cluster: { name: 'c', groups: {} } }, /^cluster\.groups: is an object; a list of groups/);
  refused({ ...ok, cluster: { name: 'c', groups: [{ device: 'a100-sxm4-80gb' }, 7] } }, /^cluster\.groups\[1\]: is number 7/);
  refused({ ...ok, cluster: { name: 'c', groups: [{ device: { base: 'h900' } }] } }, /^cluster\.groups\[0\]\.device\.base: "h900" is not a device preset/);
  refused({ ...ok, training: [] }, /^training: is an array/);
  refused({ ...ok, profile: 'p2' }, /^profile: "p2" is not a profile preset/);
  // name and notes are informational strings (docs/examples/amp-t4.scenario.json has both)
  assert.equal(inputsFromScenario(JSON.stringify({ name: 'AMP', notes: 'n', ...ok }), presets).modelPreset, 'gpt3-1.7b');
  refused({ ...ok, name: 5 }, /^name: is number 5; expected a string/);
});

test('every example scenario in docs/examples loads into the page inputs', () => {
  const load = (dir) => fs.readdirSync(path.join(ROOT, 'presets', dir)).filter((f) => f.endsWith('.json'))
    .map((f) => JSON.parse(fs.readFileSync(path.join(ROOT, 'presets', dir, f), 'utf8')));
  const presets = { models: load('models'), clusters: load('clusters'), devices: load('devices') };
  const files = fs.readdirSync(path.join(ROOT, 'docs/examples')).filter((f) => f.endsWith('.scenario.json'));
  assert.ok(files.length >= 2);
  for (const f of files) {
    const inputs = inputsFromScenario(fs.readFileSync(path.join(ROOT, 'docs/examples', f), 'utf8'), presets, []);
    assert.ok(inputs.training && inputs.cluster.groups.length > 0, f);
  }
});

test('profile presets: the page lists exactly presets/profiles/*.json', () => {
  const files = fs.readdirSync(path.join(ROOT, 'presets/profiles')).filter((f) => f.endsWith('.json')).map((f) => f.replace(/\.json$/, '')).sort();
  assert.deepStrictEqual([...PROFILE_PRESET_IDS].sort(), files);
});

test('profile text, device matching, source labels', () => {
  assert.deepStrictEqual(parseProfileText(` ${JSON.stringify(profile)} `), profile);
  assert.deepStrictEqual(parseProfileText('[1]'), [1], 'any JSON goes to the core, which names the problem');
  assert.throws(() => parseProfileText('{"devices": ['), ProfileInputError);
  assert.throws(() => parseProfileText('  '), /empty/);
  const presetDevices = [{ id: 'a100-sxm4-80gb', name: 'NVIDIA A100-SXM4-80GB' }, { id: 'v100-sxm2-32gb', name: 'V100' }];
  const names = clusterDeviceNames({ groups: [{ device: 'a100-sxm4-80gb' }, { device: 'custom-1' }, { device: { name: 'inline x' } }] }, presetDevices, { 'custom-1': { name: 'My GPU' } });
  assert.deepStrictEqual([...names].sort(), ['My GPU', 'NVIDIA A100-SXM4-80GB', 'a100-sxm4-80gb', 'inline x']);
  const preset = JSON.parse(fs.readFileSync(path.join(ROOT, 'presets/profiles/llama3.2-1b-a100-illustrative.json'), 'utf8'));
  assert.deepStrictEqual(profileDevices(preset), ['a100-sxm4-80gb']);
  assert.deepStrictEqual(profileMatch(preset, { id: 'llama3.2-1b-a100-illustrative', modelPreset: 'llama3.2-1b', deviceNames: names }),
    { devices: ['a100-sxm4-80gb'], model: true, full: true });
  assert.equal(profileMatch(preset, { id: 'llama3.2-1b-a100-illustrative', modelPreset: 'gpt3-1.7b', deviceNames: names }).full, false);
  assert.equal(profileMatch(preset, { id: 'llama3.2-1b-a100-illustrative', modelPreset: 'llama3.2-1b', deviceNames: new Set(['v100']) }).full, false);
  assert.deepStrictEqual(profileDevices([1]), []);
  const all = { forward: 'profile', backward: 'profile', optimizer: 'profile', links: 'profile', layer_forward: 'profile' };
  assert.equal(sourceSummary(all).text, 'measured');
  const mixed = sourceSummary({ forward: 'interpolated', backward: 'profile', optimizer: 'analytic', links: 'profile', head_forward: 'interpolated' });
  assert.equal(mixed.text, 'forward interpolated, backward measured, opt. analytic, links measured');
  assert.match(mixed.detail, /head forward: interpolated/);
  assert.equal(sourceSummary(undefined).text, 'analytic');
  assert.equal(hasMeasuredSource({ stages: [{ source: { forward: 'analytic' } }] }), false);
  assert.equal(hasMeasuredSource({ stages: [{ source: { forward: 'analytic' }, replicas: [{ source: { links: 'profile' } }] }] }), true);
});

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

import { zoomView, panView } from '../../web/render/zoom.js';
import { windowed, timelineSpan, timelineScene } from '../../web/render/timeline.js';
import { GLOSSARY } from '../../web/glossary.js';

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

test('glossary and the service worker cache every module the page loads', () => {
  for (const term of ['PP', 'TP', 'DP', 'MFU', 'bubble', 'megatron-uniform', 'metis-heuristic', 'micro-batch per replica', 'GB/s and Gb/s']) assert.ok(GLOSSARY[term], term);
  const sw = fs.readFileSync(path.join(ROOT, 'web/sw.js'), 'utf8');
  const js = [...fs.readdirSync(path.join(ROOT, 'web')).filter((f) => f.endsWith('.js') && f !== 'sw.js'),
    ...fs.readdirSync(path.join(ROOT, 'web/render')).map((f) => `render/${f}`)];
  for (const f of js) assert.ok(sw.includes(`'${f}'`), `sw.js caches ${f}`);
  // no page module over ~400 lines (issue 12: one job per module)
  for (const f of js) assert.ok(fs.readFileSync(path.join(ROOT, 'web', f), 'utf8').split('\n').length <= 420, `${f} is short`);
});

/**
 * web/'s import graph: every static `import … from`, `export … from`, side-effect `import '…'` and
 * dynamic `import('…')` of a relative module, comments and strings aside, as file → [files].
 */
export function webImports(root = path.join(ROOT, 'web')) {
  const files = [...fs.readdirSync(root).filter((f) => f.endsWith('.js')),
    ...fs.readdirSync(path.join(root, 'render')).filter((f) => f.endsWith('.js')).map((f) => `render/${f}`)];
  const graph = new Map();
  for (const f of files) {
    // comments out (a `// import x from './y.js'` in prose is no import)
    const src = fs.readFileSync(path.join(root, f), 'utf8').replace(/\/\*[\s\S]*?\*\//g, '').replace(/(^|[^:'"`\\])\/\/.*$/gm, '$1');
    const deps = new Set();
    const re = /(?:^|[;\s])(?:import|export)\s*(?:[\w*{}\s,$]+?\s*from\s*)?['"](\.{1,2}\/[^'"]+)['"]|\bimport\s*\(\s*['"](\.{1,2}\/[^'"]+)['"]\s*\)/g;
    for (const m of src.matchAll(re)) {
      const spec = m[1] ?? m[2];
      const target = path.posix.normalize(path.posix.join(path.posix.dirname(f), spec));
      if (files.includes(target)) deps.add(target);
    }
    graph.set(f, [...deps]);
  }
  return graph;
}

/** the import circles of a graph (each as the list of files around it), [] when there is none */
export function importCycles(graph) {
  const cycles = [];
  const state = new Map(); // 1: on the path, 2: done
  const stack = [];
  const visit = (f) => {
    state.set(f, 1);
    stack.push(f);
    for (const d of graph.get(f) ?? []) {
      if (state.get(d) === 1) cycles.push([...stack.slice(stack.indexOf(d)), d]);
      else if (!state.has(d)) visit(d);
    }
    stack.pop();
    state.set(f, 2);
  };
  for (const f of [...graph.keys()].sort()) if (!state.has(f)) visit(f);
  return cycles;
}

test('web/ has no import circle (issue 36 item 12: one store, views subscribe)', () => {
  // the walker sees what it must: a circle made up here is found, and so are multi-line and dynamic imports
  assert.deepEqual(importCycles(new Map([['a.js', ['b.js']], ['b.js', ['c.js']], ['c.js', ['a.js']], ['d.js', ['a.js']]])), [['a.js', 'b.js', 'c.js', 'a.js']]);
  const graph = webImports();
  assert.ok(graph.get('main.js').includes('planner.js') && graph.get('main.js').includes('compare-ui.js'), 'multi-line and side-effect imports are seen');
  assert.ok(graph.get('worker.js').length === 0 || !graph.get('worker.js').includes('main.js'));
  assert.ok(graph.get('results.js').includes('render/stages.js') && graph.get('render/zoom.js').includes('render/timeline.js'), 'render/ modules are walked');
  // index.html preloads exactly the modules main.js imports, directly or not (no waterfall of imports on load)
  const reach = new Set();
  const visit = (f) => { if (reach.has(f)) return; reach.add(f); for (const d of graph.get(f) ?? []) visit(d); };
  visit('main.js');
  reach.delete('main.js');
  const html = fs.readFileSync(path.join(ROOT, 'web/index.html'), 'utf8');
  const preloads = [...html.matchAll(/<link rel="modulepreload" href="([^"]+)">/g)].map((m) => m[1]);
  assert.deepStrictEqual([...preloads].sort(), [...reach].sort(), 'index.html modulepreloads every module main.js imports');
  const cycles = importCycles(graph);
  assert.deepEqual(cycles.map((c) => c.join(' → ')), [], 'import circles in web/');
  // the search runs in planner.js and draws nothing: no DOM, no view imported
  const planner = fs.readFileSync(path.join(ROOT, 'web/planner.js'), 'utf8');
  assert.doesNotMatch(planner, /\$\(|document\.|querySelector|textContent/, 'planner.js does not touch the DOM');
  for (const view of ['results.js', 'links.js', 'forms.js', 'whatif-ui.js', 'errors.js', 'profile-ui.js', 'calibration-ui.js', 'cost-ui.js', 'export-ui.js', 'compare-ui.js']) {
    assert.ok(!graph.get('planner.js').includes(view), `planner.js does not import ${view}`);
    assert.ok(!graph.get('store.js').includes(view), `store.js does not import ${view}`);
  }
});

import { replicaSamples } from '../../web/render/tables.js';

test('a mixed stage shows its samples per replica with runs of equal replicas counted', () => {
  const a100 = { device: 'a100-sxm4-40gb', samples: 6 }, v100 = { device: 'v100-sxm2-16gb', samples: 2 };
  assert.equal(replicaSamples([...Array(16).fill(a100), ...Array(16).fill(v100)]), '16×6 + 16×2');
  assert.equal(replicaSamples([a100, v100, a100]), '6 + 2 + 6');
  assert.equal(replicaSamples([]), '');
});

import { fmtTime } from '../../web/dom.js';

test('times read with their unit; no time at all reads 0, not a rounded 0.0 µs', () => {
  assert.equal(fmtTime(0), '0');
  assert.equal(fmtTime(2e-6), '2.0 µs');
  assert.equal(fmtTime(0.0125), '12.50 ms');
  assert.equal(fmtTime(1.5), '1.500 s');
  assert.equal(fmtTime(null), '–');
});

test('an MoE stage\'s summary carries its expert grid; a dense one is unchanged', () => {
  assert.deepStrictEqual(stageSummary({ stages: [{ tp: 1, dp: 16, ep: 8, etp: 1 }, { tp: 2, dp: 8, ep: 4, etp: 2 }, { tp: 2, dp: 4 }, { tp: 2, dp: 4, cp: 2, ep: 1, etp: 1 }] }, '×'),
    ['1×16 ep8', '2×8 ep4/etp2', '2×4', '2×2cp×4']);
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
