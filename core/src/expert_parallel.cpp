// Expert parallelism (docs/model.md, "Expert parallelism"): Megatron-Core's MoE parallel folding
// puts a stage's routed experts on an expert grid of etp x ep x edp over the same GPUs whose
// attention runs on tp x cp x dp (Megatron-LM core/transformer/moe/README.md; Liu et al. 2025,
// arXiv 2504.14960). The alltoall dispatcher permutes each token's top_k copies, sends them to the
// ranks of their experts, gathers them over ETP, runs the local experts as grouped GEMMs and sends
// the results back (moe/token_dispatcher.py), as digested in frontier-facts.md, section 4.
#include <algorithm>
#include <cmath>

#include "poseidon/cost_model.hpp"
#include "poseidon/expert_parallel.hpp"
#include "poseidon/gemm_shape.hpp"

namespace poseidon {

namespace {

// CUTLASS / cuBLAS grouped GEMMs tile each expert's rows by 128: an expert with few tokens still
// pays a whole tile (the efficiency that falls with small per-expert batches, besides reading its
// weights, which the roofline's byte term carries).
constexpr double grouped_gemm_tile_rows = 128;
// Kernels of one MoE layer's forward besides the GEMMs: router GEMM, softmax/sigmoid, top-k,
// routing map, permute, dispatch, (ETP gather), sort, activation, (ETP scatter), combine, unpermute.
constexpr int moe_forward_kernels = 10;

}  // namespace

EpLink ep_link(const Group& g, int ep, int etp) {
    EpLink l;
    l.etp_bw_GBps = etp > 1 ? intra_node_bw_eff_GBps(g, etp) : 0.0;
    if (ep <= 1) return l;
    // The expert grid is laid over the stage's GPUs with etp fastest, then ep: one EP group is
    // ep x etp consecutive GPUs, of which ep (one per ETP position) exchange tokens. The stage's
    // replicas start at a domain boundary when they fit one (place_plan takes GPUs in order).
    const int span = ep * etp, domain = g.domain_gpus();
    const int in_domain = span <= domain && domain % span == 0 ? ep : std::max(1, std::min(ep, domain / std::max(1, etp)));
    l.frac_intra = static_cast<double>(in_domain - 1) / ep;
    l.frac_inter = static_cast<double>(ep - in_domain) / ep;
    l.intra_bw_GBps = intra_node_bw_eff_GBps(g, std::min(span, domain));
    // across domains each GPU has its share of its node's NICs (one NIC per GPU, rail-optimised)
    l.inter_bw_GBps = nic_bw_per_node_eff_GBps(g) / g.gpus_per_node;
    l.latency_s = group_latency_s(g, l.frac_inter > 0);
    return l;
}

RingLink edp_ring(const Group& g, const StagePlan& stage) {
    const int edp = stage.expert_dp(), stage_gpus = stage.gpus(), ep = stage.ep, etp = stage.etp;
    if (edp <= 1) return {};
    // Every (ep x etp)-th GPU of the stage: inside one NVLink domain over NVLink; across domains
    // min(ep x etp, domain) rings share each node's NICs, as the data-parallel rings of
    // tensor-parallel ranks do (stage_links.cpp, dp_ring).
    const int domain = g.domain_gpus();
    if (stage_gpus <= domain) return {intra_node_bw_eff_GBps(g, edp), group_latency_s(g, false)};
    const int rings = std::min(ep * etp, domain);
    const double per_ring = nic_bw_per_node_eff_GBps(g) * (domain / g.gpus_per_node) / rings;
    const int per_node = std::max(1, g.gpus_per_node / rings);
    const double bw = per_node > 1 ? std::min(per_ring, intra_node_bw_eff_GBps(g, per_node)) : per_ring;
    return {bw, group_latency_s(g, true)};
}

MoeCost moe_cost(const MoeShape& x, const MoeRates& r, const EpLink& link) {
    MoeCost c;
    if (x.experts <= 0 || x.tokens <= 0) return c;
    const double e = r.element_bytes, q = r.operand_bytes, h = x.hidden;
    const double fe = x.expert_ffn / x.etp, g = x.gated ? 2.0 : 1.0;
    const double local_experts = x.experts / x.ep;
    // Each of this GPU's tokens goes to top_k experts; balanced routing gives every expert of the
    // EP group ep x tokens x top_k / experts of them, and the ETP gather brings its etp ranks' own.
    // The busiest rank (moe_imbalance) takes that many times the mean, on the critical path.
    const double copies = x.tokens * x.top_k * x.imbalance;  // token copies this GPU's experts take
    // (a rank receives as many copies as it sends under balanced routing)
    const double rows = copies * x.etp;
    const double per_expert = rows / local_experts;  // rows of one local expert's GEMMs
    const double padded = std::ceil(per_expert / grouped_gemm_tile_rows) * grouped_gemm_tile_rows * local_experts;
    auto grouped_core_s = [&](double N, double K) {
        const double flops = 2 * padded * N * K;
        const double bytes = local_experts * K * N * q + rows * K * q + rows * N * e;
        return std::max(flops / (r.expert_flops_per_s * gemm_alignment_factor(N, K, q)), bytes / r.mem_Bps) + r.kernel_s;
    };
    // each result written after its tile's reduction (GemmTimer): forward rows x N, dgrad rows x
    // K, wgrad every local expert's N x K
    auto grouped_s = [&](double N, double K) { return grouped_core_s(N, K) + rows * N * e / r.mem_Bps; };
    auto grouped_bwd_s = [&](double N, double K) {
        return 2 * grouped_core_s(N, K) + (rows * K * e + local_experts * N * K * r.wgrad_bytes) / r.mem_Bps;
    };
    const double gemms = grouped_s(g * fe, h) + grouped_s(h, fe);
    const double gemms_bwd = grouped_bwd_s(g * fe, h) + grouped_bwd_s(h, fe);
    // SwiGLU reads the up and gate halves and writes their product; the backward twice that.
    const double act = rows * (g + 1) * fe * e / r.mem_Bps + r.kernel_s;
    // permute writes top_k copies of each token, unpermute reads them back, weighted by the
    // router's probabilities (flex fuses both into its dispatch and combine); ETP sorts the
    // gathered rows by expert once more.
    const double permute = (x.fused_permute ? 0.0 : 2 * x.tokens * h * e * (1 + x.top_k) / r.mem_Bps + 2 * r.kernel_s) +
                           (x.etp > 1 ? 2 * rows * h * e / r.mem_Bps + r.kernel_s : 0.0);
    c.forward_s = gemms + act + permute;
    c.backward_s = gemms_bwd + 2 * act + permute;
    c.quant_elements_forward = rows * (h + fe);
    c.quant_elements_backward = rows * (h + g * fe);
    c.kernels_forward = moe_forward_kernels + (x.etp > 1 ? 2 : 0);

    // Dispatch and combine: each moves this GPU's copies, of which the share for other ranks
    // leaves it, over NVLink inside the domain and the NICs beyond, both at once.
    if (x.ep > 1) {
        const double bytes = copies * h * e;
        const double intra = link.intra_bw_GBps > 0 ? bytes * link.frac_intra / (link.intra_bw_GBps * GB) : 0.0;
        const double inter = link.inter_bw_GBps > 0 ? bytes * link.frac_inter / (link.inter_bw_GBps * GB) : 0.0;
        const double a2a = std::max(intra, inter) + link.latency_s;
        c.comm_forward_s += 2 * a2a;
        c.comm_backward_s += 2 * a2a;
    }
    // ETP: the dispatched rows all-gathered over the etp ranks, the expert outputs reduce-scattered
    // back (the backward mirrors both).
    if (x.etp > 1 && link.etp_bw_GBps > 0) {
        const double gather = ring_reduce_scatter_s(rows * h * e, x.etp, link.etp_bw_GBps, link.latency_s);
        c.comm_forward_s += 2 * gather;
        c.comm_backward_s += 2 * gather;
    }
    return c;
}

double moe_sync_host_s(const MoeShape& x, const Stack& st) {
    if (x.experts <= 0 || x.tokens <= 0) return 0.0;
    return (st.moe_sync_host_us + st.moe_sync_host_us_per_expert * x.experts / std::max(1, x.ep)) * 1e-6;
}

// Megatron-Core's SharedExpertMLP with overlap (moe/shared_experts.py): the shared experts' fc1
// is issued while the dispatch all-to-all runs, fc2 while the combine runs; each pair takes the
// longer of the two, so the shorter is hidden.
double shared_expert_hidden_s(double fc1_s, double fc2_s, double comm_s) { return std::min(fc1_s, comm_s / 2) + std::min(fc2_s, comm_s / 2); }

MoeMemory moe_memory(const MoeShape& x, double element_bytes, double operand_bytes) {
    if (x.experts <= 0 || x.tokens <= 0) return {};
    const double e = element_bytes, q = operand_bytes, h = x.hidden;
    const double fe = x.expert_ffn / x.etp, g = x.gated ? 2.0 : 1.0;
    const double copies = x.tokens * x.top_k * x.imbalance, rows = copies * x.etp;
    // Saved for the backward, per routed row: the expert input (the fc1 wgrad's; quantised under a
    // low-precision recipe), fc1's output (the activation's backward), the activation output (fc2's
    // wgrad; quantised) and the row's router probability (fp32), which Megatron-Core's experts apply
    // in their weighted activation (experts.py, weighted_bias_swiglu_impl), so the combine keeps no
    // expert output; per token the probabilities (fp32) and the routing map (one byte per expert).
    MoeMemory mm;
    mm.saved_bytes = rows * (h * q + g * fe * e + fe * q + 4) + x.tokens * (x.top_k * 4 + x.experts);
    mm.buffer_bytes = 2 * copies * h * e;
    return mm;
}

void set_expert_grid(StagePosition& pos, const Group& g, const StagePlan& stage) {
    pos.ep = stage.ep, pos.etp = stage.etp;
    pos.edp = stage.expert_dp();
    pos.ep_link = ep_link(g, stage.ep, stage.etp);
}

double expert_sync_s(const Scenario& sc, const Group& g, const StagePlan& stage, double expert_grad_bytes) {
    const int edp = stage.expert_dp();
    const RingLink r = edp_ring(g, stage);
    if (edp <= 1 || r.bw_GBps <= 0) return 0;
    if (sc.training.distributed_optimizer) return ring_reduce_scatter_s(expert_grad_bytes, edp, r.bw_GBps, r.latency_s);
    return ring_allreduce_s(expert_grad_bytes, edp, r.bw_GBps, r.latency_s);
}

MoeShape moe_shape(const Scenario& sc, double tokens_per_gpu, const StagePosition& pos) {
    const ModelSpec& m = sc.model;
    MoeShape x;
    if (!m.is_moe()) return x;
    x.tokens = tokens_per_gpu;
    x.hidden = m.hidden_size;
    x.expert_ffn = m.moe_ffn_hidden_size;
    x.top_k = m.moe_top_k;
    x.experts = m.num_experts;
    x.gated = m.gated_mlp;
    x.ep = std::max(1, pos.ep);
    x.etp = std::max(1, pos.etp);
    x.imbalance = sc.training.moe_imbalance;
    x.fused_permute = sc.training.moe_token_dispatcher == "flex";
    return x;
}

}  // namespace poseidon
