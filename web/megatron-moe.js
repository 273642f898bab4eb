// The Megatron-LM flags of a mixture-of-experts or multi-latent-attention model and of a plan's
// expert grid (docs/web.md, "Megatron-LM export"). Every name is in Megatron-LM's arguments.py as
// digested in shared/reference/frontier-facts.md, section 5; tests/web/megatron.test.mjs checks them.

const uniq = (xs) => [...new Set(xs)];

// --moe-layer-freq: an int N (every N-th block is MoE) or Megatron's Python list expression
// (DeepSeek-V3: "([0]*3+[1]*58)"), from the model's moe_layer_freq and first_dense_layers.
export function moeLayerFreq(model) {
  const L = model.num_layers;
  const first = Number.isInteger(model.first_dense_layers) ? model.first_dense_layers : 0;
  const freq = model.moe_layer_freq;
  // the first dense blocks apply to a list too (as the core reads the two: model_keys.cpp)
  if (Array.isArray(freq)) return `[${freq.map((f, i) => (f && i >= first ? 1 : 0)).join(',')}]`;
  const n = Number.isInteger(freq) && freq > 0 ? freq : 1;
  if (first === 0) return n;
  if (n === 1) return `([0]*${first}+[1]*${L - first})`;
  const flags = Array.from({ length: L }, (_, i) => (i >= first && i % n === 0 ? 1 : 0));
  return `[${flags.join(',')}]`;
}

// The shared experts' FFN width as the core reads the model (model_keys.cpp): the given width, else
// num_shared_experts x the routed experts' (Megatron-LM's --moe-shared-expert-intermediate-size is
// the sum over the shared experts); 0 without shared experts.
export function sharedExpertWidth(model) {
  if (Number(model?.moe_shared_expert_ffn_hidden_size) > 0) return Number(model.moe_shared_expert_ffn_hidden_size);
  const n = Number(model?.num_shared_experts) || 0;
  return n > 0 ? n * Number(model.moe_ffn_hidden_size ?? model.ffn_hidden_size) : 0;
}

// --window-size and --window-attn-skip-freq of a windowed model: Megatron-Core's window (left,
// right) holds the token itself, so a window of w tokens is (w - 1, 0) (GPT-OSS: 128 -> (127,0),
// frontier-facts.md); the pattern N = every Nth block has full attention, as the flag's N. A list
// pattern is left to the user.
function windowFlags(model, notes) {
  const w = Number(model.sliding_window);
  const pattern = model.sliding_window_pattern;
  // pattern 1: every block has full attention, the window is never used (docs/formats.md)
  if (!(w > 0) || pattern === 1) return [];
  const args = [['--window-size', `${w - 1},0`]];
  if (Number.isInteger(pattern) && pattern > 1) args.push(['--window-attn-skip-freq', pattern]);
  else if (Array.isArray(pattern)) notes.push(`Which blocks use the ${w}-token window is a list here (sliding_window_pattern): give --window-attn-skip-freq your release's list form of it (1 marks a block with full attention).`);
  notes.push(`The ${w}-token sliding window is written as --window-size ${w - 1},0 (the window counts the token itself; Megatron-Core's (left, right) pair, as GPT-OSS's window_size (127,0)).`);
  return args;
}

// MoE, MLA and MTP flags of the model, and the expert grid of the plan's stages (est.stages[].ep,
// etp). `notes` and `unsupported` collect what the script cannot say.
export function moeFlags(model, stages, training, { notes, unsupported }) {
  const args = [];
  if (!model) return args;
  if (Number(model.head_dim) > 0) args.push(['--kv-channels', model.head_dim]);
  args.push(...windowFlags(model, notes));
  if (model.attention === 'mla') {
    args.push(['--multi-latent-attention']);
    if (Number(model.q_lora_rank) > 0) args.push(['--q-lora-rank', model.q_lora_rank]);
    args.push(['--kv-lora-rank', model.kv_lora_rank], ['--qk-head-dim', model.qk_nope_head_dim], ['--qk-pos-emb-head-dim', model.qk_rope_head_dim],
      ['--v-head-dim', model.v_head_dim]);
  }
  if (Number(model.mtp_layers) > 0) args.push(['--mtp-num-layers', model.mtp_layers]);
  if (!(Number(model.num_experts) > 0)) return args;
  const freq = moeLayerFreq(model);
  args.push(['--num-experts', model.num_experts], ['--moe-router-topk', model.moe_top_k], ['--moe-ffn-hidden-size', model.moe_ffn_hidden_size ?? model.ffn_hidden_size]);
  const shared = sharedExpertWidth(model);
  if (shared > 0) args.push(['--moe-shared-expert-intermediate-size', shared]);
  args.push(['--moe-layer-freq', typeof freq === 'number' ? freq : `'${freq}'`]);
  const eps = uniq(stages.map((s) => s.ep ?? 1)), etps = uniq(stages.map((s) => s.etp ?? 1));
  if (eps.length !== 1 || etps.length !== 1) {
    unsupported.push(`the expert grid differs between stages (ep ${stages.map((s) => s.ep ?? 1).join('/')}, etp ${stages.map((s) => s.etp ?? 1).join('/')}): stock Megatron-LM has one --expert-model-parallel-size and one --expert-tensor-parallel-size`);
  }
  // written even at 1: Megatron-LM's command line defaults the expert TP to the TP size
  args.push(['--expert-model-parallel-size', eps[0]], ['--expert-tensor-parallel-size', etps[0]]);
  const flex = training.moe_token_dispatcher === 'flex';
  args.push(['--moe-token-dispatcher-type', flex ? 'flex' : 'alltoall']);
  if (flex) args.push(['--moe-flex-dispatcher-backend', 'deepep']);
  args.push(['--moe-grouped-gemm']);
  // costed only with the alltoall dispatcher and shared experts (docs/model.md, "Expert parallelism")
  if (training.moe_shared_expert_overlap && !flex && shared > 0) args.push(['--moe-shared-expert-overlap']);
  // the combined 1F1B (docs/model.md, "Expert-parallel overlap across micro-batches"): costed with
  // the delayed weight gradients it is run with
  if (training.overlap_moe_expert_parallel_comm) args.push(['--overlap-moe-expert-parallel-comm'], ['--delay-wgrad-compute']);
  const imbalance = Number(training.moe_imbalance ?? 1);
  notes.push(imbalance > 1
    ? `The plan assumes the busiest expert-parallel rank takes ${imbalance}x the mean tokens (training.moe_imbalance); routing, load-balancing loss and capacity are yours to set.`
    : 'The plan assumes balanced routing (training.moe_imbalance 1), as NVIDIA\'s published MoE benchmarks force with --moe-router-force-load-balancing (benchmark-only): set the router, its load-balancing loss and any capacity factor for real training.');
  return args;
}
