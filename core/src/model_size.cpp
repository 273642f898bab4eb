// Parameters and FLOPs of a model whose blocks differ (docs/model.md, "Parameters and FLOPs of
// MoE, MLA and windowed models"): mixture-of-experts and dense blocks, multi-latent attention, an
// explicit head dimension, sliding windows and multi-token-prediction modules; and the dense
// transformer's closed forms (at the end), which those models replace with their average block.
#include <algorithm>

#include "poseidon/model_size.hpp"

namespace poseidon {

bool moe_block(const ModelSpec& m, int block) {
    return m.is_moe() && block >= 0 && block < static_cast<int>(m.moe_blocks.size()) && m.moe_blocks[static_cast<std::size_t>(block)] != 0;
}

bool windowed(const ModelSpec& m, int block) {
    if (m.sliding_window <= 0 || m.sliding_window >= m.seq_length) return false;
    if (m.sliding_window_blocks.empty()) return true;
    return block >= 0 && block < static_cast<int>(m.sliding_window_blocks.size()) && m.sliding_window_blocks[static_cast<std::size_t>(block)] != 0;
}

bool any_windowed(const ModelSpec& m) {
    for (int i = 0; i < std::max(1, m.num_layers); ++i)
        if (windowed(m, i)) return true;
    return false;
}

namespace {

double norm_params(const ModelSpec& m) { return (m.bias ? 2.0 : 1.0) * m.hidden_size; }  // LayerNorm weight and bias; RMSNorm weight

// an MTP module's block is of the last block's kind (DeepSeek-V3: MoE)
bool mtp_is_moe(const ModelSpec& m) { return moe_block(m, m.num_layers - 1); }

double head_dim_of(const ModelSpec& m) { return m.head_dim > 0 ? m.head_dim : static_cast<double>(m.hidden_size) / m.num_attention_heads; }
double qk_head_dim(const ModelSpec& m) { return m.mla ? m.qk_nope_head_dim + m.qk_rope_head_dim : head_dim_of(m); }
double v_head_dim_of(const ModelSpec& m) { return m.mla ? m.v_head_dim : head_dim_of(m); }

// Weight matrices of the attention (no norms, no biases).
double attention_matrix_params(const ModelSpec& m) {
    const double h = m.hidden_size, a = m.num_attention_heads;
    if (m.mla) {
        // DeepSeek-V2 sec. 2.1.2-2.1.3: queries through a rank-q_lora_rank bottleneck (or at full
        // rank), keys and values from one kv_lora_rank latent plus a shared RoPE key.
        const double ql = m.q_lora_rank, kl = m.kv_lora_rank, dqk = qk_head_dim(m);
        const double q = ql > 0 ? h * ql + ql * a * dqk : h * a * dqk;
        const double kv = h * (kl + m.qk_rope_head_dim) + kl * a * (m.qk_nope_head_dim + m.v_head_dim);
        return q + kv + a * m.v_head_dim * h;
    }
    const double d = head_dim_of(m), q = a * d, kv = m.num_kv_heads * d;
    return h * (q + 2 * kv) + q * h;
}
double attention_vector_params(const ModelSpec& m) {
    double v = 0;
    if (m.mla) v += (m.q_lora_rank > 0 ? m.q_lora_rank : 0) + m.kv_lora_rank;  // the latents' RMSNorms
    if (m.bias && !m.mla) v += m.num_attention_heads * head_dim_of(m) + 2.0 * m.num_kv_heads * head_dim_of(m) + m.hidden_size;
    return v + 2 * norm_params(m);  // the block's two norms
}

double mlp_matrix_params(const ModelSpec& m, double f) { return (m.gated_mlp ? 3.0 : 2.0) * m.hidden_size * f; }
double mlp_bias_params(const ModelSpec& m, double f) { return m.bias ? (m.gated_mlp ? 2.0 : 1.0) * f + m.hidden_size : 0.0; }

struct MlpCounts {
    double total = 0, active = 0;                // all parameters
    double active_matrix = 0;                    // weights the GEMMs of one token multiply (FLOPs / 2)
    double active_ffn = 0;                       // inner width a token passes through
};
MlpCounts mlp_counts(const ModelSpec& m, bool moe) {
    MlpCounts c;
    if (!moe) {
        const double f = m.ffn_hidden_size;
        c.total = c.active = mlp_matrix_params(m, f) + mlp_bias_params(m, f);
        c.active_matrix = mlp_matrix_params(m, f);
        c.active_ffn = f;
        return c;
    }
    // routed experts: all are held, top_k serve a token; shared experts serve every token; the
    // router is an h x E matrix (its bias with biases on, GPT-OSS)
    const double fe = m.moe_ffn_hidden_size, fs = m.moe_shared_expert_ffn_hidden_size, E = m.num_experts, k = m.moe_top_k;
    const double expert = mlp_matrix_params(m, fe) + mlp_bias_params(m, fe);
    const double shared = fs > 0 ? mlp_matrix_params(m, fs) + mlp_bias_params(m, fs) : 0.0;
    const double router = m.hidden_size * E + (m.bias ? E : 0.0);
    c.total = E * expert + shared + router;
    c.active = k * expert + shared + router;
    c.active_matrix = k * mlp_matrix_params(m, fe) + (fs > 0 ? mlp_matrix_params(m, fs) : 0.0) + m.hidden_size * E;
    c.active_ffn = k * fe + fs;
    return c;
}

// Query-key pairs of one sequence's attention: all s^2 as MFU counts them (full_count), or the
// causal ones the kernels compute: s^2 / 2, or s w - w^2 / 2 inside a window w < s.
double attention_pairs(const ModelSpec& m, bool windowed_block, bool full_count) {
    const double s = m.seq_length, w = m.sliding_window;
    if (full_count) return windowed_block ? s * w : s * s;
    return windowed_block ? s * w - w * w / 2 : s * s / 2;
}
// score and value products of one block for `samples` sequences: 2 pairs a (d_qk + d_v)
double attention_core_flops(const ModelSpec& m, bool windowed_block, double samples, bool full_count) {
    return 2 * samples * attention_pairs(m, windowed_block, full_count) * m.num_attention_heads * (qk_head_dim(m) + v_head_dim_of(m));
}

// The extra work of one MTP module besides its block (DeepSeek-V3 sec. 2.2): two norms and the
// 2h x h projection of [embedding; hidden], the output head's norm; the head itself is the
// model's (shared) but runs once more.
double mtp_extra_params(const ModelSpec& m) { return 2.0 * m.hidden_size * m.hidden_size + 3 * norm_params(m); }

}  // namespace

ParamCounts block_param_counts(const ModelSpec& m, int block) {
    const MlpCounts mlp = mlp_counts(m, block < m.num_layers ? moe_block(m, block) : mtp_is_moe(m));
    const double attn = attention_matrix_params(m) + attention_vector_params(m);
    ParamCounts c{attn + mlp.total, attn + mlp.active};
    if (block >= m.num_layers) c.total += mtp_extra_params(m), c.active += mtp_extra_params(m);
    return c;
}

double mtp_module_routed_params(const ModelSpec& m) {
    if (m.mtp_layers <= 0 || !m.is_moe() || !mtp_is_moe(m)) return 0.0;
    const double fe = m.moe_ffn_hidden_size;
    return m.num_experts * (mlp_matrix_params(m, fe) + mlp_bias_params(m, fe));
}

ParamCounts model_param_counts(const ModelSpec& m) {
    if (!m.has_block_variants()) {
        const double p = model_params(m);
        return {p, p};
    }
    ParamCounts c;
    for (int i = 0; i < m.num_layers + m.mtp_layers; ++i) {
        const ParamCounts b = block_param_counts(m, i);
        c.total += b.total;
        c.active += b.active;
    }
    const double h = m.hidden_size, V = m.vocab_size;
    double rest = V * h + norm_params(m) + (m.tied_embeddings ? 0.0 : V * h);
    if (m.learned_position_embedding) rest += static_cast<double>(m.seq_length) * h;
    c.total += rest;
    c.active += rest;
    return c;
}

double block_forward_flops(const ModelSpec& m, int block, double samples) {
    const double T = samples * m.seq_length;
    const bool mtp = block >= m.num_layers;
    const MlpCounts mlp = mlp_counts(m, mtp ? mtp_is_moe(m) : moe_block(m, block));
    double f = 2 * T * (attention_matrix_params(m) + mlp.active_matrix) + attention_core_flops(m, !mtp && windowed(m, block), samples, true);
    if (mtp) f += 2 * T * (2.0 * m.hidden_size * m.hidden_size + static_cast<double>(m.hidden_size) * m.vocab_size);
    return f;
}

namespace {

// The average of blocks [first, end).
BlockAverage average_block_of(const ModelSpec& m, double samples, int first, int end) {
    BlockAverage avg;
    const double L = end - first;
    // the blocks only: the MTP modules sit on the last stage (mtp_module_routed_params, replica_cost)
    for (int i = first; i < end; ++i) {
        const MlpCounts mlp = mlp_counts(m, moe_block(m, i));
        const bool win = windowed(m, i);
        avg.params += block_param_counts(m, i).total / L;
        avg.active_ffn += mlp.active_ffn / L;
        avg.forward_flops += block_forward_flops(m, i, samples) / L;
        avg.core_causal_flops += attention_core_flops(m, win, samples, false) / L;
        avg.core_counted_flops += attention_core_flops(m, win, samples, true) / L;
        const bool moe = m.is_moe() && moe_block(m, i);
        if (moe) {
            avg.routed_copies += m.moe_top_k / L, avg.router_share += 1 / L;
            const double fe = m.moe_ffn_hidden_size;
            avg.routed_params += m.num_experts * (mlp_matrix_params(m, fe) + mlp_bias_params(m, fe)) / L;
            avg.dense_ffn += m.moe_shared_expert_ffn_hidden_size / L;
            avg.shared_ffn += m.moe_shared_expert_ffn_hidden_size / L;
        } else {
            avg.dense_ffn += mlp.active_ffn / L;
            avg.dense_block_ffn += mlp.active_ffn / L;
        }
    }
    avg.matmul_flops = avg.forward_flops - avg.core_counted_flops;
    return avg;
}

// The block shape fields the sums read: a cached sum is reused while they are unchanged.
bool same_blocks(const ModelSpec& a, const ModelSpec& b) {
    return a.num_layers == b.num_layers && a.hidden_size == b.hidden_size && a.num_attention_heads == b.num_attention_heads && a.num_kv_heads == b.num_kv_heads &&
           a.ffn_hidden_size == b.ffn_hidden_size && a.vocab_size == b.vocab_size && a.seq_length == b.seq_length && a.gated_mlp == b.gated_mlp && a.bias == b.bias &&
           a.head_dim == b.head_dim && a.mla == b.mla && a.q_lora_rank == b.q_lora_rank && a.kv_lora_rank == b.kv_lora_rank && a.qk_nope_head_dim == b.qk_nope_head_dim &&
           a.qk_rope_head_dim == b.qk_rope_head_dim && a.v_head_dim == b.v_head_dim && a.sliding_window == b.sliding_window &&
           a.sliding_window_blocks == b.sliding_window_blocks && a.num_experts == b.num_experts && a.moe_top_k == b.moe_top_k &&
           a.moe_ffn_hidden_size == b.moe_ffn_hidden_size && a.num_shared_experts == b.num_shared_experts &&
           a.moe_shared_expert_ffn_hidden_size == b.moe_shared_expert_ffn_hidden_size && a.moe_blocks == b.moe_blocks;
}

}  // namespace

int leading_dense_blocks(const ModelSpec& m) {
    if (!m.is_moe()) return 0;
    int F = 0;
    while (F < m.num_layers && !moe_block(m, F)) ++F;
    return F < m.num_layers ? F : 0;
}

// Every replica_cost of a model with block variants needs the average block, and the sums walk
// every block: the search scores millions of candidates, so the sums for one sample are kept per
// thread and scaled (every FLOP term is linear in the samples; the parameter terms do not depend
// on them).
BlockAverage average_block(const ModelSpec& m, double samples, double prefix_share) {
    thread_local ModelSpec key;
    thread_local BlockAverage unit, prefix, body;
    thread_local int F = 0;
    thread_local bool filled = false;
    if (!filled || !same_blocks(key, m)) {
        key = m;
        unit = average_block_of(m, 1, 0, m.num_layers);
        F = leading_dense_blocks(m);
        if (F > 0) prefix = average_block_of(m, 1, 0, F), body = average_block_of(m, 1, F, m.num_layers);
        filled = true;
    }
    BlockAverage avg = unit;
    if (F > 0 && prefix_share >= 0) {
        // a stage's own blocks: its share of the leading dense blocks, the rest at the average of
        // the blocks after them (docs/model.md, "Expert parallelism")
        const double w = std::clamp(prefix_share, 0.0, 1.0), v = 1 - w;
        for (auto f : {&BlockAverage::params, &BlockAverage::active_ffn, &BlockAverage::forward_flops, &BlockAverage::matmul_flops,
                       &BlockAverage::core_causal_flops, &BlockAverage::core_counted_flops, &BlockAverage::routed_copies, &BlockAverage::router_share,
                       &BlockAverage::dense_ffn, &BlockAverage::dense_block_ffn, &BlockAverage::shared_ffn, &BlockAverage::routed_params})
            avg.*f = w * prefix.*f + v * body.*f;
    }
    avg.forward_flops *= samples;
    avg.matmul_flops *= samples;
    avg.core_causal_flops *= samples;
    avg.core_counted_flops *= samples;
    return avg;
}

MlaUpProjections mla_up_projections(const ModelSpec& m, double tokens, double tp) {
    const double a = m.num_attention_heads;
    return {{tokens, a * qk_head_dim(m) / tp, static_cast<double>(m.q_lora_rank)},
            {tokens, a * (m.qk_nope_head_dim + m.v_head_dim) / tp, static_cast<double>(m.kv_lora_rank)}};
}

std::vector<GemmShape> attention_gemms(const ModelSpec& m, double tokens, double tp, double router_share) {
    const double h = m.hidden_size, a = m.num_attention_heads, t = tp, T = tokens;
    std::vector<GemmShape> g;
    if (m.mla) {
        // Megatron-Core's MLA: the down projections are replicated over TP, the up projections
        // column-parallel, the output row-parallel
        const MlaUpProjections up = mla_up_projections(m, T, t);
        if (m.q_lora_rank > 0)
            g.push_back({T, static_cast<double>(m.q_lora_rank), h}), g.push_back(up.q);
        else
            g.push_back({T, a * qk_head_dim(m) / t, h});
        g.push_back({T, static_cast<double>(m.kv_lora_rank + m.qk_rope_head_dim), h});
        g.push_back(up.kv);
        g.push_back({T, h, a * m.v_head_dim / t});
    } else {
        const double d = head_dim_of(m);
        g.push_back({T, (a * d + 2.0 * m.num_kv_heads * d) / t, h});
        g.push_back({T, h, a * d / t});
    }
    const double share = router_share >= 0 ? router_share : average_block(m, 1).router_share;
    if (share > 0) g.push_back({T, static_cast<double>(m.num_experts), h, share});
    return g;
}

AttentionWidths attention_widths(const ModelSpec& m) {
    const double a = m.num_attention_heads, kvh = m.mla ? a : m.num_kv_heads;
    const double dqk = qk_head_dim(m), dv = v_head_dim_of(m);
    return {a * dqk, kvh * dqk, kvh * dv, a * dv};
}

double attention_saved_width(const ModelSpec& m) {
    const double a = m.num_attention_heads;
    if (m.mla) return a * qk_head_dim(m) * 2 + a * m.v_head_dim * 2 + m.kv_lora_rank + (m.q_lora_rank > 0 ? m.q_lora_rank : 0);  // Q, K, V, context, latents
    const double d = head_dim_of(m);
    return 2 * a * d + 2.0 * m.num_kv_heads * d;  // Q, K, V and the context (the projection's input)
}

// ---- The dense transformer's closed forms (Narayanan et al. 2021), or the average block ----

double layer_params(const ModelSpec& m) {
    if (m.has_block_variants()) return average_block(m, 1).params;
    const double h = m.hidden_size, f = m.ffn_hidden_size;
    const double kv_dim = h * m.num_kv_heads / m.num_attention_heads;
    double attn = h * (h + 2 * kv_dim) + h * h;
    double mlp = (m.gated_mlp ? 3.0 : 2.0) * h * f;
    double vec = 0;
    if (m.bias) vec += (h + 2 * kv_dim) + h + (m.gated_mlp ? 2.0 : 1.0) * f + h;
    vec += 2 * (m.bias ? 2.0 : 1.0) * h;  // two norms: LayerNorm has weight and bias, RMSNorm weight only
    return attn + mlp + vec;
}

double model_params(const ModelSpec& m) {
    if (m.has_block_variants()) return model_param_counts(m).total;
    const double h = m.hidden_size, V = m.vocab_size;
    double p = m.num_layers * layer_params(m) + V * h;
    if (m.learned_position_embedding) p += static_cast<double>(m.seq_length) * h;
    p += (m.bias ? 2.0 : 1.0) * h;  // final norm
    if (!m.tied_embeddings) p += V * h;
    return p;
}

namespace {
struct LayerFlops {
    double qkv, scores_and_values, proj, mlp;
};
LayerFlops layer_flops(const ModelSpec& m, double b) {
    const double s = m.seq_length, h = m.hidden_size, f = m.ffn_hidden_size;
    const double kv_dim = h * m.num_kv_heads / m.num_attention_heads;
    return {2 * b * s * h * (h + 2 * kv_dim), 4 * b * s * s * h, 2 * b * s * h * h, 2 * b * s * h * f * (m.gated_mlp ? 3.0 : 2.0)};
}
}  // namespace

double layer_forward_flops(const ModelSpec& m, double b) {
    if (m.has_block_variants()) return average_block(m, b).forward_flops;
    const LayerFlops x = layer_flops(m, b);
    return x.qkv + x.scores_and_values + x.proj + x.mlp;
}

double layer_matmul_flops(const ModelSpec& m, double b) {
    if (m.has_block_variants()) return average_block(m, b).matmul_flops;
    const LayerFlops x = layer_flops(m, b);
    return x.qkv + x.proj + x.mlp;
}

double model_flops_per_iteration(const ModelSpec& m, std::int64_t gbs) {
    const double B = static_cast<double>(gbs);
    double fwd = m.num_layers * layer_forward_flops(m, B) + 2 * B * m.seq_length * static_cast<double>(m.hidden_size) * m.vocab_size;
    for (int k = 0; k < m.mtp_layers; ++k) fwd += block_forward_flops(m, m.num_layers + k, B);
    return 3 * fwd;
}

}  // namespace poseidon
