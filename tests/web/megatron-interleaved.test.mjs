// The Megatron-LM export of interleaved plans and of the training's overlap switches (issue 13),
// for plans the core estimates: the virtual-pipeline flags or the layout (even and uneven stages,
// uneven chunks, Megatron-Core's account-for split), the micro-batch group, and the overlap
// switches' Megatron-Core flags, or notes where Megatron would refuse them or has no flag; each
// command passes `sh -n` and a stub launcher (split from megatron.test.mjs).
//   POSEIDON_BUILD_WASM=build-wasm node --test tests/web/megatron-interleaved.test.mjs
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { loadModule } from './load-module.mjs';
import { runStub, argOf, homog } from './megatron-helpers.mjs';
import { megatronArgs, pipelineLayout, accountForFlags } from '../../web/megatron.js';

const llama = (M) => JSON.parse(M.presets()).models.find((m) => m.id === 'llama3-8b');

// A llama3-8b plan on the H100 preset: estimated by the core, exported, and run through `sh -n`
// and the stub launcher, both of which must pass.
function exportAndRun(M, plan, training, options = {}) {
  const est = JSON.parse(M.estimate(JSON.stringify({ model: 'llama3-8b', cluster: 'dgx-h100-16', training }), JSON.stringify(plan)));
  assert.ok(!est.error, JSON.stringify(est.error));
  const r = megatronArgs(est, { model: llama(M), training }, { cluster: homog(M), modelId: 'llama3-8b', ...options });
  const { check, run, args } = runStub(r.text);
  assert.equal(check.status, 0, check.stderr);
  assert.equal(run.status, 0, run.stderr);
  return { est, r, args };
}

test('an interleaved plan with even stages: --num-virtual-stages-per-pipeline-rank, the older flag in the notes; sh -n and the stub pass', async () => {
  const M = await loadModule();
  const training = { global_batch_size: 64, distributed_optimizer: true };
  const plan = { micro_batch_size: 8, num_micro_batches: 8, schedule: 'interleaved-1f1b', virtual_stages: 2,
    stages: Array.from({ length: 4 }, () => ({ group: 0, num_layers: 8, tp: 2, dp: 2 })) };
  const { r, args } = exportAndRun(M, plan, training, { tokens: 1e11 });
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
  const { est, r, args } = exportAndRun(M, plan, training);
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
  const { r, args } = exportAndRun(M, plan, training);
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
