// The training flags of the Megatron-LM export (web/megatron.js), checked without the engine: the
// gradient reduction dtype, the low-precision recipes, context parallelism and FSDP, recomputation
// (named modules, some blocks), the deferred head weight gradient, the MoE overlaps, and a plan's
// searched precision and FSDP. Split from megatron.test.mjs, which runs the exported command.
//   node --test tests/web/megatron-flags.test.mjs
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { megatronArgs, gradReduceDtype, lowPrecisionFlags } from '../../web/megatron.js';
import { moeFlags } from '../../web/megatron-moe.js';
import { planChoicesText, planScenario, planTraining } from '../../web/plan-choices.js';

test('the gradient reduction dtype follows the core: the switch, else the stack (fp32 main grads or the precision)', () => {
  assert.deepStrictEqual(gradReduceDtype({ grad_reduce_dtype: 'bf16' }, null).dtype, 'bf16');
  assert.equal(gradReduceDtype({}, null).dtype, 'fp32', 'megatron-core keeps fp32 main grads');
  assert.equal(gradReduceDtype({ precision: 'bf16' }, { grad_fp32: false }).dtype, 'bf16');
  assert.equal(gradReduceDtype({ precision: 'fp16', stack: { grad_fp32: false } }, null).dtype, 'fp16');
  assert.equal(gradReduceDtype({ precision: 'bf16' }, { grad_fp32: true }).dtype, 'fp32');
  const est = { iteration_time_s: 1, plan: { micro_batch_size: 2, num_micro_batches: 4, stages: [] }, stages: [{ index: 0, device: 'x', group: 0, tp: 1, dp: 2, gpus: 2, num_layers: 4, samples_per_replica: 1 }] };
  const model = { name: 'm', num_layers: 4, hidden_size: 256, num_attention_heads: 4, seq_length: 128 };
  const r = megatronArgs(est, { model, training: { precision: 'bf16' } }, { stack: { grad_fp32: false } });
  assert.ok(r.text.includes('--grad-reduce-in-bf16'), 'a stack without fp32 gradients reduces in bf16: the flag keeps the plan\'s timing');
});

test('each low precision writes its Transformer Engine recipe flags, named as in Megatron-LM arguments.py', () => {
  // Names and values from shared/reference/frontier-facts.md, section 5 (arguments.py at d96d76c068):
  // --fp8-format {e4m3,hybrid}, --fp8-recipe {tensorwise,delayed,mxfp8,blockwise,custom},
  // --fp4-format e2m1, --fp4-recipe {nvfp4,custom}, --fp8-param-gather, --fp4-param-gather.
  const known = { '--fp8-format': ['e4m3', 'hybrid'], '--fp8-recipe': ['tensorwise', 'delayed', 'mxfp8', 'blockwise'], '--fp4-format': ['e2m1'],
    '--fp4-recipe': ['nvfp4'], '--fp8-param-gather': [], '--fp4-param-gather': [] };
  const expected = { fp8: 'tensorwise', 'fp8-delayed': 'delayed', 'fp8-blockwise': 'blockwise', mxfp8: 'mxfp8', nvfp4: 'nvfp4' };
  for (const [precision, recipe] of Object.entries(expected)) {
    const flags = lowPrecisionFlags(precision, { fp8_param_gather: true });
    for (const [name, value] of flags) {
      assert.ok(name in known, `${precision}: ${name} is a Megatron-LM flag`);
      if (value !== undefined) assert.ok(known[name].includes(value), `${precision}: ${name} ${value}`);
    }
    assert.equal(flags.find(([n]) => n.endsWith('-recipe'))[1], recipe);
    assert.equal(flags.at(-1)[0], precision === 'nvfp4' ? '--fp4-param-gather' : '--fp8-param-gather');
  }
  assert.deepEqual(lowPrecisionFlags('bf16', { fp8_param_gather: true }), []);
  assert.deepEqual(lowPrecisionFlags('fp8'), [['--fp8-format', 'hybrid'], ['--fp8-recipe', 'tensorwise']]);
});

test('context parallelism and FSDP write their Megatron-LM flags; CP counts in the world size', () => {
  const est = { plan: { micro_batch_size: 2, num_micro_batches: 32, virtual_stages: 1 },
    stages: [{ tp: 4, dp: 2, cp: 2, gpus: 16, num_layers: 32, device: 'h100-sxm5-80gb', samples_per_replica: 1 }] };
  const scenario = { model: 'llama3-8b', training: { global_batch_size: 64, fsdp: true, cp_comm_type: 'a2a' } };
  const out = megatronArgs(est, scenario, {});
  const flag = (name) => out.args.find(([n]) => n === name);
  assert.deepEqual(flag('--context-parallel-size'), ['--context-parallel-size', 2]);
  assert.deepEqual(flag('--cp-comm-type'), ['--cp-comm-type', 'a2a']);
  assert.deepEqual(flag('--use-megatron-fsdp'), ['--use-megatron-fsdp']);
  assert.deepEqual(flag('--data-parallel-sharding-strategy'), ['--data-parallel-sharding-strategy', 'optim_grads_params']);
  assert.equal(out.world, 16);
  // ZeRO-2: the strategy Megatron-LM names optim_grads (arguments.py --data-parallel-sharding-strategy)
  const zero2 = megatronArgs(est, { ...scenario, training: { ...scenario.training, fsdp_sharding: 'optim_grads' } }, {});
  assert.deepEqual(zero2.args.find(([n]) => n === '--data-parallel-sharding-strategy'), ['--data-parallel-sharding-strategy', 'optim_grads']);
  // no CP: no flag
  const plain = megatronArgs({ ...est, stages: [{ ...est.stages[0], cp: undefined, gpus: 8 }] }, { ...scenario, training: { global_batch_size: 64 } }, {});
  assert.equal(plain.args.find(([n]) => n === '--context-parallel-size'), undefined);
  assert.equal(plain.args.find(([n]) => n === '--use-megatron-fsdp'), undefined);
});

test('a plan that carries a searched precision and FSDP choice exports them, not the scenario\'s training', () => {
  const est = { plan: { micro_batch_size: 2, num_micro_batches: 32, virtual_stages: 1, precision: 'fp8', fsdp: true },
    stages: [{ tp: 2, dp: 4, gpus: 8, num_layers: 32, device: 'h100-sxm5-80gb', samples_per_replica: 1 }] };
  const scenario = { model: 'llama3-8b', training: { global_batch_size: 64, precision: 'bf16', distributed_optimizer: true } };
  const out = megatronArgs(est, scenario, {});
  const flag = (name) => out.args.find(([n]) => n === name);
  assert.deepEqual(flag('--bf16'), ['--bf16']);
  assert.deepEqual(flag('--fp8-format'), ['--fp8-format', 'hybrid']);
  assert.deepEqual(flag('--fp8-recipe'), ['--fp8-recipe', 'tensorwise']);
  assert.deepEqual(flag('--use-megatron-fsdp'), ['--use-megatron-fsdp']);
  // the choice bf16 without FSDP: neither
  const bf16 = megatronArgs({ ...est, plan: { ...est.plan, precision: 'bf16', fsdp: false } }, { ...scenario, training: { ...scenario.training, precision: 'fp8', fsdp: true } }, {});
  assert.equal(bf16.args.find(([n]) => n === '--fp8-format'), undefined);
  assert.equal(bf16.args.find(([n]) => n === '--use-megatron-fsdp'), undefined);
});

test('the deferred head weight gradient writes its two flags (Megatron-LM arguments.py) and says what the plan times', () => {
  const est = { plan: { micro_batch_size: 2, num_micro_batches: 32, virtual_stages: 1 },
    stages: [{ tp: 2, dp: 4, gpus: 8, num_layers: 16, device: 'h100-sxm5-80gb', samples_per_replica: 1 }, { tp: 2, dp: 4, gpus: 8, num_layers: 16, device: 'h100-sxm5-80gb', samples_per_replica: 1 }] };
  const run = (training) => megatronArgs(est, { model: 'llama3-8b', training: { global_batch_size: 64, ...training } }, {});
  const on = run({ defer_embedding_wgrad_compute: true, wgrad_deferral_limit: 8 });
  assert.deepEqual(on.args.find(([n]) => n === '--defer-embedding-wgrad-compute'), ['--defer-embedding-wgrad-compute']);
  assert.deepEqual(on.args.find(([n]) => n === '--wgrad-deferral-limit'), ['--wgrad-deferral-limit', 8]);
  assert.ok(on.notes.some((n) => /--defer-embedding-wgrad-compute: the planner keeps the deferred buffers/.test(n)));
  // one stage: Megatron-Core refuses the deferral, so no flag, and a note says why
  const one = megatronArgs({ ...est, stages: [{ ...est.stages[0], num_layers: 32 }] }, { model: 'llama3-8b', training: { global_batch_size: 64, defer_embedding_wgrad_compute: true } }, {});
  assert.equal(one.args.find(([n]) => n === '--defer-embedding-wgrad-compute'), undefined);
  assert.ok(one.notes.some((n) => /refuses it without pipeline parallelism/.test(n)));
  const all = run({ defer_embedding_wgrad_compute: true });
  assert.equal(all.args.find(([n]) => n === '--wgrad-deferral-limit'), undefined);
  assert.equal(run({}).args.find(([n]) => n === '--defer-embedding-wgrad-compute'), undefined);
});

test('full recompute of the first N blocks writes the block method; of every block the uniform one', () => {
  const est = { plan: { micro_batch_size: 2, num_micro_batches: 8, virtual_stages: 1 },
    stages: [{ tp: 1, dp: 8, gpus: 8, num_layers: 32, device: 'h100-sxm5-80gb', samples_per_replica: 1 }] };
  const flags = (training) => megatronArgs(est, { model: 'llama3-8b', training: { global_batch_size: 16, ...training } }, {}).args.filter(([n]) => /^--recompute/.test(n));
  assert.deepEqual(flags({ recompute: 'full', recompute_num_layers: 4 }), [['--recompute-granularity', 'full'], ['--recompute-method', 'block'], ['--recompute-num-layers', 4]]);
  assert.deepEqual(flags({ recompute: 'full' }), [['--recompute-granularity', 'full'], ['--recompute-method', 'uniform'], ['--recompute-num-layers', 1]]);
});

test('planTraining: the plan\'s precision and FSDP replace the training\'s; the low-precision gather only where it applies', () => {
  const t = { global_batch_size: 8, precision: 'fp8', fp8_param_gather: true, distributed_optimizer: true };
  assert.equal(planTraining(t, {}), t);
  assert.deepEqual(planTraining(t, { precision: 'mxfp8' }), { ...t, precision: 'mxfp8' });
  assert.deepEqual(planTraining(t, { precision: 'bf16' }), { global_batch_size: 8, precision: 'bf16', distributed_optimizer: true });
  assert.deepEqual(planTraining({ ...t, distributed_optimizer: false, fsdp: true }, { fsdp: false }), { global_batch_size: 8, precision: 'fp8', distributed_optimizer: false, fsdp: false });
  assert.equal(planChoicesText({ precision: 'fp8', fsdp: false }), 'fp8, no FSDP');
  assert.equal(planChoicesText({ fsdp: true }), 'FSDP');
  assert.equal(planChoicesText({}), '');
  const sc = { model: 'm', training: t };
  assert.equal(planScenario(sc, { stages: [] }), sc);
  assert.equal(planScenario(sc, { precision: 'bf16' }).training.precision, 'bf16');
});

test('a plan that carries a searched recompute choice exports it and scores in it: the block count with full, the named modules with the scenario\'s selective only', () => {
  const est = { plan: { micro_batch_size: 2, num_micro_batches: 8, virtual_stages: 1, recompute: 'full', recompute_num_layers: 2 },
    stages: [{ tp: 1, dp: 8, gpus: 8, num_layers: 32, device: 'h100-sxm5-80gb', samples_per_replica: 1 }] };
  const scenario = { model: 'llama3-8b', training: { global_batch_size: 16, recompute: 'selective', recompute_modules: ['core_attn', 'mlp'] } };
  const flags = (e, sc = scenario) => megatronArgs(e, sc, {}).args.filter(([n]) => /^--recompute/.test(n));
  assert.deepEqual(flags(est), [['--recompute-granularity', 'full'], ['--recompute-method', 'block'], ['--recompute-num-layers', 2]]);
  assert.deepEqual(flags({ ...est, plan: { ...est.plan, recompute: 'none', recompute_num_layers: undefined } }), []);
  // selective over the scenario's selective keeps its modules; over full, the attention core alone
  assert.deepEqual(flags({ ...est, plan: { ...est.plan, recompute: 'selective', recompute_num_layers: undefined } }), [['--recompute-granularity', 'selective'], ['--recompute-modules', 'core_attn', 'mlp']]);
  const full = { ...scenario, training: { global_batch_size: 16, recompute: 'full', recompute_num_layers: 4 } };
  assert.deepEqual(flags({ ...est, plan: { ...est.plan, recompute: 'selective', recompute_num_layers: undefined } }, full), [['--recompute-activations']]);
  assert.deepEqual(planTraining(full.training, { recompute: 'full' }), { global_batch_size: 16, recompute: 'full' });
  assert.deepEqual(planTraining(scenario.training, { recompute: 'none' }), { global_batch_size: 16, recompute: 'none' });
  assert.equal(planScenario(full, { recompute: 'none' }).training.recompute, 'none');
  assert.equal(planChoicesText({ precision: 'fp8', recompute: 'full', recompute_num_layers: 1 }), 'fp8, recompute 1 block');
  assert.equal(planChoicesText({ recompute: 'full' }), 'full recompute');
  assert.equal(planChoicesText({ recompute: 'none', fsdp: true }), 'FSDP, no recompute');
  assert.equal(planChoicesText({ recompute: 'selective' }), 'selective recompute');
});

test('selective recompute of named modules writes --recompute-modules with Megatron-Core\'s names; core_attn alone stays --recompute-activations', () => {
  // frontier-facts.md section 5: --recompute-granularity {full,selective}, --recompute-modules
  // (core_attn default; moe_act, layernorm, mla_up_proj, mlp, moe, shared_experts)
  const names = new Set(['core_attn', 'moe_act', 'layernorm', 'mla_up_proj', 'mlp', 'moe', 'shared_experts']);
  const est = { plan: { micro_batch_size: 2, num_micro_batches: 8, virtual_stages: 1 },
    stages: [{ tp: 1, dp: 8, gpus: 8, num_layers: 32, device: 'h100-sxm5-80gb', samples_per_replica: 1 }] };
  const run = (training) => megatronArgs(est, { model: 'llama3-8b', training: { global_batch_size: 16, ...training } }, {});
  const named = run({ recompute: 'selective', recompute_modules: ['mla_up_proj', 'mlp'] });
  assert.deepEqual(named.args.find(([n]) => n === '--recompute-granularity'), ['--recompute-granularity', 'selective']);
  const flag = named.args.find(([n]) => n === '--recompute-modules');
  assert.deepEqual(flag, ['--recompute-modules', 'mla_up_proj', 'mlp']);
  for (const m of flag.slice(1)) assert.ok(names.has(m), m);
  assert.match(named.text, /--recompute-modules mla_up_proj mlp/);
  assert.equal(named.args.find(([n]) => n === '--recompute-activations'), undefined);
  for (const training of [{ recompute: 'selective' }, { recompute: 'selective', recompute_modules: ['core_attn'] }]) {
    const plain = run(training);
    assert.ok(plain.args.some(([n]) => n === '--recompute-activations'));
    assert.equal(plain.args.find(([n]) => n === '--recompute-modules'), undefined);
  }
});

test('--moe-shared-expert-overlap is written for a model with shared experts under the alltoall dispatcher only', () => {
  const model = { num_layers: 4, num_experts: 8, moe_top_k: 2, moe_ffn_hidden_size: 64, moe_shared_expert_ffn_hidden_size: 128 };
  const stages = [{ ep: 8, etp: 1 }];
  const flags = (training, m = model) => moeFlags(m, stages, training, { notes: [], unsupported: [] }).map(([n]) => n);
  assert.ok(flags({ moe_shared_expert_overlap: true }).includes('--moe-shared-expert-overlap'));
  assert.ok(!flags({ moe_shared_expert_overlap: true, moe_token_dispatcher: 'flex' }).includes('--moe-shared-expert-overlap'));
  assert.ok(!flags({ moe_shared_expert_overlap: true }, { ...model, moe_shared_expert_ffn_hidden_size: 0 }).includes('--moe-shared-expert-overlap'));
  assert.ok(!flags({}).includes('--moe-shared-expert-overlap'));
});

test('the combined 1F1B writes --overlap-moe-expert-parallel-comm with --delay-wgrad-compute', () => {
  const model = { num_layers: 4, num_experts: 8, moe_top_k: 2, moe_ffn_hidden_size: 64 };
  const flags = (training) => moeFlags(model, [{ ep: 8, etp: 1 }], training, { notes: [], unsupported: [] }).map(([n]) => n);
  const on = flags({ overlap_moe_expert_parallel_comm: true });
  assert.ok(on.includes('--overlap-moe-expert-parallel-comm') && on.includes('--delay-wgrad-compute'));
  assert.ok(!flags({}).includes('--overlap-moe-expert-parallel-comm'));
});
