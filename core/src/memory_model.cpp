// The memory of one replica of a stage (docs/model.md, "Memory per GPU"): parameters and their
// gradients and optimizer states, activations held for the backward, the loss's buffers, the
// allocator's reserve and the framework's fixed overhead.
#include <algorithm>
#include <cmath>

#include "poseidon/combined_1f1b.hpp"
#include "poseidon/cost_model.hpp"
#include "poseidon/gemm_shape.hpp"
#include "poseidon/recompute_modules.hpp"

namespace poseidon {

namespace {

// The optimizer's state per parameter is the stack's (fp32 master weights + Adam m and v: 12 B in
// Megatron-LM's docs/distrib_optimizer.md; 16 B where fp32 master gradients persist too). Pure fp32
// training keeps no master copy of the weights, nor of the gradients: the model's own are fp32
// (4 B less, and at most Adam's m and v, 8 B).
double optimizer_bytes_per_param(const Training& tr) {
    const double b = tr.stack.optimizer_state_bytes_per_param;
    return tr.precision == Precision::fp32 ? std::max(0.0, std::min(b - 4.0, 8.0)) : b;
}

}  // namespace

void replica_memory(const Scenario& sc, const Device& d, int tp, int samples, int num_layers, const StagePosition& pos, ReplicaCost& rc) {
    const ModelSpec& m = sc.model;
    const Training& tr = sc.training;
    // context parallelism: each rank holds s / cp tokens of every sample (replica_cost);
    // MoE, MLA, windows, MTP: the average of the stage's blocks (docs/model.md, "Expert parallelism")
    const bool variants = m.has_block_variants();
    const double b = static_cast<double>(samples) / std::max(1, pos.cp);
    const BlockAverage avg = variants ? average_block(m, b, pos.prefix_share) : BlockAverage{};
    const double t = tp, s = m.seq_length, h = m.hidden_size, f = variants ? avg.dense_ffn : m.ffn_hidden_size, a = m.num_attention_heads;
    const double V = m.vocab_size, kv_ratio = static_cast<double>(m.kv_heads()) / m.num_attention_heads;
    const double e = bytes_per_element(tr.precision);
    const bool sp = tr.sequence_parallel && tp > 1;
    const bool flash = tr.flash_attention && d.flash_attention;

    // ---- parameters held by one GPU ----
    // (the routed experts split over ep x etp rather than TP: expert_parallel.cpp)
    const double lp = variants ? avg.params : layer_params(m);
    const double vec_per_layer = (m.bias ? 2 * (2.0 * h) + h + h : 2 * h);  // replicated norms and row-parallel biases (approx.)
    const double routed = variants ? avg.routed_params : 0.0;
    const double expert_shards = static_cast<double>(std::max(1, pos.ep)) * std::max(1, pos.etp);
    const double layer_linear = (lp - vec_per_layer - routed) / t + routed / expert_shards;
    double params = num_layers * (layer_linear + vec_per_layer);
    double linear = num_layers * layer_linear, experts = num_layers * routed / expert_shards;
    if (pos.first()) params += V * h / t + (m.learned_position_embedding ? s * h : 0.0);
    const bool mtp_here = pos.last() && m.mtp_layers > 0;
    if (pos.last()) {
        params += (m.bias ? 2.0 : 1.0) * h;
        bool head_shared = m.tied_embeddings && pos.num_stages == 1;
        if (!head_shared) params += V * h / t;
    }
    if (mtp_here) {
        // The MTP modules (cost_model.cpp) with their own block, projection and norms, and a copy of
        // the embedding for their shifted input tokens where the first stage holds the original.
        const double k = m.mtp_layers, mtp_routed = mtp_module_routed_params(m);
        const double mtp_linear = (block_param_counts(m, m.num_layers).total - mtp_routed - vec_per_layer) / t + mtp_routed / expert_shards;
        params += k * (mtp_linear + vec_per_layer) + (pos.first() ? 0.0 : V * h / t);
        linear += k * mtp_linear;
        experts += k * mtp_routed / expert_shards;
    }
    rc.params_per_gpu = params;
    rc.linear_params_per_gpu = linear;
    rc.layer_params_per_gpu = layer_linear + vec_per_layer;
    rc.expert_params_per_gpu = experts;
    // The distributed optimizer (and FSDP) shard the dense parameters' states over the stage's
    // dp x cp ranks and the experts' over their expert data-parallel ranks, tp x cp x dp / (ep x etp)
    // (Megatron-Core's dp_cp and expt_dp groups: frontier-facts.md, section 4).
    const double shard_dense = std::max(1, pos.dp_total), shard_expert = pos.edp > 0 ? pos.edp : std::max(1.0, t * pos.dp_total / expert_shards);
    const double sharded_params = (params - rc.expert_params_per_gpu) / shard_dense + rc.expert_params_per_gpu / shard_expert;
    rc.sharded_params_per_gpu = sharded_params;

    // ---- memory per GPU (Korthikanti et al. 2022, table 2; Rajbhandari et al. 2020 for states) ----
    const double weight_bytes = (tr.precision == Precision::fp32 ? 4.0 : 2.0);
    // Low precision keeps the quantised compute copies of the linear weights beside the bf16 ones
    // (cached across the micro-batches of an iteration); with fp8_param_gather they replace them.
    const double lp_weight_bytes = compute_weight_bytes_per_param(d, tr);
    const double bf16_linear = tr.fp8_param_gather ? 0.0 : weight_bytes;
    rc.memory.weights_GiB = ((params - rc.linear_params_per_gpu) * weight_bytes + rc.linear_params_per_gpu * (bf16_linear + lp_weight_bytes)) / GiB;
    rc.memory.gradients_GiB = params * grad_bytes_per_param(tr) / GiB;
    rc.memory.optimizer_GiB = (tr.distributed_optimizer || tr.fsdp ? sharded_params : params) * optimizer_bytes_per_param(tr) / GiB;
    if (tr.fsdp) {
        // Megatron-FSDP shards weights (ZeRO-3, optim_grads_params) and gradients, and holds at
        // most two blocks unsharded (the one computing and the one prefetched: --fsdp-double-buffer)
        // with their gradients before the reduce-scatter (Megatron-LM
        // docs/user-guide/features/megatron_fsdp.md); optim_grads (ZeRO-2) keeps the weights whole.
        const double unit = 2 * rc.layer_params_per_gpu;
        const double per_param_weight = params > 0 ? rc.memory.weights_GiB / params : 0.0;
        if (tr.fsdp_shards_params()) rc.memory.weights_GiB = per_param_weight * (sharded_params + std::min(params, unit));
        rc.memory.gradients_GiB = grad_bytes_per_param(tr) * (sharded_params + std::min(params, unit)) / GiB;
    }
    rc.memory.overhead_GiB = d.framework_overhead_GiB;

    const double scale = e / 2.0;  // Korthikanti's counts assume 2-byte activations
    // Replicated per token: the two norms' inputs (4h), the QKV and MLP inputs (2h each) and the two
    // 1-byte dropout masks (Korthikanti's 10 sbh; 8 without hidden dropout, the masks never scale).
    const double hidden_masks = m.hidden_dropout > 0 ? 2.0 : 0.0;
    double rep = 8 * s * b * h / (sp ? t : 1.0);
    double shard = (s * b * h * (4 + 4 * kv_ratio) + s * b * f * (m.gated_mlp ? 6.0 : 4.0)) / t;
    // Q, K, V and context as wide as the heads make them; each routed copy of a token is saved as
    // its expert's input, on every rank while experts are replicated
    if (variants) shard = (2 * s * b * attention_saved_width(m) + s * b * f * (m.gated_mlp ? 6.0 : 4.0)) / t;
    // QK layer norm keeps its input, the queries and keys before it, for its backward
    if (m.qk_layernorm) {
        const AttentionWidths w = attention_widths(m);
        shard += 2 * s * b * (w.q + w.k) / t;
    }
    // The routed experts' rows, on the expert grid (expert_parallel.cpp): the MoE blocks' share.
    const bool lp_recipe = is_low_precision(tr.precision);
    const MoeShape moe_x = m.is_moe() ? moe_shape(sc, s * b / t, pos) : MoeShape{};
    const MoeMemory moe = m.is_moe() ? moe_memory(moe_x, e, lp_recipe ? quant_recipe(d, tr.precision).operand_bytes : e) : MoeMemory{};
    const double moe_saved = avg.router_share * moe.saved_bytes, moe_buffers = avg.router_share > 0 ? moe.buffer_bytes : 0.0;
    // Stored per score: the AV product's input (2 B: the dropout output), the softmax output for its
    // backward (2 B) and the dropout mask (1 B). An unfused fp32 softmax keeps its output in fp32
    // (4 B) apart from the cast-down copy. Without attention dropout the AV product takes the
    // softmax output itself, so one 2-byte tensor serves both (two with an fp32 softmax: 4 + 2 B).
    const bool attn_dropout = m.attention_dropout > 0;
    const bool fp32_softmax = !tr.stack.fused_elementwise && tr.stack.softmax_fp32 && e < 4.0;
    const double score_bytes_stored = 2.0 * scale + (fp32_softmax ? 4.0 : (attn_dropout ? 2.0 * scale : 0.0)) + (attn_dropout ? 1.0 : 0.0);
    const bool selective = tr.recompute == Recompute::selective;
    double attn_scores = (!flash && !(selective && tr.recompute_modules.core_attn)) ? score_bytes_stored * a * s * s * b / t : 0.0;
    double flash_stats = flash ? 4 * a * s * b / t : 0.0;  // fp32 log-sum-exp per row, whatever e
    // Low precision saves the linear layers' inputs for their wgrad quantised (one copy each, the
    // column-wise one where the GEMM needs it): the QKV and MLP inputs (replicated width) and the
    // MLP down input (sharded) shrink from 2 bytes; the projection's input stays saved in bf16 for
    // the attention backward, and its quantised copy comes on top.
    double lp_delta = 0;
    if (is_low_precision(tr.precision)) {
        const double q = quant_recipe(d, tr.precision).operand_bytes;
        lp_delta = -(2.0 - q) * (2 * s * b * h / (sp ? t : 1.0) + s * b * f / t) + q * s * b * h / t;
    }
    double full_layer = (rep + shard) * scale + moe_saved + flash_stats + attn_scores + hidden_masks * s * b * h / (sp ? t : 1.0) + lp_delta;
    double per_layer = full_layer;
    double working = 0;
    if (selective && !tr.recompute_modules.only_core_attn()) {
        // named modules drop what they saved; one block's worth is re-materialised at a time
        const RecomputeSaving rs = module_recompute_saving(sc, avg, moe_x, t, sp, lp_recipe ? quant_recipe(d, tr.precision).operand_bytes : e);
        working = std::min(full_layer, rs.per_token_bytes * s * b + avg.router_share * rs.moe_block_bytes);
        per_layer = full_layer - working;
    }
    // blocks that recompute keep per_layer, the others full_layer (all of them, or the first
    // recompute_num_layers decoder blocks with Megatron-Core's block method)
    const double blocks = num_layers + (mtp_here ? m.mtp_layers : 0);
    double recomputing = blocks;
    if (tr.recompute == Recompute::full) {
        per_layer = 2 * s * b * h / (sp ? t : 1.0) * scale;  // only the block input is kept
        if (tr.recompute_num_layers > 0) recomputing = std::min(tr.recompute_num_layers, num_layers);
        working = full_layer;                                 // one block re-materialised at a time
    }
    const double in_flight =
        pos.in_flight >= 0 ? pos.in_flight : static_cast<double>(one_f_one_b_in_flight(pos.index, pos.num_stages, pos.num_micro_batches, merges_passes(sc)));
    double act = (per_layer * recomputing + full_layer * (blocks - recomputing)) * in_flight + working;
    if (pos.first()) act += (2 * s * b * h * scale + (m.hidden_dropout > 0 ? s * b * h : 0.0)) / (sp ? t : 1.0) * in_flight;  // embedding output + dropout mask
    if (pos.last()) act += 2 * s * b * h * scale;  // the final norm's output
    if (pos.last() && pos.num_stages > 1 && tr.defer_embedding_wgrad_compute) {
        // Megatron-Core's deferred head weight gradient (tensor_parallel/layers.py,
        // embedding_activation_buffer and grad_output_buffer): each deferred micro-batch keeps the
        // head's input (the sequence-parallel shard with SP) and its output gradient, s b V/t on the
        // padded vocabulary, until the flush. At the last backward the earlier ones are all held
        // beside the current micro-batch's own (already counted): min(k, m - 1) of them.
        const double m_all = pos.num_micro_batches;
        const double k = tr.wgrad_deferral_limit > 0 ? std::min<double>(tr.wgrad_deferral_limit, m_all) : m_all;
        const double held = std::min(k, m_all - 1);
        act += held * (s * b * h / (sp ? t : 1.0) + s * b * padded_vocab_shard(V, t)) * 2 * scale;
    }
    rc.memory.activations_GiB = act / GiB;
    rc.recompute_working_GiB = working / GiB;
    // The loss's buffers on the last stage: the logits and their fp32 copy, softmax and gradient.
    // They are freed after the head's backward, before the first block is re-materialised, so with
    // full recompute only what exceeds that block's workspace adds to the peak.
    // Each MTP module's loss keeps its own until the backward.
    const double loss_buffers = pos.last() ? (1 + (mtp_here ? m.mtp_layers : 0)) * tr.stack.loss_bytes_per_logit * s * b * V / t : 0.0;
    const double temporary = std::max(0.0, std::max(loss_buffers, moe_buffers) - working);
    rc.memory.temporary_GiB = temporary / GiB;
    rc.dispatch_buffers_GiB = moe_buffers / GiB;
    rc.memory.allocator_GiB = tr.stack.allocator_reserve_fraction * (act + temporary) / GiB;
}

}  // namespace poseidon
