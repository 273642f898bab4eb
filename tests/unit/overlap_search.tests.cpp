// The search with the overlap chains (docs/model.md, "Overlap"): its bounds stay lower bounds when
// the last backward and the first forward carry the bucket chains, so pruning returns the
// exhaustive answer, and its scores are the estimates of the plans it returns, bit for bit.
#include <catch2/catch.hpp>

#include "search_random.hpp"
#include "poseidon/json_util.hpp"

using namespace search_test;

namespace {

// A random scenario with both overlap switches on (the all-gather where the distributed optimizer is)
Scenario overlap_scenario(std::mt19937_64& rng) {
    Json j = random_scenario(rng);
    j["training"]["overlap_grad_reduce"] = true;
    if (j["training"].value("distributed_optimizer", false)) j["training"]["overlap_param_gather"] = true;
    return parse_scenario(j);
}

}  // namespace

TEST_CASE("with overlap_grad_reduce and overlap_param_gather the pruned search returns the exhaustive top K on 200 random scenarios", "[search][differential][overlap]") {
    int checked = 0;
    std::int64_t pruned_evals = 0, exhaustive_evals = 0;
    SearchOptions pruned = quiet(3), exhaustive = quiet(3, true);
    for (std::uint64_t seed = 1; checked < 200; ++seed) {
        std::mt19937_64 rng(seed);
        const Scenario sc = overlap_scenario(rng);
        if (search_space_size(sc, false).plans > 1e6) continue;
        INFO("seed " << seed << ": " << to_json(sc).dump());
        require_pruned_equals_exhaustive(sc, pruned, exhaustive, pruned_evals, exhaustive_evals);
        ++checked;
    }
}

TEST_CASE("interleaved plans with per-chunk buckets: the pruned search returns the exhaustive top K on 150 random scenarios", "[search][differential][overlap][interleaved]") {
    int checked = 0, interleaved = 0;
    std::int64_t pruned_evals = 0, exhaustive_evals = 0;
    SearchOptions pruned = quiet(3), exhaustive = quiet(3, true);
    pruned.schedule = exhaustive.schedule = "interleaved-1f1b";
    for (std::uint64_t seed = 1; checked < 150; ++seed) {
        std::mt19937_64 rng(seed);
        const Scenario sc = overlap_scenario(rng);
        if (search_space_size(sc, false).plans > 1e6) continue;
        INFO("seed " << seed << ": " << to_json(sc).dump());
        require_pruned_equals_exhaustive(sc, pruned, exhaustive, pruned_evals, exhaustive_evals);
        if (!search(sc, pruned).plans.empty()) ++interleaved;
        ++checked;
    }
    CHECK(interleaved >= 50);  // the check has interleaved plans to compare
}
