// options.split_nodes (docs/search.md, "The space", step 2): with group_blocks >= 2 a node may also
// be two blocks of half its GPUs, next to each other in the pipeline, so that one node holds
// stages of unequal size (2, 2 and 4 GPUs).
#include <catch2/catch.hpp>

#include <random>
#include <string>

#include "../../core/src/search_driver.hpp"
#include "../../core/src/search_space.hpp"
#include "poseidon/estimate.hpp"
#include "poseidon/json_util.hpp"
#include "poseidon/scenario.hpp"
#include "poseidon/search.hpp"
#include "search_random.hpp"

using namespace poseidon;

using search_test::quiet;
using search_test::random_scenario;
using search_test::require_pruned_equals_exhaustive;
using search_test::two_types;
using search_test::wider_is_better;

namespace {

constexpr int H = detail::kHalvedNode;

}  // namespace

TEST_CASE("a halved node adds splits of two blocks, and its halves are one node's two groups", "[search][split_nodes]") {
    const Scenario sc = two_types();
    SearchOptions o;
    o.group_blocks = 2;
    o.split_nodes = true;
    // two blocks: the halves are both blocks, so only a group of one node could be halved
    CHECK(detail::group_block_splits(sc, o).size() == 6);
    // three: A100 also halves + 1 node; T4 also halves + 3 nodes (A100 3 ways, T4 5)
    o.group_blocks = 3;
    auto three = detail::group_block_splits(sc, o);
    CHECK(three.size() == 3 * 5);
    CHECK(std::count(three.begin(), three.end(), detail::GroupSplit{{H}, {H}}) == 1);
    // four: T4 also halves + 1 + 2 nodes (A100 3 ways, T4 7)
    o.group_blocks = 4;
    CHECK(detail::group_block_splits(sc, o).size() == 3 * 7);

    std::vector<int> map;
    const Scenario part = detail::split_groups(sc, {{H}, {}}, map);
    REQUIRE(part.cluster.groups.size() == 4);
    CHECK(map == std::vector<int>{0, 0, 0, 1});
    CHECK(part.cluster.group_first_node == std::vector<int>{0, 1, 1, 0});
    CHECK(part.cluster.groups[0].nodes == 1);
    CHECK(part.cluster.groups[0].gpus_per_node == 8);
    CHECK(part.cluster.groups[1].nodes == 1);
    CHECK(part.cluster.groups[1].gpus_per_node == 4);
    CHECK(part.cluster.groups[2].gpus_per_node == 4);
    const detail::NodeHalves h = detail::node_halves(part.cluster);
    CHECK(h.next == std::vector<int>{-1, 2, -1, -1});
    CHECK(h.prev == std::vector<int>{-1, -1, 1, -1});
    // a group of one node is all halves: no whole part is left
    const Scenario one = parse_scenario_text(
        R"({"model": "tiny-8l", "training": {"global_batch_size": 8}, "cluster": {"name": "one", "groups": [)"
        R"({"device": "a100-sxm4-80gb", "nodes": 1, "gpus_per_node": 8, "inter_node_bw_GBps": 25}, {"device": "t4-16gb", "nodes": 1, "gpus_per_node": 3, "inter_node_bw_GBps": 25}]}})");
    o.group_blocks = 2;
    CHECK(detail::group_block_splits(one, o).size() == 2);  // the A100 node halved; 3 GPUs cannot be
    const Scenario halves = detail::split_groups(one, {{H}, {}}, map);
    REQUIRE(halves.cluster.groups.size() == 3);
    CHECK(map == std::vector<int>{0, 0, 1});
    CHECK(halves.cluster.group_first_node == std::vector<int>{0, 0, 0});
}

TEST_CASE("a plan on a halved node costs what the same plan costs on the user's groups", "[search][split_nodes]") {
    // A100 node 0 -> A100 node 1 as halves (stages of 2, 2 | 4): the send between the halves stays
    // inside the node
    const Scenario sc = two_types();
    std::vector<int> map;
    const Scenario part = detail::split_groups(sc, {{H}, {}}, map);
    const std::string stages_split =
        R"([{"group": 0, "num_layers": 6, "tp": 1, "dp": 8}, {"group": 1, "num_layers": 6, "tp": 1, "dp": 2}, )"
        R"({"group": 1, "num_layers": 6, "tp": 1, "dp": 2}, {"group": 2, "num_layers": 6, "tp": 2, "dp": 2}])";
    const std::string stages_user =
        R"([{"group": 0, "num_layers": 6, "tp": 1, "dp": 8}, {"group": 0, "num_layers": 6, "tp": 1, "dp": 2}, )"
        R"({"group": 0, "num_layers": 6, "tp": 1, "dp": 2}, {"group": 0, "num_layers": 6, "tp": 2, "dp": 2}])";
    for (const char* sched : {"", R"("schedule": "interleaved-1f1b", "virtual_stages": 2, )"}) {
        const std::string head = std::string(R"({"micro_batch_size": 16, "num_micro_batches": 16, )") + sched + R"("stages": )";
        const Estimate a = estimate(part, parse_plan_text(head + stages_split + "}", part), false);
        const Estimate b = estimate(sc, parse_plan_text(head + stages_user + "}", sc), false);
        INFO(sched);
        CHECK(a.iteration_time_s == b.iteration_time_s);
        CHECK(a.memory_fits == b.memory_fits);
        REQUIRE(a.stages.size() == 4);
        CHECK(a.stages[2].times.send_forward_s == b.stages[2].times.send_forward_s);
    }
    // without group_first_node the halves would be two nodes: their send would take the NIC
    Scenario apart = part;
    apart.cluster.group_first_node.clear();
    const std::string head = R"({"micro_batch_size": 16, "num_micro_batches": 16, "stages": )";
    const Estimate near = estimate(part, parse_plan_text(head + stages_split + "}", part), false);
    const Estimate far = estimate(apart, parse_plan_text(head + stages_split + "}", apart), false);
    CHECK(far.stages[2].times.send_forward_s > 4 * near.stages[2].times.send_forward_s);
}

TEST_CASE("a halved node's halves apart in the pipeline cost what the same plan costs on the user's groups", "[search][split_nodes]") {
    // A100 node 0 | T4 half | A100 node 1 | T4 other half | three whole T4 nodes: the halves are
    // apart, with no other T4 block between them, so the user's T4 GPUs (taken in stage order) put
    // both halves on one node, as the split cluster does
    const Scenario sc = two_types();
    std::vector<int> map;
    const Scenario part = detail::split_groups(sc, {{1}, {H}}, map);
    REQUIRE(map == std::vector<int>{0, 0, 1, 1, 1});
    const detail::NodeHalves h = detail::node_halves(part.cluster);
    CHECK(h.next == std::vector<int>{-1, -1, -1, 4, -1});
    // the walk's rule: the second half only after the first, no T4 block between them
    const auto& origin = part.cluster.group_origin;
    CHECK(!h.may_place(4, 0b00001, origin));
    CHECK(h.may_place(1, 0b01001, origin));
    CHECK(!h.may_place(2, 0b01001, origin));
    CHECK(h.may_place(4, 0b01011, origin));
    CHECK(h.open(0b01011));
    CHECK(!h.open(0b11011));
    const std::string stages_split =
        R"([{"group": 0, "num_layers": 6, "tp": 1, "dp": 8}, {"group": 3, "num_layers": 1, "tp": 1, "dp": 2}, )"
        R"({"group": 1, "num_layers": 6, "tp": 1, "dp": 8}, {"group": 4, "num_layers": 0, "tp": 1, "dp": 2}, )"
        R"({"group": 2, "num_layers": 4, "tp": 1, "dp": 4}, {"group": 2, "num_layers": 4, "tp": 1, "dp": 4}, {"group": 2, "num_layers": 3, "tp": 2, "dp": 2}])";
    const std::string stages_user =
        R"([{"group": 0, "num_layers": 6, "tp": 1, "dp": 8}, {"group": 1, "num_layers": 1, "tp": 1, "dp": 2}, )"
        R"({"group": 0, "num_layers": 6, "tp": 1, "dp": 8}, {"group": 1, "num_layers": 0, "tp": 1, "dp": 2}, )"
        R"({"group": 1, "num_layers": 4, "tp": 1, "dp": 4}, {"group": 1, "num_layers": 4, "tp": 1, "dp": 4}, {"group": 1, "num_layers": 3, "tp": 2, "dp": 2}])";
    const std::string head = R"({"micro_batch_size": 16, "num_micro_batches": 16, "stages": )";
    const Estimate a = estimate(part, parse_plan_text(head + stages_split + "}", part), false);
    const Estimate b = estimate(sc, parse_plan_text(head + stages_user + "}", sc), false);
    CHECK(a.iteration_time_s == b.iteration_time_s);
    CHECK(a.memory_fits == b.memory_fits);
    REQUIRE(a.stages.size() == b.stages.size());
    for (std::size_t j = 0; j < a.stages.size(); ++j) {
        INFO("stage " << j);
        CHECK(a.stages[j].times.send_forward_s == b.stages[j].times.send_forward_s);
        CHECK(a.stages[j].times.send_backward_s == b.stages[j].times.send_backward_s);
    }
}

TEST_CASE("with half-node blocks the pruned search returns the exhaustive top-K on random scenarios", "[search][differential][split_nodes]") {
    for (int blocks : {2, 3}) {
        int checked = 0, better = 0;
        std::int64_t pruned_evals = 0, exhaustive_evals = 0;
        SearchOptions pruned = quiet(3), exhaustive = quiet(3, true), whole = quiet(1);
        pruned.group_blocks = exhaustive.group_blocks = whole.group_blocks = blocks;
        pruned.split_nodes = exhaustive.split_nodes = true;
        for (std::uint64_t seed = 13000; checked < 30; ++seed) {
            std::mt19937_64 rng(seed);
            Json j = random_scenario(rng);
            if (seed % 2 == 0) j["cluster"]["inter_group_bw_GBps"] = 2.0;
            Scenario sc = parse_scenario(j);
            // only clusters with a node that can be halved into blocks
            bool halvable = false;
            for (const auto& g : sc.cluster.groups) halvable = halvable || (g.gpus_per_node % 2 == 0 && (g.nodes == 1 || blocks >= 3));
            if (!halvable) continue;
            const double size = search_space_size(sc, false, "any", "halving", blocks, true).plans;
            if (size == 0 || size > 3e5) continue;
            INFO("blocks " << blocks << ", seed " << seed << ": " << to_json(sc).dump());
            CHECK(size > search_space_size(sc, false, "any", "halving", blocks).plans);
            const SearchResult pr = require_pruned_equals_exhaustive(sc, pruned, exhaustive, pruned_evals, exhaustive_evals);
            better += wider_is_better(sc, pr, whole);
            ++checked;
        }
        INFO("blocks " << blocks << ": evaluations " << pruned_evals << " / " << exhaustive_evals);
        CHECK(pruned_evals * 3 < exhaustive_evals);
        WARN("blocks " << blocks << " with half-node blocks: better than whole nodes on " << better << " of 30");
    }
}

TEST_CASE("the exhaustive search with half-node blocks evaluates the plans search_space_size counts", "[search][space][split_nodes]") {
    const Scenario sc = search_test::small_two_types();
    SearchOptions o = quiet(1, true);
    o.schedule = "1f1b";
    o.split_nodes = true;
    for (int blocks : {2, 3}) {
        o.group_blocks = blocks;
        const SearchResult r = search(sc, o);
        const SpaceSize sz = search_space_size(sc, false, "1f1b", "halving", blocks, true);
        INFO("blocks " << blocks);
        REQUIRE(r.stats.complete);
        CHECK(static_cast<double>(r.stats.configurations) == sz.configurations);
        CHECK(static_cast<double>(r.stats.evaluated) == sz.plans);
        CHECK(sz.plans > search_space_size(sc, false, "1f1b", "halving", blocks).plans);
    }
}

TEST_CASE("half-node blocks: within a 10 s time limit the search finds the plan with stages of 2, 2 and 4 GPUs in one node; the option is checked",
          "[search][split_nodes]") {
    // poseidon_bench challenge found this plan outside the space before (docs/performance.md,
    // "Outside the space"): 16 A100-40GB + 16 V100-16GB at 12.5 GB/s, OPT-350M, batch 256
    const Scenario sc = parse_scenario_text(
        R"({"model": "opt-350m", "training": {"global_batch_size": 256}, "cluster": {"name": "a100-40 + v100", "groups": [)"
        R"({"device": "a100-sxm4-40gb", "nodes": 2, "gpus_per_node": 8, "inter_node_bw_GBps": 12.5},)"
        R"({"device": "v100-sxm2-16gb", "nodes": 2, "gpus_per_node": 8, "inter_node_bw_GBps": 12.5}]}})");
    const Plan challenger = parse_plan_text(
        R"({"micro_batch_size": 4, "num_micro_batches": 64, "stages": [)"
        R"({"group": 0, "num_layers": 3, "tp": 1, "dp": 2}, {"group": 0, "num_layers": 3, "tp": 1, "dp": 2}, {"group": 0, "num_layers": 3, "tp": 1, "dp": 2}, {"group": 0, "num_layers": 3, "tp": 1, "dp": 2},)"
        R"({"group": 1, "num_layers": 1, "tp": 1, "dp": 4}, {"group": 1, "num_layers": 1, "tp": 1, "dp": 4}, {"group": 1, "num_layers": 2, "tp": 1, "dp": 4}, {"group": 1, "num_layers": 1, "tp": 1, "dp": 4},)"
        R"({"group": 0, "num_layers": 3, "tp": 1, "dp": 2}, {"group": 0, "num_layers": 3, "tp": 1, "dp": 2}, {"group": 0, "num_layers": 1, "tp": 1, "dp": 4}]})",
        sc);
    const double target = estimate(sc, challenger, false).iteration_time_s;
    // three blocks: the A100 group as one whole node and the other's two halves. The whole search
    // takes about 67 s on one core; the plan is found within 3 s (the name keeps the test out of
    // the sanitizer run, tests/run_all.sh)
    SearchOptions o = quiet(1);
    o.group_blocks = 3;
    o.split_nodes = true;
    o.time_limit_s = 10;
    const SearchResult r = search(sc, o);
    REQUIRE(!r.plans.empty());
    CHECK(r.plans[0].iteration_time_s <= target * (1 + 1e-12));
    try {
        SearchOptions bad = quiet(1);
        bad.split_nodes = true;
        search(sc, bad);
        FAIL("split_nodes was accepted with one block per group");
    } catch (const InputError& e) {
        CHECK(std::string(e.what()).find("options.split_nodes") != std::string::npos);
        CHECK(std::string(e.what()).find("group_blocks") != std::string::npos);
    }
    CHECK(parse_search_options(Json::parse(R"({"group_blocks": 3, "split_nodes": true})")).split_nodes);
}
