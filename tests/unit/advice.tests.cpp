// Advice for scenarios without a feasible plan (core/src/advice.cpp): the variants tried, their
// statuses, that a feasible variant's plan really fits its variant scenario, and the JSON.
#include <catch2/catch.hpp>

#include "poseidon/advice.hpp"
#include "poseidon/api.hpp"
#include "poseidon/estimate.hpp"
#include "poseidon/scenario.hpp"
#include "poseidon/search.hpp"

using namespace poseidon;

namespace {

Scenario scenario_of(const Json& j) { return parse_scenario(j); }

const AdviceVariant* find(const Advice& a, const std::string& id) {
    for (const auto& v : a.variants)
        if (v.id == id) return &v;
    return nullptr;
}

// The variant's scenario: the original JSON with the variant's "changes" applied.
Json apply_changes(Json sc, const Json& changes) {
    for (const auto& [path, value] : changes.items()) {
        if (path.rfind("training.", 0) == 0 && value.is_null()) {
            sc["training"].erase(path.substr(9));
        } else if (path.rfind("training.", 0) == 0) {
            sc["training"][path.substr(9)] = value;
        } else {
            const auto open = path.find('['), close = path.find(']');
            const int g = std::stoi(path.substr(open + 1, close - open - 1));
            REQUIRE(path.substr(close + 1) == ".nodes");
            sc["cluster"]["groups"][g]["nodes"] = value;
        }
    }
    return sc;
}

}  // namespace

TEST_CASE("advice: a scenario with a feasible plan needs none", "[advice]") {
    const Json j = {{"model", "gpt3-1.7b"}, {"training", {{"global_batch_size", 64}}}, {"cluster", "demo-mixed-16"}};
    const Advice a = advise(scenario_of(j), AdviceOptions{});
    CHECK(a.feasible_now);
    CHECK(a.variants.empty());
}

TEST_CASE("advice: memory savers and more nodes for a model that does not fit", "[advice]") {
    // Llama 3 8B (8192-token sequences) on 4 A100-40GB + 4 V100-16GB: without recompute the
    // activations of one sample do not fit on any stage layout; full recompute makes a plan fit
    const Json cluster = {{"name", "two groups"},
                          {"groups", Json::array({Json{{"device", "a100-sxm4-40gb"}, {"nodes", 1}, {"gpus_per_node", 4}, {"inter_node_bw_GBps", 100}},
                                                  Json{{"device", "v100-sxm2-16gb"}, {"nodes", 1}, {"gpus_per_node", 4}, {"inter_node_bw_GBps", 100}}})}};
    const Json j = {{"model", "llama3-8b"}, {"training", {{"global_batch_size", 8}}}, {"cluster", cluster}};
    const Scenario sc = scenario_of(j);
    SearchOptions so;
    so.baselines = false;
    REQUIRE(search(sc, so).plans.empty());
    AdviceOptions o;
    o.time_limit_s = 2;
    o.total_time_limit_s = 60;
    const Advice a = advise(sc, o);
    CHECK_FALSE(a.feasible_now);
    CHECK(a.infeasible.count("memory"));
    for (const char* id : {"recompute_selective", "recompute_full", "distributed_optimizer", "fsdp", "sequence_parallel", "memory_savers",
                           "more_nodes_group_0", "more_nodes_group_1", "smaller_micro_batch"})
        CHECK(find(a, id) != nullptr);
    CHECK(find(a, "smaller_micro_batch")->status == "not_applicable");
    CHECK(find(a, "recompute_full")->changes == Json{{"training.recompute", "full"}});
    CHECK(find(a, "fsdp")->changes == Json{{"training.fsdp", true}});
    CHECK(find(a, "more_nodes_group_1")->changes == Json{{"cluster.groups[1].nodes", 2}});
    int feasible = 0;
    for (const auto& v : a.variants) {
        CHECK((v.status == "feasible" || v.status == "infeasible" || v.status == "not_applicable" || v.status == "skipped"));
        if (v.status != "feasible") {
            CHECK(v.best.is_null());
            continue;
        }
        ++feasible;
        // the reported plan is feasible in the variant scenario, with the same throughput
        const Scenario vs = scenario_of(apply_changes(j, v.changes));
        const Estimate e = estimate(vs, parse_plan(v.best["plan"], vs));
        CHECK(e.memory_fits);
        CHECK(e.tokens_per_s == Approx(v.best["tokens_per_s"].get<double>()).epsilon(1e-9));
    }
    CHECK(feasible > 0);
    CHECK(find(a, "recompute_full")->status == "feasible");
    CHECK(find(a, "memory_savers")->status == "feasible");
    CHECK(find(a, "distributed_optimizer")->status == "infeasible");
    // more nodes for every group is tried until one fits (x2, x4 or x8)
    const AdviceVariant* all = find(a, "more_nodes_all");
    REQUIRE(all != nullptr);
}

TEST_CASE("advice: the time budget skips what it cannot search, and the JSON", "[advice]") {
    const Json j = {{"model", "gpt3-175b"}, {"training", {{"global_batch_size", 64}}}, {"cluster", "demo-mixed-16"}};
    AdviceOptions o;
    o.time_limit_s = 0.001;
    o.total_time_limit_s = 0.001;
    const Advice a = advise(scenario_of(j), o);
    CHECK_FALSE(a.feasible_now);
    bool skipped = false;
    for (const auto& v : a.variants) skipped = skipped || v.status == "skipped";
    CHECK(skipped);
    const Json out = Json::parse(advise_json(j.dump(), R"({"time_limit_s": 0.5, "total_time_limit_s": 5})"));
    CHECK(out.at("feasible_now") == false);
    CHECK(out.at("variants").is_array());
    for (const auto& v : out.at("variants")) {
        for (const char* k : {"id", "label", "changes", "status", "reason", "complete", "infeasible", "best"}) CHECK(v.contains(k));
    }
    CHECK_THROWS_AS(parse_advice_options(Json{{"time_limit", 1}}), InputError);
    CHECK_THROWS_AS(parse_advice_options(Json{{"time_limit_s", -1}}), InputError);
}

TEST_CASE("advice: a batch that needs more micro-batches than a pipeline runs gets a smaller batch", "[advice]") {
    // 10^8 samples on 16 GPUs: any micro-batch small enough to fit needs more than 100,000 of them
    const Json j = {{"model", "gpt3-1.7b"}, {"training", {{"global_batch_size", 100000000}}}, {"cluster", "demo-mixed-16"}};
    AdviceOptions o;
    o.time_limit_s = 2;
    o.total_time_limit_s = 60;
    const Advice a = advise(scenario_of(j), o);
    CHECK_FALSE(a.feasible_now);
    REQUIRE(a.infeasible.count("micro-batches over limit"));
    // the batch divided by 10, 100, 1000 until one is feasible (10^7 is not: 100 samples a
    // micro-batch do not fit beside the V100s' unfused attention)
    const AdviceVariant* v = nullptr;
    for (const auto& x : a.variants)
        if (x.id == "smaller_global_batch") v = &x;
    REQUIRE(v != nullptr);
    INFO(v->label << ": " << v->reason);
    CHECK(v->status == "feasible");
    const std::int64_t smaller = v->changes.at("training.global_batch_size").get<std::int64_t>();
    CHECK((smaller == 10000000 || smaller == 1000000 || smaller == 100000));
    CHECK(v->label.find("a global batch of " + std::to_string(smaller) + " samples instead of 100000000") == 0);
    const Scenario vs = scenario_of(apply_changes(j, v->changes));
    CHECK(estimate(vs, parse_plan(v->best["plan"], vs)).memory_fits);
}

TEST_CASE("advice: an MoE model is offered the named modules Megatron-Core recomputes for it", "[advice][recompute]") {
    // Qwen3 30B-A3B on one node of 8 A100-80GB at 12,288 tokens: the experts' activations do not fit
    // without recomputation; moe_act and layernorm keep less of every block
    const Json cluster = {{"name", "one node"},
                          {"groups", Json::array({Json{{"device", "a100-sxm4-80gb"}, {"nodes", 1}, {"gpus_per_node", 8}, {"inter_node_bw_GBps", 100}}})}};
    const Json j = {{"model", {{"preset", "qwen3-30b-a3b"}, {"seq_length", 12288}}},
                    {"training", {{"global_batch_size", 64}, {"distributed_optimizer", true}}}, {"cluster", cluster}};
    AdviceOptions o;
    o.time_limit_s = 2;
    o.total_time_limit_s = 60;
    const Advice a = advise(scenario_of(j), o);
    REQUIRE_FALSE(a.feasible_now);
    const AdviceVariant* v = find(a, "recompute_modules");
    REQUIRE(v != nullptr);
    CHECK(v->changes == Json{{"training.recompute", "selective"}, {"training.recompute_modules", Json::array({"moe_act", "layernorm"})}});
    CHECK(v->status == "feasible");
    // its plan fits the scenario with those changes
    const Scenario vs = scenario_of(apply_changes(j, v->changes));
    const Estimate e = estimate(vs, parse_plan(v->best["plan"], vs));
    CHECK(e.memory_fits);
    // a dense model is not offered it
    const Json dense = {{"model", "llama3-8b"}, {"training", {{"global_batch_size", 8}}}, {"cluster", cluster}};
    const Advice b = advise(scenario_of(dense), o);
    CHECK(find(b, "recompute_modules") == nullptr);
    // from named modules, full recompute drops them (the key removed: null)
    Json named = j;
    named["training"]["recompute"] = "selective";
    named["training"]["recompute_modules"] = Json::array({"shared_experts"});  // none here: still no plan
    const Advice c = advise(scenario_of(named), o);
    REQUIRE_FALSE(c.feasible_now);
    const AdviceVariant* f = find(c, "recompute_full");
    REQUIRE(f != nullptr);
    CHECK(f->changes == Json{{"training.recompute", "full"}, {"training.recompute_modules", nullptr}});
    CHECK_NOTHROW(scenario_of(apply_changes(named, f->changes)));
}
