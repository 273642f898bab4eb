// Megatron-Core's combined 1F1B (--overlap-moe-expert-parallel-comm with --delay-wgrad-compute;
// training.overlap_moe_expert_parallel_comm): in the steady state each forward runs merged with
// the backward after it, the token exchange of one micro-batch beside the compute of the other,
// after one more warm-up forward (docs/model.md, "Expert-parallel overlap across micro-batches";
// core/src/combined_1f1b.cpp; the DAG's merged nodes in dag_interleaved.cpp).
//
// How the times carry it: a merged pair of a forward of f blocks and a backward of b blocks saves
// s min(f, b) (s: one block's saving, ep_pair_save_s). Each pass's forward_s / backward_s is its
// time less a reserve of s x its blocks / 2; a pass run alone takes its reserve back, a merged
// pair what the saving leaves of both reserves (pair_extra_s, never negative). So every node of
// the merged DAG lasts at least its reduced passes, and the plain DAG of the reduced passes,
// whose longest path the search bounds, is never longer than the merged one (docs/search.md,
// "The combined 1F1B").
#pragma once

#include <algorithm>
#include <cstdint>
#include <string>

#include "poseidon/cost_model.hpp"
#include "poseidon/error.hpp"

namespace poseidon {

// One pass of a block: its expert section (experts_s), its dispatch plus combine (exchange_s,
// half each) and the rest (other_s).
struct BlockPass {
    double other_s = 0, experts_s = 0, exchange_s = 0;
};
// What a block saves when its forward and another micro-batch's backward run as one merged block
// (four phases, each the token exchange of one pass beside compute of the other), against the two
// passes one after the other; kappa slows compute beside an exchange.
double ep_pair_save_s(const BlockPass& fwd, const BlockPass& bwd, double kappa);

// Whether the scenario merges steady-state passes (overlap_moe_expert_parallel_comm on a model
// with routed experts).
bool merges_passes(const Scenario& sc);
// Megatron-Core's TransformerConfig conditions on the setting, named under `path`.
void check_combined_1f1b(const Training& tr, const std::string& path, Problems& problems);
// Why it refuses full recomputation, for the messages of the scenario, a plan and the search.
inline constexpr const char* kCombinedRefusesFullWhy = "Megatron-Core's combined 1F1B runs the forward and backward of two micro-batches layer by layer";
// Moves the pass's reserve out of forward_s and backward_s; `only_stage`: the plan's single 1F1B
// stage, whose one unmerged forward (the first) and backward (the last) take it back as their
// extras, so its order F0, (F1 B0), ..., B(m-1) lasts what the plain order of the reduced passes
// does.
void reserve_pair_savings(StageTimes& t, bool only_stage);
// The time a merged pair of the forward of chunk `f` and the backward of chunk `b` adds beyond
// f.forward_s + b.backward_s: their reserves less what the pair saves.
inline double pair_extra_s(const StageTimes& f, const StageTimes& b) {
    const double save = std::min(f.pair_save_per_layer_s, b.pair_save_per_layer_s) * std::min(f.pair_layers, b.pair_layers);
    return std::max(0.0, f.pair_reserve_s + b.pair_reserve_s - save);
}
// The micro-batches 1F1B stage s of S holds activations for at once: min(S - s, m); a single stage
// that merges passes holds two (the next forward runs beside the previous backward).
inline std::int64_t one_f_one_b_in_flight(int s, int S, std::int64_t m, bool merged) {
    return std::min<std::int64_t>(S - s + (merged && S == 1 ? 1 : 0), m);
}

}  // namespace poseidon
