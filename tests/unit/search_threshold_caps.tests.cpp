// Caps from the threshold (docs/search.md, "Bounds", caps from the threshold, and "Bounds of
// interleaved plans"): the split walk lowers a stage's cap below its memory cap where the stage's
// family-C bound at more layers reaches the threshold, the interleaved walk where its family A
// does. The caps must never lose a plan of the top K: the pruned search against the exhaustive one
// on random dense, MoE and deep interleaved scenarios, with the caps lowered in many of them.
#include <catch2/catch.hpp>

#include <array>
#include <random>

#include "poseidon/json_util.hpp"
#include "poseidon/scenario.hpp"
#include "poseidon/search.hpp"
#include "search_random.hpp"

using namespace poseidon;

using search_test::quiet;
using search_test::random_moe_scenario;
using search_test::random_scenario;
using search_test::require_pruned_equals_exhaustive;
using search_test::deep_interleaved_runs;
using search_test::require_same_plans;

TEST_CASE("with caps from the threshold the pruned search returns the exhaustive top-K on 300 random scenarios", "[search][differential][threshold-caps]") {
    const bool moe = GENERATE(false, true);
    // one thread: the threshold falls in one order, so the count below is the same on every machine
    SearchOptions pruned = quiet(3, false, 1), exhaustive = quiet(3, true);
    int checked = 0, capped = 0;
    std::int64_t pruned_evals = 0, exhaustive_evals = 0;
    const int want = moe ? 100 : 200;
    for (std::uint64_t seed = 1; checked < want; ++seed) {
        std::mt19937_64 rng(seed);
        Scenario sc = parse_scenario(moe ? random_moe_scenario(rng, seed) : random_scenario(rng));
        if (search_space_size(sc).plans > 1e6) continue;
        INFO("MoE " << moe << ", seed " << seed << ": " << to_json(sc).dump());
        const SearchResult pr = require_pruned_equals_exhaustive(sc, pruned, exhaustive, pruned_evals, exhaustive_evals);
        if (pr.stats.threshold_capped > 0) ++capped;
        ++checked;
    }
    // the caps are not idle: they bind in nearly every scenario (199 of 200 dense, 98 of 100 MoE)
    INFO("caps lowered in " << capped << " of " << checked);
    CHECK(capped >= checked * 9 / 10);
}

TEST_CASE("caps from the threshold: none with --exhaustive, and the same plans whatever the thread count", "[search][threshold-caps][threads]") {
    std::mt19937_64 rng(7);
    int with_caps = 0;
    for (std::uint64_t seed = 1; seed <= 40; ++seed) {
        rng.seed(seed);
        Scenario sc = parse_scenario(random_scenario(rng));
        if (search_space_size(sc).plans > 1e6) continue;
        const SearchResult one = search(sc, quiet(3, false, 1));
        const SearchResult two = search(sc, quiet(3, false, 2));
        const SearchResult ex = search(sc, quiet(3, true));
        CHECK(ex.stats.threshold_capped == 0);
        require_same_plans(one, two);
        if (one.stats.threshold_capped > 0) ++with_caps;
    }
    CHECK(with_caps > 0);
}

TEST_CASE("with chunk caps from the threshold the interleaved walk returns the exhaustive top-K plan for plan on 100 deep random models",
          "[search][differential][threshold-caps][interleaved]") {
    SearchOptions pruned = quiet(3, false, 1), exhaustive = quiet(3, true, 1);
    pruned.schedule = exhaustive.schedule = "interleaved-1f1b";
    const int checked = 100;
    int capped = 0, feasible = 0;
    deep_interleaved_runs(1, checked, pruned, exhaustive, random_scenario, [&](const SearchResult& pr) {
        capped += pr.stats.threshold_capped > 0;
        feasible += !pr.plans.empty();
    });
    INFO("caps lowered in " << capped << " of " << checked << ", feasible " << feasible);
    // 75 feasible, the caps lowered in all 75
    CHECK(feasible >= 50);
    CHECK(capped >= checked / 2);
}
