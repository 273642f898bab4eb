#include <catch2/catch.hpp>

#include "poseidon/estimate.hpp"
#include "poseidon/json_util.hpp"
#include "poseidon/presets.hpp"
#include "poseidon/scenario.hpp"

using namespace poseidon;

TEST_CASE("every device preset runs an estimate", "[presets]") {
    auto ids = preset_ids("devices");
    REQUIRE(ids.size() >= 19);
    for (const char* required : {"a100-sxm4-80gb", "a100-sxm4-40gb", "a100-pcie-80gb", "h100-sxm5-80gb", "h100-pcie-80gb", "h200-sxm-141gb", "gh200-96gb",
                                 "v100-sxm2-16gb", "v100-sxm2-32gb", "t4-16gb", "a10-24gb", "l4-24gb", "l40s-48gb", "rtx3090-24gb", "rtx4090-24gb",
                                 "rtx2080ti-11gb", "titan-rtx-24gb", "mi250x-128gb", "mi300x-192gb"})
        CHECK(find_preset("devices", required) != nullptr);
    for (const auto& id : ids) {
        INFO(id);
        Json sc = {{"model", "tiny-8l"},
                   {"training", {{"global_batch_size", 32}}},
                   {"cluster", {{"name", "one node"}, {"groups", {{{"device", id}, {"nodes", 1}, {"gpus_per_node", 8}, {"inter_node_bw_GBps", 25}}}}}}};
        Scenario s = parse_scenario(sc);
        auto e = estimate(s, parse_plan_text(R"({"micro_batch_size": 8, "num_micro_batches": 4, "stages": [{"group": 0, "num_layers": 8, "tp": 1, "dp": 8}]})", s));
        CHECK(e.iteration_time_s > 0);
        CHECK(e.memory_fits);
        CHECK(!s.cluster.groups[0].device.source.empty());
    }
}

TEST_CASE("every model preset runs an estimate", "[presets]") {
    auto ids = preset_ids("models");
    for (const char* required : {"gpt3-1.7b", "gpt3-175b", "gpt3-1t", "llama2-7b", "llama2-13b", "llama2-70b", "llama3-8b", "llama3-70b", "llama3-405b", "opt-350m"})
        CHECK(find_preset("models", required) != nullptr);
    for (const auto& id : ids) {
        INFO(id);
        Json sc = {{"model", id}, {"training", {{"global_batch_size", 8}}}, {"cluster", "dgx-a100-superpod-slice"}};
        Scenario s = parse_scenario(sc);
        Json plan = {{"micro_batch_size", 1}, {"num_micro_batches", 8}, {"stages", {{{"group", 0}, {"num_layers", s.model.num_layers}, {"tp", 1}, {"dp", 1}}}}};
        auto e = estimate(s, parse_plan(plan, s));
        CHECK(e.iteration_time_s > 0);
        CHECK(!s.model.source.empty());
    }
}

TEST_CASE("every cluster preset runs an estimate on each of its groups", "[presets]") {
    for (const auto& id : preset_ids("clusters")) {
        INFO(id);
        Json sc = {{"model", "tiny-8l"}, {"training", {{"global_batch_size", 16}}}, {"cluster", id}};
        Scenario s = parse_scenario(sc);
        CHECK(!s.cluster.source.empty());
        Json stages = Json::array();
        for (std::size_t g = 0; g < s.cluster.groups.size(); ++g) stages.push_back({{"group", g}, {"num_layers", 1}, {"tp", 1}, {"dp", 1}});
        if (s.cluster.groups.size() > 8) continue;
        stages[0]["num_layers"] = 8 - static_cast<int>(s.cluster.groups.size()) + 1;
        Json plan = {{"micro_batch_size", 1}, {"num_micro_batches", 16}, {"stages", stages}};
        auto e = estimate(s, parse_plan(plan, s));
        CHECK(e.iteration_time_s > 0);
    }
}
