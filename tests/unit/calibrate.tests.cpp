// Calibration from measured runs (docs/calibration.md): synthetic round trips through estimate(),
// the peak-memory fit, refusals with their exact messages, and the calibrated scenario's format.
#include <catch2/catch.hpp>

#include <cmath>
#include <functional>
#include <string>
#include <vector>

#include "poseidon/api.hpp"
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

// Inline devices: the test does not move when a preset is re-measured.
const char* const kDeviceA = R"({"name": "gpu-a", "peak_tflops": 312, "memory_GiB": 80, "memory_bw_GBps": 2039,
    "intra_node_bw_GBps": 300, "matmul_efficiency": 0.72, "memory_bw_efficiency": 0.85, "framework_overhead_GiB": 3})";
const char* const kDeviceB = R"({"name": "gpu-b", "peak_tflops": 125, "memory_GiB": 32, "memory_bw_GBps": 900,
    "intra_node_bw_GBps": 150, "matmul_efficiency": 0.6, "memory_bw_efficiency": 0.8, "framework_overhead_GiB": 2})";

Json scenario_json(bool two_types) {
    Json groups = Json::array();
    groups.push_back({{"device", Json::parse(kDeviceA)}, {"nodes", 2}, {"gpus_per_node", 8}, {"inter_node_bw_GBps", 25}});
    if (two_types) groups.push_back({{"device", Json::parse(kDeviceB)}, {"nodes", 1}, {"gpus_per_node", 8}, {"inter_node_bw_GBps", 25}});
    return {{"model", "gpt3-1.7b"}, {"training", {{"global_batch_size", 64}}}, {"cluster", {{"name", "test"}, {"groups", groups}}}};
}

Json stage(int group, int layers, int tp, int dp) { return {{"group", group}, {"num_layers", layers}, {"tp", tp}, {"dp", dp}}; }
Json plan(int mbs, std::vector<Json> stages) { return {{"micro_batch_size", mbs}, {"num_micro_batches", 64 / mbs}, {"stages", stages}}; }

// Plans on group 0 that differ in micro-batch size, TP, stages and nodes.
std::vector<Json> plans_on_a() {
    return {plan(1, {stage(0, 24, 1, 1)}),
            plan(8, {stage(0, 24, 1, 8)}),
            plan(16, {stage(0, 12, 2, 4), stage(0, 12, 2, 4)}),
            plan(4, {stage(0, 24, 8, 1)}),
            plan(2, {stage(0, 24, 4, 2)}),
            plan(32, {stage(0, 24, 1, 16)}),
            plan(2, {stage(0, 8, 1, 1), stage(0, 8, 1, 1), stage(0, 8, 1, 1)})};
}

// "Measured" runs: estimates in `truth`, with the peak memory when `memory`.
std::vector<MeasuredRun> synthetic_runs(const Scenario& truth, const std::vector<Json>& plans, bool memory) {
    std::vector<MeasuredRun> runs;
    for (std::size_t i = 0; i < plans.size(); ++i) {
        MeasuredRun r;
        r.name = "plan " + std::to_string(i);
        r.plan = parse_plan(plans[i], truth);
        Estimate e = estimate(truth, r.plan, false);
        r.iteration_time_s = e.iteration_time_s;
        if (memory) {
            double peak = 0;
            for (const auto& s : e.stages)
                for (const auto& rc : s.replica_costs) peak = std::max(peak, rc.memory.total_GiB());
            r.peak_memory_GiB = peak;
        }
        runs.push_back(std::move(r));
    }
    return runs;
}

const FittedParameter& parameter(const CalibrationResult& res, const std::string& device, const std::string& name) {
    for (const auto& d : res.devices)
        if (d.device == device)
            for (const auto& p : d.parameters)
                if (p.name == name) return p;
    FAIL("no parameter " << name << " on " << device);
    throw;
}


}  // namespace

TEST_CASE("calibration moves perturbed efficiencies to the fit's optimum, towards the truth", "[calibrate]") {
    const Scenario start = parse_scenario(scenario_json(false));
    Json perturbed = scenario_json(false);
    perturbed["cluster"]["groups"][0]["device"]["matmul_efficiency"] = 0.55;
    perturbed["cluster"]["groups"][0]["device"]["memory_bw_efficiency"] = 0.6;
    const Scenario truth = parse_scenario(perturbed);
    const auto runs = synthetic_runs(truth, plans_on_a(), false);
    const CalibrationResult res = calibrate(start, runs);

    const auto& mm = parameter(res, "gpu-a", "matmul_efficiency");
    const auto& bw = parameter(res, "gpu-a", "memory_bw_efficiency");
    CHECK(mm.status == FitStatus::fitted);
    CHECK(bw.status == FitStatus::fitted);
    CHECK(mm.from == 0.72);
    // The GEMM rate sets most of every run's time: the runs move it nearly all the way. The
    // memory rate moves the runs' times by a few percent only, about what the prior allows the
    // model to be off (docs/calibration.md, "The fit"), so it moves part of the way.
    CHECK(mm.to == Approx(0.55).epsilon(0.05));
    CHECK(std::abs(std::log(bw.to / 0.6)) < 0.65 * std::abs(std::log(0.85 / 0.6)));  // (39 % of the way since GEMM results are timed apart)
    CHECK(res.rms_log_error_before > 0.05);
    CHECK(res.rms_log_error_after < res.rms_log_error_before / 5);
    CHECK(res.converged);
    // The result is the optimum of the stated objective: its gradient vanishes (to the rounding of
    // the fitted values to 6 digits and the finite differences).
    const auto grad = map_gradient(res, runs);
    CHECK(grad.size() >= 2);
    for (const auto& [name, g] : grad) {
        INFO(name);
        CHECK(std::abs(g) < 1e-4);
    }
    // What was not fitted keeps its input value.
    for (const auto& p : res.devices.front().parameters)
        if (p.status != FitStatus::fitted) CHECK(p.to == p.from);
    // Provenance on the device, and the same values in the calibrated scenario.
    const Device& d = res.scenario.cluster.groups[0].device;
    CHECK(d.matmul_efficiency == mm.to);
    REQUIRE(d.calibration);
    CHECK(d.calibration->source == "poseidon calibrate");
    CHECK(d.calibration->runs == static_cast<std::int64_t>(runs.size()));
}

TEST_CASE("calibration fits each device type of a heterogeneous cluster", "[calibrate]") {
    const Scenario start = parse_scenario(scenario_json(true));
    Json perturbed = scenario_json(true);
    perturbed["cluster"]["groups"][0]["device"]["matmul_efficiency"] = 0.5;
    perturbed["cluster"]["groups"][1]["device"]["matmul_efficiency"] = 0.45;
    const Scenario truth = parse_scenario(perturbed);
    std::vector<Json> plans = plans_on_a();
    plans.push_back(plan(8, {stage(1, 24, 1, 8)}));
    plans.push_back(plan(4, {stage(1, 24, 2, 4)}));
    plans.push_back(plan(1, {stage(1, 24, 1, 1)}));
    plans.push_back(plan(8, {stage(0, 16, 1, 8), stage(1, 8, 1, 8)}));
    const CalibrationResult res = calibrate(start, synthetic_runs(truth, plans, false));
    CHECK(parameter(res, "gpu-a", "matmul_efficiency").to == Approx(0.5).epsilon(0.02));
    CHECK(parameter(res, "gpu-b", "matmul_efficiency").to == Approx(0.45).epsilon(0.02));
    CHECK(res.rms_log_error_before > 0.1);
    CHECK(res.rms_log_error_after < 0.01);
    CHECK(res.devices.size() == 2);
    CHECK(res.devices[1].groups == std::vector<int>{1});
}

TEST_CASE("calibration fits the framework memory overhead from peak memory", "[calibrate][memory]") {
    const Scenario start = parse_scenario(scenario_json(false));
    Json more = scenario_json(false);
    more["cluster"]["groups"][0]["device"]["framework_overhead_GiB"] = 4.25;
    auto runs = synthetic_runs(parse_scenario(more), plans_on_a(), true);
    CalibrationResult res = calibrate(start, runs);
    const auto& o = parameter(res, "gpu-a", "framework_overhead_GiB");
    CHECK(o.status == FitStatus::fitted);
    CHECK(o.from == 3);
    CHECK(o.to == Approx(4.25).epsilon(1e-6));
    REQUIRE(res.memory_rms_log_error_after);
    CHECK(*res.memory_rms_log_error_after < 1e-6);
    CHECK(*res.memory_rms_log_error_before > 0.01);
    CHECK(res.runs[0].memory_device == "gpu-a");

    // Measured below what the model needs without any overhead: held at 0, with a warning.
    for (auto& r : runs) *r.peak_memory_GiB -= 20;
    res = calibrate(start, runs);
    const auto& z = parameter(res, "gpu-a", "framework_overhead_GiB");
    CHECK(z.to == 0);
    CHECK(z.at_bound);
    REQUIRE(!res.warnings.empty());
    CHECK(res.warnings.back() == "gpu-a framework_overhead_GiB reached 0: the model predicts more memory than measured even without it");

    // Without memory in the runs the overhead is not touched.
    for (auto& r : runs) r.peak_memory_GiB.reset();
    res = calibrate(start, runs);
    CHECK(parameter(res, "gpu-a", "framework_overhead_GiB").status == FitStatus::no_data);
    CHECK(parameter(res, "gpu-a", "framework_overhead_GiB").reason == "no run gives peak_memory_GiB");
    CHECK_FALSE(res.memory_rms_log_error_before);
}

TEST_CASE("one run fits one parameter, the most sensitive, and says so", "[calibrate]") {
    const Scenario start = parse_scenario(scenario_json(false));
    auto runs = synthetic_runs(start, {plan(8, {stage(0, 24, 1, 8)})}, false);
    runs[0].iteration_time_s *= 1.3;
    const CalibrationResult res = calibrate(start, runs);
    int fitted = 0;
    for (const auto& p : res.devices[0].parameters) fitted += p.status == FitStatus::fitted && p.name != "framework_overhead_GiB";
    CHECK(fitted == 1);
    // One parameter p with elasticity E against one residual r0 = ln 1.3: the fit's objective
    // (E x - r0)^2 + w x^2 (w = 0.04, docs/calibration.md) leaves r0 w / (E^2 + w) of the error,
    // to the model's curvature in ln p.
    for (const auto& p : res.devices[0].parameters)
        if (p.status == FitStatus::fitted && p.name != "framework_overhead_GiB") {
            const double E = p.sensitivity, w = 0.04;
            CHECK(res.rms_log_error_after == Approx(std::log(1.3) * w / (E * E + w)).epsilon(0.1));
        }
    CHECK(res.rms_log_error_after < 0.1 * std::log(1.3));
    CHECK(parameter(res, "gpu-a", "inter_node_link_efficiency").status == FitStatus::not_exercised);
    CHECK(parameter(res, "gpu-a", "inter_node_link_efficiency").reason == "the runs do not exercise it (no run's time depends on it)");
    bool said = false;
    for (const auto& w : res.warnings) said |= w.rfind("as many fitted parameters as runs (1)", 0) == 0;
    CHECK(said);
    // A second identical plan adds no information: still one parameter.
    runs.push_back(runs[0]);
    const CalibrationResult twice = calibrate(start, runs);
    fitted = 0;
    for (const auto& p : twice.devices[0].parameters) fitted += p.status == FitStatus::fitted && p.name != "framework_overhead_GiB";
    CHECK(fitted == 1);
}

TEST_CASE("an efficiency is held within its physical bounds", "[calibrate]") {
    const Scenario start = parse_scenario(scenario_json(false));
    auto runs = synthetic_runs(start, {plan(8, {stage(0, 24, 1, 8)})}, false);
    runs[0].iteration_time_s *= 0.05;  // 20x faster than the model can be
    const CalibrationResult res = calibrate(start, runs);
    bool at_one = false;
    for (const auto& p : res.devices[0].parameters) at_one |= p.status == FitStatus::fitted && p.at_bound && p.to == 1.0;
    CHECK(at_one);
    CHECK(res.rms_log_error_after > 0.5);
}

TEST_CASE("calibration warns about runs the model cannot take as measured", "[calibrate][robustness]") {
    const Scenario start = parse_scenario(scenario_json(false));
    auto runs = synthetic_runs(start, {plan(8, {stage(0, 24, 1, 8)})}, true);
    auto has = [](const CalibrationResult& r, const std::string& text) {
        for (const auto& w : r.warnings)
            if (w.find(text) != std::string::npos) return true;
        return false;
    };
    // a peak above the GPU's 80 GiB: the overhead ends at the GPU's memory, flagged, and the run named
    *runs[0].peak_memory_GiB = 200;
    CalibrationResult res = calibrate(start, runs);
    const auto& o = parameter(res, "gpu-a", "framework_overhead_GiB");
    CHECK(o.to == 80);
    CHECK(o.at_bound);
    CHECK(has(res, "gpu-a framework_overhead_GiB reached the GPU's memory (80 GiB)"));
    CHECK(has(res, "plan 0: peak_memory_GiB 200 is more than the GPU's memory (80 GiB, gpu-a); give one GPU's peak"));
    // 20x faster than the model can be: no claim that the fit reproduces the run
    runs[0].peak_memory_GiB.reset();
    runs[0].iteration_time_s *= 0.05;
    res = calibrate(start, runs);
    CHECK(has(res, "as many fitted parameters as runs (1): the fit says nothing about its accuracy, and it does not even reproduce them"));
    CHECK_FALSE(has(res, "reproduces every run"));
    // The figure it quotes is the run table's, predicted / measured - 1: positive for a run faster
    // than the model can be, negative for one slower (it once quoted measured / predicted - 1).
    auto quoted_off = [](const CalibrationResult& r) {
        const std::string key = "a run is still ";
        for (const auto& w : r.warnings)
            if (auto at = w.find(key); at != std::string::npos) return std::stod(w.substr(at + key.size()));
        return 0.0;
    };
    CHECK(res.runs.at(0).after_s > res.runs.at(0).measured_s);
    CHECK(quoted_off(res) == Approx(100 * (res.runs.at(0).after_s / res.runs.at(0).measured_s - 1)).epsilon(1e-5));
    {
        auto slow = runs;
        slow[0].iteration_time_s *= 20 * 50;  // 50x slower than the model
        const CalibrationResult r = calibrate(start, slow);
        REQUIRE(r.runs.at(0).after_s < r.runs.at(0).measured_s);
        CHECK(quoted_off(r) < 0);
        CHECK(quoted_off(r) == Approx(100 * (r.runs.at(0).after_s / r.runs.at(0).measured_s - 1)).epsilon(1e-5));
    }
    // a plan that does not fit in memory by the model
    auto big = synthetic_runs(start, {plan(64, {stage(0, 24, 1, 1)})}, false);
    res = calibrate(start, big);
    CHECK(has(res, "plan 0: its plan does not fit in memory by the model ("));
}

TEST_CASE("RUNS.json is validated with paths, values and what is allowed", "[calibrate][robustness]") {
    const Scenario sc = parse_scenario(scenario_json(false));
    const std::string good_plan = R"({"micro_batch_size": 8, "num_micro_batches": 8, "stages": [{"group": 0, "num_layers": 24, "tp": 1, "dp": 8}]})";
    auto parse = [&](const std::string& text) { return problems_of([&] { parse_runs_text(text, sc); }); };
    CHECK(parse("") == "runs: empty input; expected a JSON object");
    CHECK(parse("[]") == "runs: [] is an array; expected an object");
    CHECK(parse("{}") == "runs.runs: is missing; expected an array of 1 to 100 measured runs");
    CHECK(parse(R"({"runs": []})") == "runs.runs: [] has 0 runs; expected an array of 1 to 100 measured runs");
    CHECK(parse(R"({"runs": {}})") == "runs.runs: {} is not an array; expected an array of 1 to 100 measured runs");
    CHECK(parse(R"({"runs": [{"plan": )" + good_plan + R"(}]})") ==
          "runs.runs[0].iteration_time_s: is missing; expected a finite number > 0 and <= 1000000");
    CHECK(parse(R"({"runs": [{"plan": )" + good_plan + R"(, "iteration_time_s": 1}, {"plan": )" + good_plan + R"(, "iteration_time_s": -2}]})") ==
          "runs.runs[1].iteration_time_s: -2 is out of range; expected a finite number > 0 and <= 1000000");
    CHECK(parse(R"({"runs": [{"plan": )" + good_plan + R"(, "iteration_time_s": 1, "peak_memory_GiB": 0}]})") ==
          "runs.runs[0].peak_memory_GiB: 0 is out of range; expected a finite number > 0 and <= 1000000");
    CHECK(parse(R"({"runs": [{"plan": )" + good_plan + R"(, "iteration_time": 1}]})") ==
          "runs.runs[0].iteration_time: unknown key (did you mean \"iteration_time_s\"?); allowed keys are documented in docs/formats.md\n"
          "runs.runs[0].iteration_time_s: is missing; expected a finite number > 0 and <= 1000000");
    CHECK(parse(R"({"runs": [{"iteration_time_s": 1}]})") ==
          "runs.runs[0].plan: is missing; expected the plan that ran, as `poseidon estimate --plan` takes it");
    CHECK(parse(R"({"runs": [{"iteration_time_s": 1, "plan": {"micro_batch_size": 8, "num_micro_batches": 8, "stages": [{"group": 0, "num_layers": 24, "tp": 5, "dp": 1}]}}]})") ==
          "runs.runs[0].plan.stages[0].tp: 5 does not divide num_attention_heads 24");
    // Placement problems (found after validation: here a TP group across two nodes, if the
    // placement refuses it) get the run's path too.
    const std::string placed = parse(R"({"runs": [{"iteration_time_s": 1, "plan": {"micro_batch_size": 8, "num_micro_batches": 8, "stages": [{"group": 0, "num_layers": 12, "tp": 1, "dp": 4}, {"group": 0, "num_layers": 12, "tp": 8, "dp": 1}]}}]})");
    CHECK((placed.empty() || placed.rfind("runs.runs[0].plan.stages[1]: ", 0) == 0));
    // A run with its own global batch: the plan is checked against it.
    CHECK(parse(R"({"runs": [{"iteration_time_s": 1, "global_batch_size": 32, "plan": )" + good_plan + "}]}") ==
          "runs.runs[0].plan.num_micro_batches: 8 x 8 = 64 samples does not equal runs.runs[0].global_batch_size 32; micro_batch_size x num_micro_batches must equal it");
    CHECK(parse(R"({"runs": [{"iteration_time_s": 1, "model": "no-such-model", "plan": )" + good_plan + "}]}").rfind(
              "runs.runs[0].model: \"no-such-model\" is not a model preset", 0) == 0);
    auto ok = parse_runs_text(R"({"name": "mine", "runs": [{"name": "a", "iteration_time_s": 1.5, "peak_memory_GiB": 20, "plan": )" + good_plan + "}]}", sc);
    REQUIRE(ok.size() == 1);
    CHECK(ok[0].name == "a");
    CHECK(ok[0].iteration_time_s == 1.5);
    CHECK(*ok[0].peak_memory_GiB == 20);
}

TEST_CASE("calibration refuses runs that determine nothing", "[calibrate][robustness]") {
    // Every part of the only run is measured by the profile: no device efficiency moves its time.
    Json sj = scenario_json(false);
    sj["profile"] = Json::parse(R"({"devices": [{"device": "gpu-a", "optimizer_s_per_billion_params": 0.02,
        "points": [{"tp": 1, "samples": 8, "layer_forward_s": 0.01, "layer_backward_s": 0.02, "embedding_forward_s": 0.001,
                    "embedding_backward_s": 0.001, "head_forward_s": 0.01, "head_backward_s": 0.02}]}]})");
    const Scenario sc = parse_scenario(sj);
    std::vector<MeasuredRun> runs(1);
    runs[0].plan = parse_plan(plan(8, {stage(0, 24, 1, 1)}), sc);
    runs[0].iteration_time_s = 2;
    CHECK(problems_of([&] { calibrate(sc, runs); }) ==
          "runs.runs: the runs determine no parameter of the time model (no run's time depends enough on any device efficiency or stack overhead); nothing can be "
          "calibrated. Measured profiles replace what they cover; add runs whose times depend on the devices");
    CHECK(problems_of([&] { calibrate(sc, {}); }) == "runs.runs: is empty; expected at least one measured run");
}

TEST_CASE("the calibrated scenario is accepted by estimate and plan and reproduces the fit", "[calibrate]") {
    Json sj = scenario_json(true);
    // what the model does not use travels too: the page prices a device with it
    sj["cluster"]["groups"][1]["device"]["price_usd_per_gpu_hour"] = 1.25;
    sj["cluster"]["groups"][1]["device"]["price_source"] = "a quote";
    sj["cluster"]["groups"][1]["device"]["notes"] = "our own card";
    const Scenario start = parse_scenario(sj);
    Json perturbed = sj;
    perturbed["cluster"]["groups"][0]["device"]["matmul_efficiency"] = 0.6;
    const auto runs = synthetic_runs(parse_scenario(perturbed), plans_on_a(), true);
    const CalibrationResult res = calibrate(start, runs);
    const Json out = calibrated_scenario_json(sj, res);
    CHECK(out["model"] == "gpt3-1.7b");  // what was not calibrated stays as the user wrote it
    const Json& cal = out["cluster"]["groups"][0]["device"]["calibration"];
    CHECK(cal["source"] == "poseidon calibrate");
    CHECK(cal["fitted"]["matmul_efficiency"]["from"] == 0.72);
    CHECK(cal["fitted"]["matmul_efficiency"]["to"] == out["cluster"]["groups"][0]["device"]["matmul_efficiency"]);
    CHECK_FALSE(out["cluster"]["groups"][1]["device"].contains("calibration"));  // gpu-b ran nothing
    CHECK(out["cluster"]["groups"][1]["device"]["price_usd_per_gpu_hour"] == 1.25);
    CHECK(out["cluster"]["groups"][1]["device"]["price_source"] == "a quote");
    CHECK(out["cluster"]["groups"][1]["device"]["notes"] == "our own card");
    const Scenario again = parse_scenario_text(out.dump());
    REQUIRE(again.cluster.groups[0].device.calibration);
    CHECK(again.cluster.groups[0].device.calibration->fitted.size() == res.scenario.cluster.groups[0].device.calibration->fitted.size());
    for (std::size_t i = 0; i < runs.size(); ++i) CHECK(estimate(again, runs[i].plan, false).iteration_time_s == res.runs[i].after_s);
    // The wasm-facing api returns the report and the same scenario; deterministic.
    std::string runs_text = R"({"runs": [)";
    for (std::size_t i = 0; i < runs.size(); ++i)
        runs_text += (i ? "," : "") + Json{{"plan", to_json(runs[i].plan)}, {"iteration_time_s", runs[i].iteration_time_s}}.dump();
    runs_text += "]}";
    const std::string a = calibrate_json(sj.dump(), runs_text), b = calibrate_json(sj.dump(), runs_text);
    CHECK(a == b);
    const Json j = Json::parse(a);
    CHECK(j["report"]["runs"].size() == runs.size());
    CHECK(j["report"]["devices"][0]["parameters"]["matmul_efficiency"]["status"] == "fitted");
    CHECK(j["scenario"]["cluster"]["groups"][0]["device"]["matmul_efficiency"].get<double>() == res.scenario.cluster.groups[0].device.matmul_efficiency);
    CHECK(res.scenario.cluster.groups[0].device.matmul_efficiency == Approx(0.6).epsilon(0.02));
}

TEST_CASE("a device's calibration key is validated", "[calibrate][robustness]") {
    Json sj = scenario_json(false);
    sj["cluster"]["groups"][0]["device"]["calibration"] = Json::parse(R"({"fitted": {"matmul_eficiency": {"from": 0.7, "to": 0.5}}, "runs": -1})");
    CHECK(problems_of([&] { parse_scenario(sj); }) ==
          "scenario.cluster.groups[0].device.calibration.runs: -1 is out of range; expected an integer in [0, 1000000000]\n"
          "scenario.cluster.groups[0].device.calibration.fitted.matmul_eficiency: unknown key (did you mean \"matmul_efficiency\"?); allowed keys are documented in docs/formats.md");
    sj["cluster"]["groups"][0]["device"]["calibration"] = Json::parse(R"({"fitted": {"matmul_efficiency": {"from": 0.7}}, "source": "my notebook"})");
    CHECK(problems_of([&] { parse_scenario(sj); }) ==
          "scenario.cluster.groups[0].device.calibration.fitted.matmul_efficiency.to: is missing; expected a finite number >= 0 and <= 1000000");
    sj["cluster"]["groups"][0]["device"]["calibration"]["fitted"]["matmul_efficiency"]["to"] = 0.5;
    const Scenario sc = parse_scenario(sj);
    REQUIRE(sc.cluster.groups[0].device.calibration);
    CHECK(sc.cluster.groups[0].device.calibration->source == "my notebook");
    CHECK(to_json(sc.cluster.groups[0].device)["calibration"]["fitted"]["matmul_efficiency"]["to"] == 0.5);
}
