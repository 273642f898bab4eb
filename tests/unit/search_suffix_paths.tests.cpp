// The paths through the stages a split walk has not fixed yet (docs/search.md, "Bounds", "Within
// the split": family E before its stage; "Bounds of interleaved plans", "Whole chunks in the
// suffix"): the pruned search against the exhaustive one where they bind, plan for plan. A bound
// above the DAG's time would cut a plan of the top K and show here as a different plan or time.
#include <catch2/catch.hpp>

#include <array>
#include <random>
#include <string>

#include "poseidon/json_util.hpp"
#include "poseidon/scenario.hpp"
#include "poseidon/search.hpp"
#include "search_random.hpp"

using namespace poseidon;

using search_test::deep_interleaved_runs;
using search_test::quiet;
using search_test::random_scenario;
using search_test::require_pruned_equals_exhaustive;

TEST_CASE("where the syncs of later stages outweigh the first stage's, the pruned interleaved search returns the exhaustive top-K on 80 deep random models",
          "[search][differential][interleaved]") {
    // one group on fast links, the others on slow ones: wherever the slow groups' stages stand,
    // their gradient syncs outweigh what stage 0's sync and the way down bound (family G through
    // a later stage, its own sync at the suffix's bottleneck)
    int feasible = 0, interleaved_in_top = 0;
    SearchOptions pruned = quiet(3, false, 1), exhaustive = quiet(3, true, 1);
    pruned.schedule = exhaustive.schedule = "interleaved-1f1b";
    auto make = [](std::mt19937_64& rng) {
        Json j = random_scenario(rng);
        j["training"]["distributed_optimizer"] = false;
        j["training"].erase("recompute");
        auto& groups = j["cluster"]["groups"];
        const std::size_t fast = rng() % groups.size();
        for (std::size_t g = 0; g < groups.size(); ++g)
            groups[g]["inter_node_bw_GBps"] = g == fast ? 100.0 : 0.2 + static_cast<double>(rng() % 20) / 10;
        return j;
    };
    const auto [pruned_evals, exhaustive_evals] = deep_interleaved_runs(41000, 80, pruned, exhaustive, make, [&](const SearchResult& pr) {
        for (const auto& e : pr.plans) interleaved_in_top += e.plan.virtual_stages > 1;
        feasible += !pr.plans.empty();
    });
    INFO("feasible " << feasible << ", interleaved plans in the top 3 " << interleaved_in_top << ", evaluations " << pruned_evals << " / "
                     << exhaustive_evals);
    CHECK(feasible >= 40);
    CHECK(interleaved_in_top >= 100);
    CHECK(pruned_evals * 3 < exhaustive_evals);
}

TEST_CASE("with fewer micro-batches than stages the pruned 1F1B search returns the exhaustive top-K on 150 random scenarios",
          "[search][differential]") {
    // family E through the first stage with two steady-state turns (w_j <= m - 2): with m below
    // the stage count that stage lies inside the pipeline, and the walk bounds it before it
    // reaches it
    int checked = 0, feasible = 0, short_m = 0;
    std::int64_t pruned_evals = 0, exhaustive_evals = 0;
    SearchOptions pruned = quiet(3, false, 1), exhaustive = quiet(3, true, 1);
    pruned.schedule = exhaustive.schedule = "1f1b";
    for (std::uint64_t seed = 41500; checked < 150; ++seed) {
        std::mt19937_64 rng(seed);
        Json j = random_scenario(rng);
        j["model"]["num_layers"] = 8 + static_cast<int>(rng() % 9);
        j["training"]["global_batch_size"] = std::array<int, 3>{2, 3, 4}[rng() % 3];
        const Scenario sc = parse_scenario(j);
        if (search_space_size(sc, false, "1f1b").plans > 2e5) continue;
        INFO("seed " << seed << ": " << j.dump());
        const SearchResult pr = require_pruned_equals_exhaustive(sc, pruned, exhaustive, pruned_evals, exhaustive_evals);
        for (const auto& e : pr.plans) short_m += e.plan.num_micro_batches < static_cast<std::int64_t>(e.plan.stages.size());
        feasible += !pr.plans.empty();
        ++checked;
    }
    INFO("feasible " << feasible << ", plans in the top 3 with fewer micro-batches than stages " << short_m << ", evaluations " << pruned_evals
                     << " / " << exhaustive_evals);
    CHECK(feasible >= 100);
    CHECK(short_m >= 50);
    CHECK(pruned_evals * 2 < exhaustive_evals);
}
