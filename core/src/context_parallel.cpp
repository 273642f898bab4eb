// Context parallelism (docs/model.md, "Context parallelism"): a replica's cp ranks each hold s / cp
// tokens of every sequence (Megatron-Core's DualChunkSwap: rank i keeps chunks i and 2cp-1-i, so
// causal attention is balanced), and only attention communicates. Sources: Transformer Engine
// attention/dot_product_attention/context_parallel.py and Megatron-LM
// docs/user-guide/features/context_parallel.md, as digested in frontier-facts.md, section 4.
#include "poseidon/cost_model.hpp"

#include <algorithm>

namespace poseidon {

CpLink cp_link(const Group& g, int tp, int cp) {
    if (cp <= 1) return {};
    // A replica of tp x cp GPUs inside one NVLink domain (whole replicas fit it) exchanges over
    // NVLink; otherwise its ring crosses nodes, each GPU on its share of the node's NICs (one NIC
    // per GPU on rail-optimised nodes).
    const int span = tp * cp, domain = g.domain_gpus();
    if (span <= domain && domain % span == 0) return {intra_node_bw_eff_GBps(g, cp), group_latency_s(g, false)};
    return {nic_bw_per_node_eff_GBps(g) / g.gpus_per_node, group_latency_s(g, true)};
}

CpExtra cp_extra(const std::string& comm_type, int cp, double core_forward_s, double core_backward_s, double kv_bytes, double qkv_bytes, double out_bytes,
                 const CpLink& link, double kappa) {
    if (cp <= 1 || link.bw_GBps <= 0) return {};
    const double bw = link.bw_GBps * GB, lat = link.latency_s, n = cp;
    if (comm_type == "all_gather") {
        // The other ranks' keys and values gathered before the attention, not overlapped; the
        // backward gathers them again and reduce-scatters their gradients (Llama 3, sec. 3.3.2).
        const double gather = (n - 1) * kv_bytes / bw + (n - 1) * lat;
        return {gather, 2 * gather};
    }
    if (comm_type == "a2a") {
        // Ulysses: Q, K, V all-to-all from sequence to head sharding, the output back; the
        // backward mirrors both.
        auto a2a = [&](double bytes) { return (n - 1) / n * bytes / bw + (n - 1) * lat; };
        const double x = a2a(qkv_bytes) + a2a(out_bytes);
        return {x, x};
    }
    // p2p: a ring of cp steps, each attending to one rank's keys and values while the next
    // rank's travel (the backward sends keys and values and their gradients: twice the bytes).
    // The first step's own chunk needs nothing; a step lasts the longer of its attention, slowed
    // by the transfer beside it, and the transfer.
    auto ring = [&](double core, double comm) {
        const double step = core / n;
        return step + (n - 1) * std::max(step + kappa * std::min(step, comm), comm) - core;
    };
    const double kv_s = kv_bytes / bw + lat;
    return {ring(core_forward_s, kv_s), ring(core_backward_s, 2 * kv_s)};
}

}  // namespace poseidon
