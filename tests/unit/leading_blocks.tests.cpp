// A model's leading dense blocks on the stage that holds them (docs/model.md, "Parameters and
// FLOPs"; docs/search.md, "The space"): DeepSeek-V3's first three blocks are dense, so the stage
// (or model chunk) that holds them carries their weights and work, not the model's average block;
// the search keeps them on the first stage and scores its plans as `estimate` does.
#include <catch2/catch.hpp>

#include <algorithm>
#include <random>

#include "../../core/src/search_driver.hpp"
#include "poseidon/cost_model.hpp"
#include "poseidon/estimate.hpp"
#include "poseidon/json_util.hpp"
#include "poseidon/scenario.hpp"
#include "poseidon/search.hpp"
#include "search_random.hpp"

using namespace poseidon;

namespace {

// DeepSeek-V3's blocks, 8 of them, the first 3 dense; one H100 per stage.
const char* kScenario = R"({"model": {"preset": "deepseek-v3", "num_layers": 8, "first_dense_layers": 3, "mtp_layers": 0},
    "training": {"global_batch_size": 4}, "cluster": "dgx-h100-16"})";

double params_of(const Estimate& e, int s) { return e.stages[static_cast<std::size_t>(s)].replica_costs[0].params_per_gpu; }

}  // namespace

TEST_CASE("each stage holds the parameters of its own blocks: the leading dense ones where the layer counts put them", "[model][moe][blocks]") {
    const Scenario sc = parse_scenario_text(kScenario);
    const ModelSpec& m = sc.model;
    REQUIRE(leading_dense_blocks(m) == 3);
    const double dense = block_param_counts(m, 0).total, moe = block_param_counts(m, 3).total;
    REQUIRE(moe > 10 * dense);  // 256 experts held on one GPU (ep 1)
    const double h = m.hidden_size, V = m.vocab_size;
    SECTION("1F1B, stages of 1, 4 and 3 blocks: the middle one holds blocks 1-4, two dense and two MoE") {
        const Plan plan = parse_plan_text(R"({"micro_batch_size": 1, "num_micro_batches": 4, "stages": [
            {"group": 0, "num_layers": 1, "tp": 1, "dp": 1}, {"group": 0, "num_layers": 4, "tp": 1, "dp": 1},
            {"group": 0, "num_layers": 3, "tp": 1, "dp": 1}]})", sc);
        const Estimate e = estimate(sc, plan, false);
        CHECK(params_of(e, 0) == Approx(dense + V * h).epsilon(1e-12));  // block 0 and the embedding
        CHECK(params_of(e, 1) == Approx(2 * dense + 2 * moe).epsilon(1e-12));
        CHECK(params_of(e, 2) == Approx(3 * moe + h + V * h).epsilon(1e-12));  // the final norm and the head
        // the whole model, once
        CHECK(params_of(e, 0) + params_of(e, 1) + params_of(e, 2) == Approx(model_param_counts(m).total).epsilon(1e-12));
        // a dense block neither dispatches tokens nor waits for their counts: the middle stage of two
        // dense and two MoE blocks is faster than a middle stage of four MoE blocks (blocks 3-6)
        const Plan later = parse_plan_text(R"({"micro_batch_size": 1, "num_micro_batches": 4, "stages": [
            {"group": 0, "num_layers": 3, "tp": 1, "dp": 1}, {"group": 0, "num_layers": 4, "tp": 1, "dp": 1},
            {"group": 0, "num_layers": 1, "tp": 1, "dp": 1}]})", sc);
        const Estimate f = estimate(sc, later, false);
        CHECK(params_of(f, 1) == Approx(4 * moe).epsilon(1e-12));
        CHECK(e.stages[1].times.forward_s < f.stages[1].times.forward_s);
        CHECK(e.stages[1].times.backward_s < f.stages[1].times.backward_s);
    }
    SECTION("interleaved, 2 stages x 2 chunks: Megatron-Core's chunk order puts block 0 on stage 0's first chunk and blocks 1-2 on stage 1's") {
        // virtual stages: stage 0 chunk 0 (block 0), stage 1 chunk 0 (blocks 1-3), stage 0 chunk 1
        // (blocks 4-5), stage 1 chunk 1 (blocks 6-7)
        const Plan plan = parse_plan_text(R"({"micro_batch_size": 1, "num_micro_batches": 4, "schedule": "interleaved-1f1b", "virtual_stages": 2,
            "stages": [{"group": 0, "num_layers": 3, "tp": 1, "dp": 1, "chunk_layers": [1, 2]},
                       {"group": 0, "num_layers": 5, "tp": 1, "dp": 1, "chunk_layers": [3, 2]}]})", sc);
        const Estimate e = estimate(sc, plan, false);
        CHECK(params_of(e, 0) == Approx(dense + 2 * moe + V * h).epsilon(1e-12));
        CHECK(params_of(e, 1) == Approx(2 * dense + 3 * moe + h + V * h).epsilon(1e-12));
        // stage 1's first chunk (two dense blocks and one MoE) is faster than its second (two MoE)
        // per block
        const auto& c = e.stages[1].chunk_times;
        REQUIRE(c.size() == 2);
        CHECK(c[0].forward_s / 3 < c[1].forward_s / 2);
    }
    SECTION("a model without leading dense blocks costs every block as the model's average, as before") {
        const Scenario all_moe = parse_scenario_text(R"({"model": {"preset": "deepseek-v3", "num_layers": 8, "first_dense_layers": 0, "mtp_layers": 0},
            "training": {"global_batch_size": 4}, "cluster": "dgx-h100-16"})");
        CHECK(leading_dense_blocks(all_moe.model) == 0);
        const Plan plan = parse_plan_text(R"({"micro_batch_size": 1, "num_micro_batches": 4, "stages": [
            {"group": 0, "num_layers": 5, "tp": 1, "dp": 1}, {"group": 0, "num_layers": 3, "tp": 1, "dp": 1}]})", all_moe);
        const Estimate e = estimate(all_moe, plan, false);
        CHECK(params_of(e, 0) == Approx(5 * moe + V * h).epsilon(1e-12));
    }
}

TEST_CASE("the search keeps the leading dense blocks on the first stage and returns the exhaustive top-K, each plan scored as estimate scores it",
          "[search][differential][moe][blocks]") {
    int checked = 0, feasible = 0, interleaved = 0;
    std::int64_t pruned_evals = 0, exhaustive_evals = 0;
    SearchOptions pruned = search_test::quiet(3), exhaustive = search_test::quiet(3, true);
    for (std::uint64_t seed = 9100; checked < 100; ++seed) {
        std::mt19937_64 rng(seed);
        Json j = search_test::random_moe_scenario(rng, seed);
        const int L = j["model"]["num_layers"].get<int>();
        if (L < 3) continue;
        // half of them interleaved only (V >= 2: one leading block, so that the first chunk can hold it)
        const bool ilv = seed % 2 == 1;
        const int F = ilv ? 1 : std::min(1 + static_cast<int>(seed % 3), L - 1);
        j["model"]["first_dense_layers"] = F;
        const Scenario sc = parse_scenario(j);
        if (search_space_size(sc, false).plans > 1e5) continue;
        INFO("seed " << seed << ": " << to_json(sc).dump());
        REQUIRE(leading_dense_blocks(sc.model) == F);
        pruned.schedule = exhaustive.schedule = ilv ? "interleaved-1f1b" : "1f1b";
        const SearchResult pr = search_test::require_pruned_equals_exhaustive(sc, pruned, exhaustive, pruned_evals, exhaustive_evals);
        for (const auto& e : pr.plans) {
            const StagePlan& first = e.plan.stages[0];
            const int V = std::max(1, e.plan.virtual_stages);
            CHECK(first.num_layers / V >= F);  // the first chunk of the first stage holds them all
            interleaved += V > 1;
        }
        feasible += !pr.plans.empty();
        ++checked;
    }
    CHECK(feasible >= 50);
    CHECK(interleaved >= 25);
    CHECK(pruned_evals < exhaustive_evals);
}

TEST_CASE("with stages that mix GPU types the search keeps the exhaustive top-K of a model with leading dense blocks", "[search][differential][moe][blocks][mixed]") {
    int checked = 0, feasible = 0;
    std::int64_t pruned_evals = 0, exhaustive_evals = 0;
    SearchOptions pruned = search_test::quiet(3), exhaustive = search_test::quiet(3, true);
    pruned.mixed_stages = exhaustive.mixed_stages = true;
    for (std::uint64_t seed = 12400; checked < 40; ++seed) {
        std::mt19937_64 rng(seed);
        Json j = search_test::random_moe_scenario(rng, seed);
        const int L = j["model"]["num_layers"].get<int>();
        if (L < 3) continue;
        j["model"]["first_dense_layers"] = std::min(1 + static_cast<int>(seed % 3), L - 1);
        const Scenario sc = parse_scenario(j);
        if (search_space_size(sc).plans > 2e5 || detail::mixed_space_size(sc, pruned) > 2e4) continue;
        INFO("seed " << seed << ": " << to_json(sc).dump());
        const SearchResult pr = search_test::require_pruned_equals_exhaustive(sc, pruned, exhaustive, pruned_evals, exhaustive_evals);
        feasible += !pr.plans.empty();
        ++checked;
    }
    CHECK(feasible >= 20);
}

TEST_CASE("a note names the stages whose own blocks differ from the average of the blocks they are costed with", "[model][moe][blocks][notes]") {
    // Llama 4 Maverick: block 0 dense (the leading dense block), then MoE at 1, 3, ..., 47: the
    // blocks after block 0 are 24 MoE and 23 dense, 0.511 MoE a block
    const Scenario sc = parse_scenario_text(R"({"model": "llama4-maverick", "training": {"global_batch_size": 64, "distributed_optimizer": true, "sequence_parallel": true, "recompute": "full"},)"
                                            R"( "cluster": {"name": "h", "groups": [{"device": "h100-sxm5-80gb", "nodes": 16, "gpus_per_node": 8, "inter_node_bw_GBps": 50}]}})");
    const auto plan_of = [&](const std::string& layers) {
        return parse_plan_text(R"({"micro_batch_size": 8, "num_micro_batches": 8, "stages": [)" + layers + "]}", sc);
    };
    const auto stage = [](int l) { return R"({"group": 0, "num_layers": )" + std::to_string(l) + R"(, "tp": 2, "dp": 8, "ep": 8})"; };
    // 13 / 11 / 12 / 12: stage 1 holds blocks 13-23, six MoE where the average gives it 11 x 24/47 = 5.62
    const Plan odd = plan_of(stage(13) + "," + stage(11) + "," + stage(12) + "," + stage(12));
    const std::string note = block_mix_note(sc.model, odd);
    CHECK(note.find("stage 1 (blocks 13-23: 6 MoE, costed as 5.62)") != std::string::npos);
    CHECK(note.find("stage 0") == std::string::npos);
    CHECK(note.find("stage 2") == std::string::npos);
    const Estimate e = estimate(sc, odd);
    CHECK(std::find(e.notes.begin(), e.notes.end(), note) != e.notes.end());
    // 25 / 23: blocks 1-24 hold 12 MoE (12.26 by the average), 25-47 hold 12 (11.74): within a third of a block
    CHECK(block_mix_note(sc.model, plan_of(stage(25) + "," + stage(23))).empty());
    // a model whose blocks are all alike has no such note
    const Scenario dense = parse_scenario_text(R"({"model": "llama3-8b", "training": {"global_batch_size": 64}, "cluster": {"name": "h", "groups": [{"device": "h100-sxm5-80gb", "nodes": 1, "gpus_per_node": 8, "inter_node_bw_GBps": 50}]}})");
    CHECK(block_mix_note(dense.model, parse_plan_text(R"({"micro_batch_size": 8, "num_micro_batches": 8, "stages": [{"group": 0, "num_layers": 15, "tp": 1, "dp": 4}, {"group": 0, "num_layers": 17, "tp": 1, "dp": 4}]})", dense)).empty());
}
