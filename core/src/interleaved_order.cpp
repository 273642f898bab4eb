// Megatron-Core's order of (chunk, micro-batch) passes on one stage of the interleaved 1F1B schedule
// (forward_backward_pipelining_with_interleaving in core/pipeline_parallel/schedules.py), and what
// that order holds in memory. docs/model.md, "Interleaved 1F1B".
#include <algorithm>

#include "poseidon/dag.hpp"

namespace poseidon {

namespace {

// Megatron-Core: 2 (p - s - 1) + (V - 1) G warm-up forwards for every m (get_pp_rank_microbatches
// since Megatron-LM commit 4295be1a6c, 2024-11-01; before it, every pass warmed up when m == p,
// which held all m V activations on every stage).
// With --overlap-moe-expert-parallel-comm one more (extra = 1): the combined 1F1B merges each
// steady-state forward with a backward, which on the last stage would otherwise be its own
// micro-batch's (get_pp_rank_microbatches, overlap_moe_expert_parallel_comm).
std::int64_t warmup_passes(int s, int p, int V, std::int64_t m, std::int64_t G, int extra) {
    return std::min<std::int64_t>(2 * static_cast<std::int64_t>(p - s - 1) + static_cast<std::int64_t>(V - 1) * G + extra, m * V);
}

}  // namespace

void interleaved_order(int s, int p, int V, std::int64_t m, std::vector<ChunkPass>& order, int group, int extra_warmup) {
    order.clear();
    // Megatron-Core's schedule table (get_schedule_table): micro-batches in groups of G, each group
    // run through chunk 0, then chunk 1, ...; the last group holds what is left of m.
    const std::int64_t G = group > 0 ? group : p, total = m * V;
    const std::int64_t full = m / G, full_units = full * G * V, rest = m - full * G;
    auto unit = [&](std::int64_t k, bool fwd) {
        std::int64_t c, j;
        if (k < full_units) {
            const std::int64_t r = k % (G * V);
            c = r / G;
            j = (k / (G * V)) * G + r % G;
        } else {
            const std::int64_t r = k - full_units;
            c = r / rest;
            j = full * G + r % rest;
        }
        // backwards run the chunks in reverse (get_model_chunk_id with forward=False)
        return ChunkPass{fwd ? static_cast<int>(c) : V - 1 - static_cast<int>(c), j, fwd};
    };
    const std::int64_t warmup = warmup_passes(s, p, V, m, G, extra_warmup);
    for (std::int64_t k = 0; k < warmup; ++k) order.push_back(unit(k, true));
    for (std::int64_t i = 0; i < total - warmup; ++i) {
        order.push_back(unit(warmup + i, true));
        order.back().steady = true;
        order.push_back(unit(i, false));
    }
    for (std::int64_t i = std::max<std::int64_t>(0, total - warmup); i < total; ++i) order.push_back(unit(i, false));
}

std::int64_t interleaved_in_flight(int s, int p, int V, std::int64_t m, int group, int extra_warmup) {
    return std::min<std::int64_t>(warmup_passes(s, p, V, m, group > 0 ? group : p, extra_warmup) + 1, m * V);
}

std::vector<std::int64_t> interleaved_peak_passes(int s, int p, std::int64_t m, std::span<const double> pass_bytes, int group, int extra_warmup) {
    const int V = static_cast<int>(pass_bytes.size());
    std::vector<ChunkPass> order;
    interleaved_order(s, p, V, m, order, group, extra_warmup);
    std::vector<std::int64_t> held(V, 0), at_peak(V, 0);
    double bytes = 0, peak = -1;
    for (const ChunkPass& u : order) {
        if (u.forward) {
            ++held[u.chunk];
            bytes += pass_bytes[u.chunk];
            if (bytes > peak) {
                peak = bytes;
                at_peak = held;
            }
        } else {
            --held[u.chunk];
            bytes -= pass_bytes[u.chunk];
        }
    }
    return at_peak;
}

}  // namespace poseidon
