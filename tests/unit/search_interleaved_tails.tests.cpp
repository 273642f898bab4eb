// The interleaved bounds' tails (docs/search.md, "Bounds of interleaved plans": the gradient sync
// after stage 0's last pass and the optimizer steps of the stages fixed): the pruned search
// against the exhaustive one on random scenarios where those tails are large (the distributed
// optimizer, slow networks, tied embeddings) or absent (overlap_grad_reduce), plan for plan and
// bit for bit, and the same plans for any thread count. A tail above what the DAG pays would cut
// an interleaved plan of the top K, and show here as a different plan or time.
#include <catch2/catch.hpp>

#include <array>
#include <random>
#include <string>

#include "poseidon/json_util.hpp"
#include "poseidon/scenario.hpp"
#include "poseidon/search.hpp"
#include "search_random.hpp"

using namespace poseidon;

using search_test::quiet;
using search_test::random_scenario;
using search_test::deep_interleaved_runs;
using search_test::require_same_plans;

namespace {

// random_scenario with the settings that make the tails matter drawn more often.
Json tail_scenario(std::mt19937_64& rng) {
    Json j = random_scenario(rng);
    auto coin = [&](int in) { return static_cast<int>(rng() % in) == 0; };
    j["training"]["distributed_optimizer"] = !coin(4);
    if (coin(3)) j["training"]["overlap_grad_reduce"] = true;
    if (coin(3)) j["model"]["tied_embeddings"] = true;
    if (coin(2)) j["training"]["recompute"] = coin(2) ? "selective" : "full";
    // slow links make the gradient sync a large part of the iteration
    for (auto& g : j["cluster"]["groups"])
        if (coin(2)) g["inter_node_bw_GBps"] = 0.5 + static_cast<double>(rng() % 40) / 10;
    return j;
}


}  // namespace

TEST_CASE("with the interleaved tails the pruned search returns the exhaustive top-K plan for plan on 400 random scenarios",
          "[search][differential][schedule][interleaved]") {
    const std::string schedule = GENERATE(std::string("interleaved-1f1b"), std::string("any"));
    int checked = 0, feasible = 0, interleaved_in_top = 0, overlap = 0;
    std::int64_t pruned_evals = 0, exhaustive_evals = 0;
    SearchOptions pruned = quiet(3, false, 1), exhaustive = quiet(3, true, 1);
    pruned.schedule = exhaustive.schedule = schedule;
    for (std::uint64_t seed = 37000; checked < 200; ++seed) {
        std::mt19937_64 rng(seed);
        const Json j = tail_scenario(rng);
        Scenario sc = parse_scenario(j);
        if (search_space_size(sc, false, schedule).plans > 2e5) continue;
        INFO("schedule " << schedule << ", seed " << seed << ": " << j.dump());
        const SearchResult pr = search(sc, pruned), ex = search(sc, exhaustive);
        REQUIRE(pr.stats.complete);
        REQUIRE(ex.stats.complete);
        require_same_plans(pr, ex);
        for (std::size_t k = 0; k < pr.plans.size(); ++k) {
            REQUIRE(pr.scores[k] == pr.plans[k].iteration_time_s);
            interleaved_in_top += pr.plans[k].plan.virtual_stages > 1;
        }
        pruned_evals += pr.stats.evaluated;
        exhaustive_evals += ex.stats.evaluated;
        feasible += !pr.plans.empty();
        overlap += sc.training.overlap_grad_reduce;
        ++checked;
    }
    INFO("feasible " << feasible << ", interleaved plans in the top 3 " << interleaved_in_top << ", with overlap_grad_reduce " << overlap
                     << ", evaluations " << pruned_evals << " / " << exhaustive_evals);
    CHECK(feasible >= 100);
    // with the schedule free interleaving wins less often (each chunk pays its pass overhead and sends)
    CHECK(interleaved_in_top >= (schedule == "any" ? 20 : 200));
    CHECK(overlap >= 40);
    CHECK(pruned_evals * 3 < exhaustive_evals);
}

TEST_CASE("with the chunk rates per V the pruned search returns the exhaustive top-5 plan for plan on 80 deep random models",
          "[search][differential][schedule][interleaved]") {
    // many layers on few stages: chunks of many sizes, V up to 16, where the per-V chunk rates
    // (set_chunk_rates) differ most from the per-layer rate
    int feasible = 0, large_v = 0;
    SearchOptions pruned = quiet(5, false, 1), exhaustive = quiet(5, true, 1);
    pruned.schedule = exhaustive.schedule = "interleaved-1f1b";
    const auto [pruned_evals, exhaustive_evals] = deep_interleaved_runs(37800, 80, pruned, exhaustive, tail_scenario, [&](const SearchResult& pr) {
        for (const auto& e : pr.plans) large_v += e.plan.virtual_stages >= 4;
        feasible += !pr.plans.empty();
    });
    INFO("feasible " << feasible << ", plans with V >= 4 in the top 5 " << large_v << ", evaluations " << pruned_evals << " / " << exhaustive_evals);
    CHECK(feasible >= 40);
    CHECK(large_v >= 40);
    CHECK(pruned_evals * 3 < exhaustive_evals);
}

TEST_CASE("with the interleaved tails one and three threads return the same plans on 60 random scenarios", "[search][threads][interleaved]") {
    int checked = 0;
    SearchOptions one = quiet(3, false, 1), three = quiet(3, false, 3);
    for (std::uint64_t seed = 37500; checked < 60; ++seed) {
        std::mt19937_64 rng(seed);
        const Json j = tail_scenario(rng);
        Scenario sc = parse_scenario(j);
        if (search_space_size(sc, false, "any").plans > 1e6) continue;
        INFO("seed " << seed << ": " << j.dump());
        const SearchResult a = search(sc, one), b = search(sc, three);
        REQUIRE(a.stats.complete);
        REQUIRE(b.stats.complete);
        require_same_plans(a, b);
        ++checked;
    }
}
