// Selective recomputation of named modules, Megatron-Core's --recompute-modules (docs/model.md,
// "Recomputing named modules"; transformer_config.py `recompute_modules` at d98e8a64ddf3, digested
// in shared/reference/frontier-facts.md, section 5): the names, what each module no longer keeps
// for the backward, and what the backward runs again.
#include <string>

#include "poseidon/cost_model.hpp"
#include "poseidon/recompute_modules.hpp"
#include "poseidon/json_util.hpp"
#include "poseidon/scenario.hpp"

namespace poseidon {

namespace {

constexpr std::pair<bool RecomputeModules::*, const char*> module_names[] = {
    {&RecomputeModules::core_attn, "core_attn"}, {&RecomputeModules::moe_act, "moe_act"},       {&RecomputeModules::layernorm, "layernorm"},
    {&RecomputeModules::mla_up_proj, "mla_up_proj"}, {&RecomputeModules::mlp, "mlp"}, {&RecomputeModules::moe, "moe"},
    {&RecomputeModules::shared_experts, "shared_experts"}};
constexpr const char* allowed_modules =
    "a non-empty array of distinct \"core_attn\", \"moe_act\", \"layernorm\", \"mla_up_proj\", \"mlp\", \"moe\", \"shared_experts\" (Megatron-Core's --recompute-modules)";

// An MLP of inner width w per token on a GPU of the TP group: what its backward needs from the
// forward beyond its input, fc1's output (g w) and the activation's output (w, fc2's operand:
// quantised under a low-precision recipe), as replica_memory counts them.
double mlp_internal_bytes(double w, double g, double e, double q, double t) { return w / t * (g * e + q); }

}  // namespace

void read_recompute_modules(const Json& j, const std::string& path, Problems& problems, RecomputeModules& out) {
    if (!j.is_array() || j.empty() || j.size() > std::size(module_names)) {
        problems.add(path, show(j) + " is not allowed; expected " + allowed_modules);
        return;
    }
    RecomputeModules r;
    r.core_attn = false;
    for (std::size_t i = 0; i < j.size(); ++i) {
        bool known = false;
        for (const auto& [field, name] : module_names) {
            if (!j[i].is_string() || j[i].get<std::string>() != name) continue;
            known = true;
            if (r.*field) problems.add(path + "[" + std::to_string(i) + "]", show(j[i]) + " is listed twice; expected " + allowed_modules);
            r.*field = true;
        }
        if (!known) problems.add(path + "[" + std::to_string(i) + "]", show(j[i]) + " is not a module Megatron-Core recomputes; expected " + allowed_modules);
    }
    out = r;
}

Json to_json(const RecomputeModules& r) {
    Json j = Json::array();
    for (const auto& [field, name] : module_names)
        if (r.*field) j.push_back(name);
    return j;
}

// Megatron-Core checkpoints core_attn, mlp, moe and shared_experts as whole submodules (their
// inputs kept, their forward run again before their backward) and discards only the outputs of
// layernorm, moe_act and mla_up_proj, recomputed from inputs the backward keeps anyway.
RecomputeCost module_recompute_cost(const Scenario& sc, const BlockAverage& avg, const GemmTimer& g, const BlockForward& f) {
    const ModelSpec& m = sc.model;
    const Training& tr = sc.training;
    const RecomputeModules& r = tr.recompute_modules;
    RecomputeCost c;
    if (tr.recompute != Recompute::selective) return c;
    const bool variants = m.has_block_variants();
    const double T = f.tokens, t = f.tp, h = m.hidden_size, e = g.element_bytes, gated = m.gated_mlp ? 2.0 : 1.0;
    if (r.core_attn) c.compute_s += f.core_s;
    // Two RMSNorm/LayerNorm forwards: read and write the replicated activation.
    if (r.layernorm) c.compute_s += 2 * (2 * f.replicated_tokens * h * e / g.mem_rate + g.kernel_s);
    if (r.mla_up_proj && m.mla) {
        const double a = m.num_attention_heads;
        const MlaUpProjections up = mla_up_projections(m, T, t);
        if (m.q_lora_rank > 0) c.compute_s += g.linear_s(up.q.M, up.q.N, up.q.K);
        c.compute_s += g.linear_s(up.kv.M, up.kv.N, up.kv.K);
        // RoPE on the queries' and keys' positional parts: read and write once
        c.compute_s += 2 * T * (a / t + 1) * m.qk_rope_head_dim * e / g.mem_rate + g.kernel_s;
    }
    auto mlp_forward_s = [&](double w) {
        if (w <= 0) return 0.0;
        return g.linear_s(T, w * gated / t, h) + g.linear_s(T, h, w / t) + (gated + 1) * T * w / t * e / g.mem_rate + g.kernel_s;
    };
    const double dense_w = variants ? avg.dense_block_ffn : m.ffn_hidden_size;
    if (r.mlp && dense_w > 0) {
        c.compute_s += mlp_forward_s(dense_w);
        // the MLP's own TP collective, one of the block's two, in the dense blocks
        c.tp_s += 0.5 * f.tp_s * (variants ? 1.0 - avg.router_share : 1.0);
    }
    if (r.shared_experts || r.moe) c.compute_s += mlp_forward_s(avg.shared_ffn);
    if (r.moe) {
        c.compute_s += f.moe_s;
        c.ep_s += f.ep_s;
    } else if (r.moe_act && f.moe.experts > 0) {
        // the experts' activation: read fc1's output (g w per routed row), write w
        const double rows = f.moe.tokens * f.moe.top_k * f.moe.imbalance * f.moe.etp, w = f.moe.expert_ffn / f.moe.etp;
        c.compute_s += avg.router_share * ((f.moe.gated ? 3.0 : 2.0) * rows * w * e / g.mem_rate + g.kernel_s);
    }
    return c;
}

RecomputeSaving module_recompute_saving(const Scenario& sc, const BlockAverage& avg, const MoeShape& moe, double tp, bool sp, double q) {
    const ModelSpec& m = sc.model;
    const Training& tr = sc.training;
    const RecomputeModules& r = tr.recompute_modules;
    RecomputeSaving s;
    if (tr.recompute != Recompute::selective) return s;
    const bool variants = m.has_block_variants(), lp = is_low_precision(tr.precision);
    const double t = tp, h = m.hidden_size, e = bytes_per_element(tr.precision), gated = m.gated_mlp ? 2.0 : 1.0;
    // The norms' outputs are the QKV and MLP inputs. Under a low-precision recipe the linear layers
    // keep their own quantised copies of them, which recomputing the norm does not free.
    if (r.layernorm && !lp) s.per_token_bytes += 2 * h * e / (sp ? t : 1.0);
    // MLA's queries, keys and values (the attention core's saved inputs); the latents stay.
    if (r.mla_up_proj && m.mla) {
        const double a = m.num_attention_heads;
        s.per_token_bytes += a * (2.0 * (m.qk_nope_head_dim + m.qk_rope_head_dim) + m.v_head_dim) / t * e;
    }
    const double act_bytes = lp ? q : e;
    if (r.mlp) s.per_token_bytes += mlp_internal_bytes(variants ? avg.dense_block_ffn : m.ffn_hidden_size, gated, e, act_bytes, t);
    if (r.shared_experts || r.moe) s.per_token_bytes += mlp_internal_bytes(avg.shared_ffn, gated, e, act_bytes, t);
    if (moe.experts > 0) {
        const MoeMemory mm = moe_memory(moe, e, lp ? q : e);
        const double rows = moe.tokens * moe.top_k * moe.imbalance * moe.etp;
        if (r.moe)
            s.moe_block_bytes = mm.saved_bytes;
        else if (r.moe_act)
            s.moe_block_bytes = rows * moe.expert_ffn / moe.etp * act_bytes;  // the activation's output, fc2's operand
    }
    return s;
}

}  // namespace poseidon
