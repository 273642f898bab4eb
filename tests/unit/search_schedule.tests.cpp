// The schedule dimension of the search (docs/search.md, "The space", step 6): interleaved 1F1B
// with V chunks per stage searched like any other dimension, against the exhaustive reference.
#include <catch2/catch.hpp>

#include <random>
#include <string>

#include "poseidon/json_util.hpp"
#include "poseidon/scenario.hpp"
#include "poseidon/search.hpp"
#include "search_random.hpp"

using namespace poseidon;

using search_test::close;
using search_test::quiet;
using search_test::random_scenario;
using search_test::require_pruned_equals_exhaustive;

TEST_CASE("with the schedule dimension the pruned search returns the exhaustive top-K on random scenarios", "[search][differential][schedule]") {
    const std::string schedule = GENERATE(std::string("interleaved-1f1b"), std::string("any"));
    int checked = 0, feasible = 0, interleaved_best = 0;
    std::int64_t pruned_evals = 0, exhaustive_evals = 0;
    SearchOptions pruned = quiet(3), exhaustive = quiet(3, true);
    pruned.schedule = exhaustive.schedule = schedule;
    for (std::uint64_t seed = 1000; checked < 200; ++seed) {
        std::mt19937_64 rng(seed);
        Scenario sc = parse_scenario(random_scenario(rng));
        if (search_space_size(sc, false, schedule).plans > 3e5) continue;
        INFO("schedule " << schedule << ", seed " << seed << ": " << to_json(sc).dump());
        const SearchResult pr = require_pruned_equals_exhaustive(sc, pruned, exhaustive, pruned_evals, exhaustive_evals);
        for (std::size_t k = 0; k < pr.plans.size(); ++k) {
            const Plan& p = pr.plans[k].plan;
            if (schedule == "interleaved-1f1b") REQUIRE(p.schedule == "interleaved-1f1b");
            if (p.virtual_stages > 1) {
                REQUIRE(p.num_micro_batches % static_cast<std::int64_t>(p.stages.size()) == 0);
                for (const auto& st : p.stages) REQUIRE(st.num_layers % p.virtual_stages == 0);
            }
        }
        if (!pr.plans.empty()) ++feasible;
        if (!pr.plans.empty() && pr.plans[0].plan.virtual_stages > 1) ++interleaved_best;
        ++checked;
    }
    INFO("feasible " << feasible << ", best interleaved " << interleaved_best << ", evaluations " << pruned_evals << " / " << exhaustive_evals);
    CHECK(feasible >= 90);
    if (schedule == "any") {
        // interleaving wins on a few (the bubble shrinks V-fold, but each chunk pays its pass
        // overhead and sends); pruning saves most evaluations
        CHECK(interleaved_best >= 2);
        CHECK(pruned_evals * 3 < exhaustive_evals);
    } else {
        CHECK(interleaved_best == feasible);
        CHECK(pruned_evals < exhaustive_evals);
    }
}

TEST_CASE("the exhaustive search evaluates exactly the plans search_space_size counts, per schedule", "[search][space][schedule]") {
    // a model that fits anywhere, so that nothing is dropped for memory
    for (const char* cluster : {"demo-mixed-16", "metis-t4-a100"})
        for (const char* schedule : {"1f1b", "interleaved-1f1b", "any"}) {
            Scenario sc = parse_scenario_text(std::string(R"({"model":"tiny-8l","training":{"global_batch_size":8},"cluster":")") + cluster + "\"}");
            SearchOptions o = quiet(1, true);
            o.schedule = schedule;
            const SearchResult r = search(sc, o);
            const SpaceSize sz = search_space_size(sc, false, schedule);
            INFO(cluster << ", " << schedule);
            REQUIRE(r.stats.complete);
            CHECK(static_cast<double>(r.stats.configurations) == sz.configurations);
            CHECK(static_cast<double>(r.stats.evaluated) == sz.plans);
        }
    // tiny-8l: V in {2, 4}; 8 micro-batches of 1 allow 2, 4 and 8 stages; splits in chunks of V
    Scenario sc = parse_scenario_text(R"({"model":"tiny-8l","training":{"global_batch_size":8},"cluster":"demo-mixed-16"})");
    const SpaceSize one = search_space_size(sc, false, "1f1b"), any = search_space_size(sc, false, "any");
    CHECK(one.schedules == one.configurations);
    CHECK(any.schedules > any.configurations);
}

TEST_CASE("the schedule option restricts the plans and is checked", "[search][schedule]") {
    Scenario sc = parse_scenario_text(R"({"model":"tiny-8l","training":{"global_batch_size":32},"cluster":"demo-mixed-16"})");
    SearchOptions o = quiet(5);
    o.schedule = "1f1b";
    for (const auto& e : search(sc, o).plans) CHECK(e.plan.schedule == "1f1b");
    o.schedule = "interleaved-1f1b";
    const SearchResult r = search(sc, o);
    REQUIRE(!r.plans.empty());
    for (const auto& e : r.plans) {
        CHECK(e.plan.schedule == "interleaved-1f1b");
        CHECK(e.plan.virtual_stages >= 2);
    }
    // the JSON plan carries the schedule and V
    const Json j = to_json(sc, r);
    CHECK(j["plans"][0]["plan"]["schedule"] == "interleaved-1f1b");
    CHECK(j["plans"][0]["plan"]["virtual_stages"].get<int>() == r.plans[0].plan.virtual_stages);
    CHECK(parse_search_options(Json::parse(R"({"schedule": "any"})")).schedule == "any");
    CHECK_THROWS_AS(parse_search_options(Json::parse(R"({"schedule": "gpipe"})")), InputError);
}
