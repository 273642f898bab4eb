// Field descriptions and the labelled inputs bound to state objects.
import { h, clear, $ } from './dom.js';

export const MODEL_FIELDS = [
  { key: 'name', kind: 'text', label: 'name' },
  { key: 'num_layers', kind: 'int', label: 'layers' },
  { key: 'hidden_size', kind: 'int', label: 'hidden size' },
  { key: 'num_attention_heads', kind: 'int', label: 'attention heads' },
  { key: 'num_kv_heads', kind: 'int', label: 'KV heads', hint: '= heads' },
  { key: 'ffn_hidden_size', kind: 'int', label: 'FFN hidden size', hint: '4 × hidden' },
  { key: 'vocab_size', kind: 'int', label: 'vocabulary' },
  { key: 'seq_length', kind: 'int', label: 'sequence length' },
  { key: 'position_embedding', kind: 'select', label: 'position embedding', options: ['learned', 'rope'], def: 'learned' },
  { key: 'gated_mlp', kind: 'bool', label: 'gated MLP (SwiGLU)', def: false },
  { key: 'tied_embeddings', kind: 'bool', label: 'tied embeddings', def: false },
  { key: 'bias', kind: 'bool', label: 'biases', def: true },
  // dropout probabilities (Megatron's --hidden-dropout, --attention-dropout); 0 keeps no masks
  { key: 'hidden_dropout', kind: 'num', label: 'hidden dropout (0 = none, as in Llama)', hint: '0.1' },
  { key: 'attention_dropout', kind: 'num', label: 'attention dropout', hint: '0.1' },
  // attention shape, mixture of experts, MTP (docs/formats.md, "model"); empty = the key is left out.
  // The per-block lists (moe_layer_freq, sliding_window_pattern as arrays) stay as imported.
  // `more`: folded under "Attention variants, experts, MTP" (forms.js), open when the model sets one.
  { key: 'head_dim', kind: 'int', label: 'head dimension', hint: 'hidden / heads', more: true },
  { key: 'qk_layernorm', kind: 'bool', label: 'QK layer norm (Qwen3: each head\'s queries and keys normalised)', def: false, omitDefault: true, more: true },
  { key: 'attention', kind: 'select', label: 'attention', options: [['gqa', 'multi-head / grouped-query'], ['mla', 'multi-latent (DeepSeek)']], def: 'gqa', omitDefault: true, more: true },
  { key: 'q_lora_rank', kind: 'int', label: 'MLA query rank (0 = full)', hint: 'MLA only', more: true },
  { key: 'kv_lora_rank', kind: 'int', label: 'MLA key-value rank', hint: 'MLA only', more: true },
  { key: 'qk_nope_head_dim', kind: 'int', label: 'MLA q/k head dim without RoPE', hint: 'MLA only', more: true },
  { key: 'qk_rope_head_dim', kind: 'int', label: 'MLA q/k RoPE head dim', hint: 'MLA only', more: true },
  { key: 'v_head_dim', kind: 'int', label: 'MLA value head dim', hint: 'MLA only', more: true },
  { key: 'sliding_window', kind: 'int', label: 'sliding window (tokens)', hint: 'none', more: true },
  { key: 'num_experts', kind: 'int', label: 'routed experts (MoE)', hint: 'dense', more: true },
  { key: 'moe_top_k', kind: 'int', label: 'experts per token (top-k)', hint: 'MoE only', more: true },
  { key: 'moe_ffn_hidden_size', kind: 'int', label: 'expert FFN hidden size', hint: '= FFN hidden size', more: true },
  { key: 'num_shared_experts', kind: 'int', label: 'shared experts', hint: '0', more: true },
  { key: 'moe_shared_expert_ffn_hidden_size', kind: 'int', label: 'shared experts\' FFN size (sum)', hint: 'shared × expert size', more: true },
  // an int, or one 0/1 flag per block as a Hugging Face config gives them (kind 'int-list': the list
  // it shows reads back as the same list)
  { key: 'moe_layer_freq', kind: 'int-list', label: 'MoE blocks: every Nth, or one flag per block (1 = MoE)', hint: '1', more: true },
  { key: 'first_dense_layers', kind: 'int', label: 'first dense blocks', hint: '0', more: true },
  { key: 'mtp_layers', kind: 'int', label: 'multi-token prediction modules', hint: '0', more: true },
];
export const TRAINING_FIELDS = [
  { key: 'global_batch_size', kind: 'int', label: 'global batch (samples)' },
  // the low-precision recipes (docs/model.md, "Low precision") need every group's GPU to have the rate
  { key: 'precision', kind: 'select', label: 'precision', options: ['bf16', 'fp16', 'fp32', 'fp8', 'fp8-delayed', 'fp8-blockwise', 'mxfp8', 'nvfp4'], def: 'bf16' },
  // Megatron-FSDP (ZeRO-3) and the context-parallel exchange (docs/model.md, "FSDP", "Context parallelism")
  { key: 'fsdp', kind: 'bool', label: 'FSDP: shard weights, gradients and optimizer states (Megatron-FSDP)', def: false, omitDefault: true },
  { key: 'fsdp_sharding', kind: 'select', label: 'FSDP sharding (optim_grads: ZeRO-2, weights whole)', options: ['optim_grads_params', 'optim_grads'], def: 'optim_grads_params', omitDefault: true },
  { key: 'cp_comm_type', kind: 'select', label: 'context-parallel exchange (stages with CP > 1)', options: ['p2p', 'all_gather', 'a2a'], def: 'p2p', omitDefault: true },
  { key: 'fp8_param_gather', kind: 'bool', label: 'low-precision parameter all-gather (fp8/fp4 weights, distributed optimizer)', def: false, omitDefault: true },
  { key: 'recompute', kind: 'select', label: 'recompute', options: ['none', 'selective', 'full'], def: 'none' },
  // Megatron-Core's --recompute-modules (docs/model.md, "Recomputing named modules"); empty = core_attn
  { key: 'recompute_modules', kind: 'list', label: 'recompute modules (selective only): core_attn, layernorm, mla_up_proj, mlp, moe_act, shared_experts, moe', hint: 'core_attn' },
  { key: 'sequence_parallel', kind: 'bool', label: 'sequence parallel', def: false },
  { key: 'distributed_optimizer', kind: 'bool', label: 'distributed optimizer', def: false },
  { key: 'flash_attention', kind: 'bool', label: 'flash attention', def: true },
  // omitDefault: unchecked leaves the key out (the core's default), so the scenario and links stay as before
  { key: 'tf32', kind: 'bool', label: 'TF32 matmuls (fp32 precision only)', def: false, omitDefault: true },
  { key: 'global_batch_tolerance', kind: 'num', label: 'batch tolerance (fraction: plans may train any batch within it, ranked by tokens/s)', hint: '0 = exact batch', def: 0, omitDefault: true },
  // Megatron-Core's overlap switches (docs/model.md, "Overlap"); the Megatron export writes their flags
  { key: 'overlap_grad_reduce', kind: 'bool', label: 'overlap the gradient reduce with the backward', def: false, omitDefault: true },
  { key: 'overlap_param_gather', kind: 'bool', label: 'overlap the parameter all-gather with the forward (distributed optimizer)', def: false, omitDefault: true },
  { key: 'tp_comm_overlap', kind: 'bool', label: 'overlap TP communication with its GEMMs (Transformer Engine)', def: false, omitDefault: true },
  // MoE models only (docs/formats.md, "training"; docs/model.md, "Expert parallelism")
  { key: 'moe_token_dispatcher', kind: 'select', label: 'MoE token dispatcher (flex: DeepEP / HybridEP, fused permute)', options: ['alltoall', 'flex'], def: 'alltoall', omitDefault: true },
  { key: 'moe_shared_expert_overlap', kind: 'bool', label: 'MoE: shared experts computed beside the token dispatch and combine (alltoall dispatcher)', def: false, omitDefault: true },
  { key: 'overlap_moe_expert_parallel_comm', kind: 'bool', label: 'MoE: token exchange of one micro-batch beside another\'s compute (combined 1F1B; a pipeline runs interleaved)', def: false, omitDefault: true },
  // Megatron-Core's --cuda-graph-impl; full_iteration replays without the host (docs/model.md)
  // Megatron-Core's deferred head weight gradient: memory on the last stage (docs/model.md, "Memory per GPU")
  // with full recompute: the first N blocks of each stage (Megatron-Core's block method); empty = all
  { key: 'recompute_num_layers', kind: 'int', label: 'blocks recomputed per stage (full recompute; empty = all)', hint: 'all' },
  { key: 'defer_embedding_wgrad_compute', kind: 'bool', label: 'defer the LM head\'s weight gradient to the pipeline flush (buffers on the last stage)', def: false, omitDefault: true },
  { key: 'wgrad_deferral_limit', kind: 'int', label: 'micro-batches deferred (0 = all)', hint: '0' },
  { key: 'cuda_graph_impl', kind: 'select', label: 'CUDA graphs (full_iteration: the iteration replays without the host)', options: ['none', 'local', 'transformer_engine', 'full_iteration'], def: 'none', omitDefault: true },
  { key: 'moe_imbalance', kind: 'num', label: 'MoE load imbalance (busiest expert-parallel rank / mean tokens; 1 = balanced)', hint: '1', def: 1, omitDefault: true },
];
export const CLUSTER_FIELDS = [
  { key: 'name', kind: 'text', label: 'cluster name' },
  { key: 'inter_group_bw_GBps', kind: 'num', label: 'between groups, GB/s per node (1 GB/s = 8 Gb/s)', hint: 'min of the NICs' },
];
export const SEARCH_FIELDS = [
  { key: 'top', kind: 'int', label: 'plans to keep' },
  { key: 'time_limit_s', kind: 'num', label: 'time limit (s)' },
  { key: 'exhaustive', kind: 'bool', label: 'exhaustive', def: false },
  { key: 'tp_per_stage', kind: 'bool', label: 'TP per stage (wider, slower search)', def: false },
  // docs/search.md: the schedule is a searched dimension; 'all' lets a group use any whole number of its nodes
  { key: 'schedule', kind: 'select', label: 'pipeline schedule (any: 1F1B or interleaved)', options: ['any', '1f1b', 'interleaved-1f1b'], def: 'any', omitDefault: true },
  { key: 'node_counts', kind: 'select', label: 'nodes per group (halving: n, n/2, ... and powers of two; all: any count)', options: ['halving', 'all'], def: 'halving', omitDefault: true },
  { key: 'mixed_stages', kind: 'bool', label: 'stages that mix GPU types (data parallelism over several groups)', def: false, omitDefault: true },
  // 2: a group may also be split in two blocks of nodes, anywhere in the pipeline (wider, slower search)
  { key: 'group_blocks', kind: 'select', label: 'blocks per group (2-4: a group in several places or stage sizes)', options: ['1', '2', '3', '4'], def: 1, numeric: true, omitDefault: true },
  // with 2+ blocks: a node may also be two blocks of half its GPUs (unequal stage sizes in one node)
  { key: 'split_nodes', kind: 'bool', label: 'half-node blocks (with 2+ blocks per group)', def: false, omitDefault: true },
  // 1F1B stages may hold no block: only the embedding, only the head, or only forwarding (docs/search.md)
  // the precision and Megatron-FSDP left to the search (docs/search.md, "Training choices"):
  // each plan then carries the one it trains with
  { key: 'precisions', kind: 'select', label: 'precision (searched: each plan says which it trains in)',
    options: [['fixed', 'as under Training'], ['bf16,fp8', 'bf16 or fp8'], ['any', 'bf16 or any low precision all GPUs run']], def: 'fixed', omitDefault: true },
  { key: 'fsdp', kind: 'select', label: 'Megatron-FSDP (searched: each plan says whether)', options: [['fixed', 'as under Training'], ['any', 'with or without']], def: 'fixed', omitDefault: true },
  // the recomputation left to the search: "blocks" adds Megatron-Core's block method for the first
  // 1, 2, 4 or 8 blocks of each stage (options.recompute_num_layers; state.js searchOptions)
  { key: 'recompute', kind: 'select', label: 'activation recomputation (searched: each plan says which)',
    options: [['fixed', 'as under Training'], ['any', 'none, selective or full'], ['blocks', 'none, selective, full or 1/2/4/8 blocks']], def: 'fixed', omitDefault: true },
  { key: 'empty_stages', kind: 'bool', label: 'stages with no block (1F1B: embedding or head only, or pass-through)', def: false, omitDefault: true },
  // sizes fixed for every stage (options.cp_sizes / ep_sizes / etp_sizes, one each; state.js
  // searchOptions makes the list; docs/search.md, "Fixed grids"); "searched" leaves them to the search
  { key: 'cp_sizes', kind: 'select', label: 'context-parallel size, every stage (searched: 1, and from 8,192 tokens 2 to 16 with at least 4,096 tokens per rank)',
    options: [['searched', 'searched'], '1', '2', '4', '8', '16', '32'], def: 'searched', omitDefault: true },
  { key: 'ep_sizes', kind: 'select', label: 'expert-parallel size, every stage (MoE models)',
    options: [['searched', 'searched'], '1', '2', '4', '8', '16', '32', '64', '128', '256'], def: 'searched', omitDefault: true },
  { key: 'etp_sizes', kind: 'select', label: 'expert tensor-parallel size, every stage (MoE models)',
    options: [['searched', 'searched'], '1', '2', '4', '8'], def: 'searched', omitDefault: true },
];
/** human labels for the device keys a custom device shows (docs/formats.md, "device") */
export const DEVICE_LABELS = {
  peak_tflops: 'peak dense BF16/FP16 TFLOP/s (tensor cores)',
  fp8_tflops: 'peak dense FP8 TFLOP/s ("none" = no FP8)',
  mxfp8_tflops: 'peak dense MXFP8 TFLOP/s ("none" = no MXFP8)',
  nvfp4_tflops: 'peak dense NVFP4 TFLOP/s ("none" = no NVFP4)',
  fp32_tflops: 'FP32 TFLOP/s (no tensor cores)',
  tf32_tflops: 'TF32 TFLOP/s (tensor cores)',
  sustained_clock_ratio: 'sustained / boost clock under load',
  low_precision_efficiency_ratio: 'FP8/FP4 GEMM efficiency over the BF16 one (fraction)',
  comm_compute_slowdown: 'compute slowdown while NCCL runs (fraction)',
  attention_efficiency: 'attention efficiency (fraction of peak; 0 = matmul efficiency)',
  attention_flops_per_exp: 'matrix FLOPs per exponential, per SM (0 = unknown)',
  memory_GiB: 'memory, GiB',
  memory_bw_GBps: 'memory bandwidth, GB/s',
  intra_node_bw_GBps: 'GPU-to-GPU bandwidth in a node, GB/s per direction',
  intra_node_link: 'link within a node',
  matmul_efficiency: 'matmul efficiency (fraction of peak)',
  memory_bw_efficiency: 'memory bandwidth efficiency (fraction)',
  kernel_overhead_us: 'kernel launch overhead, µs',
  intra_node_link_efficiency: 'link efficiency within a node (fraction)',
  nvls_bw_GBps: 'NVLink SHARP all-reduce bandwidth, GB/s (0 = none)',
  inter_node_link_efficiency: 'link efficiency between nodes (fraction)',
  collective_latency_us: 'collective latency, µs',
  framework_overhead_GiB: 'framework overhead per GPU, GiB (CUDA context, NCCL buffers)',
  flash_attention: 'runs fused (flash) attention (Ampere or newer)',
};
export const deviceLabel = (key) => DEVICE_LABELS[key] ?? key.replace(/_/g, ' ');
/**
 * The order a custom device's fields are shown in: name, compute, memory, links, overheads. Every
 * key is shown, also those the device it was copied from leaves at the core's default (empty).
 */
export const DEVICE_ORDER = ['name', 'peak_tflops', 'fp8_tflops', 'mxfp8_tflops', 'nvfp4_tflops', 'fp32_tflops', 'tf32_tflops', 'sustained_clock_ratio', 'low_precision_efficiency_ratio', 'matmul_efficiency', 'attention_efficiency', 'attention_flops_per_exp',
  'memory_GiB', 'memory_bw_GBps', 'memory_bw_efficiency', 'kernel_overhead_us', 'intra_node_bw_GBps', 'intra_node_link', 'intra_node_link_efficiency',
  'nvls_bw_GBps', 'inter_node_link_efficiency', 'collective_latency_us', 'comm_compute_slowdown', 'framework_overhead_GiB', 'flash_attention'];
/** the device's yes/no keys and the core's default of each (shown ticked or not where the device leaves them out) */
export const DEVICE_BOOLS = { flash_attention: true };
export const DEVICE_SKIP = new Set(['id', 'source', 'notes', 'vendor']);
// a cluster group's links (docs/formats.md, "cluster"): '' = the device's own link type
export const INTRA_LINKS = [['nvlink', 'NVLink'], ['nvlink_cube_mesh', 'NVLink hybrid cube-mesh (DGX-1)'], ['nvlink_mesh', 'NVLink between GPU pairs, no switch (GH200 nodes)'],
  ['pcie', 'PCIe (peer-to-peer)'],
  ['pcie_host', 'PCIe, no peer-to-peer (host-staged)'], ['infinity_fabric', 'Infinity Fabric']];
// a custom device's link select: the same labels as a group's ([value, label] options)
export const DEVICE_SELECTS = { intra_node_link: INTRA_LINKS };
export const INTER_LINKS = [['infiniband', 'InfiniBand (RDMA)'], ['infiniband_host', 'InfiniBand without GPUDirect (host-staged)'],
  ['ethernet', 'Ethernet (NCCL over TCP)']];
export const DEFAULT_INTER_LINK = 'infiniband';
export const DEFAULT_STACK = 'megatron-core'; // the core's default training.stack
// ---------------------------------------------------------------- forms

export function parseValue(kind, raw) {
  if (kind === 'bool') return raw;
  const t = String(raw).trim();
  if (t === '') return undefined;
  if (kind === 'list') return t.split(/[\s,]+/).filter(Boolean);
  if (kind === 'int-list') {
    // one number, or several split by commas or spaces (brackets allowed): a list of ints
    const inner = t.replace(/^\[/, '').replace(/\]$/, '').trim();
    const parts = inner.split(/[\s,]+/).filter(Boolean);
    if (parts.length > 1 || t.startsWith('[')) return parts.map((p) => parseValue('int', p));
    return parseValue('int', inner);
  }
  if (kind === 'int' || kind === 'num') {
    // numbers go to the core as numbers; anything else goes as the text, so the core's message names
    // it. So does a number beyond a double (1e309): as Infinity it would travel as null
    const n = Number(t);
    return /^[-+]?(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?$/.test(t) && Number.isFinite(n) ? n : t;
  }
  return t;
}

/** One labelled input bound to obj[key]; path is the scenario JSON path used for error messages. */
export function fieldInput(field, getObj, path, onChange) {
  const obj = getObj();
  const id = `f-${path.replace(/[^a-zA-Z0-9]+/g, '-')}`;
  const errId = `${id}-err`;
  let input;
  const commit = (value) => {
    const o = getObj();
    if (value === undefined || (field.omitDefault && value === field.def)) delete o[field.key];
    else o[field.key] = value;
    onChange();
  };
  if (field.kind === 'bool') {
    input = h('input', { type: 'checkbox', id });
    input.checked = obj[field.key] ?? field.def ?? false;
    input.addEventListener('change', () => commit(input.checked));
  } else if (field.kind === 'select') {
    input = h('select', { id }, field.options.map((o) => (Array.isArray(o) ? h('option', { value: o[0] }, o[1]) : h('option', { value: o }, o))));
    input.value = String(obj[field.key] ?? field.def);
    input.addEventListener('change', () => commit(field.numeric ? Number(input.value) : input.value));
  } else {
    input = h('input', { type: 'text', id, inputmode: field.kind === 'int' ? 'numeric' : field.kind === 'num' ? 'decimal' : null,
      autocomplete: 'off', spellcheck: 'false', placeholder: field.hint ?? '' });
    const v = obj[field.key];
    input.value = v === undefined ? '' : Array.isArray(v) ? v.join(', ') : String(v);
    input.addEventListener('input', () => commit(parseValue(field.kind, input.value)));
  }
  input.dataset.path = path;
  input.setAttribute('aria-describedby', errId);
  const err = h('span', { class: 'field-error', id: errId, 'data-error-for': path });
  if (field.kind === 'bool') return h('div', { class: 'field check' }, input, h('label', { for: id }, field.label), err);
  return h('div', { class: 'field' }, h('label', { for: id }, field.label), input, err);
}

export function renderFields(container, fields, getObj, prefix, onChange) {
  clear(container);
  for (const f of fields) container.append(fieldInput(f, getObj, `${prefix}.${f.key}`, onChange));
}

export function presetOptions(select, list, selected, customLabel) {
  clear(select);
  select.append(h('option', { value: '' }, customLabel));
  for (const p of list) select.append(h('option', { value: p.id }, `${p.name ?? p.id} (${p.id})`));
  select.value = selected ?? '';
}
