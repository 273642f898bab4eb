// The rules a context-parallel size and an expert grid size are held to, shared by a plan's stage
// keys (plan_format.cpp) and the sizes a user fixes for the search (search_grids.cpp), so that both
// refuse the same sizes in the same words.
#pragma once

#include <string>
#include <vector>

#include "poseidon/model_size.hpp"
#include "poseidon/scenario.hpp"

namespace poseidon::detail {

// Why cp > 1 cannot split this scenario's sequences (none: it can).
inline std::vector<std::string> cp_size_problems(const Scenario& sc, int cp) {
    const ModelSpec& m = sc.model;
    std::vector<std::string> out;
    // Megatron-LM's arguments.py: the sequence splits into 2 cp chunks (causal load balancing)
    if (m.seq_length % (2 * cp) != 0)
        out.push_back(std::to_string(cp) + " does not split seq_length " + std::to_string(m.seq_length) + " into 2 x cp equal chunks; expected a cp with seq_length divisible by 2 cp");
    // Transformer Engine's ring (p2p) has no sliding window (context_parallel.py; frontier-facts.md section 4)
    if (any_windowed(m) && sc.training.cp_comm_type == "p2p")
        out.push_back(std::to_string(cp) + " with the model's sliding-window attention needs training.cp_comm_type \"a2a\" or \"all_gather\": Transformer Engine's p2p ring does not run a window");
    return out;
}

// Why Ulysses context parallelism (cp_comm_type "a2a") cannot run cp ranks over a TP rank's heads
// (empty: it can). Transformer Engine's all-to-all (flash_attn_a2a_communicate, context_parallel.py)
// reshapes the queries' heads and the keys' and values' heads of each TP rank alike into cp equal
// parts, so both counts must divide by cp: grouped-query KV heads are not replicated to make up a
// share (frontier-facts.md section 4: "heads and KV groups even"). tp 1 gives the model-wide rule
// of a cp the user fixes for the search.
inline std::string a2a_heads_problem(const ModelSpec& m, int tp, int cp) {
    const int q = m.num_attention_heads / tp, kv = m.kv_heads() / tp;
    const std::string the = tp > 1 ? "the " : "the model's ", per = tp > 1 ? " per TP rank (tp " + std::to_string(tp) + ")" : "";
    if (q % cp != 0)
        return std::to_string(cp) + " does not divide " + the + std::to_string(q) + " attention heads" + per + "; cp_comm_type \"a2a\" splits the heads over the cp ranks";
    if (kv % cp != 0)
        return std::to_string(cp) + " does not divide " + the + std::to_string(kv) + " key-value heads" + per +
               " (num_kv_heads); cp_comm_type \"a2a\" splits the keys' and values' heads over the cp ranks as well";
    return {};
}

// Why an expert-parallel size (ep) or expert tensor-parallel size (!ep) v cannot split the model's
// experts (empty: it can; Megatron-Core's MoE parallel folding, parallel_state.py).
inline std::string expert_size_problem(const ModelSpec& m, int v, bool ep) {
    if (v == 1) return {};
    if (!m.is_moe()) return std::to_string(v) + " needs a mixture-of-experts model (num_experts > 0); the model is dense: expected 1";
    if (ep && m.num_experts % v != 0)
        return std::to_string(v) + " does not divide num_experts " + std::to_string(m.num_experts) + "; every expert-parallel rank holds the same number of experts";
    if (!ep && m.moe_ffn_hidden_size % v != 0)
        return std::to_string(v) + " does not divide moe_ffn_hidden_size " + std::to_string(m.moe_ffn_hidden_size) + "; expert tensor parallelism splits each expert's FFN";
    return {};
}

}  // namespace poseidon::detail
