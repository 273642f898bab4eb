// The Megatron-LM export pastes into a POSIX shell as is: for the core's best plan on every preset
// cluster, the exported command passes `sh -n`, and run through a stub launcher (a torchrun
// function that prints its arguments) it passes exactly the plan's parallel sizes, layer split and
// batch; a placeholder left unset stops the shell with its message. Pre-Ampere GPUs, the script
// file's notes, MoE plans and device names. Interleaved plans and the overlap switches:
// megatron-interleaved.test.mjs; the training flags without the engine: megatron-flags.test.mjs.
//   POSEIDON_BUILD_WASM=build-wasm node --test tests/web/megatron.test.mjs
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { loadModule } from './load-module.mjs';
import { ENV, runStub, argOf, homog } from './megatron-helpers.mjs';
import { megatronArgs, deviceCaps, pipelineLayout } from '../../web/megatron.js';
import { moeLayerFreq, sharedExpertWidth } from '../../web/megatron-moe.js';
import { splitFlags } from '../../web/megatron-layout.js';
import { renameDevices, shortDeviceName } from '../../web/context.js';

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
  // (the demo cluster at a batch of 128, whose best plan puts stages on its V100s: at 64 the A100s alone win)
  const cases = [['demo-mixed-16', 'gpt3-1.7b', true, 128], ['aws-g4dn-12xlarge-4', 'gpt3-1.7b', true, 64], ['dgx-h100-16', 'llama3-8b', false, 64]];
  for (const [clusterId, modelId, old, batch] of cases) {
    const cluster = presets.clusters.find((c) => c.id === clusterId);
    assert.ok(cluster, clusterId);
    const training = { global_batch_size: batch };
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

// Model flags of frontier-facts.md section 5 (Megatron-LM arguments.py at d96d76c068) for windowed attention.
const WINDOW_FLAGS = new Set(['--window-size', '--window-attn-skip-freq']);

test('what the planner costed is what the command builds: shared experts by count, the sliding window, the MTP layer in the layout', async () => {
  const M = await loadModule();
  const presets = JSON.parse(M.presets());
  // a config.json gives DeepSeek-V3's shared expert as a count (hf.js): the width is the core's, count x the routed experts'
  const ds = presets.models.find((m) => m.id === 'deepseek-v3');
  const { moe_shared_expert_ffn_hidden_size: width, ...byCount } = ds;
  assert.equal(sharedExpertWidth(byCount), width, 'one shared expert of the routed width');
  assert.equal(sharedExpertWidth({ num_shared_experts: 2, moe_ffn_hidden_size: 768 }), 1536);
  assert.equal(sharedExpertWidth({ num_experts: 8, moe_top_k: 2 }), 0);
  const training = { global_batch_size: 64, distributed_optimizer: true };
  const plan = { micro_batch_size: 16, num_micro_batches: 4, stages: [{ group: 0, num_layers: ds.num_layers, tp: 1, dp: 16, ep: 16 }] };
  const est = JSON.parse(M.estimate(JSON.stringify({ model: { ...byCount, id: undefined }, cluster: 'dgx-h100-16', training }), JSON.stringify(plan)));
  assert.ok(!est.error, JSON.stringify(est.error));
  const r = megatronArgs(est, { model: byCount, training }, { cluster: homog(M), modelId: 'deepseek-v3' });
  assert.equal(argOf(runStub(r.text).args, '--moe-shared-expert-intermediate-size'), String(width));
  // GPT-OSS: a 128-token window on every other block
  const oss = presets.models.find((m) => m.id === 'gpt-oss-120b');
  const ossPlan = { micro_batch_size: 16, num_micro_batches: 4, stages: [{ group: 0, num_layers: oss.num_layers, tp: 1, dp: 16, ep: 16 }] };
  const ossEst = JSON.parse(M.estimate(JSON.stringify({ model: 'gpt-oss-120b', cluster: 'dgx-h100-16', training }), JSON.stringify(ossPlan)));
  assert.ok(!ossEst.error, JSON.stringify(ossEst.error));
  const w = megatronArgs(ossEst, { model: oss, training }, { cluster: homog(M), modelId: 'gpt-oss-120b' });
  const { check, run, args } = runStub(w.text);
  assert.equal(check.status, 0, check.stderr);
  assert.equal(run.status, 0, run.stderr);
  assert.equal(argOf(args, '--window-size'), '127,0');
  assert.equal(argOf(args, '--window-attn-skip-freq'), '2');
  for (const a of args.filter((x) => x.startsWith('--window'))) assert.ok(WINDOW_FLAGS.has(a), a);
  assert.match(w.notes.join(' '), /--window-size 127,0/);
  // every block windowed (no pattern): the window alone; pattern 1, every block full: no window flag
  const flagsOf = (model) => megatronArgs(ossEst, { model, training }, { cluster: homog(M), modelId: 'gpt-oss-120b' }).args.map(([n]) => n);
  const { sliding_window_pattern: _, ...everyBlock } = oss;
  assert.ok(flagsOf(everyBlock).includes('--window-size') && !flagsOf(everyBlock).includes('--window-attn-skip-freq'));
  assert.ok(!flagsOf({ ...oss, sliding_window_pattern: 1 }).some((n) => n.startsWith('--window')));
  // the MTP layer before the loss in the last chunk, also with virtual stages
  assert.equal(pipelineLayout([2, 3], 1, null, 1), 'Ett|tttmL');
  assert.equal(pipelineLayout([2, 2], 2, null, 2), 'Et|t|t|tmmL');
  assert.equal(splitFlags([15, 16, 15, 15], 1, null, 1).flags[0][1].slice(-4), 'ttmL', 'DeepSeek-V3 split 15/16/15/15 with its MTP layer');
  assert.equal(pipelineLayout([2, 3]), 'Ett|tttL', 'no MTP: as before');
  // the first dense blocks also over a list of MoE blocks
  assert.equal(moeLayerFreq({ num_layers: 4, moe_layer_freq: [1, 1, 0, 1], first_dense_layers: 1 }), '[0,1,0,1]');
  assert.equal(moeLayerFreq({ num_layers: 4, moe_layer_freq: [1, 0, 1, 0] }), '[1,0,1,0]');
});
