// One transformer block of a replica (core/src/cost_model.cpp), apart from how many blocks the
// stage holds and where it sits: a stage's times are its layer count times this plus the
// embedding, head and MTP modules of its position (core/src/replica_cost.cpp). The search's
// cost tables cost a hundred layer counts of one replica; with the block computed once for
// them (evaluate_stages_into) each count is a few multiplications. Internal to core/src.
#pragma once

#include <algorithm>

#include "poseidon/cost_model.hpp"
#include "poseidon/profile.hpp"
#include "poseidon/recompute_modules.hpp"

namespace poseidon::detail {

struct BlockCost {
    // What replica_cost reports of the block alone: tp_bus_bw_GBps, tp_nvls, ep_pair_save_s
    // (before its cap) and the sources of the block's passes; the rest is filled per layer count.
    ReplicaCost partial;
    GemmTimer timer;
    const DeviceProfile* prof = nullptr;  // the device's measured profile, if the scenario has one (of sc.profile)
    double T = 0, Tr = 0;  // tokens of the replica's micro-batch; of its replicated ops
    double mem_rate = 0, kernel_s = 0, e = 2, one_allreduce_s = 0;
    bool hidden_dropout = false, host_free = false;
    bool some_blocks = false;  // full recompute of the first recompute_num_layers blocks only
    double layer_fwd = 0, layer_bwd = 0, layer_fwd_tp = 0, layer_bwd_tp = 0;  // measured where the profile has them
    double plain_bwd = 0, plain_bwd_tp = 0;  // a block that does not recompute (some_blocks)
    double ep_fwd = 0, ep_bwd = 0, recompute_ep = 0;
    double host_wait_fwd = 0;  // the dropless MoE layer's host issue beyond the GPU's expert section
};

// A measured profile replaces the analytic `value` where it has the field (docs/model.md,
// "Measured profiles"); the TP share of a measured time, for the breakdown, stays the analytic
// estimate of the collectives it contains, capped at the measured time.
inline void apply_measured(const DeviceProfile* prof, int tp, int samples, ProfileField field, double& value, double* tp_part, CostSource& src) {
    const ProfiledValue pv = profile_lookup(prof, field, tp, samples);
    src = pv.source;
    if (pv.source == CostSource::analytic) return;
    value = pv.value_s;
    if (tp_part) *tp_part = std::min(*tp_part, value);
}

// Depends on the position only through its context- and expert-parallel fields (cp, its link,
// ep, etp, ep_link), which a stage's group, TP and StagePlan fix.
BlockCost block_cost(const Scenario& sc, const Device& d, int tp, int samples, const StagePosition& pos);
// replica_cost with the block given.
ReplicaCost replica_cost_of(const Scenario& sc, const Device& d, int tp, int samples, int num_layers, const StagePosition& pos, const BlockCost& blk);

}  // namespace poseidon::detail
