// Measured-profile mode (docs/formats.md, "Profile"; docs/model.md, "Measured profiles").
#include <catch2/catch.hpp>

#include <string>

#include "poseidon/cost_model.hpp"
#include "poseidon/estimate.hpp"
#include "poseidon/json_util.hpp"
#include "poseidon/scenario.hpp"

using namespace poseidon;

namespace {

Json base_scenario() {
    return Json::parse(R"({"model":"gpt3-1.7b","cluster":"dgx-a100-1",
        "training":{"global_batch_size":64,"recompute":"full","flash_attention":false}})");
}

Json profile_json() {
    return Json::parse(R"({"name":"test","devices":[{"device":"a100-sxm4-80gb","points":[
        {"tp":1,"samples":1,"layer_forward_s":0.010,"layer_backward_s":0.030,"embedding_forward_s":0.001,"embedding_backward_s":0.002,
         "head_forward_s":0.004,"head_backward_s":0.008},
        {"tp":1,"samples":3,"layer_forward_s":0.020,"layer_backward_s":0.070}]}]})");
}

ReplicaCost cost(const Scenario& sc, int tp, int samples, int layers, StagePosition pos) {
    Device d = sc.cluster.groups[0].device;
    d.intra_node_bw_GBps = sc.cluster.groups[0].intra_node_bw_GBps;
    return replica_cost(sc, d, tp, samples, layers, pos);
}

std::string problems_of(const Json& scenario) {
    try {
        parse_scenario(scenario);
    } catch (const InputError& e) {
        std::string out;
        for (const auto& p : e.problems()) out += p.line() + "\n";
        return out;
    }
    return "";
}

}  // namespace

TEST_CASE("profile points replace, interpolate, or fall back to the analytic model", "[profile]") {
    Json j = base_scenario();
    const Scenario analytic = parse_scenario(j);
    j["profile"] = profile_json();
    const Scenario sc = parse_scenario(j);
    REQUIRE(sc.profile);
    const StagePosition mid{1, 3, 8, 1}, first{0, 3, 8, 1}, last{2, 3, 8, 1};
    // A measured block replaces the analytic block; the stack's per-pass schedule cost is not part
    // of a block and is still added once per micro-batch pass.
    const double pass = sc.training.stack.pass_overhead_us * 1e-6;

    SECTION("an exact point is used as measured") {
        ReplicaCost rc = cost(sc, 1, 1, 4, mid);
        CHECK(rc.forward_s == Approx(4 * 0.010 + pass));
        CHECK(rc.backward_s == Approx(4 * 0.030 + pass));
        CHECK(rc.sources.forward() == CostSource::profile);
        CHECK(rc.sources.backward() == CostSource::profile);
        ReplicaCost f = cost(sc, 1, 1, 4, first);
        CHECK(f.forward_s == Approx(4 * 0.010 + 0.001 + pass));
        CHECK(f.backward_s == Approx(4 * 0.030 + 0.002 + pass));
        ReplicaCost l = cost(sc, 1, 1, 4, last);
        CHECK(l.forward_s == Approx(4 * 0.010 + 0.004 + pass));
        CHECK(l.backward_s == Approx(4 * 0.030 + 0.008 + pass));
        CHECK(l.sources.head_forward == CostSource::profile);
        CHECK(!l.sources.embedding_forward);
    }
    SECTION("between two points: linear in samples") {
        ReplicaCost rc = cost(sc, 1, 2, 4, mid);
        CHECK(rc.forward_s == Approx(4 * 0.015 + pass));
        CHECK(rc.backward_s == Approx(4 * 0.050 + pass));
        CHECK(rc.sources.layer_forward == CostSource::interpolated);
        // The embedding has only one point: analytic at samples 2, so the stage's forward is analytic.
        ReplicaCost f = cost(sc, 1, 2, 4, first);
        CHECK(*f.sources.embedding_forward == CostSource::analytic);
        CHECK(f.sources.forward() == CostSource::analytic);
        CHECK(f.forward_s > 4 * 0.015);
    }
    SECTION("outside the measured range or another TP degree: analytic") {
        for (auto [tp, samples] : {std::pair{1, 4}, std::pair{2, 1}}) {
            ReplicaCost rc = cost(sc, tp, samples, 4, mid);
            ReplicaCost an = cost(analytic, tp, samples, 4, mid);
            CHECK(rc.forward_s == Approx(an.forward_s));
            CHECK(rc.backward_s == Approx(an.backward_s));
            CHECK(rc.sources.forward() == CostSource::analytic);
        }
    }
}

TEST_CASE("estimate output names the source of each stage's numbers", "[profile]") {
    Json j = base_scenario();
    j["profile"] = profile_json();
    j["profile"]["devices"][0]["optimizer_s_per_billion_params"] = 0.5;
    j["profile"]["devices"][0]["intra_node_bw_GBps"] = 100;
    Scenario sc = parse_scenario(j);
    Plan plan = parse_plan_text(R"({"micro_batch_size":4,"num_micro_batches":16,"stages":[
        {"group":0,"num_layers":12,"tp":1,"dp":4},{"group":0,"num_layers":12,"tp":2,"dp":2}]})", sc);
    Estimate e = estimate(sc, plan);
    Json out = to_json(sc, e);
    CHECK(out["stages"][0]["source"]["layer_forward"] == "profile");
    CHECK(out["stages"][0]["source"]["forward"] == "profile");
    CHECK(out["stages"][0]["source"]["optimizer"] == "profile");
    CHECK(out["stages"][0]["source"]["links"] == "profile");
    CHECK(out["stages"][1]["source"]["forward"] == "analytic");
    CHECK(out["stages"][1]["source"]["head_backward"] == "analytic");
    CHECK(out["stages"][0]["forward_s"].get<double>() == Approx(12 * 0.010 + 0.001 + sc.training.stack.pass_overhead_us * 1e-6));
    // Optimizer: local parameters / 1e9 x 0.5 s.
    CHECK(e.stages[0].times.optimizer_s == Approx(e.stages[0].replica_costs[0].params_per_gpu / 1e9 * 0.5));
    // The measured intra-node bandwidth (100 GB/s, efficiency 1) replaces 300 x 0.8 for TP and DP
    // inside the node: the TP-2 stage's collectives and its gradient all-reduce take 2.4x longer.
    Scenario plain = parse_scenario(base_scenario());
    Estimate e2 = estimate(plain, plan);
    CHECK(e.stages[1].times.dp_sync_s > 2 * e2.stages[1].times.dp_sync_s);
    CHECK(e.stages[1].times.forward_tp_comm_s > 2 * e2.stages[1].times.forward_tp_comm_s);
    CHECK(e2.stages[1].sources.links == CostSource::analytic);
    // the text output says it too, one word a stage; without a profile it has no such line
    const std::string text = to_text(sc, e);
    CHECK(text.find("profile      " + sc.profile->name + ": stage 0 profile, stage 1 analytic (") != std::string::npos);
    CHECK(to_text(plain, e2).find("\nprofile ") == std::string::npos);
}

TEST_CASE("a profile preset is referenced by id", "[profile]") {
    Json j = Json::parse(R"({"model":"llama3.2-1b","cluster":"dgx-a100-1","training":{"global_batch_size":64},
        "profile":"llama3.2-1b-a100-illustrative"})");
    Scenario sc = parse_scenario(j);
    REQUIRE(sc.profile);
    CHECK(sc.profile->devices.at(0).device == "a100-sxm4-80gb");
    Plan plan = parse_plan_text(R"({"micro_batch_size":4,"num_micro_batches":16,"stages":[
        {"group":0,"num_layers":8,"tp":2,"dp":1},{"group":0,"num_layers":8,"tp":1,"dp":4}]})", sc);
    Json out = to_json(sc, estimate(sc, plan));
    CHECK(out["stages"][0]["source"]["forward"] == "interpolated");  // tp 2, samples 4: between 2 and 8
    CHECK(out["stages"][1]["source"]["forward"] == "profile");       // tp 1, samples 1
}

TEST_CASE("a device derived from a preset keeps that GPU's profile; one derived from another does not", "[profile]") {
    // the page sends a calibrated preset device as {"base": id, ...fitted values}
    auto estimate_with = [](const Json& device) {
        Json j = base_scenario();
        j["cluster"] = {{"name", "c"}, {"groups", Json::array({{{"device", device}, {"nodes", 1}, {"gpus_per_node", 8}, {"inter_node_bw_GBps", 25}}})}};
        j["profile"] = profile_json();
        const Scenario sc = parse_scenario(j);
        const Plan plan = parse_plan_text(R"({"micro_batch_size":8,"num_micro_batches":8,"stages":[{"group":0,"num_layers":24,"tp":1,"dp":8}]})", sc);
        return to_json(sc, estimate(sc, plan));
    };
    const Json plain = estimate_with("a100-sxm4-80gb");
    const Json calibrated = estimate_with(Json{{"base", "a100-sxm4-80gb"}, {"matmul_efficiency", 0.6}});
    CHECK(calibrated["stages"][0]["source"]["layer_forward"] == "profile");
    CHECK(calibrated["stages"][0]["forward_s"] == plain["stages"][0]["forward_s"]);  // the measured layers, not the new rate
    const Json other = estimate_with(Json{{"base", "a100-sxm4-40gb"}});
    CHECK(other["stages"][0]["source"]["layer_forward"] == "analytic");
}

TEST_CASE("profiles are validated strictly", "[profile]") {
    struct Bad {
        const char* profile;
        const char* expected;
    };
    const Bad cases[] = {
        {R"(42)", "scenario.profile: 42 is not an object"},
        {R"("nope")", "scenario.profile: \"nope\" is not a profile preset"},
        {R"({})", "scenario.profile.devices: is missing"},
        {R"({"devices":[]})", "scenario.profile.devices: [] is not allowed"},
        {R"({"devices":[{"device":"a100-sxm4-80gb"}]})", "scenario.profile.devices[0].points: is missing"},
        {R"({"devices":[{"device":"b200","points":[]}]})", "scenario.profile.devices[0].device: \"b200\" is not a device preset id"},
        {R"({"devices":[{"device":"a100-sxm4-80gb","points":[]},{"device":"a100-sxm4-80gb","points":[]}]})", "scenario.profile.devices[1].device: \"a100-sxm4-80gb\" is profiled twice"},
        {R"({"devices":[{"device":"a100-sxm4-80gb","points":{}}]})", "scenario.profile.devices[0].points: {} is not allowed"},
        {R"({"devices":[{"device":"a100-sxm4-80gb","points":[{"tp":1,"samples":1,"layer_forward_s":0.1}]}]})", "scenario.profile.devices[0].points[0].layer_backward_s"},
        {R"({"devices":[{"device":"a100-sxm4-80gb","points":[{"tp":0,"samples":1,"layer_forward_s":0.1,"layer_backward_s":0.2}]}]})", "scenario.profile.devices[0].points[0].tp"},
        {R"({"devices":[{"device":"a100-sxm4-80gb","points":[{"tp":1,"samples":1,"layer_forward_s":-1,"layer_backward_s":0.2}]}]})", "scenario.profile.devices[0].points[0].layer_forward_s"},
        {R"({"devices":[{"device":"a100-sxm4-80gb","points":[{"tp":1,"samples":1,"layer_forward_s":0.1,"layer_backward_s":0.2,"head_s":1}]}]})", "scenario.profile.devices[0].points[0].head_s"},
        {R"({"devices":[{"device":"a100-sxm4-80gb","points":[{"tp":1,"samples":1,"layer_forward_s":0.1,"layer_backward_s":0.2},{"tp":1,"samples":1,"layer_forward_s":0.1,"layer_backward_s":0.2}]}]})", "scenario.profile.devices[0].points[1]: repeats tp 1 and samples 1"},
        {R"({"devices":[{"device":"a100-sxm4-80gb","intra_node_bw_GBps":0}]})", "scenario.profile.devices[0].intra_node_bw_GBps"},
        {R"({"devices":[{"device":"a100-sxm4-80gb","optimizer_s_per_billion_params":"fast"}]})", "scenario.profile.devices[0].optimizer_s_per_billion_params"},
        {R"({"devices":[{"device":"a100-sxm4-80gb","points":[]}],"extra":1})", "scenario.profile.extra"},
    };
    for (const auto& c : cases) {
        Json j = base_scenario();
        j["profile"] = Json::parse(c.profile);
        std::string got = problems_of(j);
        INFO("profile " << c.profile << "\nproblems:\n" << got);
        CHECK(got.find(c.expected) != std::string::npos);
    }
    // A profile may name an inline device by its name.
    Json j = base_scenario();
    j["cluster"] = Json::parse(R"({"name":"c","groups":[{"device":{"name":"My GPU","peak_tflops":100,"memory_GiB":40,"memory_bw_GBps":1000,
        "intra_node_bw_GBps":100},"nodes":1,"gpus_per_node":8,"inter_node_bw_GBps":25}]})");
    j["profile"] = Json::parse(R"({"devices":[{"device":"My GPU","points":[{"tp":1,"samples":1,"layer_forward_s":0.1,"layer_backward_s":0.2}]}]})");
    CHECK(problems_of(j).empty());
}

TEST_CASE("a scenario with a profile survives to_json and parse_scenario with the same estimate", "[profile]") {
    Json j = base_scenario();
    j["profile"] = profile_json();
    Scenario sc = parse_scenario(j);
    Scenario again = parse_scenario(to_json(sc));
    REQUIRE(again.profile);
    Plan plan = parse_plan_text(R"({"micro_batch_size":4,"num_micro_batches":16,"stages":[
        {"group":0,"num_layers":12,"tp":1,"dp":4},{"group":0,"num_layers":12,"tp":2,"dp":2}]})", sc);
    CHECK(estimate(sc, plan).iteration_time_s == estimate(again, plan).iteration_time_s);
}

TEST_CASE("a measured intra-node bandwidth is the whole node's: a smaller ring gets the link type's share", "[profile]") {
    // One GH200 node of 4 (nvlink_mesh): the profile measures 240 GB/s over the 4 GPUs. A DP-4
    // ring runs at exactly that; a TP-2 pair at half of it (1/3 of the links against 2/3).
    auto run = [](const char* stage) {
        Json j = Json::parse(R"({"model":"llama3.2-1b","training":{"global_batch_size":8},
            "cluster":{"name":"c","groups":[{"device":"gh200-96gb","nodes":1,"gpus_per_node":4,"inter_node_bw_GBps":100}]},
            "profile":{"name":"p","devices":[{"device":"gh200-96gb","intra_node_bw_GBps":240}]}})");
        Scenario sc = parse_scenario(j);
        return estimate(sc, parse_plan_text(std::string(R"({"micro_batch_size":4,"num_micro_batches":2,"stages":[)") + stage + "]}", sc));
    };
    const Estimate dp4 = run(R"({"group":0,"num_layers":16,"tp":1,"dp":4})");
    const double grad_bytes = dp4.stages[0].replica_costs[0].params_per_gpu * 4;  // fp32 gradients
    CHECK(dp4.stages[0].times.dp_sync_s == Approx(2.0 * 3 / 4 * grad_bytes / 240e9 + 2 * 3 * 8e-6).epsilon(1e-9));
    const Estimate tp2 = run(R"({"group":0,"num_layers":16,"tp":2,"dp":2})");
    // b s h x 2 B with 2 samples per replica, s = 8192, h = 2048, at 120 GB/s: two all-reduces per
    // block and the embedding's, 33 in the forward.
    const double act_bytes = 2.0 * 8192 * 2048 * 2;
    CHECK(tp2.stages[0].times.forward_tp_comm_s == Approx(33 * (act_bytes / 120e9 + 2 * 8e-6)).epsilon(1e-9));
    CHECK(tp2.stages[0].sources.links == CostSource::profile);
}
