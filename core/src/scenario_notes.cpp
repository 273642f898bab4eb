// Settings of a scenario that change nothing where they are (scenario.hpp, scenario_notes): said
// in the estimate's notes rather than ignored silently.
#include <algorithm>

#include "poseidon/cost_model.hpp"
#include "poseidon/json_util.hpp"
#include "poseidon/scenario.hpp"

namespace poseidon {

std::vector<std::string> scenario_notes(const Scenario& sc) {
    std::vector<std::string> notes;
    const Training& tr = sc.training;
    if (tr.tf32 && tr.precision != Precision::fp32)
        notes.push_back("training.tf32 changes nothing with precision " + to_string(tr.precision) + ": TF32 is a rate for fp32 matrix products");
    if (tr.tp_comm_overlap && tr.stack.tp_comm_overlap_fraction <= 0)
        notes.push_back("training.tp_comm_overlap changes nothing with the " + (tr.stack.id.empty() ? tr.stack.name : tr.stack.id) +
                        " stack: its tp_comm_overlap_fraction is 0 (no Transformer Engine userbuffers)");
    if (tr.defer_embedding_wgrad_compute)
        notes.push_back("training.defer_embedding_wgrad_compute: with every micro-batch deferred (wgrad_deferral_limit 0 or at least the micro-batches) the head's weight gradients leave each backward of the last stage (under interleaving, of its head chunk) and run at the flush; with a smaller limit they stay in each backward (the buffers count in memory either way); a one-stage plan defers nothing (Megatron-Core refuses the deferral without a pipeline)");
    if (tr.fsdp && (tr.overlap_grad_reduce || tr.overlap_param_gather))
        notes.push_back("training.overlap_grad_reduce and overlap_param_gather change nothing with fsdp: Megatron-FSDP overlaps its own per-block gathers and reduce-scatters");
    if (tr.recompute == Recompute::selective) {
        const RecomputeModules& r = tr.recompute_modules;
        const ModelSpec& m = sc.model;
        const BlockAverage avg = average_block(m, 1);
        const bool dense_blocks = !m.has_block_variants() || avg.dense_block_ffn > 0;
        const std::pair<bool, const char*> idle[] = {{r.mla_up_proj && !m.mla, "mla_up_proj: the model has no multi-latent attention"},
                                                     {r.moe_act && !m.is_moe(), "moe_act: the model has no routed experts"},
                                                     {r.moe && !m.is_moe(), "moe: the model has no routed experts"},
                                                     {r.shared_experts && avg.shared_ffn <= 0, "shared_experts: the model has no shared experts"},
                                                     {r.mlp && !dense_blocks, "mlp: every block of the model is a MoE block (its dense MLP is the shared experts)"}};
        for (const auto& [applies, why] : idle)
            if (applies) notes.push_back(std::string("training.recompute_modules ") + why + ", so recomputing it changes nothing");
    }
    if (tr.moe_shared_expert_overlap) {
        if (sc.model.moe_shared_expert_ffn_hidden_size <= 0 || !sc.model.is_moe())
            notes.push_back("training.moe_shared_expert_overlap changes nothing: the model has no shared experts");
        else if (tr.moe_token_dispatcher == "flex")
            notes.push_back("training.moe_shared_expert_overlap changes nothing with the flex dispatcher: Megatron-Bridge turns the overlap off with DeepEP / HybridEP");
    }
    if (!sc.model.is_moe()) {
        if (tr.moe_imbalance != 1.0)
            notes.push_back("training.moe_imbalance " + number_text(tr.moe_imbalance) + " changes nothing: the model has no routed experts");
        if (tr.moe_token_dispatcher != "alltoall")
            notes.push_back("training.moe_token_dispatcher \"" + tr.moe_token_dispatcher + "\" changes nothing: the model has no routed experts");
    }
    if (const ModelSpec& m = sc.model; m.sliding_window > 0) {
        // no pattern: every block has the window (model_size.cpp, windowed)
        if (!m.sliding_window_blocks.empty() && std::none_of(m.sliding_window_blocks.begin(), m.sliding_window_blocks.end(), [](char c) { return c != 0; }))
            notes.push_back("model.sliding_window changes nothing: sliding_window_pattern gives no block the window");
        else if (m.sliding_window >= m.seq_length)
            notes.push_back("model.sliding_window " + std::to_string(m.sliding_window) + " changes nothing: a window of at least seq_length " +
                            std::to_string(m.seq_length) + " is full attention");
    }
    if (const ModelSpec& m = sc.model; m.mla && m.num_kv_heads != m.num_attention_heads)
        notes.push_back("model.num_kv_heads " + std::to_string(m.num_kv_heads) + " plays no part with attention \"mla\": multi-latent attention up-projects its keys and values for all " +
                        std::to_string(m.num_attention_heads) + " heads");
    if (const ModelSpec& m = sc.model; m.mla && m.head_dim > 0)
        notes.push_back("model.head_dim " + std::to_string(m.head_dim) + " plays no part with attention \"mla\": its heads are qk_nope_head_dim + qk_rope_head_dim " +
                        "(queries, keys) and v_head_dim (values)");
    if (sc.model.rope_theta && sc.model.learned_position_embedding)
        notes.push_back("model.rope_theta plays no part with position_embedding \"learned\": it is the base of rotary positions (position_embedding \"rope\"), and the Megatron-LM command then writes no --rotary-base");
    if (tr.fp8_param_gather_asked && !is_low_precision(tr.precision))
        notes.push_back("training.fp8_param_gather changes nothing with precision " + to_string(tr.precision) +
                        ": it gathers the parameters of a low precision, so it applies to plans of a low precision a search chooses (options.precisions) whose states are sharded");
    if (tr.overlap_moe_expert_parallel_comm && !sc.model.is_moe())
        notes.push_back("training.overlap_moe_expert_parallel_comm changes nothing: the model has no routed experts, so no token exchange to overlap");
    const auto& groups = sc.cluster.groups;
    // bf16 on a GPU without it: TF32 (tf32_tflops) exists on exactly the NVIDIA generations that
    // have BF16 (Ampere and newer), so an NVIDIA device without it is Volta or Turing; it runs the
    // scenario as fp16 mixed precision, at the same tensor rate (the page's Megatron export uses
    // --fp16 for it: web/megatron.js, deviceCaps).
    // the devices without bf16 (pre-Ampere) and those without fused attention, each once
    const auto devices_where = [&](auto pred) {
        std::vector<std::string> seen;
        for (const auto& g : groups) {
            const std::string label = device_key(g.device);
            if (pred(g.device) && std::find(seen.begin(), seen.end(), label) == seen.end()) seen.push_back(label);
        }
        std::string list;
        for (const auto& l : seen) list += (list.empty() ? "" : ", ") + l;
        return std::make_pair(list, seen.size());
    };
    if (tr.precision == Precision::bf16)
        if (const auto [list, n] = devices_where(pre_ampere_nvidia); n > 0)
            notes.push_back("training.precision bf16: " + list + (n == 1 ? " has" : " have") +
                            " no bf16 (pre-Ampere); costed at the same fp16 tensor rate, as fp16 mixed precision with loss scaling would train there");
    if (tr.flash_attention)
        if (const auto [list, n] = devices_where([](const Device& d) { return !d.flash_attention; }); n > 0)
            notes.push_back("training.flash_attention: " + list + (n == 1 ? " runs" : " run") +
                            " no fused attention (device flash_attention false: Transformer Engine's fused attention needs Ampere or newer); attention there is costed unfused, "
                            "its s x s scores in memory");
    if (sc.cluster.inter_group_bw_GBps) {
        // the cap binds where it is below a node's NIC: a send between groups runs at each node's
        // own NIC (stage_links.cpp, transfer_spans), so the widest NIC of the cluster decides
        double widest = 0;
        for (const auto& g : groups) widest = std::max(widest, g.inter_node_bw_GBps);
        if (groups.size() < 2)
            notes.push_back("cluster.inter_group_bw_GBps changes nothing: the cluster has one group");
        else if (*sc.cluster.inter_group_bw_GBps >= widest)
            notes.push_back("cluster.inter_group_bw_GBps " + number_text(*sc.cluster.inter_group_bw_GBps) +
                            " changes nothing: no node's NIC is faster, at most " + number_text(widest) + " GB/s per node here");
    }
    return notes;
}

}  // namespace poseidon
