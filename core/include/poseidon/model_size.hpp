// Model arithmetic, independent of the device: parameters, FLOPs and the average block of a
// model (core/src/model_size.cpp; docs/model.md, "Parameters and FLOPs"). The cost model
// (cost_model.hpp, which includes this) turns them into seconds and bytes.
#pragma once

#include <cstdint>
#include <vector>

#include "poseidon/types.hpp"

namespace poseidon {

// ---- Model arithmetic (device independent) ----

// Parameters of one transformer block, unsharded.
double layer_params(const ModelSpec& m);
// Parameters of the whole model (embedding, blocks, final norm, LM head unless tied).
double model_params(const ModelSpec& m);
// Model FLOPs of one training iteration without recomputation: 3 x forward (Narayanan et al. 2021).
double model_flops_per_iteration(const ModelSpec& m, std::int64_t global_batch_size);
// Forward matmul FLOPs of one block for `samples` sequences (Korthikanti et al. 2022, eq. in sec. 3).
double layer_forward_flops(const ModelSpec& m, double samples);
// ... its matrix products only (QKV, projection, MLP), without the attention scores
double layer_matmul_flops(const ModelSpec& m, double samples);

// ---- Models whose blocks differ (core/src/model_size.cpp; docs/model.md, "Parameters and FLOPs
// of MoE, MLA and windowed models"): the functions above then return the average block of the
// num_layers blocks; the MTP modules sit on the last pipeline stage ----

struct ParamCounts {
    double total = 0;   // every parameter held (all routed experts)
    double active = 0;  // those one token uses (top_k routed + shared experts, router)
};
// Block `block` in [0, num_layers), or an MTP module for block >= num_layers.
ParamCounts block_param_counts(const ModelSpec& m, int block);
// The routed experts' parameters of one MTP module (0 unless it is an MoE block).
double mtp_module_routed_params(const ModelSpec& m);
// The whole model: blocks, MTP modules, embedding, final norm, LM head unless tied.
ParamCounts model_param_counts(const ModelSpec& m);
// Forward FLOPs of that block for `samples` sequences: the active experts' GEMMs, the attention
// scores counted in full (s^2, or s x window on a windowed block) as MFU counts them.
double block_forward_flops(const ModelSpec& m, int block, double samples);

// The average block (sums over the num_layers blocks / num_layers): a stage's blocks cost the
// average of its own (its share of the leading dense blocks, the rest the average of the blocks
// after them: average_block's prefix_share), or the model's; an MTP module costs one more such
// block on the last stage, with its projection and its pass through the head.
struct BlockAverage {
    double params = 0;              // parameters held, all experts
    double active_ffn = 0;          // MLP inner width a token passes through (top_k x expert + shared)
    double forward_flops = 0;       // counted as block_forward_flops
    double matmul_flops = 0;        // ... without the attention scores
    double core_causal_flops = 0;   // the attention scores and values the causal kernels compute
    double core_counted_flops = 0;
    double routed_copies = 0;       // top_k token copies entering the experts, per token
    double router_share = 0;        // blocks with a router, per block
    double dense_ffn = 0;           // width of the MLP split over TP: the dense FFN, or the shared experts of a MoE block
    double dense_block_ffn = 0, shared_ffn = 0;  // dense_ffn's two parts: the dense blocks' FFN, the MoE blocks' shared experts
    double routed_params = 0;       // parameters of the routed experts (all of them), per block
};
// prefix_share >= 0 (a model with leading dense blocks, leading_dense_blocks > 0): the average
// of a stage's own blocks, that share of them the leading dense blocks, the rest the blocks after
// them (the MTP modules excepted); < 0: the whole model's average.
BlockAverage average_block(const ModelSpec& m, double samples, double prefix_share = -1);
// Whether block `block` (0-based) has routed experts, and whether its attention is windowed.
bool moe_block(const ModelSpec& m, int block);
bool windowed(const ModelSpec& m, int block);
// Whether any block of the model has its window (a window shorter than the sequence, on a block
// its sliding_window_pattern windows).
bool any_windowed(const ModelSpec& m);
// An MoE model's first blocks before its first MoE block (DeepSeek-V3's first_dense_layers 3); 0
// for a dense model and one whose first block is MoE.
int leading_dense_blocks(const ModelSpec& m);
// The linear layers of the average block other than its MLP, per GPU of a TP group: M x N x K,
// `count` per block.
struct GemmShape {
    double M = 0, N = 0, K = 0, count = 1;
};
// (router_share: blocks with a router, per block; < 0: the model's average)
std::vector<GemmShape> attention_gemms(const ModelSpec& m, double tokens, double tp, double router_share = -1);
// MLA's up projections (column-parallel): the latent queries to the heads' queries (with
// q_lora_rank > 0), the latent keys and values to the heads' keys (no-RoPE part) and values.
struct MlaUpProjections {
    GemmShape q, kv;
};
MlaUpProjections mla_up_projections(const ModelSpec& m, double tokens, double tp);
// Attention activations saved per token for the backward, in elements (Q, K, V, context, MLA latents).
double attention_saved_width(const ModelSpec& m);
// The attention's widths per token, in elements over all heads: queries, keys, values and the
// context (MLA: the up-projected heads, keys as wide as the queries; head_dim where it is not
// hidden / heads). What context parallelism exchanges.
struct AttentionWidths {
    double q = 0, k = 0, v = 0, out = 0;
};
AttentionWidths attention_widths(const ModelSpec& m);

}  // namespace poseidon
