// Deferred configurations (docs/search.md, "Deferred configurations"): a configuration whose layer
// split outgrows options.config_first_nodes is split again whole after the whole walk (one
// thread) or the rest of its subtree (several).
// With a budget of a few nodes nearly every configuration is deferred: the pruned search still
// returns the exhaustive top K, and the same plans as without deferral, bit for bit, on one thread
// and on two.
#include <catch2/catch.hpp>

#include <random>
#include <string>

#include "poseidon/scenario.hpp"
#include "poseidon/search.hpp"
#include "search_random.hpp"

using namespace poseidon;

using search_test::quiet;
using search_test::random_scenario;
using search_test::require_pruned_equals_exhaustive;
using search_test::require_same_plans;

namespace {

// The checks of one scenario; true when deferral changed the walk (its counts differ).
bool check_deferral(const Scenario& sc, const SearchOptions& deferring, const SearchOptions& exhaustive, std::int64_t& pruned_evals,
                    std::int64_t& exhaustive_evals) {
    const SearchResult pr = require_pruned_equals_exhaustive(sc, deferring, exhaustive, pruned_evals, exhaustive_evals);
    SearchOptions whole = deferring;
    whole.config_first_nodes = 0;
    const SearchResult w = search(sc, whole);
    REQUIRE(w.stats.complete);
    require_same_plans(pr, w);
    SearchOptions two = deferring;
    two.threads = 2;
    const SearchResult t = search(sc, two);
    REQUIRE(t.stats.complete);
    require_same_plans(pr, t);
    return pr.stats.pruned + pr.stats.evaluated != w.stats.pruned + w.stats.evaluated;
}

}  // namespace

TEST_CASE("configurations deferred after a few nodes each still give the exhaustive top-K", "[search][differential][deferred]") {
    const std::string schedule = GENERATE(std::string("1f1b"), std::string("any"));
    SearchOptions deferring = quiet(3, false, 1), exhaustive = quiet(3, true, 1);
    deferring.schedule = exhaustive.schedule = schedule;
    deferring.config_first_nodes = 8;  // the default is 524,288: these small splits take fewer
    std::int64_t pruned_evals = 0, exhaustive_evals = 0;
    int checked = 0, changed = 0;
    for (std::uint64_t seed = 9100; checked < 40; ++seed) {
        std::mt19937_64 rng(seed);
        const Scenario sc = parse_scenario(random_scenario(rng));
        if (search_space_size(sc, false, schedule).plans > 1e5) continue;
        INFO("schedule " << schedule << ", seed " << seed << ": " << to_json(sc).dump());
        changed += check_deferral(sc, deferring, exhaustive, pruned_evals, exhaustive_evals);
        ++checked;
    }
    INFO("walks changed by deferral: " << changed << " of " << checked);
    CHECK(changed >= 10);
}

TEST_CASE("deferred configurations of MoE searches give the exhaustive top-K", "[search][differential][deferred][moe]") {
    SearchOptions deferring = quiet(3, false, 1), exhaustive = quiet(3, true, 1);
    deferring.config_first_nodes = 8;
    std::int64_t pruned_evals = 0, exhaustive_evals = 0;
    int checked = 0, changed = 0;
    for (std::uint64_t seed = 9300; checked < 20; ++seed) {
        std::mt19937_64 rng(seed);
        const Scenario sc = parse_scenario(search_test::random_moe_scenario(rng, seed, true));
        if (search_space_size(sc, false).plans > 1e5) continue;
        INFO("seed " << seed << ": " << to_json(sc).dump());
        changed += check_deferral(sc, deferring, exhaustive, pruned_evals, exhaustive_evals);
        ++checked;
    }
    INFO("walks changed by deferral: " << changed << " of " << checked);
    CHECK(changed >= 5);
}
