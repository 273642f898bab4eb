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
  const name = first(cfg, '_name_or_path', 'name') ?? (Array.isArray(cfg.architectures) ? cfg.architectures[0] : undefined) ?? first(cfg, 'model_type');
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
  const type = String(cfg.model_type ?? '').toLowerCase();
  const gated = /silu|swiglu|swish|geglu/.test(act) || /llama|mistral|qwen|gemma|mixtral|phi3|deepseek|olmo|granite|yi/.test(type);
  model.gated_mlp = gated;
  if (cfg.tie_word_embeddings !== undefined) model.tied_embeddings = Boolean(cfg.tie_word_embeddings);
  else if (/gpt2|gpt_neo|opt|gemma/.test(type)) model.tied_embeddings = true; // their configs' default
  const hasRope = cfg.rope_theta !== undefined || cfg.rope_scaling !== undefined || cfg.rotary_dim !== undefined || /llama|mistral|qwen|gemma|mixtral|neox|phi|falcon|deepseek|olmo|granite/.test(type);
  model.position_embedding = hasRope ? 'rope' : 'learned';
  if (hasRope && typeof cfg.rope_theta === 'number' && cfg.rope_theta > 0) model.rope_theta = cfg.rope_theta;
  else if (cfg.rope_theta !== undefined && cfg.rope_theta !== null) {
    notes.push(`rope_theta ${JSON.stringify(cfg.rope_theta).slice(0, 40)} is not a positive number; it was left out (the Megatron command then uses Megatron's default base)`);
  }
  const bias = first(cfg, 'attention_bias', 'mlp_bias', 'bias', 'use_bias');
  if (bias !== undefined) model.bias = Boolean(bias);
  else model.bias = !/llama|mistral|gemma|mixtral|deepseek|olmo|granite/.test(type);
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
  if (cfg.num_local_experts || cfg.n_routed_experts || cfg.num_experts) notes.push('mixture-of-experts layers are modelled as dense layers');
  // a long context window is not a pre-training sequence length (Llama 3: 8192 in pre-training, 131072 after)
  if (model.seq_length > 8192) {
    notes.push(`max_position_embeddings is ${model.seq_length}; the training sequence length was set to 8192, edit it if needed`);
    model.seq_length = 8192;
  }
  // the model takes the head dimension as hidden_size / heads; a config that sets another says so
  const headDim = first(cfg, 'head_dim');
  if (typeof headDim === 'number' && model.num_attention_heads > 0 && headDim * model.num_attention_heads !== model.hidden_size) {
    notes.push(`head_dim ${headDim} × ${model.num_attention_heads} heads = ${headDim * model.num_attention_heads} is not hidden_size ${model.hidden_size}: `
      + `this planner takes the head dimension as hidden_size / heads (${model.hidden_size / model.num_attention_heads}), so the attention's weights and FLOPs will differ from this model's`);
  }
  return { model, notes };
}
