// Full recomputation of some blocks (training.recompute_num_layers; Megatron-Core's
// --recompute-method block; docs/model.md, "Recomputing some blocks"): the first N blocks of a
// stage recompute, the others keep their activations; hand-computed from the all and none cases,
// and the search with it equals the exhaustive one.
#include <catch2/catch.hpp>

#include <random>
#include <string>

#include "poseidon/estimate.hpp"
#include "poseidon/json_util.hpp"
#include "poseidon/scenario.hpp"
#include "poseidon/search.hpp"
#include "search_random.hpp"

using namespace poseidon;

namespace {

Scenario gpt(const std::string& training) {
    return parse_scenario_text(std::string(R"({"model": "gpt3-1.7b", "training": {"global_batch_size": 32)") + training +
                               R"(}, "cluster": {"name": "8 A100", "groups": [{"device": "a100-sxm4-80gb", "nodes": 1, "gpus_per_node": 8, "inter_node_bw_GBps": 25}]}})");
}

// 3 stages of 8 blocks (TP 2, DP 1... the middle one is checked: no embedding, no head)
const char* kPlan = R"({"micro_batch_size": 4, "num_micro_batches": 8, "stages": [{"group": 0, "num_layers": 8, "tp": 2, "dp": 1}, {"group": 0, "num_layers": 8, "tp": 2, "dp": 1}, {"group": 0, "num_layers": 8, "tp": 2, "dp": 1}]})";

}  // namespace

TEST_CASE("recomputing the first N blocks of a stage: its backward and activations are those of N recomputing and L - N keeping theirs", "[recompute][model][memory]") {
    const Scenario none = gpt(""), all = gpt(R"(, "recompute": "full")");
    const Estimate en = estimate(none, parse_plan_text(kPlan, none)), ea = estimate(all, parse_plan_text(kPlan, all));
    const double L = 8, in_flight = 2;  // the middle stage of 3 under 1F1B holds min(3 - 1, 8) micro-batches
    for (int N : {1, 3, 8, 20}) {
        INFO("recompute_num_layers " << N);
        const Scenario sc = gpt(R"(, "recompute": "full", "recompute_num_layers": )" + std::to_string(N));
        const Estimate e = estimate(sc, parse_plan_text(kPlan, sc));
        const double r = std::min<double>(N, L);
        // backward: r blocks with their forward again, L - r without (the per-pass cost once either way)
        const ReplicaCost &c = e.stages[1].replica_costs[0], &ca = ea.stages[1].replica_costs[0], &cn = en.stages[1].replica_costs[0];
        CHECK(c.backward_s == Approx((r * ca.backward_s + (L - r) * cn.backward_s) / L).epsilon(1e-12));
        CHECK(c.forward_s == Approx(cn.forward_s).epsilon(1e-12));
        // activations: r block inputs and L - r whole blocks per micro-batch in flight, and one
        // block re-materialised (the whole-block activations of none: L of them per micro-batch)
        const double block = cn.memory.activations_GiB / (L * in_flight);
        const double input = (ca.memory.activations_GiB - block) / (L * in_flight);
        CHECK(c.memory.activations_GiB == Approx((r * input + (L - r) * block) * in_flight + block).epsilon(1e-12));
        if (N >= 8) CHECK(e.iteration_time_s == Approx(ea.iteration_time_s).epsilon(1e-12));
        CHECK(to_json(sc)["training"]["recompute_num_layers"] == N);
    }
    // fewer blocks recomputed: faster, more memory
    const Scenario one = gpt(R"(, "recompute": "full", "recompute_num_layers": 1)");
    const Estimate e1 = estimate(one, parse_plan_text(kPlan, one));
    CHECK(e1.iteration_time_s < ea.iteration_time_s);
    CHECK(e1.iteration_time_s > en.iteration_time_s);
    CHECK(e1.stages[1].memory.activations_GiB > ea.stages[1].memory.activations_GiB);
}

TEST_CASE("recompute_num_layers needs recompute full and a whole number of blocks from 1", "[recompute][scenario]") {
    CHECK_THROWS_WITH(gpt(R"(, "recompute": "selective", "recompute_num_layers": 2)"), Catch::Matchers::Contains("scenario.training.recompute_num_layers: 2 needs recompute \"full\""));
    CHECK_THROWS_WITH(gpt(R"(, "recompute_num_layers": 2)"), Catch::Matchers::Contains("recompute is none"));
    CHECK_THROWS_WITH(gpt(R"(, "recompute": "full", "recompute_num_layers": 0)"), Catch::Matchers::Contains("scenario.training.recompute_num_layers"));
}

TEST_CASE("recomputing some blocks: the pruned search returns the exhaustive top-K, each plan scored as estimate scores it", "[search][differential][recompute]") {
    int checked = 0;
    std::int64_t pruned_evals = 0, exhaustive_evals = 0;
    for (std::uint64_t seed = 14000; checked < 30; ++seed) {
        std::mt19937_64 rng(seed);
        Json j = search_test::random_scenario(rng);
        j["training"]["recompute"] = "full";
        // at most the model's blocks (more is refused)
        j["training"]["recompute_num_layers"] = std::min(1 + static_cast<int>(seed % 3), j["model"]["num_layers"].get<int>());
        const Scenario sc = parse_scenario(j);
        if (search_space_size(sc, false).plans > 3e4) continue;
        INFO("seed " << seed << ": " << to_json(sc).dump());
        const SearchResult pr = search_test::require_pruned_equals_exhaustive(sc, search_test::quiet(3), search_test::quiet(3, true), pruned_evals, exhaustive_evals);
        for (std::size_t k = 0; k < pr.plans.size(); ++k) REQUIRE(estimate(sc, pr.plans[k].plan).iteration_time_s == pr.scores[k]);
        ++checked;
    }
    CHECK(pruned_evals < exhaustive_evals);
}
