// options.node_counts "all" (docs/search.md, "The space", step 2): a group may use any whole
// number of its nodes, not only the halving sequence.
#include <catch2/catch.hpp>

#include <random>
#include <string>
#include <vector>

#include "../../core/src/search_space.hpp"
#include "poseidon/json_util.hpp"
#include "poseidon/scenario.hpp"
#include "../../core/src/search_topk.hpp"
#include "poseidon/search.hpp"
#include "search_random.hpp"

using namespace poseidon;

using search_test::close;
using search_test::quiet;
using search_test::random_scenario;
using search_test::require_pruned_equals_exhaustive;

TEST_CASE("with every node count the pruned search returns the exhaustive top-K on random scenarios", "[search][differential][nodes]") {
    int checked = 0, feasible = 0, better = 0;
    std::int64_t pruned_evals = 0, exhaustive_evals = 0;
    SearchOptions pruned = quiet(3), exhaustive = quiet(3, true), halving = quiet(1);
    pruned.node_counts = exhaustive.node_counts = "all";
    for (std::uint64_t seed = 9000; checked < 150; ++seed) {
        std::mt19937_64 rng(seed);
        Scenario sc = parse_scenario(random_scenario(rng));
        if (search_space_size(sc, false, "any", "all").plans > 3e5) continue;
        INFO("seed " << seed << ": " << to_json(sc).dump());
        const SearchResult pr = require_pruned_equals_exhaustive(sc, pruned, exhaustive, pruned_evals, exhaustive_evals);
        if (!pr.plans.empty()) {
            ++feasible;
            // the wider space is never worse, and sometimes better
            const auto h = search(sc, halving);
            REQUIRE(!h.plans.empty());
            REQUIRE(pr.plans[0].iteration_time_s <= poseidon::detail::tie_last(h.plans[0].iteration_time_s));
            better += pr.plans[0].iteration_time_s < h.plans[0].iteration_time_s;
        }
        ++checked;
    }
    INFO("feasible " << feasible << ", better than halving " << better << ", evaluations " << pruned_evals << " / " << exhaustive_evals);
    CHECK(feasible >= 100);
    CHECK(better >= 1);
    CHECK(pruned_evals * 3 < exhaustive_evals);
}

TEST_CASE("the exhaustive search evaluates exactly the plans search_space_size counts with every node count", "[search][space][nodes]") {
    // 3 and 6 nodes: halving offers {3, 2, 1} and {6, 4, 3, 2, 1}; every count {3, 2, 1}, {6, 5, 4, 3, 2, 1}
    const Scenario sc = parse_scenario_text(
        R"({"model":"tiny-8l","training":{"global_batch_size":4},"cluster":{"name":"odd","groups":[)"
        R"({"device":"a100-sxm4-80gb","nodes":3,"gpus_per_node":2,"inter_node_bw_GBps":25},{"device":"v100-sxm2-32gb","nodes":6,"gpus_per_node":1,"inter_node_bw_GBps":25}]}})");
    for (const char* counts : {"halving", "all"}) {
        SearchOptions o = quiet(1, true);
        o.node_counts = counts;
        o.schedule = "1f1b";
        const SearchResult r = search(sc, o);
        const SpaceSize sz = search_space_size(sc, false, "1f1b", counts);
        INFO(counts);
        REQUIRE(r.stats.complete);
        CHECK(static_cast<double>(r.stats.configurations) == sz.configurations);
        CHECK(static_cast<double>(r.stats.evaluated) == sz.plans);
    }
    CHECK(search_space_size(sc, false, "1f1b", "all").stage_layouts > search_space_size(sc, false, "1f1b", "halving").stage_layouts);
    CHECK(parse_search_options(Json::parse(R"({"node_counts": "all"})")).node_counts == "all");
    CHECK_THROWS_AS(parse_search_options(Json::parse(R"({"node_counts": "some"})")), InputError);
}

TEST_CASE("the default node counts are the halving sequence and every power of two below the group's nodes", "[search][space][nodes]") {
    using poseidon::detail::node_choices;
    using V = std::vector<int>;
    CHECK(node_choices(1) == V{1});
    CHECK(node_choices(3) == V{3, 2, 1});
    CHECK(node_choices(6) == V{6, 4, 3, 2, 1});
    CHECK(node_choices(32) == V{32, 16, 8, 4, 2, 1});
    // the sweep's 3-type groups at 4096 GPUs: halving alone (170, 85, 43, 22, ...) reaches a
    // power-of-two GPU count, which a power-of-two batch needs for its data parallelism, at 2 nodes
    CHECK(node_choices(170) == V{170, 128, 85, 64, 43, 32, 22, 16, 11, 8, 6, 4, 3, 2, 1});
    CHECK(node_choices(5, true) == V{5, 4, 3, 2, 1});
}
