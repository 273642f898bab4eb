// options.mixed_stages (docs/search.md, "The space", step 7): stages whose data-parallel replicas
// mix GPU types, each group's with its own TP and samples: one such stage, or a pipeline of them.
#include <catch2/catch.hpp>

#include <map>

#include <random>
#include <string>

#include "../../core/src/search_driver.hpp"
#include "poseidon/estimate.hpp"
#include "poseidon/json_util.hpp"
#include "poseidon/scenario.hpp"
#include "poseidon/search.hpp"
#include "search_random.hpp"

using namespace poseidon;

using search_test::quiet;
using search_test::random_scenario;
using search_test::require_pruned_equals_exhaustive;

namespace {

// issue 11: 16 H100 + 16 A100-40GB on a 200 GB/s network, OPT-350M (it was A100 + V100 until the
// V100 lost the flash attention it cannot run: unfused, its slower attention made the pipelines
// win there, as they do beside any GPU of the same generation)
Scenario h100_a100() {
    return parse_scenario_text(
        R"({"model": "opt-350m", "training": {"global_batch_size": 256}, "cluster": {"name": "16 H100 + 16 A100-40GB", "groups": [)"
        R"({"device": "h100-sxm5-80gb", "nodes": 2, "gpus_per_node": 8, "inter_node_bw_GBps": 200},)"
        R"({"device": "a100-sxm4-40gb", "nodes": 2, "gpus_per_node": 8, "inter_node_bw_GBps": 200}]}})");
}

}  // namespace

TEST_CASE("pure data parallelism over H100 and A100 replicas with unequal samples beats every pipeline on a fast network", "[search][mixed]") {
    const Scenario sc = h100_a100();
    SearchOptions without = quiet(3), with = quiet(3);
    with.mixed_stages = true;
    const SearchResult a = search(sc, without), b = search(sc, with);
    REQUIRE(!a.plans.empty());
    REQUIRE(!b.plans.empty());
    const Plan& best = b.plans[0].plan;
    REQUIRE(best.stages.size() == 1);
    const auto& reps = best.stages[0].replicas;
    REQUIRE(reps.size() >= 2);
    // runs of identical replicas, both types among them
    std::map<int, std::pair<int, int>> per_group;  // group -> (samples per replica, tp)
    int samples = 0;
    for (const auto& r : reps) {
        per_group[r.group] = {r.samples, r.tp};
        samples += r.count * r.samples;
    }
    REQUIRE(per_group.size() == 2);
    CHECK(samples == best.micro_batch_size);
    // per GPU the H100s take more samples than the A100s
    const auto [h_s, h_tp] = per_group[0];
    const auto [a_s, a_tp] = per_group[1];
    CHECK(static_cast<double>(h_s) / h_tp > static_cast<double>(a_s) / a_tp);
    CHECK(b.plans[0].iteration_time_s < 0.99 * a.plans[0].iteration_time_s);
    CHECK(b.scores[0] == b.plans[0].iteration_time_s);
    // the equal split per GPU is slower: the A100s hold the stage back
    Plan equal = best;
    bool whole = true;
    for (auto& r : equal.stages[0].replicas) {
        whole = whole && best.micro_batch_size * r.tp % 32 == 0;  // 32 GPUs
        r.samples = static_cast<int>(best.micro_batch_size * r.tp / 32);
    }
    if (whole) CHECK(estimate(sc, equal, false).iteration_time_s > b.plans[0].iteration_time_s);
}

TEST_CASE("with mixed stages the pruned search returns the exhaustive top-K on random scenarios", "[search][differential][mixed]") {
    int checked = 0, mixed_best = 0, pipeline_best = 0;
    std::int64_t pruned_evals = 0, exhaustive_evals = 0;
    SearchOptions pruned = quiet(3), exhaustive = quiet(3, true);
    pruned.mixed_stages = exhaustive.mixed_stages = true;
    for (std::uint64_t seed = 12000; checked < 120; ++seed) {
        std::mt19937_64 rng(seed);
        Json j = random_scenario(rng);
        if (seed % 3 == 0) j["cluster"]["inter_group_bw_GBps"] = 100.0;
        Scenario sc = parse_scenario(j);
        if (search_space_size(sc).plans > 2e5 || detail::mixed_space_size(sc, pruned) > 2e4) continue;
        INFO("seed " << seed << ": " << to_json(sc).dump());
        const SearchResult pr = require_pruned_equals_exhaustive(sc, pruned, exhaustive, pruned_evals, exhaustive_evals);
        if (!pr.plans.empty() && pr.plans[0].plan.stages[0].replicas.size() > 1 && pr.plans[0].plan.stages[0].replicas[0].group != pr.plans[0].plan.stages[0].replicas.back().group)
            ++(pr.plans[0].plan.stages.size() == 1 ? mixed_best : pipeline_best);
        ++checked;
    }
    WARN("one mixed stage best " << mixed_best << ", a pipeline of mixed stages best " << pipeline_best);
    INFO("mixed best " << mixed_best << ", evaluations " << pruned_evals << " / " << exhaustive_evals);
    CHECK(mixed_best >= 1);
    CHECK(pruned_evals * 3 < exhaustive_evals);
}

TEST_CASE("the exhaustive search evaluates the mixed plans mixed_space_size counts, and the option is checked", "[search][space][mixed]") {
    const Scenario sc = parse_scenario_text(
        R"({"model":"tiny-8l","training":{"global_batch_size":8},"cluster":{"name":"small","groups":[)"
        R"({"device":"a100-sxm4-80gb","nodes":2,"gpus_per_node":2,"inter_node_bw_GBps":25},{"device":"v100-sxm2-32gb","nodes":1,"gpus_per_node":2,"inter_node_bw_GBps":25}]}})");
    SearchOptions o = quiet(1, true);
    o.schedule = "1f1b";
    const SearchResult without = search(sc, o);
    o.mixed_stages = true;
    const SearchResult with = search(sc, o);
    // groups {A100, V100} x A100 nodes {2, 1} x TP {1, 2} each: with r A100 and q V100 replicas,
    // the splits a r + b q = mbs, a, b >= 1, over mbs in {1, 2, 4, 8}
    double by_hand = 0;
    for (int an : {2, 1})
        for (int at : {1, 2})
            for (int vt : {1, 2}) {
                const int r = an * 2 / at, q = 2 / vt;
                for (int mbs : {1, 2, 4, 8})
                    for (int a = 1; a * r < mbs; ++a)
                        if ((mbs - a * r) % q == 0) ++by_hand;
            }
    // pipelines of two equal mixed stages (tiny-8l: 7 layer splits): a stage takes half of each
    // group's GPUs, so the V100 part is one GPU (TP 1) and the A100 part one (TP 1) or two
    // (TP 1: 2 replicas, TP 2: 1); four stages would split the V100 node's 2 GPUs in four
    for (int r : {2, 1, 1})
        for (int mbs : {1, 2, 4, 8})
            for (int a = 1; a * r < mbs; ++a) by_hand += 7;
    CHECK(detail::mixed_space_size(sc, o) == by_hand);
    CHECK(static_cast<double>(with.stats.evaluated - without.stats.evaluated) == by_hand);
    // interleaved plans only: no mixed stage is searched (a one-stage plan is not interleaved,
    // and pipelines of mixed stages run 1F1B)
    o.schedule = "interleaved-1f1b";
    CHECK(detail::mixed_space_size(sc, o) == 0);
    for (const auto& p : search(sc, o).plans) CHECK(p.plan.schedule == "interleaved-1f1b");
    CHECK(parse_search_options(Json::parse(R"({"mixed_stages": true})")).mixed_stages);
    CHECK_THROWS_AS(parse_search_options(Json::parse(R"({"mixed_stages": 1})")), InputError);
}
