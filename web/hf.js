// Hugging Face config.json → Poseidon model object (docs/formats.md, "model").
// Only the mapping lives here; the core validates the result like any other input.
import { NonFiniteNumberError, parseJson } from './json-text.js';

const first = (cfg, ...keys) => {
  for (const k of keys) if (cfg[k] !== undefined && cfg[k] !== null) return cfg[k];
  return undefined;
};

export class HfConfigError extends Error {}

/** [name in the message, the keys tried in order]: a config without one of these is refused */
export const REQUIRED = [
  ['num_hidden_layers', 'num_hidden_layers', 'n_layer', 'num_layers'],
  ['hidden_size', 'hidden_size', 'n_embd', 'd_model'],
  ['num_attention_heads', 'num_attention_heads', 'n_head', 'num_heads'],
  ['vocab_size', 'vocab_size', 'padded_vocab_size'],
];

/** text of a config.json → { model, notes[] } ; throws HfConfigError */
export function modelFromHfConfig(text) {
  let cfg;
  try {
    cfg = parseJson(text);
  } catch (e) {
    if (e instanceof NonFiniteNumberError) throw new HfConfigError(`config.json: ${e.message}. Nothing was imported; the model is unchanged.`);
    throw new HfConfigError(`config.json is not valid JSON: ${e.message}`);
  }
  if (cfg === null || typeof cfg !== 'object' || Array.isArray(cfg)) throw new HfConfigError('config.json must be a JSON object.');
  // multimodal configs nest the language model
  if (cfg.text_config && typeof cfg.text_config === 'object' && first(cfg, 'num_hidden_layers', 'n_layer') === undefined) {
    cfg = { ...cfg.text_config, _name_or_path: cfg._name_or_path, architectures: cfg.architectures };
  }
  // the keys without which there is no model to speak of: refuse the config, keep the user's model
  // a key that is there but not a number is named with its value ("num_hidden_layers is the string \"32\"")
  const absent = REQUIRED.filter(([, ...keys]) => typeof first(cfg, ...keys) !== 'number')
    .map(([key, ...alt]) => {
      const v = first(cfg, ...alt);
      const name = alt.length > 1 ? `${key} (or ${alt.slice(1).join(', ')})` : key;
      return v === undefined ? name : `${name}, which is ${typeof v === 'string' ? `the string ${JSON.stringify(v.slice(0, 40))}` : JSON.stringify(v).slice(0, 40)}`;
    });
  if (absent.length) {
    const type = typeof cfg.model_type === 'string' ? ` (model_type "${cfg.model_type.slice(0, 40)}")` : '';
    throw new HfConfigError(`config.json${type} has no number for ${absent.join(', ')}: a decoder-only language model's config.json `
      + `has ${absent.length === 1 ? 'it' : 'them'}. Nothing was imported; the model is unchanged.`);
  }
  const notes = [];
  const model = {};
  const type = modelType(cfg);
  // a config without its repository's name is named by its family ("qwen3_moe config"), not by a class name
  const name = first(cfg, '_name_or_path', 'name') ?? (type ? `${type} config` : undefined);
  model.name = typeof name === 'string' && name ? name.slice(0, 100) : 'Custom model';
  const set = (key, value) => { if (value !== undefined) model[key] = value; };
  set('num_layers', first(cfg, 'num_hidden_layers', 'n_layer', 'num_layers'));
  set('hidden_size', first(cfg, 'hidden_size', 'n_embd', 'd_model'));
  set('num_attention_heads', first(cfg, 'num_attention_heads', 'n_head', 'num_heads'));
  set('num_kv_heads', first(cfg, 'num_key_value_heads', 'num_kv_heads', 'multi_query_group_num'));
  set('ffn_hidden_size', first(cfg, 'intermediate_size', 'n_inner', 'ffn_hidden_size', 'ffn_dim'));
  set('vocab_size', first(cfg, 'vocab_size', 'padded_vocab_size'));
  set('seq_length', first(cfg, 'max_position_embeddings', 'n_positions', 'seq_length', 'n_ctx'));
  const act = String(first(cfg, 'hidden_act', 'activation_function') ?? '').toLowerCase();
  if (typeof cfg.model_type !== 'string' && type) notes.push(`model_type not found; read as "${type}" from architectures ${JSON.stringify(cfg.architectures[0]).slice(0, 60)}`);
  const gated = /silu|swiglu|swish|geglu/.test(act) || /llama|mistral|qwen|gemma|mixtral|phi3|deepseek|olmo|granite|yi|gpt_oss/.test(type);
  model.gated_mlp = gated;
  if (cfg.tie_word_embeddings !== undefined) model.tied_embeddings = Boolean(cfg.tie_word_embeddings);
  else if (/gpt2|gpt_neo|opt|gemma/.test(type)) model.tied_embeddings = true; // their configs' default
  const hasRope = cfg.rope_theta !== undefined || cfg.rope_scaling !== undefined || cfg.rotary_dim !== undefined || /llama|mistral|qwen|gemma|mixtral|neox|phi|falcon|deepseek|olmo|granite|gpt_oss/.test(type);
  model.position_embedding = hasRope ? 'rope' : 'learned';
  if (hasRope && typeof cfg.rope_theta === 'number' && cfg.rope_theta > 0) model.rope_theta = cfg.rope_theta;
  else if (cfg.rope_theta !== undefined && cfg.rope_theta !== null) {
    notes.push(`rope_theta ${JSON.stringify(cfg.rope_theta).slice(0, 40)} is not a positive number; it was left out (the Megatron command then uses Megatron's default base)`);
  }
  // Qwen3's attention always normalises each head's queries and keys (q_norm, k_norm): no config key says so
  if (/^qwen3(_moe)?$/.test(type)) model.qk_layernorm = true;
  const bias = first(cfg, 'attention_bias', 'mlp_bias', 'bias', 'use_bias');
  if (bias !== undefined) model.bias = Boolean(bias);
  // (Qwen3's attention_bias defaults to false in its config class; Qwen2's QKV has a bias)
  else model.bias = !/llama|mistral|gemma|mixtral|deepseek|olmo|granite|qwen3/.test(type);
  // A config with no dropout key has no dropout module (Llama's residual branches): 0.
  const dropout = (key, ...keys) => {
    const v = first(cfg, ...keys);
    if (v === undefined) model[key] = 0;
    else if (typeof v === 'number' && v >= 0 && v <= 1) model[key] = v;
    else notes.push(`${keys.find((k) => cfg[k] !== undefined && cfg[k] !== null)} is not a probability; ${key} was left at Megatron's default 0.1`);
  };
  dropout('hidden_dropout', 'resid_pdrop', 'hidden_dropout', 'hidden_dropout_prob', 'dropout');
  dropout('attention_dropout', 'attn_pdrop', 'attention_dropout', 'attention_probs_dropout_prob');
  if (model.seq_length === undefined) notes.push('max_position_embeddings not found; set the sequence length');
  mixtureAndAttention(cfg, type, model, notes);
  // a context extended after pre-training names the length it was pre-trained at (DeepSeek-V3's YaRN
  // from 4096, GPT-OSS's initial_context_length 4096): that one is the training sequence length
  const scaling = cfg.rope_scaling && typeof cfg.rope_scaling === 'object' ? cfg.rope_scaling : {};
  const [originalKey, original] = [['rope_scaling.original_max_position_embeddings', num(scaling.original_max_position_embeddings)],
    ['initial_context_length', num(cfg.initial_context_length)]].find(([, v]) => v > 0) ?? [];
  if (original > 0 && model.seq_length > original) {
    notes.push(`max_position_embeddings is ${model.seq_length}, a context extended after pre-training at ${original} (${originalKey}); the training sequence length was set to ${original}, edit it if needed`);
    model.seq_length = original;
  }
  // a long context window is not a pre-training sequence length (Llama 3: 8192 in pre-training, 131072 after)
  if (model.seq_length > 8192) {
    notes.push(`max_position_embeddings is ${model.seq_length}; the training sequence length was set to 8192, edit it if needed`);
    model.seq_length = 8192;
  }
  // a head dimension other than hidden_size / heads is the model's key head_dim (MLA has its own)
  const headDim = first(cfg, 'head_dim');
  if (typeof headDim === 'number' && model.attention !== 'mla' && model.num_attention_heads > 0 && headDim * model.num_attention_heads !== model.hidden_size) {
    model.head_dim = headDim;
    notes.push(`head_dim ${headDim} × ${model.num_attention_heads} heads = ${headDim * model.num_attention_heads} is not hidden_size ${model.hidden_size}: imported as head_dim`);
  }
  return { model, notes };
}

const num = (v) => (typeof v === 'number' && Number.isFinite(v) ? v : undefined);

// Hugging Face's class names whose model_type is not their prefix in snake case
const TYPE_OF_CLASS = { gptneox: 'gpt_neox', gptneo: 'gpt_neo', gptbigcode: 'gpt_bigcode' };

/** the config's model_type, lower case; without one, read from its first architecture class, as
 * Hugging Face names them ("Qwen3MoeForCausalLM" -> "qwen3_moe", "DeepseekV3ForCausalLM" ->
 * "deepseek_v3"): a pasted config.json is often a trimmed one, and the family decides the MLP,
 * positions, biases and QK norm below, which no other key states */
export function modelType(cfg) {
  if (typeof cfg.model_type === 'string') return cfg.model_type.toLowerCase();
  const cls = Array.isArray(cfg.architectures) && typeof cfg.architectures[0] === 'string' ? cfg.architectures[0] : '';
  const stem = cls.replace(/(For(CausalLM|ConditionalGeneration|SequenceClassification)|LMHeadModel|Model)$/, '');
  if (!stem || stem === cls) return '';
  const fixed = TYPE_OF_CLASS[stem.toLowerCase()];
  return fixed ?? stem.replace(/([a-z0-9])([A-Z])/g, '$1_$2').toLowerCase();
}
// one flag per block from a rule on the block index
const flags = (n, rule) => Array.from({ length: n }, (_, i) => (rule(i) ? 1 : 0));

// MoE (DeepSeek-V3, Qwen3-MoE, Mixtral, GPT-OSS, Llama 4), MLA, sliding windows and MTP: the
// model keys of docs/formats.md, "model", each from the Hugging Face key named there.
function mixtureAndAttention(cfg, type, model, notes) {
  const L = model.num_layers;
  const experts = num(first(cfg, 'n_routed_experts', 'num_local_experts', 'num_experts'));
  if (experts > 0) {
    model.num_experts = experts;
    const kGiven = first(cfg, 'num_experts_per_tok', 'experts_per_token', 'moe_topk');
    const k = num(kGiven);
    if (k !== undefined) model.moe_top_k = k;
    else if (kGiven === undefined) notes.push('num_experts_per_tok not found; set the experts per token (moe_top_k)');
    else notes.push(`num_experts_per_tok is ${typeof kGiven === 'string' ? `the string ${JSON.stringify(kGiven.slice(0, 40))}` : JSON.stringify(kGiven).slice(0, 40)}, not a number; set the experts per token (moe_top_k)`);
    // DeepSeek and Qwen name the expert's size moe_intermediate_size and keep intermediate_size for
    // dense blocks; Mixtral, GPT-OSS and Llama 4 name the expert's intermediate_size
    const fe = num(first(cfg, 'moe_intermediate_size')) ?? num(first(cfg, 'intermediate_size'));
    if (fe !== undefined) model.moe_ffn_hidden_size = fe;
    const dense = num(first(cfg, 'intermediate_size_mlp'));  // Llama 4's dense blocks
    if (dense !== undefined) model.ffn_hidden_size = dense;
    const shared = num(first(cfg, 'n_shared_experts', 'num_shared_experts')) ?? (/llama4/.test(type) ? 1 : undefined);
    if (shared > 0) model.num_shared_experts = shared;
    const sharedSize = num(first(cfg, 'shared_expert_intermediate_size'));  // Qwen2-MoE: one shared expert of its own size
    if (sharedSize > 0) Object.assign(model, { num_shared_experts: model.num_shared_experts ?? 1, moe_shared_expert_ffn_hidden_size: sharedSize });
    const firstDense = num(first(cfg, 'first_k_dense_replace'));
    if (firstDense > 0) model.first_dense_layers = firstDense;
    // which blocks are MoE: DeepSeek's moe_layer_freq is Megatron's (i % N == 0); Qwen's
    // decoder_sparse_step, mlp_only_layers and Llama 4's interleave_moe_layer_step count from 1
    const step = num(first(cfg, 'decoder_sparse_step', 'interleave_moe_layer_step'));
    const denseOnly = Array.isArray(cfg.mlp_only_layers) ? cfg.mlp_only_layers : [];
    const freq = num(cfg.moe_layer_freq);
    if (L > 0 && ((step > 1) || denseOnly.length)) model.moe_layer_freq = flags(L, (i) => (i + 1) % (step || 1) === 0 && !denseOnly.includes(i));
    else if (freq > 1) model.moe_layer_freq = freq;
  }
  if (num(cfg.kv_lora_rank) !== undefined) {
    Object.assign(model, { attention: 'mla', q_lora_rank: num(cfg.q_lora_rank) ?? 0, kv_lora_rank: cfg.kv_lora_rank });
    for (const key of ['qk_nope_head_dim', 'qk_rope_head_dim', 'v_head_dim']) if (num(cfg[key]) !== undefined) model[key] = cfg[key];
  }
  const mtp = num(first(cfg, 'num_nextn_predict_layers', 'mtp_num_layers'));
  if (mtp > 0) model.mtp_layers = mtp;
  // a window the config switches off (Qwen2's use_sliding_window false) is none
  const window = num(cfg.sliding_window);
  if (window > 0 && cfg.use_sliding_window !== false) {
    model.sliding_window = window;
    if (Array.isArray(cfg.layer_types) && cfg.layer_types.length === L) model.sliding_window_pattern = cfg.layer_types.map((t) => (t === 'sliding_attention' ? 1 : 0));
    else if (num(cfg.sliding_window_pattern) > 1) model.sliding_window_pattern = cfg.sliding_window_pattern;
  }
  if (num(cfg.attention_chunk_size) > 0) notes.push(`attention_chunk_size ${cfg.attention_chunk_size} (Llama 4's chunked attention) is costed as full attention`);
}
