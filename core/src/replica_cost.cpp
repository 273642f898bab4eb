// A replica's stage (docs/model.md, "Compute"): its blocks (block_cost, cost_model.cpp) times
// the layers it holds, the embedding on the first stage, the LM head and MTP modules on the last,
// and its memory (memory_model.cpp).
#include <algorithm>

#include "block_cost.hpp"
#include "poseidon/gemm_shape.hpp"

namespace poseidon {
namespace detail {

ReplicaCost replica_cost_of(const Scenario& sc, const Device& d, int tp, int samples, int num_layers, const StagePosition& pos, const BlockCost& blk) {
    const ModelSpec& m = sc.model;
    const Training& tr = sc.training;
    ReplicaCost rc = blk.partial;
    const double t = tp, h = m.hidden_size, V = m.vocab_size;
    const double T = blk.T, Tr = blk.Tr, e = blk.e, mem_rate = blk.mem_rate, kernel_s = blk.kernel_s, one_allreduce_s = blk.one_allreduce_s;
    const bool hidden_dropout = blk.hidden_dropout, host_free = blk.host_free, some_blocks = blk.some_blocks;
    const double layer_fwd = blk.layer_fwd, layer_bwd = blk.layer_bwd, layer_fwd_tp = blk.layer_fwd_tp, layer_bwd_tp = blk.layer_bwd_tp;
    const double plain_bwd = blk.plain_bwd, plain_bwd_tp = blk.plain_bwd_tp;
    const double ep_fwd = blk.ep_fwd, ep_bwd = blk.ep_bwd, recompute_ep = blk.recompute_ep;
    auto gemm_s = [&](double batch, double M, double N, double K) { return blk.timer.gemm_s(batch, M, N, K); };
    auto linear_s = [&](double M, double N, double K) { return blk.timer.linear_s(M, N, K); };
    auto measured = [&](ProfileField field, double& value, double* tp_part, CostSource& src) { apply_measured(blk.prof, tp, samples, field, value, tp_part, src); };
    // full recompute of the first recompute_num_layers blocks only (Megatron-Core's block method)
    const double recomputed = some_blocks ? std::min(tr.recompute_num_layers, num_layers) : num_layers;

    // The schedule's fixed cost of one micro-batch pass on a stage (docs/model.md, "Software stacks").
    const double pass_s = host_free ? 0.0 : tr.stack.pass_overhead_us * 1e-6;
    rc.layer_forward_s = layer_fwd;
    const double blocks_bwd = recomputed * layer_bwd + (num_layers - recomputed) * plain_bwd;
    rc.layer_backward_s = num_layers > 0 ? blocks_bwd / num_layers : layer_bwd;
    // (a measured block keeps the analytic saving, never more than either pass)
    rc.ep_pair_save_s = std::min({rc.ep_pair_save_s, layer_fwd, layer_bwd});
    rc.pair_layers = num_layers;
    rc.forward_s = num_layers * layer_fwd + pass_s;
    rc.backward_s = blocks_bwd + pass_s;
    rc.forward_tp_comm_s = num_layers * layer_fwd_tp;
    rc.backward_tp_comm_s = recomputed * layer_bwd_tp + (num_layers - recomputed) * plain_bwd_tp;
    rc.forward_ep_comm_s = num_layers * ep_fwd;
    rc.forward_moe_host_wait_s = num_layers * blk.host_wait_fwd;
    rc.backward_ep_comm_s = num_layers * ep_bwd + recomputed * recompute_ep;

    if (pos.first()) {
        // Embedding gather, position add and dropout (memory bound, about 6 accesses of T x h;
        // 4 and one kernel fewer without dropout); the vocab-parallel embedding all-reduces its
        // output over TP (Megatron VocabParallelEmbedding). Backward: the scatter-add of the
        // gradient into the table.
        double emb_tp = tp > 1 ? one_allreduce_s : 0.0;
        double emb = (hidden_dropout ? 6 : 4) * T * h * e / mem_rate + (hidden_dropout ? 3 : 2) * kernel_s + emb_tp;
        double emb_bwd = 3 * T * h * e / mem_rate + 3 * kernel_s;
        CostSource sf, sb;
        measured(ProfileField::embedding_forward, emb, &emb_tp, sf);
        measured(ProfileField::embedding_backward, emb_bwd, nullptr, sb);
        rc.sources.embedding_forward = sf;
        rc.sources.embedding_backward = sb;
        rc.forward_s += emb;
        rc.backward_s += emb_bwd;
        rc.forward_tp_comm_s += emb_tp;
    }
    if (pos.last()) {
        // Final norm, the LM head GEMM (T x h x V/t; twice in the backward) and the vocab-parallel
        // cross-entropy over fp32 logits: conversion, max, exp, sum and normalisation passes
        // (about 20 B per logit forward, 14 B backward).
        const double logits = T * V / t;
        // on the padded vocabulary (docs/model.md, "GEMM efficiency by shape")
        const double Vp = padded_vocab_shard(V, t);
        double head_gemm = gemm_s(1, T, Vp, h);
        double head_tp = tp > 1 ? one_allreduce_s : 0.0;  // input gradient of the column-parallel head
        double head_fwd = head_gemm + 20.0 * logits / mem_rate + 2 * Tr * h * e / mem_rate + 6 * kernel_s;
        // its backward: dgrad writes T x h, the weight gradient V/t x h
        const double head_wgrad = blk.timer.gemm_wgrad_s(T, Vp, h);
        double head_bwd = head_wgrad + blk.timer.gemm_dgrad_s(T, Vp, h) + 14.0 * logits / mem_rate + 4 * Tr * h * e / mem_rate + 6 * kernel_s + head_tp;
        CostSource sf, sb;
        measured(ProfileField::head_forward, head_fwd, nullptr, sf);
        measured(ProfileField::head_backward, head_bwd, &head_tp, sb);
        rc.sources.head_forward = sf;
        rc.sources.head_backward = sb;
        rc.forward_s += head_fwd;
        rc.backward_s += head_bwd;
        rc.backward_tp_comm_s += head_tp;
        rc.head_wgrad_s = head_wgrad * (1 + m.mtp_layers);  // the MTP passes call the same head
        if (m.mtp_layers > 0) {
            // The MTP modules run on the last stage beside the head (Megatron-Core builds them
            // there: the layout's "m" before "L"; DeepSeek-V3 arXiv 2412.19437 sec. 2.2): each is
            // one more block (costed as the average block), the column-parallel projection of
            // [embedding; hidden] to h, and another pass through the shared head and loss.
            // (The block method recomputes decoder blocks only: an MTP block then keeps its own.)
            const double k = m.mtp_layers;
            const double proj = linear_s(T, h / t, 2 * h);
            rc.forward_s += k * (layer_fwd + proj + head_fwd);
            rc.backward_s += k * ((some_blocks ? plain_bwd : layer_bwd) + blk.timer.linear_bwd_s(T, h / t, 2 * h) + head_bwd);
            rc.forward_tp_comm_s += k * layer_fwd_tp;
            rc.backward_tp_comm_s += k * ((some_blocks ? plain_bwd_tp : layer_bwd_tp) + head_tp);
            rc.forward_ep_comm_s += k * ep_fwd;
            rc.forward_moe_host_wait_s += k * blk.host_wait_fwd;
            rc.backward_ep_comm_s += k * (ep_bwd + (some_blocks ? 0.0 : recompute_ep));
        }
    }

    replica_memory(sc, d, tp, samples, num_layers, pos, rc);
    return rc;
}

}  // namespace detail

ReplicaCost replica_cost(const Scenario& sc, const Device& d, int tp, int samples, int num_layers, const StagePosition& pos) {
    return detail::replica_cost_of(sc, d, tp, samples, num_layers, pos, detail::block_cost(sc, d, tp, samples, pos));
}

}  // namespace poseidon
