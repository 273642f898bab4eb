// The Megatron-LM export pastes into a POSIX shell as is: for the core's best plan on every preset
// cluster, the exported command passes `sh -n`, and run through a stub launcher (a torchrun
// function that prints its arguments) it passes exactly the plan's parallel sizes, layer split and
// batch; a placeholder left unset stops the shell with its message. Interleaved plans get their
// virtual-pipeline flags (or layout), the training's overlap switches their Megatron-Core flags.
//   POSEIDON_BUILD_WASM=build-wasm node --test tests/web/megatron.test.mjs
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { spawnSync } from 'node:child_process';
import { loadModule } from './load-module.mjs';
import { megatronArgs, pipelineLayout, accountForFlags, deviceCaps } from '../../web/megatron.js';
import { renameDevices, shortDeviceName } from '../../web/context.js';

const ENV = { NODE_RANK: '0', MASTER_ADDR: '10.0.0.1', DATA_PATH: '/data/corpus_text_document', TOKENIZER_MODEL: 'meta-llama/Meta-Llama-3-8B',
  VOCAB_FILE: '/data/vocab.json', MERGE_FILE: '/data/merges.txt', LR: '3e-4', TRAIN_ITERS: '1000', TP: '1', MICRO_BATCH: '1', NNODES: '1', NPROC_PER_NODE: '8' };

function runStub(text, env = ENV) {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'poseidon-megatron-'));
  const file = path.join(dir, 'launch.sh');
  fs.writeFileSync(file, `torchrun() { for a in "$@"; do printf '%s\\n' "$a"; done; }\n${text}`);
  const check = spawnSync('sh', ['-n', file], { encoding: 'utf8' });
  const run = spawnSync('sh', [file], { encoding: 'utf8', env: { PATH: process.env.PATH, ...env } });
  fs.rmSync(dir, { recursive: true, force: true });
  return { check, run, args: run.stdout.split('\n').filter((l) => l !== '') };
}

const argOf = (args, flag) => { const i = args.indexOf(flag); return i < 0 ? undefined : args[i + 1]; };

test('the exported command passes sh -n and a stub launcher for the best plan on every preset cluster', async (t) => {
  const M = await loadModule();
  const presets = JSON.parse(M.presets());
  let checked = 0;
  for (const cluster of presets.clusters) {
    for (const modelId of ['llama3-8b', 'gpt3-1.7b', 'tiny-8l']) {
      const gbs = Math.max(64, cluster.groups.reduce((a, g) => a + g.nodes * g.gpus_per_node, 0));
      // the overlap switches on (they are only flags: the export must still paste and run)
      const sc = { model: modelId, training: { global_batch_size: gbs, recompute: 'selective', distributed_optimizer: true, overlap_grad_reduce: true,
        overlap_param_gather: true, grad_reduce_dtype: 'bf16' }, cluster: cluster.id };
      const res = JSON.parse(M.plan(JSON.stringify(sc), JSON.stringify({ top: 1, time_limit_s: 1, baselines: false })));
      if (res.error || !res.plans.length) continue;
      const est = res.plans[0];
      const model = presets.models.find((m) => m.id === modelId);
      const r = megatronArgs(est, { model, training: sc.training }, { cluster, modelId, tokens: 1e12 });
      assert.ok(r.ok);
      const { check, run, args } = runStub(r.text);
      assert.equal(check.status, 0, `${cluster.id}: sh -n: ${check.stderr}`);
      assert.equal(run.status, 0, `${cluster.id}: ${run.stderr}`);
      assert.equal(args[args.indexOf('pretrain_gpt.py') - 1], '6000', 'launcher arguments come before the script');
      assert.equal(argOf(args, '--pipeline-model-parallel-size'), String(est.stages.length), cluster.id);
      assert.equal(argOf(args, '--global-batch-size'), String(gbs));
      assert.equal(argOf(args, '--num-layers'), String(model.num_layers));
      assert.equal(argOf(args, '--train-iters'), String(Math.ceil(1e12 / (gbs * model.seq_length))));
      const tps = new Set(est.stages.map((s) => s.tp));
      assert.equal(argOf(args, '--tensor-model-parallel-size'), tps.size === 1 ? String([...tps][0]) : ENV.TP);
      const layers = est.stages.map((s) => s.num_layers);
      const layout = argOf(args, '--pipeline-model-parallel-layout');
      // an interleaved plan's layout lists the p x V virtual stages, virtual rank 0 first
      const V = est.plan?.virtual_stages ?? 1;
      const virtualLayers = Array.from({ length: V }, () => layers.map((l) => l / V)).flat();
      if (layout) assert.deepStrictEqual(layout.split('|').map((s) => (s.match(/t/g) || []).length), virtualLayers, 'the layout reaches Megatron intact');
      else if (new Set(layers).size > 1) assert.ok(argOf(args, '--decoder-first-pipeline-num-layers') || argOf(args, '--decoder-last-pipeline-num-layers'));
      // real GPU and node counts when the plan's groups have one GPUs-per-node figure
      const world = est.stages.reduce((a, s) => a + s.gpus, 0);
      if (r.nnodes) assert.equal(Number(argOf(args, '--nnodes')) * Number(argOf(args, '--nproc_per_node')), world);
      if (model.gated_mlp) {
        for (const f of ['--swiglu', '--disable-bias-linear', '--untie-embeddings-and-output-weights']) assert.ok(args.includes(f), `${modelId}: ${f}`);
        assert.equal(argOf(args, '--normalization'), 'RMSNorm');
        assert.equal(argOf(args, '--position-embedding-type'), 'rope');
        assert.equal(argOf(args, '--rotary-base'), '500000', 'Llama 3 rope_theta');
        assert.equal(argOf(args, '--num-query-groups'), String(model.num_kv_heads));
        assert.equal(argOf(args, '--tokenizer-model'), ENV.TOKENIZER_MODEL);
      }
      // the model's dropout, which the plan's memory counted (Llama presets: none)
      assert.equal(argOf(args, '--hidden-dropout'), String(model.hidden_dropout ?? 0.1));
      assert.equal(argOf(args, '--attention-dropout'), String(model.attention_dropout ?? 0.1));
      for (const f of ['--use-distributed-optimizer', '--overlap-grad-reduce', '--overlap-param-gather', '--grad-reduce-in-bf16']) assert.ok(args.includes(f), `${cluster.id}: ${f}`);
      checked++;
      break;
    }
  }
  t.diagnostic(`${checked} of ${presets.clusters.length} preset clusters exported and run through sh`);
  assert.equal(checked, presets.clusters.length, 'every preset cluster has a plan to export');
});

test('an unset placeholder stops the shell with its message; odd characters stay quoted', async () => {
  const est = { iteration_time_s: 1, num_gpus: 8, plan: { micro_batch_size: 8, num_micro_batches: 4, stages: [] },
    stages: [0, 1, 2, 3].map((i) => ({ index: i, device: "gpu 'x' $(rm -rf /)\nnext", group: 0, tp: 1, dp: 2, gpus: 2, num_layers: [5, 2, 3, 2][i], samples_per_replica: 4 })) };
  const model = { name: 'm', num_layers: 12, hidden_size: 512, num_attention_heads: 8, seq_length: 1024 };
  const r = megatronArgs(est, { model, training: {} }, { cluster: { groups: [{ device: 'x', nodes: 1, gpus_per_node: 8 }] } });
  const ok = runStub(r.text);
  assert.equal(ok.check.status, 0, ok.check.stderr);
  assert.equal(ok.run.status, 0, ok.run.stderr);
  assert.equal(argOf(ok.args, '--pipeline-model-parallel-layout'), 'Ettttt|tt|ttt|ttL');
  assert.equal(argOf(ok.args, '--nnodes'), '1');
  // stages with no layer (options.empty_stages): only the layout expresses them, even where the
  // rest would fit the first/last flags
  for (const [layers, layout] of [[[0, 4, 4, 4], 'E|tttt|tttt|ttttL'], [[6, 0, 6, 0], 'Etttttt||tttttt|L'], [[4, 4, 0, 4], 'Etttt|tttt||ttttL']]) {
    const e0 = { ...est, stages: est.stages.map((s, i) => ({ ...s, num_layers: layers[i] })) };
    const z = runStub(megatronArgs(e0, { model, training: {} }, { cluster: { groups: [{ device: 'x', nodes: 1, gpus_per_node: 8 }] } }).text);
    assert.equal(z.run.status, 0, z.run.stderr);
    assert.equal(argOf(z.args, '--pipeline-model-parallel-layout'), layout);
    assert.equal(argOf(z.args, '--decoder-first-pipeline-num-layers'), undefined);
  }
  assert.equal(argOf(ok.args, '--nproc_per_node'), '8');
  const { DATA_PATH, ...noData } = ENV;
  void DATA_PATH;
  const missing = runStub(r.text, noData);
  assert.notEqual(missing.run.status, 0);
  assert.match(missing.run.stderr, /set DATA_PATH to the preprocessed dataset prefix/);
});

// ---------------------------------------------------------------- interleaving and overlap (issue 13)

const llama = (M) => JSON.parse(M.presets()).models.find((m) => m.id === 'llama3-8b');
const homog = (M) => JSON.parse(M.presets()).clusters.find((c) => c.id === 'dgx-h100-16');

test('an interleaved plan with even stages: --num-virtual-stages-per-pipeline-rank, the older flag in the notes; sh -n and the stub pass', async () => {
  const M = await loadModule();
  const training = { global_batch_size: 64, distributed_optimizer: true };
  const plan = { micro_batch_size: 8, num_micro_batches: 8, schedule: 'interleaved-1f1b', virtual_stages: 2,
    stages: Array.from({ length: 4 }, () => ({ group: 0, num_layers: 8, tp: 2, dp: 2 })) };
  const est = JSON.parse(M.estimate(JSON.stringify({ model: 'llama3-8b', cluster: 'dgx-h100-16', training }), JSON.stringify(plan)));
  assert.ok(!est.error, JSON.stringify(est.error));
  const r = megatronArgs(est, { model: llama(M), training }, { cluster: homog(M), modelId: 'llama3-8b', tokens: 1e11 });
  const { check, run, args } = runStub(r.text);
  assert.equal(check.status, 0, check.stderr);
  assert.equal(run.status, 0, run.stderr);
  assert.equal(argOf(args, '--pipeline-model-parallel-size'), '4');
  assert.equal(argOf(args, '--num-virtual-stages-per-pipeline-rank'), '2');
  assert.equal(argOf(args, '--pipeline-model-parallel-layout'), undefined);
  assert.equal(argOf(args, '--micro-batch-size'), '4', 'per replica: 8 samples over DP 2');
  assert.ok(r.notes.some((n) => /--num-layers-per-virtual-pipeline-stage 4\b/.test(n)), r.notes.join(' | '));
  assert.deepStrictEqual(r.unsupported, []);
});

test('an interleaved plan with uneven stages: the layout lists every virtual stage, virtual rank 0 first', async () => {
  const M = await loadModule();
  const training = { global_batch_size: 64 };
  const layers = [10, 6, 8, 8];
  const plan = { micro_batch_size: 8, num_micro_batches: 8, schedule: 'interleaved-1f1b', virtual_stages: 2,
    stages: layers.map((n) => ({ group: 0, num_layers: n, tp: 2, dp: 2 })) };
  const est = JSON.parse(M.estimate(JSON.stringify({ model: 'llama3-8b', cluster: 'dgx-h100-16', training }), JSON.stringify(plan)));
  assert.ok(!est.error, JSON.stringify(est.error));
  const r = megatronArgs(est, { model: llama(M), training }, { cluster: homog(M), modelId: 'llama3-8b' });
  const { check, run, args } = runStub(r.text);
  assert.equal(check.status, 0, check.stderr);
  assert.equal(run.status, 0, run.stderr);
  const layout = argOf(args, '--pipeline-model-parallel-layout');
  assert.equal(layout, 'Ettttt|ttt|tttt|tttt|ttttt|ttt|tttt|ttttL');
  const parts = layout.split('|');
  assert.equal(parts.length, 4 * 2, 'P x V virtual stages');
  // virtual rank v lists stage s's chunk v: each a Vth of the stage's layers, all layers once
  for (let v = 0; v < 2; v++) for (let s = 0; s < 4; s++) assert.equal((parts[v * 4 + s].match(/t/g) || []).length, layers[s] / 2);
  assert.equal(argOf(args, '--num-virtual-stages-per-pipeline-rank'), undefined, 'the layout carries the virtual size');
  assert.ok(r.notes.some((n) => /virtual rank 0 of every stage/.test(n)));
  assert.equal(pipelineLayout([3, 1], 1), 'Ettt|tL');
  // stages whose layers do not split into V chunks: said plainly, no layout
  const odd = megatronArgs({ ...est, plan: { ...est.plan }, stages: est.stages.map((st, i) => ({ ...st, num_layers: [9, 7, 8, 8][i] })) },
    { model: llama(M), training }, { cluster: homog(M) });
  assert.ok(odd.unsupported.some((u) => /equal chunks/.test(u)));
  assert.equal(runStub(odd.text).check.status, 0);
});

test('uneven chunks (chunk_layers): the layout per chunk; a micro-batch group other than p: its flag; sh -n and the stub pass', async () => {
  const M = await loadModule();
  const training = { global_batch_size: 64 };
  const chunks = [[3, 5], [4, 4], [4, 4], [6, 2]];
  const estimate = (group) => {
    const plan = { micro_batch_size: 8, num_micro_batches: 8, schedule: 'interleaved-1f1b', virtual_stages: 2, ...(group ? { microbatch_group_size: group } : {}),
      stages: chunks.map((cs) => ({ group: 0, num_layers: cs[0] + cs[1], tp: 2, dp: 2, chunk_layers: cs })) };
    const est = JSON.parse(M.estimate(JSON.stringify({ model: 'llama3-8b', cluster: 'dgx-h100-16', training }), JSON.stringify(plan)));
    assert.ok(!est.error, JSON.stringify(est.error));
    return est;
  };
  const est = estimate(8);
  assert.deepStrictEqual(est.plan.stages.map((st) => st.chunk_layers), chunks, 'the estimate prints the layout back');
  assert.equal(est.plan.microbatch_group_size, 8);
  const r = megatronArgs(est, { model: llama(M), training }, { cluster: homog(M), modelId: 'llama3-8b' });
  const { check, run, args } = runStub(r.text);
  assert.equal(check.status, 0, check.stderr);
  assert.equal(run.status, 0, run.stderr);
  // virtual rank 0 of every stage, then virtual rank 1: chunk c of stage s holds chunks[s][c] layers
  assert.equal(argOf(args, '--pipeline-model-parallel-layout'), 'Ettt|tttt|tttt|tttttt|ttttt|tttt|tttt|ttL');
  assert.equal(argOf(args, '--microbatch-group-size-per-virtual-pipeline-stage'), '8');
  assert.equal(argOf(args, '--num-virtual-stages-per-pipeline-rank'), undefined, 'the layout carries the virtual size');
  assert.ok(r.notes.some((n) => /3\+5 \/ 4\+4 \/ 4\+4 \/ 6\+2/.test(n)), r.notes.join(' | '));
  assert.ok(!r.notes.some((n) => /nearest even split/.test(n)), 'the stages themselves are even');
  // the default group (p) writes no flag
  const p4 = megatronArgs(estimate(4), { model: llama(M), training }, { cluster: homog(M), modelId: 'llama3-8b' });
  assert.equal(argOf(runStub(p4.text).args, '--microbatch-group-size-per-virtual-pipeline-stage'), undefined);
  assert.equal(argOf(runStub(megatronArgs(estimate(0), { model: llama(M), training }, { cluster: homog(M) }).text).args,
    '--microbatch-group-size-per-virtual-pipeline-stage'), undefined);
  // an empty chunk is an empty entry; the first and the last may hold only E or only L
  assert.equal(pipelineLayout([2, 2], 2, [[0, 2], [2, 0]]), 'E|tt|tt|L');
});

test('chunks that are Megatron-Core\'s account-for split: the two flags, no layout (Llama 3.1 405B as Megatron-Bridge runs it)', async () => {
  // 126 blocks + E + L = 128 units on 8 x 4 chunks: the first chunk E + 3 blocks, the last 3 blocks + L
  const pp8 = Array.from({ length: 8 }, (_, s) => [s === 0 ? 3 : 4, 4, 4, s === 7 ? 3 : 4]);
  assert.deepStrictEqual(accountForFlags(pp8, 4), [['--account-for-embedding-in-pipeline-split'], ['--account-for-loss-in-pipeline-split']]);
  assert.deepStrictEqual(accountForFlags([[0, 1], [1, 1]], 2), [['--account-for-embedding-in-pipeline-split']]);
  assert.deepStrictEqual(accountForFlags([[1, 1], [1, 0]], 2), [['--account-for-loss-in-pipeline-split']]);
  assert.equal(accountForFlags([[3, 5], [4, 4]], 2), null);
  // end to end: llama3-8b's 32 blocks + E + L = 34 units on 2 stages x 17 chunks of one unit
  const M = await loadModule();
  const training = { global_batch_size: 64 };
  const V = 17;
  const cl = [[0, ...Array(V - 1).fill(1)], [...Array(V - 1).fill(1), 0]];
  const plan = { micro_batch_size: 8, num_micro_batches: 8, schedule: 'interleaved-1f1b', virtual_stages: V,
    stages: cl.map((cs) => ({ group: 0, num_layers: 16, tp: 2, dp: 4, chunk_layers: cs })) };
  const est = JSON.parse(M.estimate(JSON.stringify({ model: 'llama3-8b', cluster: 'dgx-h100-16', training }), JSON.stringify(plan)));
  assert.ok(!est.error, JSON.stringify(est.error));
  const r = megatronArgs(est, { model: llama(M), training }, { cluster: homog(M), modelId: 'llama3-8b' });
  const { check, run, args } = runStub(r.text);
  assert.equal(check.status, 0, check.stderr);
  assert.equal(run.status, 0, run.stderr);
  assert.ok(args.includes('--account-for-embedding-in-pipeline-split'));
  assert.ok(args.includes('--account-for-loss-in-pipeline-split'));
  assert.equal(argOf(args, '--num-virtual-stages-per-pipeline-rank'), String(V));
  assert.equal(argOf(args, '--pipeline-model-parallel-layout'), undefined);
  assert.ok(r.notes.some((n) => /account-for-embedding/.test(n)));
});

test('overlap switches become Megatron-Core flags; what Megatron would refuse or has no flag for is said in the notes', async () => {
  const M = await loadModule();
  const plan = { micro_batch_size: 8, num_micro_batches: 8, schedule: '1f1b', stages: Array.from({ length: 2 }, () => ({ group: 0, num_layers: 16, tp: 4, dp: 2 })) };
  const estimate = (training) => {
    const est = JSON.parse(M.estimate(JSON.stringify({ model: 'llama3-8b', cluster: 'dgx-h100-16', training }), JSON.stringify(plan)));
    assert.ok(!est.error, JSON.stringify(est.error));
    return megatronArgs(est, { model: llama(M), training }, { cluster: homog(M), modelId: 'llama3-8b' });
  };
  const all = { global_batch_size: 64, sequence_parallel: true, distributed_optimizer: true, overlap_grad_reduce: true, overlap_param_gather: true,
    tp_comm_overlap: true, grad_reduce_dtype: 'bf16' };
  const r = estimate(all);
  const { check, run, args } = runStub(r.text);
  assert.equal(check.status, 0, check.stderr);
  assert.equal(run.status, 0, run.stderr);
  for (const f of ['--sequence-parallel', '--use-distributed-optimizer', '--overlap-grad-reduce', '--overlap-param-gather', '--tp-comm-overlap', '--grad-reduce-in-bf16']) {
    assert.ok(args.includes(f), f);
  }
  assert.ok(r.notes.some((n) => /Transformer Engine/.test(n)));
  // off: none of them
  const off = runStub(estimate({ global_batch_size: 64 }).text).args;
  for (const f of ['--overlap-grad-reduce', '--overlap-param-gather', '--tp-comm-overlap', '--grad-reduce-in-bf16']) assert.ok(!off.includes(f), f);
  // TP comm overlap without sequence parallelism: Megatron refuses it, and so does the core; an
  // export of a scenario from elsewhere still says why the flag is missing
  const refused = JSON.parse(M.estimate(JSON.stringify({ model: 'llama3-8b', cluster: 'dgx-h100-16', training: { ...all, sequence_parallel: false } }), JSON.stringify(plan)));
  assert.equal(refused.error?.path, 'scenario.training.tp_comm_overlap');
  const withSp = JSON.parse(M.estimate(JSON.stringify({ model: 'llama3-8b', cluster: 'dgx-h100-16', training: all }), JSON.stringify(plan)));
  const noSp = megatronArgs(withSp, { model: llama(M), training: { ...all, sequence_parallel: false } }, { cluster: homog(M), modelId: 'llama3-8b' });
  assert.ok(!runStub(noSp.text).args.includes('--tp-comm-overlap'));
  assert.ok(noSp.notes.some((n) => /--tp-comm-overlap is not written.*sequence parallelism off/.test(n)), noSp.notes.join(' | '));
  // fp16 gradient reduction: no flag in megatron-args.md, said in the notes
  const fp16 = estimate({ ...all, precision: 'fp16', grad_reduce_dtype: 'fp16' });
  assert.ok(!runStub(fp16.text).args.includes('--grad-reduce-in-bf16'));
  assert.ok(fp16.notes.some((n) => /reduced in fp16.*no flag/.test(n)));
  // overlap_param_gather without the distributed optimizer (the core refuses the scenario; an export from elsewhere still says it)
  const est = JSON.parse(M.estimate(JSON.stringify({ model: 'llama3-8b', cluster: 'dgx-h100-16', training: { global_batch_size: 64 } }), JSON.stringify(plan)));
  const noDist = megatronArgs(est, { model: llama(M), training: { global_batch_size: 64, overlap_param_gather: true } }, { cluster: homog(M) });
  assert.ok(!runStub(noDist.text).args.includes('--overlap-param-gather'));
  assert.ok(noDist.unsupported.some((u) => /needs --use-distributed-optimizer/.test(u)));
});

// ---------------------------------------------------------------- pre-Ampere GPUs: no BF16, no FlashAttention

test('plans on V100 or T4 get --fp16 and no --use-flash-attn, each with a note; Ampere and newer keep --bf16 --use-flash-attn', async () => {
  const M = await loadModule();
  const presets = JSON.parse(M.presets());
  const deviceOf = (id) => presets.devices.find((d) => d.id === id) ?? null;
  // the device data tells the generations apart (tf32_tflops): every preset without BF16 (docs/presets.md) is caught, no other NVIDIA one
  const noBf16 = new Set(['v100-sxm2-16gb', 'v100-sxm2-32gb', 't4-16gb', 'rtx2080-8gb', 'rtx2080ti-11gb', 'titan-rtx-24gb']);
  for (const d of presets.devices) assert.equal(deviceCaps(d).bf16, !noBf16.has(d.id), d.id);
  for (const d of presets.devices) assert.equal(deviceCaps(d).flashAttn, !noBf16.has(d.id), d.id);
  assert.equal(deviceCaps(null).bf16, true, 'an unknown device is left as planned');
  const cases = [['demo-mixed-16', 'gpt3-1.7b', true], ['aws-g4dn-12xlarge-4', 'gpt3-1.7b', true], ['dgx-h100-16', 'llama3-8b', false]];
  for (const [clusterId, modelId, old] of cases) {
    const cluster = presets.clusters.find((c) => c.id === clusterId);
    assert.ok(cluster, clusterId);
    const training = { global_batch_size: 64 };
    const res = JSON.parse(M.plan(JSON.stringify({ model: modelId, training, cluster: clusterId }), JSON.stringify({ top: 1, time_limit_s: 1, baselines: false })));
    assert.ok(!res.error && res.plans.length, `${clusterId}: ${JSON.stringify(res.error)}`);
    const model = presets.models.find((m) => m.id === modelId);
    const r = megatronArgs(res.plans[0], { model, training }, { cluster, modelId, deviceOf });
    const { check, run, args } = runStub(r.text);
    assert.equal(check.status, 0, check.stderr);
    assert.equal(run.status, 0, run.stderr);
    assert.equal(args.includes('--bf16'), !old, clusterId);
    assert.equal(args.includes('--fp16'), old, clusterId);
    assert.equal(args.includes('--use-flash-attn'), !old, clusterId);
    assert.equal(r.notes.some((n) => /^--fp16, not --bf16: .*no BF16/.test(n)), old, `${clusterId}: ${r.notes.join(' | ')}`);
    assert.equal(r.notes.some((n) => /^--use-flash-attn is left out: FlashAttention needs an Ampere or newer GPU/.test(n)), old, clusterId);
    if (old) assert.ok(r.notes.some((n) => /(v100|t4)/.test(n) && /no BF16/.test(n)), 'the note names the device');
    // the page names the devices as its inputs do (deviceName): in the notes, the header and the rank comment, no id left
    const named = (label) => label.split('+').map((id) => shortDeviceName(deviceOf(id)?.name ?? id)).join('+');
    const n = megatronArgs(res.plans[0], { model, training }, { cluster, modelId, deviceOf, deviceName: named });
    const ids = res.plans[0].stages.map((st) => st.device);
    for (const text of [n.script, ...n.notes]) for (const id of ids) assert.ok(!text.includes(id), `${clusterId}: no ${id} in ${text}`);
    if (old) assert.ok(n.notes.some((x) => /(V100|T4)/.test(x) && /no BF16/.test(x)), 'the note names the device by its name');
    assert.deepStrictEqual(n.args, r.args, 'the flags are the same');
  }
  // an inline device in the cluster (no id to look up) is judged from its own data
  const est = { plan: { micro_batch_size: 4, num_micro_batches: 4 }, stages: [{ device: 'my gpu', group: 0, tp: 1, dp: 8, gpus: 8, num_layers: 24, samples_per_replica: 1 }] };
  const inline = (dev) => megatronArgs(est, { model: presets.models.find((m) => m.id === 'gpt3-1.7b'), training: {} },
    { cluster: { groups: [{ device: dev, nodes: 1, gpus_per_node: 8 }] } }).args.map((a) => a[0]);
  assert.ok(inline({ ...deviceOf('v100-sxm2-32gb'), id: undefined, vendor: undefined }).includes('--fp16'));
  assert.ok(inline(deviceOf('a100-sxm4-80gb')).includes('--bf16'));
  assert.ok(inline(deviceOf('mi250x-128gb')).includes('--bf16'), 'AMD MI250X has BF16 (and no TF32)');
  // fp16 and fp32 plans are written as they are
  const fp32 = megatronArgs(est, { model: null, training: { precision: 'fp32' } }, { cluster: { groups: [{ device: 'v100-sxm2-32gb', nodes: 1, gpus_per_node: 8 }] }, deviceOf });
  assert.ok(!fp32.args.some((a) => a[0] === '--fp16' || a[0] === '--bf16'));
});

test('words: "1 GPU" in the header; an uneven interleaved layout says each chunk is 1/V of its stage', () => {
  const model = { name: 'm', num_layers: 12, hidden_size: 512, num_attention_heads: 8, seq_length: 1024 };
  const one = megatronArgs({ plan: { micro_batch_size: 1, num_micro_batches: 4 }, stages: [{ device: 'x', group: 0, tp: 1, dp: 1, gpus: 1, num_layers: 12, samples_per_replica: 1 }] },
    { model, training: {} }, { cluster: { groups: [{ device: 'x', nodes: 1, gpus_per_node: 1 }] } });
  assert.match(one.text, /: 1 GPU = 1 pipeline stage × TP 1 × DP 1/);
  const uneven = megatronArgs({ plan: { micro_batch_size: 2, num_micro_batches: 4, schedule: 'interleaved-1f1b', virtual_stages: 2 },
    stages: [4, 8].map((n, i) => ({ device: 'x', group: 0, tp: 1, dp: 2, gpus: 2, num_layers: n, index: i, samples_per_replica: 1 })) },
  { model, training: {} }, { cluster: { groups: [{ device: 'x', nodes: 1, gpus_per_node: 4 }] } });
  assert.ok(uneven.notes.some((n) => /each chunk 1\/2 of its stage's layers/.test(n)), uneven.notes.join(' | '));
  assert.ok(!uneven.notes.some((n) => /\dth of/.test(n)));
});

test('the script file carries every note and what stock Megatron-LM cannot run, and says which micro-batch is which', async () => {
  const M = await loadModule();
  const presets = JSON.parse(M.presets());
  const cluster = presets.clusters.find((c) => c.id === 'demo-mixed-16');
  const model = presets.models.find((m) => m.id === 'gpt3-1.7b');
  const devOf = (id) => presets.devices.find((d) => d.id === id) ?? null;
  const check = (plan, training) => {
    const sc = { model: 'gpt3-1.7b', cluster: 'demo-mixed-16', training };
    const est = JSON.parse(M.estimate(JSON.stringify(sc), JSON.stringify(plan)));
    assert.ok(!est.error, est.error?.message);
    const r = megatronArgs(est, { model, training }, { cluster, modelId: 'gpt3-1.7b', deviceOf: devOf, context: 'ctx' });
    const head = r.script.slice(0, r.script.indexOf('\ntorchrun'));
    assert.ok(r.script.startsWith('#!/bin/sh\n'));
    assert.ok(head.split('\n').slice(1).every((l) => l.startsWith('#')), 'the header is comments only');
    for (const n of r.notes) assert.ok(head.includes(`#  - ${n}`), `note in the script: ${n}`);
    for (const u of r.unsupported) assert.ok(head.includes(`#  - ${u}.`), `unsupported part in the script: ${u}`);
    assert.equal(/NOT RUNNABLE AS PLANNED ON STOCK MEGATRON-LM/.test(head), r.unsupported.length > 0);
    assert.ok(r.script.endsWith(r.text.slice(r.text.indexOf('torchrun \\'))), 'the same command as the page shows');
    const { check: syntax } = runStub(r.script.replace('#!/bin/sh\n', ''));
    assert.equal(syntax.status, 0, syntax.stderr);
    return { r, head, est };
  };
  // bf16 on V100 (fp16), FlashAttention dropped, an uneven split (the experimental layout flag)
  const uneven = { micro_batch_size: 8, num_micro_batches: 8, stages: [{ group: 0, num_layers: 7, tp: 1, dp: 4 }, { group: 0, num_layers: 6, tp: 1, dp: 4 },
    { group: 1, num_layers: 5, tp: 1, dp: 4 }, { group: 1, num_layers: 6, tp: 1, dp: 4 }] };
  const a = check(uneven, { global_batch_size: 64, precision: 'bf16' });
  assert.match(a.head, /--fp16, not --bf16/);
  assert.match(a.head, /--use-flash-attn is left out/);
  assert.match(a.head, /experimental/);
  assert.match(a.head, /^# Micro-batch: --micro-batch-size 2 is one data-parallel replica's share \(Megatron's convention\) \(8 = DP 4 × 2\); the plan file's micro_batch_size 8 is the pipeline micro-batch summed over a stage's data-parallel replicas, and --global-batch-size 64 is micro_batch_size 8 × num_micro_batches 8\.$/m);
  assert.match(a.head, /^# Planned for ctx\.$/m);
  // TP and DP per stage: not runnable as planned, and the micro-batch per replica differs
  const perStage = { micro_batch_size: 8, num_micro_batches: 8, stages: [{ group: 0, num_layers: 12, tp: 2, dp: 4 }, { group: 1, num_layers: 12, tp: 1, dp: 8 }] };
  const b = check(perStage, { global_batch_size: 64, precision: 'bf16' });
  assert.ok(b.r.unsupported.length >= 2);
  assert.match(b.head, /^# Micro-batch: Megatron's --micro-batch-size is one data-parallel replica's share, left as MICRO_BATCH because this plan's replicas take 2\/1 samples per stage; the plan file's micro_batch_size 8/m);
});

// Megatron-LM's MoE, MLA and MTP argument names (megatron/training/arguments.py at d96d76c068,
// 2026-08-22, as digested in shared/reference/frontier-facts.md section 5): every flag the MoE
// export writes must be one of these or a flag the dense export writes.
const MOE_FLAGS = new Set(['--num-experts', '--moe-router-topk', '--moe-ffn-hidden-size', '--moe-shared-expert-intermediate-size', '--moe-layer-freq',
  '--expert-model-parallel-size', '--expert-tensor-parallel-size', '--moe-token-dispatcher-type', '--moe-flex-dispatcher-backend', '--moe-grouped-gemm',
  '--moe-shared-expert-overlap', '--overlap-moe-expert-parallel-comm', '--delay-wgrad-compute',
  '--multi-latent-attention', '--q-lora-rank', '--kv-lora-rank', '--qk-head-dim', '--qk-pos-emb-head-dim', '--v-head-dim', '--mtp-num-layers', '--kv-channels']);

test('an MoE plan exports its experts, MLA, MTP and expert grid; every flag name is Megatron-LM\'s; sh -n and the stub pass', async () => {
  const M = await loadModule();
  const presets = JSON.parse(M.presets());
  const dense = megatronArgs(JSON.parse(M.estimate(JSON.stringify({ model: 'llama3-8b', cluster: 'dgx-h100-16', training: { global_batch_size: 64 } }),
    JSON.stringify({ micro_batch_size: 8, num_micro_batches: 8, stages: [{ group: 0, num_layers: 32, tp: 2, dp: 8 }] }))),
  { model: presets.models.find((m) => m.id === 'llama3-8b'), training: { global_batch_size: 64 } }, { cluster: homog(M), modelId: 'llama3-8b' });
  const denseFlags = new Set(runStub(dense.text).args.filter((a) => a.startsWith('--')));
  for (const [id, ep] of [['deepseek-v3', 16], ['qwen3-30b-a3b', 8]]) {
    const model = presets.models.find((m) => m.id === id);
    const training = { global_batch_size: 64, sequence_parallel: true, distributed_optimizer: true, moe_token_dispatcher: id === 'deepseek-v3' ? 'flex' : 'alltoall',
      ...(id === 'deepseek-v3' ? { overlap_moe_expert_parallel_comm: true } : { moe_shared_expert_overlap: true }) };
    const plan = { micro_batch_size: 16, num_micro_batches: 4, stages: [{ group: 0, num_layers: model.num_layers, tp: 1, dp: 16, ep }] };
    const est = JSON.parse(M.estimate(JSON.stringify({ model: id, cluster: 'dgx-h100-16', training }), JSON.stringify(plan)));
    assert.ok(!est.error, JSON.stringify(est.error));
    assert.equal(est.stages[0].ep, ep);
    assert.equal(est.stages[0].edp, 16 / ep);
    const r = megatronArgs(est, { model, training }, { cluster: homog(M), modelId: id });
    const { check, run, args } = runStub(r.text);
    assert.equal(check.status, 0, check.stderr);
    assert.equal(run.status, 0, run.stderr);
    for (const a of args.filter((x) => x.startsWith('--'))) assert.ok(denseFlags.has(a) || MOE_FLAGS.has(a) || !a.startsWith('--moe') && !a.startsWith('--expert'), `${id}: ${a}`);
    for (const a of args.filter((x) => x.startsWith('--moe') || x.startsWith('--expert') || x.includes('lora') || x.includes('head-dim'))) assert.ok(MOE_FLAGS.has(a), `${id}: ${a} is not a Megatron-LM flag`);
    assert.equal(argOf(args, '--num-experts'), String(model.num_experts));
    assert.equal(argOf(args, '--moe-router-topk'), String(model.moe_top_k));
    assert.equal(argOf(args, '--moe-ffn-hidden-size'), String(model.moe_ffn_hidden_size));
    assert.equal(argOf(args, '--expert-model-parallel-size'), String(ep));
    assert.equal(argOf(args, '--expert-tensor-parallel-size'), '1');
    assert.ok(args.includes('--moe-grouped-gemm'));
    if (id === 'deepseek-v3') {
      assert.equal(argOf(args, '--moe-layer-freq'), '([0]*3+[1]*58)', 'the first three blocks dense, as Megatron-Bridge writes it');
      assert.ok(args.includes('--overlap-moe-expert-parallel-comm') && args.includes('--delay-wgrad-compute'));
      assert.equal(argOf(args, '--moe-shared-expert-intermediate-size'), '2048');
      assert.ok(args.includes('--multi-latent-attention'));
      assert.equal(argOf(args, '--q-lora-rank'), '1536');
      assert.equal(argOf(args, '--kv-lora-rank'), '512');
      assert.equal(argOf(args, '--qk-head-dim'), '128');
      assert.equal(argOf(args, '--qk-pos-emb-head-dim'), '64');
      assert.equal(argOf(args, '--v-head-dim'), '128');
      assert.equal(argOf(args, '--mtp-num-layers'), '1');
      assert.equal(argOf(args, '--moe-token-dispatcher-type'), 'flex');
      assert.equal(argOf(args, '--moe-flex-dispatcher-backend'), 'deepep');
      assert.ok(!args.includes('--moe-shared-expert-overlap'), 'not with flex');
    } else {
      assert.equal(argOf(args, '--moe-layer-freq'), '1');
      assert.equal(argOf(args, '--moe-token-dispatcher-type'), 'alltoall');
    }
    assert.ok(r.notes.some((n) => /balanced routing/.test(n)));
  }
  // --cuda-graph-impl (arguments.py: none, local, transformer_engine, full_iteration), with the
  // capacity a dropless MoE needs under a full-iteration graph said in the notes
  const model = presets.models.find((m) => m.id === 'qwen3-30b-a3b');
  for (const graph of ['none', 'transformer_engine', 'full_iteration']) {
    const training = { global_batch_size: 64, cuda_graph_impl: graph };
    const plan = { micro_batch_size: 16, num_micro_batches: 4, stages: [{ group: 0, num_layers: model.num_layers, tp: 1, dp: 16, ep: 8 }] };
    const est = JSON.parse(M.estimate(JSON.stringify({ model: 'qwen3-30b-a3b', cluster: 'dgx-h100-16', training }), JSON.stringify(plan)));
    assert.ok(!est.error, JSON.stringify(est.error));
    const r = megatronArgs(est, { model, training }, { cluster: homog(M), modelId: 'qwen3-30b-a3b' });
    const { check, args } = runStub(r.text);
    assert.equal(check.status, 0, check.stderr);
    if (graph === 'none') assert.equal(argOf(args, '--cuda-graph-impl'), undefined);
    else assert.equal(argOf(args, '--cuda-graph-impl'), graph);
    assert.equal(r.notes.some((n) => /--moe-expert-rank-capacity-factor/.test(n)), graph === 'full_iteration');
  }
});

test('renameDevices: ids and full names become the names the inputs show, whole names only, the longest first', () => {
  const names = [['a100-sxm4-80gb', 'A100 SXM4 80GB'], ['NVIDIA A100 SXM4 80GB', 'A100 SXM4 80GB'], ['v100-sxm2-32gb', 'V100 SXM2 32GB'],
    ['custom-1', 'Custom 1 (from NVIDIA A100 SXM4 80GB)'], ['Custom 1 (from NVIDIA A100 SXM4 80GB)', 'Custom 1 (from NVIDIA A100 SXM4 80GB)']];
  assert.equal(renameDevices('group 0 (NVIDIA A100 SXM4 80GB): 2 -> 4 nodes', names), 'group 0 (A100 SXM4 80GB): 2 -> 4 nodes');
  assert.equal(renameDevices('on a100-sxm4-80gb+v100-sxm2-32gb, (v100-sxm2-32gb)', names), 'on A100 SXM4 80GB+V100 SXM2 32GB, (V100 SXM2 32GB)');
  assert.equal(renameDevices('my-a100-sxm4-80gb-2 and a100-sxm4-80gbx', names), 'my-a100-sxm4-80gb-2 and a100-sxm4-80gbx', 'a part of another word stays');
  assert.equal(renameDevices('Custom 1 (from NVIDIA A100 SXM4 80GB) is custom-1', names), 'Custom 1 (from NVIDIA A100 SXM4 80GB) is Custom 1 (from NVIDIA A100 SXM4 80GB)');
  assert.equal(renameDevices('a100-sxm4-80gb', [['a100-sxm4-80gb', 'A'], ['a100-sxm4-80gb', 'B']]), 'B', 'a later pair wins');
  assert.equal(renameDevices('(x.y)', [['x.y', 'X']]), '(X)', 'a name is matched as text, not as a pattern');
  assert.equal(renameDevices('xzy', [['x.y', 'X']]), 'xzy');
  assert.equal(renameDevices('nothing', []), 'nothing');
});
