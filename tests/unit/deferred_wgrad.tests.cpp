// Megatron-Core's deferred LM-head weight gradient (training.defer_embedding_wgrad_compute,
// wgrad_deferral_limit; docs/model.md, "Memory per GPU"): the last stage keeps each deferred
// micro-batch's head input and output gradient until the flush; hand-computed here.
#include <catch2/catch.hpp>

#include <cmath>
#include <string>

#include "poseidon/estimate.hpp"
#include "poseidon/json_util.hpp"
#include "poseidon/scenario.hpp"

using namespace poseidon;

namespace {

Scenario gpt(const std::string& extra, bool sp = false) {
    return parse_scenario_text(std::string(R"({"model": "gpt3-1.7b", "training": {"global_batch_size": 32)") + (sp ? R"(, "sequence_parallel": true)" : "") + extra +
                               R"(}, "cluster": {"name": "8 H100", "groups": [{"device": "h100-sxm5-80gb", "nodes": 1, "gpus_per_node": 8, "inter_node_bw_GBps": 50}]}})");
}

// 2 stages of TP 2 x DP 2, micro-batch 4 (2 samples a replica) x 8
const char* kPlan = R"({"micro_batch_size": 4, "num_micro_batches": 8, "stages": [{"group": 0, "num_layers": 12, "tp": 2, "dp": 2}, {"group": 0, "num_layers": 12, "tp": 2, "dp": 2}]})";

double deferred_GiB(const Scenario& sc, double held, bool sp) {
    const double s = sc.model.seq_length, b = 2, h = sc.model.hidden_size, t = 2;
    const double padded = std::ceil(sc.model.vocab_size / (128 * t)) * 128;
    return held * (s * b * h / (sp ? t : 1) + s * b * padded) * 2 / (1024.0 * 1024 * 1024);
}

}  // namespace

TEST_CASE("the deferred head weight gradient keeps min(k, m - 1) inputs and output gradients on the last stage, hand-computed", "[memory][deferred-wgrad]") {
    for (bool sp : {false, true}) {
        const Scenario base = gpt("", sp);
        const Estimate e0 = estimate(base, parse_plan_text(kPlan, base));
        for (const auto& [extra, held] : std::vector<std::pair<std::string, double>>{
                 {R"(, "defer_embedding_wgrad_compute": true)", 7}, {R"(, "defer_embedding_wgrad_compute": true, "wgrad_deferral_limit": 3)", 3},
                 {R"(, "defer_embedding_wgrad_compute": true, "wgrad_deferral_limit": 20)", 7}}) {
            INFO(extra << (sp ? ", sequence parallel" : ""));
            const Scenario sc = gpt(extra, sp);
            const Estimate e = estimate(sc, parse_plan_text(kPlan, sc));
            // the first stage holds no head: unchanged; the last gains exactly the buffers
            CHECK(e.stages[0].memory.activations_GiB == e0.stages[0].memory.activations_GiB);
            CHECK(e.stages[1].memory.activations_GiB == Approx(e0.stages[1].memory.activations_GiB + deferred_GiB(sc, held, sp)).epsilon(1e-12));
            // the time is the one of before (the flush is not modelled), and a note says so
            CHECK(e.iteration_time_s == e0.iteration_time_s);
            bool noted = false;
            for (const auto& n : e.notes) noted = noted || n.rfind("training.defer_embedding_wgrad_compute:", 0) == 0;
            CHECK(noted);
            CHECK(to_json(sc)["training"]["defer_embedding_wgrad_compute"] == true);
        }
    }
    // gpt3-1.7b (h 2304, V 51200: 25,600 per TP rank) at TP 2, 2 samples of 2048 tokens, 7 held:
    // 7 x 2048 x 2 x (2304 + 25600) x 2 B = 1.49 GiB (the vocabulary dominates)
    CHECK(deferred_GiB(gpt(""), 7, false) == Approx(1.4902).epsilon(1e-4));
}

TEST_CASE("wgrad_deferral_limit needs the deferral, and is an integer from 0", "[memory][deferred-wgrad][scenario]") {
    CHECK_THROWS_WITH(gpt(R"(, "wgrad_deferral_limit": 4)"), Catch::Matchers::Contains("scenario.training.wgrad_deferral_limit: needs defer_embedding_wgrad_compute true"));
    CHECK_THROWS_WITH(gpt(R"(, "defer_embedding_wgrad_compute": true, "wgrad_deferral_limit": -1)"), Catch::Matchers::Contains("scenario.training.wgrad_deferral_limit"));
    CHECK_THROWS_WITH(gpt(R"(, "defer_embedding_wgrad_compute": "yes")"), Catch::Matchers::Contains("scenario.training.defer_embedding_wgrad_compute"));
}
