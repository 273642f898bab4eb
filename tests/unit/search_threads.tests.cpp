// The parallel search (docs/search.md, "Threads"): the same plans, in the same order, with the
// same scores, for every thread count; the options that set it.
#include <catch2/catch.hpp>

#include <random>

#include "poseidon/json_util.hpp"
#include "poseidon/scenario.hpp"
#include "poseidon/search.hpp"
#include "search_random.hpp"

using namespace poseidon;
using search_test::quiet;
using search_test::random_scenario;

namespace {

void require_same(const SearchResult& a, const SearchResult& b) {
    REQUIRE(a.plans.size() == b.plans.size());
    for (std::size_t k = 0; k < a.plans.size(); ++k) {
        INFO("rank " << k);
        CHECK(a.plans[k].plan == b.plans[k].plan);
        CHECK(a.scores[k] == b.scores[k]);
    }
    CHECK(a.stats.complete == b.stats.complete);
}

}  // namespace

TEST_CASE("1 and 4 threads return the same plans on the differential scenarios", "[search][threads]") {
    const bool per_stage = GENERATE(false, true);
    int checked = 0;
    for (std::uint64_t seed = 1; checked < 200; ++seed) {
        std::mt19937_64 rng(seed);
        Scenario sc = parse_scenario(random_scenario(rng));
        if (search_space_size(sc, per_stage).plans > 1e6) continue;  // the differential test's scenarios
        INFO("TP per stage " << per_stage << ", seed " << seed << ": " << to_json(sc).dump());
        SearchOptions one = quiet(3, false, 1), four = quiet(3, false, 4);
        one.tp_per_stage = four.tp_per_stage = per_stage;
        const SearchResult a = search(sc, one), b = search(sc, four);
        REQUIRE(a.stats.threads == 1);
        require_same(a, b);
        if (checked % 10 == 0) {  // the exhaustive walk shares tasks too
            SearchOptions ex = quiet(3, true, 4);
            ex.tp_per_stage = per_stage;
            require_same(a, search(sc, ex));
        }
        ++checked;
    }
}

TEST_CASE("preset scenarios give the same plans with 1, 2 and 4 threads", "[search][threads]") {
    const char* cases[] = {R"({"model":"gpt3-1.7b","training":{"global_batch_size":64},"cluster":"demo-mixed-16"})",
                           R"({"model":"gpt3-7.5b","training":{"global_batch_size":128},"cluster":"mixed-a100-a10-t4"})",
                           R"({"model":"opt-350m","training":{"global_batch_size":64},"cluster":"sailor-mit-mix"})"};
    for (const char* text : cases)
        for (bool per_stage : {false, true}) {
            INFO(text << (per_stage ? " --tp-per-stage" : ""));
            Scenario sc = parse_scenario_text(text);
            SearchOptions o = quiet(8, false, 1);
            o.tp_per_stage = per_stage;
            const SearchResult one = search(sc, o);
            REQUIRE(one.plans.size() == 8);
            for (int t : {2, 4}) {
                o.threads = t;
                require_same(one, search(sc, o));
            }
        }
}

TEST_CASE("plans of equal time are ordered by the plan, whatever found them first", "[search][threads]") {
    // Two identical groups: swapping them gives plans of exactly the same time; the list keeps
    // them in the order of plan_less (micro-batch size, stages, then per stage group, TP, GPUs,
    // layers), so one thread and four agree.
    Scenario sc = parse_scenario_text(R"({"model":"tiny-8l","training":{"global_batch_size":16},"cluster":{"name":"twins","groups":[
        {"device":"a100-sxm4-40gb","nodes":1,"gpus_per_node":4,"inter_node_bw_GBps":25},
        {"device":"a100-sxm4-40gb","nodes":1,"gpus_per_node":4,"inter_node_bw_GBps":25}]}})");
    const SearchResult a = search(sc, quiet(20, false, 1)), b = search(sc, quiet(20, false, 4));
    require_same(a, b);
    bool tie = false;
    for (std::size_t k = 1; k < a.plans.size(); ++k) tie = tie || a.scores[k] == a.scores[k - 1];
    CHECK(tie);
}

TEST_CASE("the threads option", "[search][threads]") {
    CHECK(parse_search_options(Json::parse(R"({"threads": 4})")).threads == 4);
    CHECK(parse_search_options(Json::object()).threads == 0);
    CHECK_THROWS_AS(parse_search_options(Json::parse(R"({"threads": -1})")), InputError);
    CHECK_THROWS_AS(parse_search_options(Json::parse(R"({"threads": 257})")), InputError);
    SearchOptions o;
    CHECK(search_threads(o) >= 1);  // all cores
    o.threads = 3;
    CHECK(search_threads(o) == 3);
    Scenario sc = parse_scenario_text(R"({"model":"gpt3-1.7b","training":{"global_batch_size":64},"cluster":"demo-mixed-16"})");
    const SearchResult r = search(sc, quiet(3, false, 2));
    CHECK(r.stats.threads >= 1);
    CHECK(r.stats.threads <= 2);
    CHECK(to_json(sc, r)["stats"]["threads"] == r.stats.threads);
}
