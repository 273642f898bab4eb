// Every flag the Megatron-LM export puts on the command line (web/megatron.js and its helpers) is a
// name of Megatron-LM's or torchrun's, over exports that between them write every flag the export
// knows: dense and uneven, interleaved with a layout, MoE with MLA and MTP, context parallelism with
// FSDP and FP8, NVFP4, a windowed model, recomputation by module and by block, the deferred head
// weight gradient, pre-Ampere fp16. The command runs through `sh -n` and a stub launcher.
//   node --test tests/web/megatron-names.test.mjs
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { megatronArgs } from '../../web/megatron.js';
import { runStub } from './megatron-helpers.mjs';

// Megatron-LM's names as digested in shared/reference/frontier-facts.md, section 5 (arguments.py at
// d96d76c068, 2026-08-22) and shared/reference/megatron-args.md; each was checked there by name.
const MEGATRON = ['--account-for-embedding-in-pipeline-split', '--account-for-loss-in-pipeline-split', '--bf16', '--context-parallel-size', '--cp-comm-type',
  '--cuda-graph-impl', '--data-parallel-sharding-strategy', '--decoder-first-pipeline-num-layers', '--decoder-last-pipeline-num-layers', '--delay-wgrad-compute',
  '--disable-bias-linear', '--expert-model-parallel-size', '--expert-tensor-parallel-size', '--ffn-hidden-size', '--fp16', '--fp4-format', '--fp4-param-gather',
  '--fp4-recipe', '--fp8-format', '--fp8-param-gather', '--fp8-recipe', '--global-batch-size', '--grad-reduce-in-bf16', '--group-query-attention', '--hidden-size',
  '--kv-channels', '--kv-lora-rank', '--max-position-embeddings', '--micro-batch-size', '--microbatch-group-size-per-virtual-pipeline-stage',
  '--moe-ffn-hidden-size', '--moe-flex-dispatcher-backend', '--moe-grouped-gemm', '--moe-layer-freq', '--moe-router-topk', '--moe-shared-expert-intermediate-size',
  '--moe-shared-expert-overlap', '--moe-token-dispatcher-type', '--mtp-num-layers', '--multi-latent-attention', '--normalization', '--num-attention-heads',
  '--num-experts', '--num-layers', '--num-query-groups', '--num-virtual-stages-per-pipeline-rank', '--overlap-grad-reduce', '--overlap-moe-expert-parallel-comm',
  '--overlap-param-gather', '--pipeline-model-parallel-layout', '--pipeline-model-parallel-size', '--position-embedding-type', '--q-lora-rank', '--qk-head-dim', '--qk-layernorm',
  '--qk-pos-emb-head-dim', '--recompute-activations', '--recompute-granularity', '--recompute-method', '--recompute-modules', '--recompute-num-layers',
  '--rotary-base', '--seq-length', '--sequence-parallel', '--swiglu', '--tensor-model-parallel-size', '--tp-comm-overlap', '--untie-embeddings-and-output-weights',
  '--use-distributed-optimizer', '--use-flash-attn', '--use-megatron-fsdp', '--v-head-dim', '--window-attn-skip-freq', '--window-size'];
// Megatron-LM's training and data flags the digests do not list (the launch script's placeholders
// fill them), and torchrun's own.
const STANDARD = ['--attention-dropout', '--hidden-dropout', '--lr', '--train-iters', '--data-path', '--tokenizer-type', '--tokenizer-model', '--vocab-file',
  '--merge-file', '--nnodes', '--nproc_per_node', '--node_rank', '--master_addr', '--master_port'];
// In Megatron-LM's arguments.py (the LM head's deferred weight gradient), not in the digests: not
// checked against them here.
const UNDIGESTED = ['--defer-embedding-wgrad-compute', '--wgrad-deferral-limit'];
const KNOWN = new Set([...MEGATRON, ...STANDARD, ...UNDIGESTED]);

const stage = (o) => ({ device: 'h100-sxm5-80gb', group: 0, tp: 1, dp: 8, gpus: 8, samples_per_replica: 1, ...o });
const llama = { name: 'llama', num_layers: 32, hidden_size: 4096, num_attention_heads: 32, num_kv_heads: 8, ffn_hidden_size: 14336, vocab_size: 128256,
  seq_length: 4096, gated_mlp: true, position_embedding: 'rope', tied_embeddings: false, bias: false, hidden_dropout: 0, attention_dropout: 0 };
const deepseek = { ...llama, name: 'ds', num_layers: 8, hidden_size: 7168, num_attention_heads: 128, num_kv_heads: 128, attention: 'mla', q_lora_rank: 1536,
  kv_lora_rank: 512, qk_nope_head_dim: 128, qk_rope_head_dim: 64, v_head_dim: 128, num_experts: 256, moe_top_k: 8, moe_ffn_hidden_size: 2048,
  num_shared_experts: 1, first_dense_layers: 3, mtp_layers: 1 };
const qwen3 = { ...llama, name: 'qwen3', num_layers: 48, hidden_size: 2048, num_attention_heads: 32, num_kv_heads: 4, head_dim: 128, num_experts: 128, moe_top_k: 8,
  moe_ffn_hidden_size: 768, qk_layernorm: true };
const oss = { ...llama, name: 'oss', num_layers: 36, hidden_size: 2880, num_attention_heads: 64, head_dim: 64, num_experts: 128, moe_top_k: 4,
  moe_ffn_hidden_size: 2880, sliding_window: 128, sliding_window_pattern: 2, bias: true };

const exportsToCheck = [
  // dense, uneven stages (the layout), TP with sequence parallelism and the userbuffers, the distributed optimizer's overlaps
  [{ plan: { micro_batch_size: 8, num_micro_batches: 8 }, stages: [stage({ tp: 2, dp: 4, num_layers: 10 }), stage({ tp: 2, dp: 4, num_layers: 12 }), stage({ tp: 2, dp: 4, num_layers: 10 })] },
    { model: llama, training: { global_batch_size: 64, sequence_parallel: true, tp_comm_overlap: true, distributed_optimizer: true, overlap_grad_reduce: true, overlap_param_gather: true } }],
  // first and last stages only differ
  [{ plan: { micro_batch_size: 8, num_micro_batches: 8 }, stages: [stage({ num_layers: 15 }), stage({ num_layers: 17 })] }, { model: llama, training: { global_batch_size: 64 } }],
  // interleaved, even and uneven chunks, a micro-batch group
  [{ plan: { micro_batch_size: 8, num_micro_batches: 8, virtual_stages: 2, microbatch_group_size: 4 }, stages: [stage({ num_layers: 16 }), stage({ num_layers: 16 })] },
    { model: llama, training: { global_batch_size: 64 } }],
  [{ plan: { micro_batch_size: 8, num_micro_batches: 8, virtual_stages: 2, stages: [{ chunk_layers: [7, 8] }, { chunk_layers: [8, 9] }] },
    stages: [stage({ num_layers: 15 }), stage({ num_layers: 17 })] }, { model: llama, training: { global_batch_size: 64 } }],
  // MoE with MLA and MTP, the flex dispatcher, the combined 1F1B, named-module recomputation
  [{ plan: { micro_batch_size: 8, num_micro_batches: 8 }, stages: [stage({ num_layers: 8, ep: 8 })] },
    { model: deepseek, training: { global_batch_size: 64, moe_token_dispatcher: 'flex', overlap_moe_expert_parallel_comm: true, recompute: 'selective', recompute_modules: ['mla_up_proj', 'moe_act'] } }],
  // the alltoall dispatcher with the shared expert's overlap, a windowed model
  [{ plan: { micro_batch_size: 8, num_micro_batches: 8 }, stages: [stage({ num_layers: 36, ep: 8 })] }, { model: oss, training: { global_batch_size: 64 } }],
  // QK layer norm (Qwen3)
  [{ plan: { micro_batch_size: 8, num_micro_batches: 8 }, stages: [stage({ num_layers: 48, ep: 8 })] }, { model: qwen3, training: { global_batch_size: 64 } }],
  [{ plan: { micro_batch_size: 8, num_micro_batches: 8 }, stages: [stage({ num_layers: 8, ep: 8 })] }, { model: deepseek, training: { global_batch_size: 64, moe_shared_expert_overlap: true } }],
  // context parallelism, FSDP, FP8 with its parameter gather, a full-iteration CUDA graph, the deferred head weight gradient
  [{ plan: { micro_batch_size: 2, num_micro_batches: 32 }, stages: [stage({ tp: 4, dp: 2, cp: 2, gpus: 16, num_layers: 32 })] },
    { model: llama, training: { global_batch_size: 64, fsdp: true, cp_comm_type: 'a2a', precision: 'fp8', fp8_param_gather: true, cuda_graph_impl: 'full_iteration' } }],
  [{ plan: { micro_batch_size: 8, num_micro_batches: 8 }, stages: [stage({ num_layers: 16 }), stage({ num_layers: 16 })] },
    { model: llama, training: { global_batch_size: 64, defer_embedding_wgrad_compute: true, wgrad_deferral_limit: 2, recompute: 'full', recompute_num_layers: 2 } }],
  // NVFP4 on Blackwell, full recompute of every block
  [{ plan: { micro_batch_size: 8, num_micro_batches: 8 }, stages: [stage({ device: 'b200-180gb', num_layers: 32 })] },
    { model: llama, training: { global_batch_size: 64, precision: 'nvfp4', fp8_param_gather: true, recompute: 'full' } }],
  // pre-Ampere: bf16 written as fp16, no flash attention
  [{ plan: { micro_batch_size: 8, num_micro_batches: 8 }, stages: [stage({ device: 'v100-sxm2-32gb', num_layers: 32 })] },
    { model: llama, training: { global_batch_size: 64 } }, { deviceOf: () => ({ id: 'v100-sxm2-32gb', name: 'V100' }) }],
];

test('every flag the Megatron-LM export writes is Megatron-LM\'s or torchrun\'s; each command passes sh -n and runs', () => {
  const seen = new Set();
  for (const [est, scenario, opts] of exportsToCheck) {
    const r = megatronArgs(est, scenario, opts ?? {});
    assert.ok(r.ok, JSON.stringify(r.reasons));
    const { check, run, args } = runStub(r.text);
    assert.equal(check.status, 0, check.stderr);
    assert.equal(run.status, 0, run.stderr);
    for (const a of args.filter((x) => x.startsWith('--'))) {
      assert.ok(KNOWN.has(a), `${a} is not a Megatron-LM or torchrun flag (${scenario.model.name})`);
      seen.add(a);
    }
  }
  // the exports above write the flags this test is about (so that a renamed one cannot slip past untested)
  for (const a of ['--pipeline-model-parallel-layout', '--decoder-first-pipeline-num-layers', '--num-virtual-stages-per-pipeline-rank', '--microbatch-group-size-per-virtual-pipeline-stage',
    '--moe-shared-expert-intermediate-size', '--multi-latent-attention', '--mtp-num-layers', '--overlap-moe-expert-parallel-comm', '--moe-shared-expert-overlap', '--window-size',
    '--context-parallel-size', '--use-megatron-fsdp', '--fp8-recipe', '--fp4-recipe', '--fp8-param-gather', '--fp4-param-gather', '--recompute-modules', '--recompute-method',
    '--defer-embedding-wgrad-compute', '--tp-comm-overlap', '--sequence-parallel', '--qk-layernorm']) assert.ok(seen.has(a), `no export above wrote ${a}`);
});

test('multi-latent attention writes no query groups, whatever its num_kv_heads says (MLA has none)', () => {
  const est = { plan: { micro_batch_size: 8, num_micro_batches: 8 }, stages: [stage({ num_layers: 8, ep: 8 })] };
  for (const kv of [128, 8]) {
    const r = megatronArgs(est, { model: { ...deepseek, num_kv_heads: kv }, training: { global_batch_size: 64 } }, {});
    assert.ok(r.ok, JSON.stringify(r.reasons));
    assert.doesNotMatch(r.text, /--num-query-groups|--group-query-attention/);
    assert.match(r.text, /--multi-latent-attention/);
  }
  const gqa = megatronArgs(est, { model: { ...llama, num_layers: 8 }, training: { global_batch_size: 64 } }, {});
  assert.match(gqa.text, /--group-query-attention \\\n\s+--num-query-groups 8/);
  // QK layer norm only where the model has it (Qwen3), never by default
  assert.doesNotMatch(gqa.text, /--qk-layernorm/);
});
