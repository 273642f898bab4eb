// What evaluate_stages (stage_costs.cpp) takes from the links (stage_links.cpp): the layer-free
// communication costs of a placement, and a stage's gradient synchronisation over its node span.
// Internal to core/src.
#pragma once

#include <utility>
#include <vector>

#include "poseidon/cost_model.hpp"

namespace poseidon::detail {

// Fills `links` (spans, sends to neighbours, the interleaved wrap-around sends) for `placement`.
void fill_links(const Scenario& sc, const Plan& plan, const std::vector<StagePlacement>& placement, PlacementLinks& links);

// The gradient synchronisation of `stage` (all-reduce, or reduce-scatter with the distributed
// optimizer) over the nodes it spans (`span`: PlacementLinks::spans of the stage).
double dp_sync_span(const Scenario& sc, const StagePlan& stage, const StagePlacement& placement, double grad_bytes_per_gpu,
                    const std::vector<std::pair<int, int>>& span);

}  // namespace poseidon::detail
