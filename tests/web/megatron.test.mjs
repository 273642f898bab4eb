// The Megatron-LM export pastes into a POSIX shell as is: for the core's best plan on every preset
// cluster, the exported command passes `sh -n`, and run through a stub launcher (a torchrun
// function that prints its arguments) it passes exactly the plan's parallel sizes, layer split and
// batch; a placeholder left unset stops the shell with its message.
//   POSEIDON_BUILD_WASM=build-wasm node --test tests/web/megatron.test.mjs
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { spawnSync } from 'node:child_process';
import { loadModule } from './load-module.mjs';
import { megatronArgs } from '../../web/megatron.js';

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
      const sc = { model: modelId, training: { global_batch_size: gbs, recompute: 'selective' }, cluster: cluster.id };
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
      if (layout) assert.deepStrictEqual(layout.split('|').map((s) => (s.match(/t/g) || []).length), layers, 'the layout reaches Megatron intact');
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
  assert.equal(argOf(ok.args, '--nproc_per_node'), '8');
  const { DATA_PATH, ...noData } = ENV;
  void DATA_PATH;
  const missing = runStub(r.text, noData);
  assert.notEqual(missing.run.status, 0);
  assert.match(missing.run.stderr, /set DATA_PATH to the preprocessed dataset prefix/);
});
