// The page's pure modules in node: exports, memory rows, Hugging Face config import, profiles, the
// glossary (the timeline's drawing, zoom and lanes: timeline-pure.test.mjs; the workbench's
// explanations, cost and Megatron layouts: workbench-pure.test.mjs; share links and the calibration
// overrides they carry: share.test.mjs).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { MEMORY_COMPONENTS, memoryRows, memoryLevel, WARN_SHARE } from '../../web/render/memory.js';
import { chromeTrace, topPlansCsv, megatronArgs, planJson, stageSummary, gridHeader } from '../../web/exports.js';
import { modelFromHfConfig, HfConfigError } from '../../web/hf.js';
import { inputsFromScenario, ScenarioFileError } from '../../web/scenario-file.js';
import { PROFILE_PRESET_IDS, parseProfileText, ProfileInputError, clusterDeviceNames, profileMatch, profileDevices,
  sourceSummary, hasMeasuredSource } from '../../web/profile.js';
import { GLOSSARY } from '../../web/glossary.js';
import { est } from './sample-estimate.mjs';

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
  // a search that freed the precision, FSDP or recomputation: four more columns with each plan's choice
  const chosen = topPlansCsv([{ ...est, plan: { ...est.plan, precision: 'fp8', fsdp: true } }, { ...est, plan: { ...est.plan, recompute: 'full', recompute_num_layers: 2 } }, est]).trim().split('\n');
  assert.match(chosen[0], /,samples_per_replica_per_stage,precision,fsdp,recompute,recompute_num_layers$/);
  assert.match(chosen[1], /,2 2,fp8,true,,$/);
  assert.match(chosen[2], /,2 2,,,full,2$/);
  assert.match(chosen[3], /,2 2,,,,$/);
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
  // {"preset": id, ...} reads as {"base": id, ...}, as the core reads it
  const viaPreset = inputsFromScenario(JSON.stringify({ ...ok, model: { preset: 'gpt3-1.7b', hidden_size: 2048 },
    cluster: { name: 'c', groups: [{ device: { preset: 'a100-sxm4-80gb', memory_GiB: 40 }, nodes: 1 }] } }), presets);
  assert.equal(viaPreset.modelPreset, 'gpt3-1.7b');
  assert.deepStrictEqual(viaPreset.model, { ...presets.models[0], hidden_size: 2048 });
  assert.deepStrictEqual(viaPreset.devices['custom-1'], { name: 'A100 80GB', memory_GiB: 40 });
  refused({ ...ok, model: { preset: 'gpt5' } }, /^model\.preset: "gpt5" is not a model preset/);
  refused({ ...ok, model: { preset: 'gpt3-1.7b', base: 'gpt3-1.7b' } }, /^model\.preset: .* beside base .*expected one of the two/);
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

import { fitsText, replicaSamples } from '../../web/render/tables.js';

test('the top plans\' fits column warns, as the memory panel does, where a stage is above 90 % of its memory', () => {
  const st = (mem, cap = 80) => ({ memory_GiB: mem, memory_capacity_GiB: cap });
  assert.equal(fitsText({ memory_fits: true, stages: [st(40), st(72)] }), 'yes');
  assert.equal(fitsText({ memory_fits: true, stages: [st(40), st(79.92)] }), 'yes, 99.9 %');
  assert.equal(fitsText({ memory_fits: false, stages: [st(90)] }), 'no');
  assert.equal(fitsText({ memory_fits: true }), 'yes');
});

test('a mixed stage shows its samples per replica with runs of equal replicas counted', () => {
  const a100 = { device: 'a100-sxm4-40gb', samples: 6 }, v100 = { device: 'v100-sxm2-16gb', samples: 2 };
  assert.equal(replicaSamples([...Array(16).fill(a100), ...Array(16).fill(v100)]), '16×6 + 16×2');
  assert.equal(replicaSamples([a100, v100, a100]), '6 + 2 + 6');
  assert.equal(replicaSamples([]), '');
});

import { fmtTime } from '../../web/dom.js';

test('times read with their unit; no time at all reads 0 s, not a rounded 0.0 µs', () => {
  assert.equal(fmtTime(0), '0 s');
  assert.equal(fmtTime(2e-6), '2.0 µs');
  assert.equal(fmtTime(0.0125), '12.50 ms');
  assert.equal(fmtTime(1.5), '1.500 s');
  assert.equal(fmtTime(16815.9951), '16,815.995 s');
  assert.equal(fmtTime(null), '–');
});

test('an MoE stage\'s summary carries its expert grid; a dense one is unchanged', () => {
  assert.deepStrictEqual(stageSummary({ stages: [{ tp: 1, dp: 16, ep: 8, etp: 1 }, { tp: 2, dp: 8, ep: 4, etp: 2 }, { tp: 2, dp: 4 }, { tp: 2, dp: 4, cp: 2, ep: 1, etp: 1 }] }, '×'),
    ['1×16 ep8', '2×8 ep4/etp2', '2×4', '2×2cp×4']);
  // the column's header names what its cells hold
  assert.equal(gridHeader([{ stages: [{ tp: 2, dp: 4 }] }]), 'TP × DP');
  assert.equal(gridHeader([{ stages: [{ tp: 2, dp: 4 }] }, { stages: [{ tp: 2, dp: 2, cp: 2 }] }]), 'TP × CP × DP');
  assert.equal(gridHeader([{ stages: [{ tp: 1, dp: 16, ep: 8 }] }]), 'TP × DP, EP/ETP');
  assert.equal(gridHeader([{ stages: [{ tp: 2, dp: 4, cp: 2, ep: 1, etp: 2 }] }, null]), 'TP × CP × DP, EP/ETP');
});

import { moreSide } from '../../web/scroll-hint.js';

test('a scrolling box has more on the right until its last pixel is in view', () => {
  assert.equal(moreSide(0, 300, 900), 'right');
  assert.equal(moreSide(598, 300, 900), 'right');
  assert.equal(moreSide(599, 300, 900), '', 'within a pixel of the end');
  assert.equal(moreSide(600, 300, 900), '');
  assert.equal(moreSide(599.5, 300, 900), '', 'a fractional scroll position at the end');
  assert.equal(moreSide(0, 300, 300), '', 'a box that fits');
});
