// Megatron-Core's combined 1F1B (poseidon/combined_1f1b.hpp; docs/model.md, "Expert-parallel
// overlap across micro-batches"): what a merged block saves, the reserve the stage times carry,
// and the setting's conditions.
#include "poseidon/combined_1f1b.hpp"

namespace poseidon {

// The phases of one merged block (combined_1f1b / fine_grained_callables, as the Megatron-Core MoE
// README describes the EP A2A overlap): the backward's combine beside the forward's attention and
// router; the forward's dispatch beside the backward's expert data gradients; the backward's
// dispatch beside the forward's experts and the delayed expert weight gradients
// (--delay-wgrad-compute, taken as half the experts' backward); the forward's combine beside the
// backward's attention. Each phase takes the longer of its two, the compute slowed by kappa for
// the time the exchange runs beside it.
double ep_pair_save_s(const BlockPass& f, const BlockPass& b, double kappa) {
    auto phase = [kappa](double comm, double comp) { return std::max(comm, comp) + kappa * std::min(comm, comp); };
    const double merged = phase(b.exchange_s / 2, f.other_s) + phase(f.exchange_s / 2, b.experts_s / 2) + phase(b.exchange_s / 2, f.experts_s + b.experts_s / 2) +
                          phase(f.exchange_s / 2, b.other_s);
    const double apart = f.other_s + f.experts_s + f.exchange_s + b.other_s + b.experts_s + b.exchange_s;
    return std::max(0.0, apart - merged);
}

bool merges_passes(const Scenario& sc) { return sc.training.overlap_moe_expert_parallel_comm && sc.model.is_moe(); }

void reserve_pair_savings(StageTimes& t, bool only_stage) {
    const double r = 0.5 * t.pair_layers * t.pair_save_per_layer_s;
    t.merged_pairs = true;
    t.pair_reserve_s = r;
    t.forward_s -= r;
    t.backward_s -= r;
    if (only_stage) {
        t.first_forward_extra_s += r;
        t.last_backward_extra_s += r;
    }
}

// transformer_config.py refuses the combined 1F1B with full recomputation (it runs two
// micro-batches' passes layer by layer) and beside the shared-expert overlap.
void check_combined_1f1b(const Training& tr, const std::string& path, Problems& problems) {
    if (!tr.overlap_moe_expert_parallel_comm) return;
    if (tr.recompute == Recompute::full)
        problems.add(path, std::string("true is not allowed with recompute \"full\" (") + kCombinedRefusesFullWhy + "; use \"selective\" or \"none\")");
    if (tr.moe_shared_expert_overlap)
        problems.add(path, "true is not allowed with moe_shared_expert_overlap true (Megatron-Core overlaps the token exchange with one or the other); set one of them false");
}

}  // namespace poseidon
