// options.group_blocks 2-4 (docs/search.md, "The space", step 2): a group may also be used as
// several blocks of whole nodes, anywhere in the pipeline and each with its own stage size,
// searched as the union of the clusters with split groups.
#include <catch2/catch.hpp>

#include <algorithm>
#include <random>
#include <string>

#include "../../core/src/search_driver.hpp"
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

TEST_CASE("the splits of a cluster's groups and the parts they make", "[search][group_blocks]") {
    const Scenario sc = two_types();
    SearchOptions o;
    o.group_blocks = 2;
    // A100: whole or 1 + 1; T4: whole, 2 + 2 or 3 + 1; every combination, the cluster first
    const auto splits = detail::group_block_splits(sc, o);
    REQUIRE(splits.size() == 6);
    CHECK(splits[0] == detail::GroupSplit{{}, {}});
    o.node_counts = "all";  // T4 3 + 1 and 2 + 2 either way
    CHECK(detail::group_block_splits(sc, o).size() == 6);
    // three blocks: T4 also 2 + 1 + 1; four: also 1 + 1 + 1 + 1; the A100 group has two nodes
    o.group_blocks = 3;
    auto three = detail::group_block_splits(sc, o);
    CHECK(three.size() == 2 * 4);
    CHECK(std::count(three.begin(), three.end(), detail::GroupSplit{{}, {1, 1}}) == 1);
    o.group_blocks = 4;
    CHECK(detail::group_block_splits(sc, o).size() == 2 * 5);
    o.group_blocks = 1;
    CHECK(detail::group_block_splits(sc, o).size() == 1);
    std::vector<int> map;
    const Scenario part = detail::split_groups(sc, {{1}, {1}}, map);
    REQUIRE(part.cluster.groups.size() == 4);
    CHECK(map == std::vector<int>{0, 0, 1, 1});
    CHECK(part.cluster.groups[0].nodes == 1);
    CHECK(part.cluster.groups[2].nodes == 3);
    CHECK(part.cluster.groups[3].nodes == 1);
    CHECK(part.cluster.group_origin == map);
    const Scenario parts = detail::split_groups(sc, {{}, {1, 1}}, map);
    REQUIRE(parts.cluster.groups.size() == 4);
    CHECK(map == std::vector<int>{0, 1, 1, 1});
    CHECK(parts.cluster.groups[1].nodes == 2);
    CHECK(parts.cluster.groups[3].nodes == 1);
}

TEST_CASE("a plan on split groups costs what the same plan costs on the user's groups", "[search][group_blocks]") {
    // A100 part 1 -> T4 -> A100 part 2: the sends between the A100 parts' stages and the T4's cross
    // the inter-group link, and the parts are one group for it (group_origin)
    const Scenario sc = two_types();
    std::vector<int> map;
    const Scenario part = detail::split_groups(sc, {{1}, {}}, map);
    const std::string stages_split =
        R"([{"group": 0, "num_layers": 6, "tp": 1, "dp": 8}, {"group": 2, "num_layers": 6, "tp": 1, "dp": 8}, {"group": 2, "num_layers": 6, "tp": 1, "dp": 8}, {"group": 1, "num_layers": 6, "tp": 2, "dp": 4}])";
    const std::string stages_user =
        R"([{"group": 0, "num_layers": 6, "tp": 1, "dp": 8}, {"group": 1, "num_layers": 6, "tp": 1, "dp": 8}, {"group": 1, "num_layers": 6, "tp": 1, "dp": 8}, {"group": 0, "num_layers": 6, "tp": 2, "dp": 4}])";
    for (const char* sched : {"", R"("schedule": "interleaved-1f1b", "virtual_stages": 2, )"}) {
        const std::string head = std::string(R"({"micro_batch_size": 16, "num_micro_batches": 16, )") + sched + R"("stages": )";
        const Estimate a = estimate(part, parse_plan_text(head + stages_split + "}", part), false);
        const Estimate b = estimate(sc, parse_plan_text(head + stages_user + "}", sc), false);
        INFO(sched);
        CHECK(a.iteration_time_s == b.iteration_time_s);
        CHECK(a.memory_fits == b.memory_fits);
    }
    // without group_origin the parts would be two groups: the send between them would take the
    // inter-group link
    Scenario apart = part;
    apart.cluster.group_origin.clear();
    const std::string two_a100 = R"({"micro_batch_size": 16, "num_micro_batches": 16, "stages": [{"group": 0, "num_layers": 12, "tp": 1, "dp": 8}, {"group": 1, "num_layers": 12, "tp": 1, "dp": 8}]})";
    CHECK(estimate(apart, parse_plan_text(two_a100, apart), false).iteration_time_s >
          estimate(part, parse_plan_text(two_a100, part), false).iteration_time_s);
}

TEST_CASE("with two blocks per group the pruned search returns the exhaustive top-K on random scenarios", "[search][differential][group_blocks]") {
    int checked = 0, feasible = 0, better = 0;
    std::int64_t pruned_evals = 0, exhaustive_evals = 0;
    SearchOptions pruned = quiet(3), exhaustive = quiet(3, true), one = quiet(1);
    pruned.group_blocks = exhaustive.group_blocks = 2;
    for (std::uint64_t seed = 11000; checked < 100; ++seed) {
        std::mt19937_64 rng(seed);
        Json j = random_scenario(rng);
        if (seed % 2 == 0) j["cluster"]["inter_group_bw_GBps"] = 2.0;
        Scenario sc = parse_scenario(j);
        if (search_space_size(sc, false, "any", "halving", 2).plans > 3e5) continue;
        INFO("seed " << seed << ": " << to_json(sc).dump());
        const SearchResult pr = require_pruned_equals_exhaustive(sc, pruned, exhaustive, pruned_evals, exhaustive_evals);
        if (!pr.plans.empty()) {
            ++feasible;
            // the wider space is never worse, and sometimes better
            // (or finds a plan where one block per group has none)
            better += wider_is_better(sc, pr, one);
        }
        ++checked;
    }
    INFO("feasible " << feasible << ", better than one block " << better << ", evaluations " << pruned_evals << " / " << exhaustive_evals);
    CHECK(feasible >= 60);
    CHECK(better >= 1);
    CHECK(pruned_evals * 3 < exhaustive_evals);
}

TEST_CASE("with three and four blocks per group the pruned search returns the exhaustive top-K on random scenarios", "[search][differential][group_blocks]") {
    for (int blocks : {3, 4}) {
        int checked = 0, better = 0;
        std::int64_t pruned_evals = 0, exhaustive_evals = 0;
        SearchOptions pruned = quiet(3), exhaustive = quiet(3, true), two = quiet(1);
        pruned.group_blocks = exhaustive.group_blocks = blocks;
        two.group_blocks = 2;
        for (std::uint64_t seed = 12000; checked < 30; ++seed) {
            std::mt19937_64 rng(seed);
            Json j = random_scenario(rng);
            if (seed % 2 == 0) j["cluster"]["inter_group_bw_GBps"] = 2.0;
            Scenario sc = parse_scenario(j);
            // only clusters where a group has nodes enough for a third block
            bool three = false;
            for (const auto& g : sc.cluster.groups) three = three || g.nodes >= 3;
            if (!three || search_space_size(sc, false, "any", "halving", blocks).plans > 3e5) continue;
            INFO("blocks " << blocks << ", seed " << seed << ": " << to_json(sc).dump());
            // the group of three or more nodes adds splits (1 + 1 + the rest) that two blocks lack
            CHECK(search_space_size(sc, false, "any", "halving", blocks).plans > search_space_size(sc, false, "any", "halving", 2).plans);
            const SearchResult pr = require_pruned_equals_exhaustive(sc, pruned, exhaustive, pruned_evals, exhaustive_evals);
            better += wider_is_better(sc, pr, two);
            ++checked;
        }
        INFO("blocks " << blocks << ": better than two blocks " << better << ", evaluations " << pruned_evals << " / " << exhaustive_evals);
        CHECK(pruned_evals * 3 < exhaustive_evals);
        WARN("blocks " << blocks << ": better than two blocks on " << better << " of 30");
    }
}

TEST_CASE("the exhaustive search with two blocks per group evaluates the plans search_space_size counts", "[search][space][group_blocks]") {
    const Scenario sc = parse_scenario_text(
        R"({"model":"tiny-8l","training":{"global_batch_size":4},"cluster":{"name":"small","groups":[)"
        R"({"device":"a100-sxm4-80gb","nodes":2,"gpus_per_node":2,"inter_node_bw_GBps":25},{"device":"v100-sxm2-32gb","nodes":4,"gpus_per_node":1,"inter_node_bw_GBps":25}]}})");
    SearchOptions o = quiet(1, true);
    o.group_blocks = 2;
    o.schedule = "1f1b";
    const SearchResult r = search(sc, o);
    const SpaceSize sz = search_space_size(sc, false, "1f1b", "halving", 2);
    REQUIRE(r.stats.complete);
    CHECK(static_cast<double>(r.stats.configurations) == sz.configurations);
    CHECK(static_cast<double>(r.stats.evaluated) == sz.plans);
    CHECK(sz.plans > search_space_size(sc, false, "1f1b", "halving", 1).plans);
    // three blocks: the V100 group (4 nodes) also 2 + 1 + 1
    o.group_blocks = 3;
    const SearchResult r3 = search(sc, o);
    const SpaceSize sz3 = search_space_size(sc, false, "1f1b", "halving", 3);
    REQUIRE(r3.stats.complete);
    CHECK(static_cast<double>(r3.stats.evaluated) == sz3.plans);
    CHECK(sz3.plans > sz.plans);
}

TEST_CASE("two blocks per group: the issue's A100 + T4 cluster gets a faster plan, and the option is checked", "[search][group_blocks]") {
    const Scenario sc = two_types();
    SearchOptions one = quiet(1), two = quiet(1);
    two.group_blocks = 2;
    const SearchResult a = search(sc, one), b = search(sc, two);
    REQUIRE(!a.plans.empty());
    REQUIRE(!b.plans.empty());
    CHECK(b.plans[0].iteration_time_s < a.plans[0].iteration_time_s);
    CHECK(b.scores[0] == b.plans[0].iteration_time_s);
    // its stages of group 0 differ in size (a block of each part)
    int smallest = 1 << 30, largest = 0;
    for (const auto& st : b.plans[0].plan.stages)
        if (st.replicas[0].group == 0) {
            smallest = std::min(smallest, st.replicas[0].tp * st.replicas[0].count);
            largest = std::max(largest, st.replicas[0].tp * st.replicas[0].count);
        }
    CHECK(smallest < largest);
    CHECK(parse_search_options(Json::parse(R"({"group_blocks": 2})")).group_blocks == 2);
    CHECK(parse_search_options(Json::parse(R"({"group_blocks": 4})")).group_blocks == 4);
    try {
        parse_search_options(Json::parse(R"({"group_blocks": 5})"));
        FAIL("accepted group_blocks 5");
    } catch (const InputError& e) {
        CHECK(std::string(e.what()).find("options.group_blocks") != std::string::npos);
    }
}

TEST_CASE("two blocks per group, half-node blocks and mixed stages are searched whole: a slice with any is refused by name", "[search][group_blocks][mixed]") {
    const Scenario sc = two_types();
    SearchOptions o = quiet(1);
    o.shard_count = 2;
    o.group_blocks = 2;
    for (const char* field : {"options.group_blocks", "options.mixed_stages", "options.split_nodes"}) {
        if (std::string(field) == "options.mixed_stages") {
            o.group_blocks = 1;
            o.mixed_stages = true;
        }
        if (std::string(field) == "options.split_nodes") {
            o.mixed_stages = false;
            o.split_nodes = true;
        }
        try {
            search_shard(sc, o);
            FAIL("a slice was run with " << field);
        } catch (const InputError& e) {
            CHECK(std::string(e.what()).find(field) != std::string::npos);
        }
    }
}
