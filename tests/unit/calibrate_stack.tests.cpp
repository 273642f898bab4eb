// Calibration of the software stack's fixed overheads (docs/calibration.md, "The parameters"):
// recovered from synthetic runs, zero overheads left alone, written on top of the stack the user
// named, and the stack's calibration key validated.
#include <catch2/catch.hpp>

#include <functional>
#include <string>
#include <vector>

#include "poseidon/calibrate.hpp"
#include "poseidon/estimate.hpp"
#include "poseidon/json_util.hpp"
#include "poseidon/scenario.hpp"
#include "map_gradient.hpp"
#include "problems_of.hpp"

using namespace poseidon;
using poseidon::testing::map_gradient;
using poseidon::testing::problems_of;

namespace {

// A small model on a small card, as in AMP's T4 runs, where the per-layer framework cost is a
// large share of the time; the device is inline so that a preset change does not move the test.
Json scenario_json(const Json& stack) {
    const Json device = Json::parse(R"({"name": "small-card", "peak_tflops": 65, "memory_GiB": 16, "memory_bw_GBps": 320,
        "intra_node_bw_GBps": 16, "intra_node_link": "pcie", "matmul_efficiency": 0.6, "memory_bw_efficiency": 0.7, "framework_overhead_GiB": 1})");
    Json groups = Json::array({{{"device", device}, {"nodes", 2}, {"gpus_per_node", 4}, {"inter_node_bw_GBps", 6.25}}});
    return {{"model", "tiny-8l"},
            {"training", {{"global_batch_size", 32}, {"precision", "fp16"}, {"flash_attention", false}, {"stack", stack}}},
            {"cluster", {{"name", "small"}, {"groups", groups}}}};
}

Json stage(int layers, int tp, int dp) { return {{"group", 0}, {"num_layers", layers}, {"tp", tp}, {"dp", dp}}; }
Json plan(int mbs, std::vector<Json> stages) { return {{"micro_batch_size", mbs}, {"num_micro_batches", 32 / mbs}, {"stages", stages}}; }

std::vector<Json> plans() {
    return {plan(1, {stage(8, 1, 1)}),
            plan(8, {stage(8, 1, 8)}),
            plan(32, {stage(8, 1, 8)}),
            plan(4, {stage(4, 1, 4), stage(4, 1, 4)}),
            plan(16, {stage(4, 2, 2), stage(4, 2, 2)}),
            plan(2, {stage(2, 1, 2), stage(2, 1, 2), stage(2, 1, 2), stage(2, 1, 2)}),
            plan(4, {stage(8, 4, 2)})};
}

std::vector<MeasuredRun> synthetic_runs(const Scenario& truth) {
    std::vector<MeasuredRun> runs;
    for (const Json& p : plans()) {
        MeasuredRun r;
        r.plan = parse_plan(p, truth);
        r.iteration_time_s = estimate(truth, r.plan, false).iteration_time_s;
        r.name = "run " + std::to_string(runs.size());
        runs.push_back(std::move(r));
    }
    return runs;
}

const FittedParameter& stack_parameter(const CalibrationResult& res, const std::string& name) {
    for (const auto& p : res.stack.parameters)
        if (p.name == name) return p;
    FAIL("no stack parameter " << name);
    throw;
}


}  // namespace

TEST_CASE("calibration recovers a stack's per-layer overhead from synthetic runs", "[calibrate][stack]") {
    const Json sj = scenario_json("deepspeed-megatron-v1-2022");
    const Scenario start = parse_scenario(sj);
    REQUIRE(start.training.stack.layer_overhead_us == 1000);
    const Scenario truth = parse_scenario(scenario_json({{"base", "deepspeed-megatron-v1-2022"}, {"layer_overhead_us", 3000}}));
    const auto runs = synthetic_runs(truth);
    const CalibrationResult res = calibrate(start, runs);

    const auto& lo = stack_parameter(res, "layer_overhead_us");
    CHECK(lo.status == FitStatus::fitted);
    CHECK(lo.from == 1000);
    CHECK(lo.to == Approx(3000).epsilon(0.03));
    CHECK(res.rms_log_error_before > 0.05);
    CHECK(res.rms_log_error_after < res.rms_log_error_before / 10);
    for (const auto& [name, g] : map_gradient(res, runs)) {
        INFO(name);
        CHECK(std::abs(g) < 1e-4);
    }
    CHECK(res.stack.stack == "deepspeed-megatron-v1-2022");
    CHECK(res.stack.runs == static_cast<int>(runs.size()));
    // The device rates were right: whatever else was fitted stays near where it was (the prior
    // lets a stack overhead move further than a device rate, docs/calibration.md, "The fit").
    for (const auto& p : res.devices.front().parameters)
        if (p.status == FitStatus::fitted && p.name != "framework_overhead_GiB") CHECK(p.to == Approx(p.from).epsilon(0.1));
    REQUIRE(res.scenario.training.stack.calibration);
    CHECK(res.scenario.training.stack.layer_overhead_us == lo.to);
    CHECK(res.scenario.training.stack.calibration->runs == static_cast<std::int64_t>(runs.size()));

    // The calibrated scenario keeps the stack the user named and adds the fitted values on top.
    const Json out = calibrated_scenario_json(sj, res);
    const Json& st = out["training"]["stack"];
    CHECK(st["base"] == "deepspeed-megatron-v1-2022");
    CHECK(st["layer_overhead_us"] == lo.to);
    CHECK(st["calibration"]["fitted"]["layer_overhead_us"]["from"] == 1000);
    CHECK(st["calibration"]["source"] == "poseidon calibrate");
    const Scenario again = parse_scenario_text(out.dump());
    CHECK(again.training.stack.name == start.training.stack.name);  // a preset with overrides: its name, no id
    CHECK_FALSE(again.training.stack.fused_elementwise);  // the rest of the preset still applies
    for (std::size_t i = 0; i < runs.size(); ++i) CHECK(estimate(again, runs[i].plan, false).iteration_time_s == res.runs[i].after_s);

    const Json report = to_json(res);
    CHECK(report["stack"]["stack"] == "deepspeed-megatron-v1-2022");
    CHECK(report["stack"]["parameters"]["layer_overhead_us"]["status"] == "fitted");
    CHECK(to_text(res).find("stack deepspeed-megatr") != std::string::npos);  // the table's column is 22 wide
}

TEST_CASE("a stack overhead of 0 is not fitted, and a stack that named overrides keeps them", "[calibrate][stack]") {
    // megatron-core pays no per-layer overhead: the ratio fit cannot move it and does not try.
    const Json sj = scenario_json({{"base", "megatron-core"}, {"pass_overhead_us", 250}});
    const Scenario start = parse_scenario(sj);
    REQUIRE(start.training.stack.layer_overhead_us == 0);
    auto runs = synthetic_runs(start);
    for (auto& r : runs) r.iteration_time_s *= 1.2;
    const CalibrationResult res = calibrate(start, runs);
    const auto& lo = stack_parameter(res, "layer_overhead_us");
    CHECK(lo.status == FitStatus::not_exercised);
    CHECK(lo.to == 0);
    CHECK(lo.reason == "the stack does not pay it (0); give the stack a non-zero value to fit it");
    // The table's order, whatever was reported first.
    REQUIRE(res.stack.parameters.size() == 3);
    CHECK(res.stack.parameters[0].name == "host_us_per_kernel");
    CHECK(res.stack.parameters[1].name == "pass_overhead_us");
    CHECK(res.stack.parameters[2].name == "layer_overhead_us");
    if (res.scenario.training.stack.calibration) {
        const Json out = calibrated_scenario_json(sj, res);
        CHECK(out["training"]["stack"]["base"] == "megatron-core");
        CHECK(out["training"]["stack"].contains("pass_overhead_us"));  // the user's override, fitted or kept
    }
}

TEST_CASE("an overhead is held within its physical bounds", "[calibrate][stack]") {
    // Runs 50x slower than the model, on one plan: the single most sensitive parameter is fitted
    // and, if it is a stack overhead, stops at its bound with a warning naming it.
    const Scenario start = parse_scenario(scenario_json("deepspeed-megatron-v1-2022"));
    auto runs = synthetic_runs(start);
    runs.resize(1);
    runs[0].iteration_time_s *= 1e4;
    const CalibrationResult res = calibrate(start, runs);
    for (const auto& p : res.stack.parameters)
        if (p.status == FitStatus::fitted) {
            CHECK(p.at_bound);
            bool said = false;
            for (const auto& w : res.warnings) said |= w.find("stack deepspeed-megatron-v1-2022 " + p.name + " reached its bound") == 0;
            CHECK(said);
        }
    CHECK(res.rms_log_error_after > 1);
}

TEST_CASE("a stack's calibration key is validated", "[calibrate][stack][robustness]") {
    Json sj = scenario_json({{"base", "megatron-core"}, {"calibration", Json::parse(R"({"fitted": {"matmul_efficiency": {"from": 0.7, "to": 0.5}}})")}});
    CHECK(problems_of([&] { parse_scenario(sj); }) ==
          "scenario.training.stack.calibration.fitted.matmul_efficiency: unknown key; allowed keys are documented in docs/formats.md");
    sj["training"]["stack"]["calibration"] = Json::parse(R"({"fitted": {"pass_overhead_us": {"from": 100, "to": 180}}, "runs": 3})");
    const Scenario sc = parse_scenario(sj);
    REQUIRE(sc.training.stack.calibration);
    CHECK(sc.training.stack.calibration->fitted.at(0).parameter == "pass_overhead_us");
    CHECK(to_json(sc.training.stack)["calibration"]["fitted"]["pass_overhead_us"]["to"] == 180);
    // the stack's own range (pass_overhead_us up to 1e7) holds for its fitted values too: a
    // calibrated scenario of a stack with a 2 s pass overhead reads again (it once did not)
    sj["training"]["stack"]["pass_overhead_us"] = 2e6;
    sj["training"]["stack"]["calibration"] = Json::parse(R"({"fitted": {"pass_overhead_us": {"from": 2000000, "to": 2500000}}})");
    CHECK(problems_of([&] { parse_scenario(sj); }) == "");
    const Scenario start = parse_scenario(scenario_json({{"base", "megatron-core"}, {"pass_overhead_us", 2e6}}));
    auto runs = synthetic_runs(start);
    runs.resize(3);
    for (auto& r : runs) r.iteration_time_s *= 1.2;
    const CalibrationResult res = calibrate(start, runs);
    CHECK(problems_of([&] { parse_scenario(calibrated_scenario_json(scenario_json({{"base", "megatron-core"}, {"pass_overhead_us", 2e6}}), res)); }) == "");
}
