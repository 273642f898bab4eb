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

// The gradient synchronisation of stage `s` of the placement `links` were filled for (all-reduce,
// or reduce-scatter with the distributed optimizer) of grad_bytes_per_gpu.
double dp_sync_cached(const Scenario& sc, const StagePlan& stage, const PlacementLinks& links, int s, double grad_bytes_per_gpu);

}  // namespace poseidon::detail
