#include <catch2/catch.hpp>

#include <cmath>
#include <map>

#include "bridge_runs.hpp"
#include "poseidon/estimate.hpp"

using namespace poseidon::validation;

TEST_CASE("Megatron-Bridge dense Llama 3 rows: predicted to fit, tokens/s per GPU MAPE <= 10 % without NVFP4", "[validation][bridge]") {
    const auto runs = bridge_dense_runs();
    // 25 dense rows with a published precision, all estimated: FSDP, context parallelism and the
    // Llama 3.1 405B rows' account-for-embedding/loss layout (chunk_layers) as Megatron-Bridge runs them.
    REQUIRE(runs.size() == 25);
    std::vector<bool> fit;
    const Table t = bridge_dense_table(runs, &fit);
    REQUIRE(t.cases.size() == 25);
    // Llama 3 70B under FSDP at TP 1, PP 1 and micro-batch 2 holds 80 blocks of activations of
    // 16,384 tokens: more than a GB200 or GB300 has without recomputation, which the published rows
    // do not state; those four recompute the fewest blocks that fit (recompute_to_fit: 18 of 80 on
    // GB300, 44 on GB200), every other row runs as published (docs/validation.md).
    for (std::size_t i = 0; i < fit.size(); ++i) {
        INFO(t.cases[i].name);
        const bool fsdp_70b = t.cases[i].name.find("70B") != std::string::npos && t.cases[i].name.find("FSDP") != std::string::npos;
        CHECK(fit[i]);
        CHECK(t.cases[i].detail.empty() != fsdp_70b);
        // (within 12 %: the 25.11 GB200 row reads -11.5 %, where the 26.02 run of the same
        // configuration measured 6 % less, 4,040 against 4,312 tokens/s, and reads -5.5 %)
        if (fsdp_70b) CHECK(std::abs(t.cases[i].rel_error()) <= 0.12);
    }
    double sum = 0;
    int n = 0;
    for (const auto& c : t.cases)
        if (c.name.find("NVFP4") == std::string::npos) {
            INFO(c.name);
            // the 25 % (the two H100 405B rows at TP 8 x CP 2 on 1,024 GPUs are the
            // farthest, +15 % and +20 %; docs/validation.md)
            CHECK(std::abs(c.rel_error()) <= 0.25);
            sum += std::abs(c.rel_error());
            ++n;
        }
    CHECK(sum / n <= 0.058);  // 5.7 % (6.6 % before each GEMM's result was timed apart)
    // The bound is 25 % for every row; the NVFP4 rows are still predicted 13-34 % fast (the
    // model gives NVFP4 GEMMs FP8's efficiency; docs/validation.md): this guards today's figures
    // (all rows: MAPE 8.2 %, largest 34.2 %) until they are not.
    CHECK(t.mape() <= 0.083);
    CHECK(t.max_abs_error() <= 0.343);
}

TEST_CASE("Megatron-Bridge MoE rows: every row with a precision estimated on the expert grid; today's errors guarded", "[validation][bridge][moe]") {
    const auto runs = bridge_moe_runs();
    // 19 rows of release 26.02 and 17 of 25.11: DeepSeek-V3, Qwen3 30B-A3B and 235B-A22B, GPT-OSS 120B
    REQUIRE(runs.size() == 36);
    std::vector<bool> fit;
    const Table t = bridge_table(runs, &fit, "moe");
    REQUIRE(t.cases.size() == 36);
    int fits = 0;
    for (std::size_t i = 0; i < fit.size(); ++i) {
        fits += fit[i];
        if (!fit[i]) WARN("predicted not to fit: " << t.cases[i].name);
    }
    // NOT the acceptance (MAPE <= 10 %, none over 25 %): GPT-OSS and the H100 Qwen3 30B-A3B
    // rows are predicted far faster than measured, the Qwen3 235B-A22B rows across GB200 racks
    // slower (docs/validation.md lists what is not modelled). This guards today's figures until
    // they are met. Every row fits: 25.11 H100 GPT-OSS 120B at MBS 4 recomputes the fewest blocks
    // that fit (recompute_to_fit), as it must have to run.
    CHECK(fits == 36);
    CHECK(t.mape() <= 0.233);  // 23.2 % (25.0 % before each GEMM's result was timed apart)
    CHECK(t.max_abs_error() <= 1.069);
}

TEST_CASE("the host time of the dropless MoE layer reproduces what NVIDIA's full-iteration CUDA graphs gained", "[validation][bridge][moe][host]") {
    // The stacks' moe_sync_host_us and moe_sync_host_us_per_expert are calibrated on two pairs of
    // the same configuration on GB200, release 26.02 against 26.08, which adds a full-iteration
    // CUDA graph (frontier-facts.md section 6; docs/model.md, "Host time of a dropless MoE layer"):
    // the model's none / full_iteration ratio must be the measured one within 1 %. (Neither row's
    // recipe runs the EP A2A overlap in the model: bridge_moe_runs.cpp, ep_overlap_of.)
    const std::map<std::string, double> gained = {{"26.02 GB200 DeepSeek-V3 MXFP8, TP1 PP4 VP4 EP64 MBS1 (256 GPUs)", 4912.0 / 3955.0},
                                                  {"26.02 GB200 Qwen3 30B-A3B MXFP8, TP1 PP1 EP8 MBS4 (8 GPUs)", 39936.0 / 26084.0}};
    int found = 0;
    for (BridgeRun run : bridge_moe_runs()) {
        const auto it = gained.find(run.name);
        if (it == gained.end()) continue;
        ++found;
        const poseidon::Estimate eager = poseidon::estimate(run.scenario, run.plan, false);
        run.scenario.training.cuda_graph_impl = "full_iteration";
        const poseidon::Estimate graph = poseidon::estimate(run.scenario, run.plan, false);
        INFO(run.name);
        CHECK(graph.tokens_per_s / eager.tokens_per_s == Approx(it->second).epsilon(0.01));
    }
    CHECK(found == 2);
}
