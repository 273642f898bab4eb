// Megatron-LM launch command for a plan (../shared/reference/megatron-args.md). One POSIX shell
// command with backslash continuations, pasteable as is: values holding shell characters are
// quoted, and what the planner cannot know (data, tokenizer, addresses, learning rate) is a
// ${VAR:?message} placeholder, so the shell stops with that message if it is left unset.
// What stock Megatron-LM cannot express (per-stage TP or DP, replicas with different sample
// counts) is said plainly in the notes and left as a loud placeholder, never silently dropped.
// Pure (no DOM), tested in node (tests/web/megatron.test.mjs runs the command through sh).

import { pipelineLayout, accountForFlags, nearestEvenSplit, splitFlags } from './megatron-layout.js';
import { moeFlags } from './megatron-moe.js';
import { planTraining } from './plan-choices.js';

export { pipelineLayout, accountForFlags, nearestEvenSplit };

/** rope_theta of the preset models (Hugging Face configs); others use Megatron's default 10000 */
const ROTARY_BASE = [[/llama-?3|llama3/i, 500000], [/qwen2/i, 1000000], [/llama-?2|llama2|mistral/i, 10000]];

const uniq = (xs) => [...new Set(xs)];
const q = (v) => {
  const t = String(v);
  return /^[A-Za-z0-9_.,:/=+-]+$/.test(t) ? t : `'${t.replace(/'/g, `'\\''`)}'`;
};
/** ${NAME:?message}, double-quoted so that it expands */
const need = (name, message) => `"\${${name}:?${message.replace(/[`"\\$}]/g, '')}}"`;

/** the stage's samples per data-parallel replica (Megatron's --micro-batch-size), or null when its replicas differ */
function samplesPerReplica(st, plan) {
  if (Array.isArray(st.replicas) && st.replicas.length) {
    const s = uniq(st.replicas.map((r) => r.samples));
    if (s.length === 1 && Number.isFinite(s[0])) return s[0];
    return null;
  }
  if (Number.isFinite(st.samples_per_replica)) return st.samples_per_replica;
  return st.dp > 0 && plan.micro_batch_size % st.dp === 0 ? plan.micro_batch_size / st.dp : null;
}

/**
 * The dtype gradients are reduced in, as the core decides it (core/src/cost_model.cpp,
 * grad_bytes_per_param): training.grad_reduce_dtype, else fp32 when the stack keeps fp32 gradients
 * (Megatron-Core's main_grad), else the training precision. stack: the stack object, when known.
 */
export function gradReduceDtype(training, stack) {
  if (training.grad_reduce_dtype) return { dtype: training.grad_reduce_dtype, from: 'training.grad_reduce_dtype' };
  const st = stack ?? (typeof training.stack === 'object' && training.stack ? training.stack : null);
  if (!st || st.grad_fp32 !== false) return { dtype: 'fp32', from: st ? "the stack's grad_fp32" : 'the default stack' };
  return { dtype: training.precision ?? 'bf16', from: "the stack's grad_fp32 false and the precision" };
}

/**
 * Megatron-Core's overlap flags for the scenario's training switches (megatron-args.md, "Distributed
 * optimizer and overlap"). A switch whose flag would be refused by Megatron, or that has no flag
 * there, is said in the notes instead of written.
 */
function overlapFlags(training, { tp, pp = 2, stack, notes, unsupported }) {
  const args = [];
  if (training.overlap_grad_reduce) args.push(['--overlap-grad-reduce']);
  if (training.overlap_param_gather) {
    if (training.distributed_optimizer) {
      args.push(['--overlap-param-gather']);
      if (!training.overlap_grad_reduce) notes.push('--overlap-param-gather is written without --overlap-grad-reduce, as planned; some Megatron-LM releases accept it only together with --overlap-grad-reduce: add that flag if yours refuses the command (the planned time then changes: switch overlap_grad_reduce on in the planner to see it).');
    }
    else unsupported.push('training.overlap_param_gather is on without the distributed optimizer: --overlap-param-gather needs --use-distributed-optimizer, so it is not written');
  }
  if (training.tp_comm_overlap) {
    if (tp !== null && tp > 1 && training.sequence_parallel) {
      args.push(['--tp-comm-overlap']);
      notes.push('--tp-comm-overlap needs Transformer Engine (its userbuffers) and sequence parallelism (written); the planner hid the share of TP traffic the stack gives (tp_comm_overlap_fraction).');
    } else {
      notes.push(`training.tp_comm_overlap is on, but --tp-comm-overlap is not written: Megatron-Core accepts it only with tensor parallelism above 1 and --sequence-parallel (${tp === null ? 'TP differs per stage' : `TP ${tp}`}, sequence parallelism ${training.sequence_parallel ? 'on' : 'off'}).`);
    }
  }
  // --cuda-graph-impl (frontier-facts.md section 5); the model: docs/model.md, "Host dispatch and fixed costs"
  const graph = training.cuda_graph_impl;
  if (graph && graph !== 'none') {
    args.push(['--cuda-graph-impl', graph]);
    if (graph === 'full_iteration') notes.push('--cuda-graph-impl full_iteration: the planner took the iteration to replay without the host (no dispatch overhead, no host time of a dropless MoE layer). A dropless MoE layer needs static shapes under it: NVIDIA\'s recipes add a per-rank capacity (--moe-expert-rank-capacity-factor 1.5), whose padding the plan does not cost.');
    else notes.push(`--cuda-graph-impl ${graph} captures the modules you name with --cuda-graph-modules; the planner takes no time off for it.`);
  }
  // the deferred head weight gradient (Megatron-LM arguments.py; docs/model.md, "Memory per GPU")
  if (training.defer_embedding_wgrad_compute && pp > 1) {
    args.push(['--defer-embedding-wgrad-compute']);
    if (training.wgrad_deferral_limit > 0) args.push(['--wgrad-deferral-limit', training.wgrad_deferral_limit]);
    notes.push('--defer-embedding-wgrad-compute: the planner keeps the deferred buffers on the last stage and, with every micro-batch deferred, runs the head\'s weight gradients at the flush when every micro-batch is deferred; Megatron-Core requires --gradient-accumulation-fusion with it (its default).');
  } else if (training.defer_embedding_wgrad_compute) {
    notes.push('--defer-embedding-wgrad-compute is not written: Megatron-Core refuses it without pipeline parallelism, and the planner deferred nothing in this one-stage plan.');
  }
  const g = gradReduceDtype(training, stack);
  if (g.dtype === 'bf16') args.push(['--grad-reduce-in-bf16']);
  if (g.dtype === 'fp16') notes.push(`Gradients are reduced in fp16 in this plan (${g.from}); megatron-args.md lists no flag for that (Megatron-Core reduces in fp32, or in bf16 with --grad-reduce-in-bf16), so none is written.`);
  return args;
}

/**
 * What a device can run, from its data (docs/presets.md, "Devices"): the device JSON has no BF16 or
 * architecture field, but TF32 (tf32_tflops above 0) exists on exactly the NVIDIA generations
 * that have BF16 and that FlashAttention supports (Ampere, Ada, Hopper and newer); V100 (Volta),
 * T4 and the other Turing cards have neither. So an NVIDIA device (vendor "NVIDIA", or no vendor:
 * custom devices drop it) without tf32_tflops is taken as pre-Ampere: no BF16, no FlashAttention.
 * AMD devices (vendor "AMD" or an Infinity Fabric link; MI250X has BF16 but no TF32) are left as
 * they are. dev: the device object, or null when unknown (then nothing is assumed).
 */
export function deviceCaps(dev) {
  if (!dev || typeof dev !== 'object') return { known: false, bf16: true, flashAttn: true };
  const amd = /^amd$/i.test(String(dev.vendor ?? '')) || dev.intra_node_link === 'infinity_fabric';
  const nvidia = !amd && (dev.vendor === undefined || dev.vendor === null || dev.vendor === '' || /^nvidia$/i.test(String(dev.vendor)));
  const preAmpere = nvidia && !(Number(dev.tf32_tflops) > 0);
  // the device's own flash_attention false (the core's key: Volta and Turing presets) says so too
  return { known: true, bf16: !preAmpere, flashAttn: !preAmpere && dev.flash_attention !== false };
}

/**
 * The device objects of a plan's GPUs: each stage's (or replica's) cluster group's device, an
 * object inline in the cluster or an id resolved by deviceOf(id); [{ref, dev}] by the estimate's
 * device label.
 */
function planDevices(stages, cluster, deviceOf) {
  const groups = cluster?.groups || [];
  const out = new Map();
  const add = (label, group) => {
    const ref = Number.isInteger(group) ? groups[group]?.device : undefined;
    let dev = ref && typeof ref === 'object' ? ref : null;
    if (!dev && typeof deviceOf === 'function') dev = deviceOf(typeof ref === 'string' ? ref : label) ?? null;
    if (!out.has(label) || (!out.get(label) && dev)) out.set(label, dev);
  };
  for (const st of stages) {
    if (Array.isArray(st.replicas) && st.replicas.length) for (const r of st.replicas) add(String(r.device ?? st.device), r.group ?? st.group);
    else add(String(st.device), st.group);
  }
  return [...out].map(([label, dev]) => ({ label, dev, caps: deviceCaps(dev) }));
}

/** GPUs per node and nodes for torchrun from the cluster groups the plan uses */
function nodeCounts(est, cluster, world) {
  const groups = cluster?.groups || [];
  const used = uniq((est.stages || []).flatMap((st) => (Array.isArray(st.replicas) && st.replicas.length ? st.replicas.map((r) => r.group) : [st.group])));
  const gpn = uniq(used.map((g) => groups[g]?.gpus_per_node).filter((x) => Number.isInteger(x) && x > 0));
  if (gpn.length !== 1) return null;
  const nproc = Math.min(gpn[0], world);
  if (world % nproc) return null;
  return { nproc, nnodes: world / nproc };
}

/**
 * Megatron-Core's flags of the low-precision recipes (shared/reference/frontier-facts.md, section 5):
 * the scenario's precision names Transformer Engine's recipe; parameters stay bf16 (--bf16).
 */
const LOW_PRECISION = {
  fp8: [['--fp8-format', 'hybrid'], ['--fp8-recipe', 'tensorwise']],
  'fp8-delayed': [['--fp8-format', 'hybrid'], ['--fp8-recipe', 'delayed']],
  'fp8-blockwise': [['--fp8-format', 'e4m3'], ['--fp8-recipe', 'blockwise']],
  mxfp8: [['--fp8-format', 'e4m3'], ['--fp8-recipe', 'mxfp8']],
  nvfp4: [['--fp4-format', 'e2m1'], ['--fp4-recipe', 'nvfp4']],
};
export function lowPrecisionFlags(precision, training = {}) {
  const flags = LOW_PRECISION[precision];
  if (!flags) return [];
  const gather = training.fp8_param_gather ? [[precision === 'nvfp4' ? '--fp4-param-gather' : '--fp8-param-gather']] : [];
  return [...flags, ...gather];
}

/**
 * {ok, text, script, args, notes, unsupported, evenSplit, world, nnodes, nproc}: text is the
 * command with its header (the page shows it under the notes), script the file (`#!/bin/sh`, the
 * header with what stock Megatron-LM cannot run, the micro-batch convention and every note). ok is false only for a
 * plan without stages. scenario: {model (object), training}; options: cluster (object with
 * groups), modelId (preset id or name, for the rotary base), tokens (token budget: --train-iters),
 * deviceOf (device id → device object: presets or custom devices; decides --bf16/--fp16 and
 * --use-flash-attn, deviceCaps()), context (what was planned, web/context.js: a header line),
 * deviceName (the estimate's device label → the name the page shows: the notes and the comments
 * name devices as the inputs do; by default the label itself).
 */
export function megatronArgs(est, scenario, { cluster = null, modelId = null, tokens = null, version = '', stack = null, deviceOf = null, context = '', deviceName = (label) => label } = {}) {
  const stages = est?.stages || [];
  const plan = est?.plan || {};
  if (!stages.length) return { ok: false, reasons: ['the plan has no stages'], unsupported: [], notes: [] };
  const model = scenario?.model && typeof scenario.model === 'object' ? scenario.model : null;
  // a search's choice of precision and FSDP (plan.precision, plan.fsdp) is what the command trains with
  const training = planTraining(scenario?.training || {}, plan);
  const unsupported = [];
  const notes = [];
  const pp = stages.length;
  const tps = uniq(stages.map((s) => s.tp));
  const dps = uniq(stages.map((s) => s.dp));
  const mbs = uniq(stages.map((s) => samplesPerReplica(s, plan)));
  const devices = uniq(stages.flatMap((s) => (Array.isArray(s.replicas) && s.replicas.length ? s.replicas.map((r) => r.device) : [s.device]))).map((d) => deviceName(d));
  const layers = stages.map((s) => s.num_layers);
  const virtual = Number.isInteger(plan.virtual_stages) ? plan.virtual_stages : 1;
  const world = stages.reduce((a, s) => a + (s.gpus ?? s.tp * s.dp * (s.cp ?? 1)), 0);
  const cps = uniq(stages.map((s) => s.cp ?? 1));

  const tp = tps.length === 1 ? tps[0] : null;
  const dp = dps.length === 1 ? dps[0] : null;
  if (tp === null) unsupported.push(`tensor parallelism differs between stages (${stages.map((s) => s.tp).join('/')}): stock Megatron-LM has one --tensor-model-parallel-size for every stage, so TP is left as the placeholder TP; running this plan as planned needs a launcher with per-stage TP`);
  if (cps.length !== 1) unsupported.push(`context parallelism differs between stages (${stages.map((s) => s.cp ?? 1).join('/')}): stock Megatron-LM has one --context-parallel-size for every stage`);
  if (dp === null) unsupported.push(`data parallelism differs between stages (${stages.map((s) => s.dp).join('/')}): stock Megatron-LM derives one data-parallel size from the world size`);
  // why one --micro-batch-size cannot serve: replicas of one stage differ, or the stages do (their DP
  // differs while every stage takes the same pipeline micro-batch)
  const unevenReplicas = mbs.includes(null);
  const mbWhy = unevenReplicas
    ? 'replicas of a stage process different numbers of samples (the plan splits the micro-batch unevenly over different GPUs)'
    : `the micro-batch per replica differs between stages (${stages.map((st) => samplesPerReplica(st, plan)).join('/')}: their DP differs, and every stage takes the same pipeline micro-batch of ${plan.micro_batch_size})`;
  if (mbs.length !== 1 || mbs[0] === null) unsupported.push(`${mbWhy}: Megatron-LM gives every replica the same --micro-batch-size, left as the placeholder MICRO_BATCH`);
  if (stages.some((s) => Array.isArray(s.replicas) && uniq(s.replicas.map((r) => `${r.device}/${r.tp}`)).length > 1)) unsupported.push('a stage mixes device types or TP degrees among its replicas');

  // an interleaved plan's blocks per chunk (docs/formats.md, "Plan": chunk_layers)
  const planStages = Array.isArray(plan.stages) ? plan.stages : [];
  const chunkLayers = planStages.some((st) => Array.isArray(st?.chunk_layers)) ? layers.map((_, i) => planStages[i]?.chunk_layers ?? null) : null;
  const split = splitFlags(layers, virtual, chunkLayers, Number(model?.mtp_layers) > 0 ? Number(model.mtp_layers) : 0);
  const even = nearestEvenSplit(layers.reduce((a, b) => a + b, 0), pp);
  if (split.kind === 'first-last') notes.push(`The layers are split ${layers.join('/')}: expressed with --decoder-first/last-pipeline-num-layers (the middle stages are even).`);
  if (split.kind === 'layout' && split.chunks) notes.push(`The model chunks hold uneven layers (${split.chunks.map((cs) => cs.join('+')).join(' / ')} per stage): the command uses Megatron-Core's --pipeline-model-parallel-layout (E embedding, t a transformer layer, m an MTP layer, L the loss; a chunk may hold only E or only L).`);
  if (split.kind === 'layout' && !split.chunks) {
    notes.push(`The layers are split unevenly (${layers.join('/')}). Megatron-LM's even split cannot express this; the command uses Megatron-Core's --pipeline-model-parallel-layout (experimental, recent Megatron-Core releases), one string with a | between stages (E embedding, t a transformer layer, m an MTP layer, L the loss).`);
    notes.push(`Without that flag, the nearest even split is ${even.layers.join('/')} layers${even.flags.length ? ` (${even.flags.map((f) => f.join(' ')).join(' ')})` : ''}: replace the layout flag with ${even.flags.length ? 'those flags' : 'nothing'}; the plan's timing then changes (load it in the planner to see by how much).`);
  }
  if (split.kind === 'unexpressed') unsupported.push(`the layers are split ${layers.join('/')} with ${virtual} virtual stages, and not every stage's layers divide into ${virtual} equal chunks; write the layout for all virtual stages by hand (--pipeline-model-parallel-layout lists the stages of virtual rank 0, then 1, ...)`);
  if (split.kind === 'layout' && virtual > 1) notes.push(`Interleaved schedule with uneven ${split.chunks ? 'chunks' : 'stages'}: the layout lists the ${pp} × ${virtual} virtual stages (virtual rank 0 of every stage, then 1, ...), ${split.chunks ? "each chunk with the plan's layers (chunk_layers)" : `each chunk 1/${virtual} of its stage's layers`}; Megatron-Core takes the virtual pipeline size from it (add --num-virtual-stages-per-pipeline-rank ${virtual} if your release asks for it).`);
  if (split.kind === 'account') notes.push(`The plan's chunks are Megatron-Core's even split with ${split.flags.map((f) => f[0]).join(' and ')}: the embedding and/or the loss count as one layer each and the ${pp} × ${virtual} chunks take equal shares (the first chunk then holds a layer less for the embedding, the last a layer less for the loss), as Megatron-Bridge's Llama 3.1 405B recipes run.`);
  const group = Number.isInteger(plan.microbatch_group_size) && plan.microbatch_group_size > 0 ? plan.microbatch_group_size : null;

  const args = [];
  args.push(['--tensor-model-parallel-size', tp ?? need('TP', `the plan uses TP ${stages.map((s) => s.tp).join('/')} per stage; stock Megatron-LM needs one TP`)]);
  args.push(['--pipeline-model-parallel-size', pp]);
  if (virtual > 1 && split.kind !== 'layout') {
    args.push(['--num-virtual-stages-per-pipeline-rank', virtual]);
    const perChunk = split.kind === 'even' ? layers[0] / virtual : null;
    notes.push(`Interleaved 1F1B: ${virtual} model chunks per pipeline stage (--num-virtual-stages-per-pipeline-rank, newer releases)${Number.isInteger(perChunk) ? `; older releases take --num-layers-per-virtual-pipeline-stage ${perChunk} instead` : ''}. Most releases need the micro-batches per iteration (${plan.num_micro_batches}) to be a multiple of the ${pp} stages.`);
  }
  for (const f of split.flags) args.push(f.length > 1 ? [f[0], q(f[1])] : [f[0]]);
  // Megatron-Core's default group is the pipeline size; the plan's other group is written out
  if (virtual > 1 && group !== null && group !== pp) {
    args.push(['--microbatch-group-size-per-virtual-pipeline-stage', group]);
    notes.push(`The interleaved order runs ${group} micro-batches through a model chunk in a row (--microbatch-group-size-per-virtual-pipeline-stage; Megatron-Core's default is the ${pp} stages); releases before the tunable schedule (Megatron-LM 4295be1a6c, 2024-11) lack the flag.`);
  }
  const micro = mbs.length === 1 && mbs[0] !== null ? mbs[0] : null;
  args.push(['--micro-batch-size', micro ?? need('MICRO_BATCH', unevenReplicas ? 'replicas of a stage process different sample counts in this plan' : 'the micro-batch per replica differs between stages in this plan')]);
  args.push(['--global-batch-size', plan.micro_batch_size * plan.num_micro_batches]);

  const gated = Boolean(model?.gated_mlp);
  if (model) {
    args.push(['--num-layers', model.num_layers], ['--hidden-size', model.hidden_size], ['--num-attention-heads', model.num_attention_heads]);
    args.push(['--ffn-hidden-size', model.ffn_hidden_size ?? 4 * model.hidden_size]);
    // (multi-latent attention has no query groups: its num_kv_heads plays no part)
    if (model.attention !== 'mla' && model.num_kv_heads && model.num_kv_heads !== model.num_attention_heads) args.push(['--group-query-attention'], ['--num-query-groups', model.num_kv_heads]);
    args.push(['--seq-length', model.seq_length], ['--max-position-embeddings', model.seq_length]);
    if (gated) args.push(['--swiglu'], ['--normalization', 'RMSNorm']);
    if (model.position_embedding === 'rope') {
      const name = `${modelId ?? ''} ${model.name ?? ''}`;
      // the model's own rope_theta (presets, a Hugging Face config), else what its name says
      const base = Number(model.rope_theta) > 0 ? Number(model.rope_theta) : ROTARY_BASE.find(([re]) => re.test(name))?.[1];
      args.push(['--position-embedding-type', 'rope'], ['--rotary-base', base ?? 10000]);
      if (!base) notes.push('--rotary-base 10000 is Megatron\'s default: set it to the model\'s rope_theta (config.json) if that differs.');
    }
    if (model.tied_embeddings !== true) args.push(['--untie-embeddings-and-output-weights']);
    if (model.bias === false) args.push(['--disable-bias-linear']);
    if (model.qk_layernorm === true) args.push(['--qk-layernorm']);
    // written even at Megatron's default 0.1: the plan's memory counts the masks only with dropout
    args.push(['--attention-dropout', model.attention_dropout ?? 0.1], ['--hidden-dropout', model.hidden_dropout ?? 0.1]);
    args.push(...moeFlags(model, stages, training, { notes, unsupported }));
  } else {
    unsupported.push('the model is not known here: add its shape flags (--num-layers, --hidden-size, ...)');
  }
  const precision = training.precision ?? 'bf16';
  const devs = planDevices(stages, cluster, deviceOf);
  const noBf16 = devs.filter((d) => !d.caps.bf16).map((d) => deviceName(d.label));
  const noFlash = devs.filter((d) => !d.caps.flashAttn).map((d) => deviceName(d.label));
  const list = (xs) => xs.join(', ');
  if (precision === 'bf16' && noBf16.length) {
    args.push(['--fp16']);
    notes.push(`--fp16, not --bf16: ${list(noBf16)} ${noBf16.length === 1 ? 'has' : 'have'} no BF16 (a pre-Ampere NVIDIA GPU: no TF32 in its device data, docs/presets.md), so the planner costed this bf16 plan as fp16 mixed precision there, and Megatron-LM's --bf16 would not run on it. FP16 training uses Megatron's dynamic loss scaling (its default with --fp16).`);
  } else if (precision === 'bf16' || LOW_PRECISION[precision]) args.push(['--bf16']);
  if (precision === 'fp16') args.push(['--fp16']);
  args.push(...lowPrecisionFlags(precision, training));
  if (training.sequence_parallel && tp !== null && tp > 1) args.push(['--sequence-parallel']);
  if (training.distributed_optimizer) args.push(['--use-distributed-optimizer']);
  if (cps.length === 1 && cps[0] > 1) args.push(['--context-parallel-size', cps[0]], ['--cp-comm-type', training.cp_comm_type ?? 'p2p']);
  // Megatron-FSDP with everything sharded (ZeRO-3) or the weights whole (optim_grads, ZeRO-2), as the planner costs it
  if (training.fsdp) args.push(['--use-megatron-fsdp'], ['--data-parallel-sharding-strategy', training.fsdp_sharding ?? 'optim_grads_params']);
  args.push(...overlapFlags(training, { tp, pp, stack, notes, unsupported }));
  // named modules (Megatron-Core --recompute-modules); core_attn alone is --recompute-activations
  const modules = training.recompute === 'selective' && Array.isArray(training.recompute_modules) ? training.recompute_modules : ['core_attn'];
  if (training.recompute === 'selective' && modules.join() === 'core_attn') args.push(['--recompute-activations']);
  else if (training.recompute === 'selective') args.push(['--recompute-granularity', 'selective'], ['--recompute-modules', ...modules]);
  // every block (uniform, one at a time), or the first N of each stage / chunk (block method)
  if (training.recompute === 'full' && training.recompute_num_layers > 0) args.push(['--recompute-granularity', 'full'], ['--recompute-method', 'block'], ['--recompute-num-layers', training.recompute_num_layers]);
  else if (training.recompute === 'full') args.push(['--recompute-granularity', 'full'], ['--recompute-method', 'uniform'], ['--recompute-num-layers', 1]);
  if (training.flash_attention !== false) {
    if (noFlash.length) notes.push(`--use-flash-attn is left out: FlashAttention needs an Ampere or newer GPU, and ${list(noFlash)} ${noFlash.length === 1 ? 'is' : 'are'} older (its device data: flash_attention false or no TF32, docs/presets.md). The plan costed their attention unfused, its s × s scores in memory; the flag is global, so the newer GPUs' stages would run unfused as well, which the plan did not count: check them, or plan with flash_attention off.`);
    else args.push(['--use-flash-attn']);
  }
  const seq = model?.seq_length;
  const gbs = plan.micro_batch_size * plan.num_micro_batches;
  if (tokens && seq && gbs) {
    args.push(['--train-iters', Math.ceil(tokens / (gbs * seq))]);
    notes.push(`--train-iters covers the token budget: ${tokens.toExponential(3)} tokens / (${gbs} samples × ${seq} tokens per iteration).`);
  } else {
    args.push(['--train-iters', need('TRAIN_ITERS', 'set the number of training iterations')]);
  }
  args.push(['--lr', need('LR', 'set the peak learning rate')]);
  args.push(['--data-path', need('DATA_PATH', 'set DATA_PATH to the preprocessed dataset prefix')]);
  if (gated) {
    args.push(['--tokenizer-type', 'HuggingFaceTokenizer'], ['--tokenizer-model', need('TOKENIZER_MODEL', 'set TOKENIZER_MODEL to the Hugging Face tokenizer name or path')]);
  } else {
    args.push(['--tokenizer-type', 'GPT2BPETokenizer'], ['--vocab-file', need('VOCAB_FILE', 'set VOCAB_FILE to the GPT-2 vocab.json')],
      ['--merge-file', need('MERGE_FILE', 'set MERGE_FILE to the GPT-2 merges.txt')]);
  }

  const nodes = nodeCounts(est, cluster, world);
  if (!nodes) notes.push('The GPUs per node differ between the groups this plan uses (or do not divide the plan\'s GPUs): NNODES and NPROC_PER_NODE are placeholders.');
  // the comment with each stage's node ranks is written when one TP and one DP give Megatron's rank order
  const rankComment = Boolean(nodes) && tps.length === 1 && dps.length === 1;
  if (devices.length > 1) notes.push(`The stages run on different device types: ${devices.join(', ')}. Torchrun starts them alike, and the layer split below is what balances them. Start the nodes so that each stage lands on its devices${rankComment ? ' (node ranks in the command\'s comment)' : ' (Megatron-LM places stage s on ranks s × TP × DP onwards, TP fastest; with TP or DP per stage, or no node count, there is none to give)'}.`);
  const launcher = [
    ['--nnodes', nodes ? nodes.nnodes : need('NNODES', 'set the number of nodes')],
    ['--nproc_per_node', nodes ? nodes.nproc : need('NPROC_PER_NODE', 'set the GPUs per node')],
    ['--node_rank', need('NODE_RANK', `set NODE_RANK to this node's rank${nodes ? (nodes.nnodes > 1 ? `, 0 to ${nodes.nnodes - 1}` : ', 0 on this one node') : ''}`)],
    ['--master_addr', need('MASTER_ADDR', "set MASTER_ADDR to node 0's address")],
    ['--master_port', '"${MASTER_PORT:-6000}"'],
  ];
  const head = [`# Megatron-LM launch for this plan (Poseidon${version ? ` ${version}` : ''}): ${world} GPU${world === 1 ? '' : 's'} = ${pp} pipeline stage${pp === 1 ? '' : 's'}`
    + ` × ${tp === null ? 'TP per stage' : `TP ${tp}`}${cps.length === 1 ? (cps[0] > 1 ? ` × CP ${cps[0]}` : '') : ' × CP per stage'} × ${dp === null ? 'DP per stage' : `DP ${dp}`}${devices.length ? ` on ${devices.join(' + ')}` : ''}.`];
  if (context) head.push(`# Planned for ${context}.`);
  if (nodes && tp !== null && dp !== null) {
    // Megatron's rank order puts TP fastest, then CP, then DP, then PP: stage s holds ranks [s*tp*cp*dp, (s+1)*tp*cp*dp)
    const per = tp * dp * (cps.length === 1 ? cps[0] : 1);
    const where = stages.map((st, s) => {
      const a = Math.floor((s * per) / nodes.nproc);
      const b = Math.floor(((s + 1) * per - 1) / nodes.nproc);
      return `stage ${s}: ${st.num_layers} layer${st.num_layers === 1 ? '' : 's'} on ${deviceName(st.device)}, node rank${a === b ? ` ${a}` : `s ${a}-${b}`}`;
    });
    head.push(`# ${where.join('; ')}.`);
  }
  head.push('# Set the variables the command names (the shell stops with a message if one is unset), then run it on every node.');
  const lines = [...launcher, ['pretrain_gpt.py'], ...args].map((a) => `  ${a.join(' ')}`);
  const oneLine = (l) => l.replace(/[\r\n\u2028\u2029]+/g, ' ');
  const command = `torchrun \\\n${lines.join(' \\\n')}\n`;
  const text = `${head.map(oneLine).join('\n')}\n${command}`;
  // the file carries what the page says next to the command: a script read (or run) alone must
  // not pass for a stock, as-planned launch when it is not one
  const fileHead = [head[0], ...(context ? [head[1]] : [])];
  if (unsupported.length) {
    fileHead.push('# NOT RUNNABLE AS PLANNED ON STOCK MEGATRON-LM (the placeholders below stay until you decide):');
    for (const u of unsupported) fileHead.push(`#  - ${u}.`);
  }
  fileHead.push(microBatchComment(plan, stages, micro, dp));
  if (notes.length) {
    fileHead.push('# Notes (as on the planner page):');
    for (const n of notes) fileHead.push(`#  - ${n}`);
  }
  fileHead.push(...head.slice(context ? 2 : 1));
  const script = `#!/bin/sh\n${fileHead.map(oneLine).join('\n')}\n${command}`;
  return { ok: true, text, script, args, notes, unsupported, evenSplit: even, split: split.kind, world, ...(nodes ?? {}) };
}

/**
 * The script's line on micro-batches: Megatron's --micro-batch-size is one data-parallel
 * replica's share, the plan file's micro_batch_size the pipeline micro-batch over all replicas of
 * a stage; with both numbers in one file, it says which is which.
 */
function microBatchComment(plan, stages, micro, dp) {
  const mbs = plan.micro_batch_size;
  const m = plan.num_micro_batches;
  const tail = `the plan file's micro_batch_size ${mbs} is the pipeline micro-batch summed over a stage's data-parallel replicas, and --global-batch-size ${mbs * m} is micro_batch_size ${mbs} × num_micro_batches ${m}.`;
  if (micro !== null) {
    const split = dp !== null ? ` (${mbs} = DP ${dp} × ${micro})` : '';
    return `# Micro-batch: --micro-batch-size ${micro} is one data-parallel replica's share (Megatron's convention)${split}; ${tail}`;
  }
  const per = stages.map((st) => samplesPerReplica(st, plan) ?? 'uneven').join('/');
  return `# Micro-batch: Megatron's --micro-batch-size is one data-parallel replica's share, left as MICRO_BATCH because this plan's replicas take ${per} samples per stage; ${tail}`;
}
