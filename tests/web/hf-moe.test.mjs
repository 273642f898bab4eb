// The page's Hugging Face import of MoE, MLA and sliding-window configs (web/hf.js): one config
// shape per family, abridged from the published config.json files (docs/formats.md, "model").
import test from 'node:test';
import assert from 'node:assert/strict';
import { modelFromHfConfig } from '../../web/hf.js';

const load = (cfg) => modelFromHfConfig(JSON.stringify(cfg));

test('DeepSeek-V3: MLA, 256 routed + 1 shared experts, 3 dense blocks, one MTP module', () => {
  const { model } = load({ _name_or_path: 'deepseek-ai/DeepSeek-V3', model_type: 'deepseek_v3', num_hidden_layers: 61, hidden_size: 7168,
    num_attention_heads: 128, num_key_value_heads: 128, intermediate_size: 18432, moe_intermediate_size: 2048, vocab_size: 129280,
    max_position_embeddings: 163840, hidden_act: 'silu', n_routed_experts: 256, n_shared_experts: 1, num_experts_per_tok: 8,
    first_k_dense_replace: 3, moe_layer_freq: 1, q_lora_rank: 1536, kv_lora_rank: 512, qk_nope_head_dim: 128, qk_rope_head_dim: 64,
    v_head_dim: 128, num_nextn_predict_layers: 1, rope_theta: 10000, tie_word_embeddings: false, attention_bias: false });
  assert.deepEqual([model.num_experts, model.moe_top_k, model.moe_ffn_hidden_size, model.num_shared_experts, model.ffn_hidden_size, model.first_dense_layers],
    [256, 8, 2048, 1, 18432, 3]);
  assert.deepEqual([model.attention, model.q_lora_rank, model.kv_lora_rank, model.qk_nope_head_dim, model.qk_rope_head_dim, model.v_head_dim],
    ['mla', 1536, 512, 128, 64, 128]);
  assert.equal(model.mtp_layers, 1);
  assert.equal(model.moe_layer_freq, undefined);  // 1: every block, the default
  assert.equal(model.head_dim, undefined);
  assert.equal(model.gated_mlp, true);
  assert.equal(model.seq_length, 8192, 'no rope_scaling here: the long window is capped at 8192');
  // the published config's YaRN names the pre-training length, and so does GPT-OSS's initial_context_length
  const yarn = load({ model_type: 'deepseek_v3', num_hidden_layers: 4, hidden_size: 64, num_attention_heads: 4, vocab_size: 100, max_position_embeddings: 163840,
    rope_scaling: { type: 'yarn', factor: 40, original_max_position_embeddings: 4096 } });
  assert.equal(yarn.model.seq_length, 4096);
  assert.ok(yarn.notes.some((n) => /163840, a context extended after pre-training at 4096 \(rope_scaling\.original_max_position_embeddings\)/.test(n)), yarn.notes.join(' | '));
  const oss = load({ model_type: 'gpt_oss', num_hidden_layers: 4, hidden_size: 64, num_attention_heads: 4, vocab_size: 100, max_position_embeddings: 131072,
    initial_context_length: 4096, num_local_experts: 4, num_experts_per_tok: '2' });
  assert.equal(oss.model.seq_length, 4096);
  // a top-k that is not a number is named with its value, not "not found"
  assert.equal(oss.model.moe_top_k, undefined);
  assert.ok(oss.notes.some((n) => n === 'num_experts_per_tok is the string "2", not a number; set the experts per token (moe_top_k)'), oss.notes.join(' | '));
});

test('Qwen3-MoE: head_dim beyond hidden / heads, 128 experts, no shared expert', () => {
  const { model, notes } = load({ model_type: 'qwen3_moe', num_hidden_layers: 48, hidden_size: 2048, num_attention_heads: 32, num_key_value_heads: 4,
    head_dim: 128, intermediate_size: 6144, moe_intermediate_size: 768, num_experts: 128, num_experts_per_tok: 8, decoder_sparse_step: 1,
    mlp_only_layers: [], vocab_size: 151936, max_position_embeddings: 40960, rope_theta: 1000000, tie_word_embeddings: false,
    sliding_window: null, use_sliding_window: false });
  assert.deepEqual([model.num_experts, model.moe_top_k, model.moe_ffn_hidden_size, model.head_dim], [128, 8, 768, 128]);
  assert.equal(model.num_shared_experts, undefined);
  assert.equal(model.moe_layer_freq, undefined);
  assert.equal(model.sliding_window, undefined);
  assert.ok(notes.some((n) => /head_dim 128 × 32 heads = 4096 is not hidden_size 2048: imported as head_dim/.test(n)), notes.join(' | '));
  // Qwen3 always normalises queries and keys (no config key says so); Qwen2 and Mixtral do not
  assert.equal(model.qk_layernorm, true);
  // a sparse step of 2 and a dense-only block become the explicit list
  const stepped = load({ model_type: 'qwen2_moe', num_hidden_layers: 4, hidden_size: 64, num_attention_heads: 4, vocab_size: 100,
    num_experts: 8, num_experts_per_tok: 2, moe_intermediate_size: 32, decoder_sparse_step: 2, mlp_only_layers: [3], shared_expert_intermediate_size: 128 }).model;
  assert.deepEqual(stepped.moe_layer_freq, [0, 1, 0, 0]);
  assert.deepEqual([stepped.num_shared_experts, stepped.moe_shared_expert_ffn_hidden_size], [1, 128]);
  assert.equal(stepped.qk_layernorm, undefined);
});

test('Mixtral: num_local_experts, the expert size is intermediate_size, no window', () => {
  const { model } = load({ model_type: 'mixtral', num_hidden_layers: 32, hidden_size: 4096, num_attention_heads: 32, num_key_value_heads: 8,
    intermediate_size: 14336, num_local_experts: 8, num_experts_per_tok: 2, vocab_size: 32000, max_position_embeddings: 32768,
    rope_theta: 1e6, sliding_window: null, hidden_act: 'silu', tie_word_embeddings: false });
  assert.deepEqual([model.num_experts, model.moe_top_k, model.moe_ffn_hidden_size, model.ffn_hidden_size], [8, 2, 14336, 14336]);
  assert.equal(model.sliding_window, undefined);
  assert.equal(model.bias, false);
  assert.equal(model.qk_layernorm, undefined);
});

test('GPT-OSS: biases, a window of 128 on the blocks layer_types marks sliding', () => {
  const layerTypes = Array.from({ length: 24 }, (_, i) => (i % 2 === 0 ? 'sliding_attention' : 'full_attention'));
  const { model } = load({ model_type: 'gpt_oss', num_hidden_layers: 24, hidden_size: 2880, num_attention_heads: 64, num_key_value_heads: 8,
    head_dim: 64, intermediate_size: 2880, num_local_experts: 32, num_experts_per_tok: 4, experts_per_token: 4, vocab_size: 201088,
    max_position_embeddings: 131072, sliding_window: 128, layer_types: layerTypes, attention_bias: true, rope_theta: 150000, tie_word_embeddings: false });
  assert.deepEqual([model.num_experts, model.moe_top_k, model.moe_ffn_hidden_size, model.head_dim, model.sliding_window], [32, 4, 2880, 64, 128]);
  assert.deepEqual(model.sliding_window_pattern, layerTypes.map((t) => (t === 'sliding_attention' ? 1 : 0)));
  assert.equal(model.bias, true);
  assert.equal(model.gated_mlp, true);
});

test('Llama 4 Maverick: text_config, one shared expert, MoE on every second block, dense blocks of intermediate_size_mlp', () => {
  const { model, notes } = load({ model_type: 'llama4', architectures: ['Llama4ForConditionalGeneration'], text_config: {
    model_type: 'llama4_text', num_hidden_layers: 48, hidden_size: 5120, num_attention_heads: 40, num_key_value_heads: 8, head_dim: 128,
    intermediate_size: 8192, intermediate_size_mlp: 16384, num_local_experts: 128, num_experts_per_tok: 1, interleave_moe_layer_step: 2,
    vocab_size: 202048, max_position_embeddings: 1048576, rope_theta: 500000, attention_chunk_size: 8192, tie_word_embeddings: false } });
  assert.deepEqual([model.num_experts, model.moe_top_k, model.moe_ffn_hidden_size, model.ffn_hidden_size, model.num_shared_experts], [128, 1, 8192, 16384, 1]);
  assert.deepEqual(model.moe_layer_freq, Array.from({ length: 48 }, (_, i) => i % 2));
  assert.ok(notes.some((n) => /attention_chunk_size 8192/.test(n)));
  // a dense config has none of the keys
  const dense = load({ model_type: 'llama', num_hidden_layers: 2, hidden_size: 64, num_attention_heads: 4, vocab_size: 100 }).model;
  for (const k of ['num_experts', 'attention', 'head_dim', 'sliding_window', 'mtp_layers']) assert.equal(dense[k], undefined, k);
});

test('a trimmed config without model_type: the family read from architectures, and said so', () => {
  // as pasted by hand: the class name and the sizes, no model_type, hidden_act, rope or bias keys
  const { model, notes } = load({ architectures: ['Qwen3MoeForCausalLM'], hidden_size: 2048, num_hidden_layers: 48, num_attention_heads: 32,
    num_key_value_heads: 4, head_dim: 128, intermediate_size: 6144, moe_intermediate_size: 768, num_experts: 128, num_experts_per_tok: 8,
    vocab_size: 151936, max_position_embeddings: 40960 });
  assert.deepEqual([model.name, model.gated_mlp, model.position_embedding, model.bias, model.qk_layernorm], ['qwen3_moe config', true, 'rope', false, true]);
  assert.deepEqual([model.num_experts, model.moe_top_k, model.moe_ffn_hidden_size], [128, 8, 768]);
  assert.ok(notes.includes('model_type not found; read as "qwen3_moe" from architectures "Qwen3MoeForCausalLM"'), notes.join(' | '));
  const kind = (cls) => load({ architectures: [cls], hidden_size: 64, num_hidden_layers: 2, num_attention_heads: 2, vocab_size: 10, max_position_embeddings: 64 }).model;
  const mixtral = kind('MixtralForCausalLM');
  assert.deepEqual([mixtral.name, mixtral.gated_mlp, mixtral.position_embedding, mixtral.bias], ['mixtral config', true, 'rope', false]);
  assert.deepEqual([kind('DeepseekV3ForCausalLM').name, kind('GptOssForCausalLM').position_embedding, kind('GPTNeoXForCausalLM').name], ['deepseek_v3 config', 'rope', 'gpt_neox config']);
  const gpt2 = kind('GPT2LMHeadModel');
  assert.deepEqual([gpt2.gated_mlp, gpt2.position_embedding, gpt2.tied_embeddings], [false, 'learned', true]);
  // no class either: the generic defaults, named as before
  assert.equal(kind(undefined).name, 'Custom model');
});
