// Expert parallelism as a search dimension (docs/search.md, "Expert parallelism"): the pruned search
// of random MoE scenarios returns the exhaustive top K over every expert grid; plans carry their
// grid; the search finds the plan a grid must have to fit.
#include <catch2/catch.hpp>

#include <random>
#include <string>

#include "poseidon/estimate.hpp"
#include "poseidon/scenario.hpp"
#include "poseidon/search.hpp"
#include "search_random.hpp"

using namespace poseidon;

using search_test::quiet;
using search_test::require_pruned_equals_exhaustive;

TEST_CASE("with the expert grid the pruned search returns the exhaustive top-K on random MoE scenarios", "[search][differential][moe][ep]") {
    int checked = 0, feasible = 0, with_ep = 0;
    std::int64_t pruned_evals = 0, exhaustive_evals = 0;
    const SearchOptions pruned = quiet(3), exhaustive = quiet(3, true);
    for (std::uint64_t seed = 7000; checked < 60; ++seed) {
        std::mt19937_64 rng(seed);
        // the random dense model made MoE: 4-16 experts of a quarter to the whole FFN width, top 1-2
        const Json j = search_test::random_moe_scenario(rng, seed, true);
        const int experts = j["model"]["num_experts"].get<int>();
        const Scenario sc = parse_scenario(j);
        if (search_space_size(sc, false).plans > 1e5) continue;
        INFO("seed " << seed << ": " << to_json(sc).dump());
        const SearchResult pr = require_pruned_equals_exhaustive(sc, pruned, exhaustive, pruned_evals, exhaustive_evals);
        for (const auto& e : pr.plans) {
            for (const auto& st : e.plan.stages) {
                REQUIRE(st.gpus() % (st.ep * st.etp) == 0);
                REQUIRE(experts % st.ep == 0);
            }
            with_ep += e.plan.stages[0].ep > 1;
        }
        feasible += !pr.plans.empty();
        ++checked;
    }
    // 60 scenarios, each searched once per expert grid, pruned and exhaustively
    CHECK(feasible >= 30);
    CHECK(with_ep > 0);
    CHECK(pruned_evals < exhaustive_evals);
}

TEST_CASE("grids searched in two rounds (a few nodes each, then the ones stopped whole) return the exhaustive top-K", "[search][differential][moe][ep]") {
    // every grid stopped after 512 tree nodes in the first round, where the default is a million:
    // most of these small searches take a second round, which the sweep's large shapes take
    SearchOptions pruned = quiet(3, false, 1), exhaustive = quiet(3, true, 1);
    pruned.grid_first_round_nodes = 256;
    SearchOptions in_turn = pruned;
    in_turn.grid_first_round_nodes = 0;
    std::int64_t pruned_evals = 0, exhaustive_evals = 0;
    int checked = 0, second_round = 0;
    for (std::uint64_t seed = 7000; checked < 40; ++seed) {
        std::mt19937_64 rng(seed);
        const Json j = search_test::random_moe_scenario(rng, seed, true);
        const Scenario sc = parse_scenario(j);
        if (search_space_size(sc, false).plans > 1e5) continue;
        INFO("seed " << seed << ": " << to_json(sc).dump());
        const SearchResult pr = require_pruned_equals_exhaustive(sc, pruned, exhaustive, pruned_evals, exhaustive_evals);
        // the grids in turn, as before the rounds: the same plans, bit for bit
        second_round += search_test::same_plans_other_walk(sc, pr, in_turn);
        ++checked;
    }
    // a search whose counts differ from the grids' in turn walked some grid twice (16 of the 40)
    CHECK(second_round >= 10);
}

TEST_CASE("order hints reorder the walk's micro-batch sizes, never its plans", "[search][differential][moe]") {
    // the grids' second round passes a grid its first round's plans as hints (search_grids.cpp;
    // the two-round test above runs them against the exhaustive search); here every size gets a
    // hint below any plan's key, the largest size first, and the plans stay the plain search's
    const SearchOptions plain = quiet(10, false, 1);
    int checked = 0;
    for (std::uint64_t seed = 7100; checked < 20; ++seed) {
        std::mt19937_64 rng(seed);
        const Scenario sc = parse_scenario(search_test::random_moe_scenario(rng, seed, true));
        if (search_space_size(sc, false).plans > 1e5) continue;
        INFO("seed " << seed << ": " << to_json(sc).dump());
        const SearchResult a = search(sc, plain);
        REQUIRE(a.stats.complete);
        SearchOptions hinted = plain;
        const std::int64_t B = sc.training.global_batch_size;
        for (std::int64_t mbs = 1; mbs <= B; ++mbs)
            if (B % mbs == 0) hinted.order_hints.push_back({mbs, B / mbs, 1e-12 * static_cast<double>(B - mbs + 1)});
        const SearchResult b = search(sc, hinted);
        REQUIRE(b.stats.complete);
        search_test::require_same_plans(a, b);
        ++checked;
    }
}

TEST_CASE("a model whose experts fit only when sharded gets a plan with ep > 1", "[search][moe][ep]") {
    // Mixtral 8x7B on 16 H100: 46.7 B parameters; ep 1 holds every expert on every GPU
    const Scenario sc = parse_scenario_text(R"({"model": "mixtral-8x7b", "cluster": "dgx-h100-16",
        "training": {"global_batch_size": 64, "sequence_parallel": true, "distributed_optimizer": true, "recompute": "full"}})");
    const SearchResult r = search(sc, quiet(3, false, 1));
    REQUIRE(!r.plans.empty());
    int max_ep = 1;
    for (const auto& st : r.plans[0].plan.stages) max_ep = std::max(max_ep, st.ep);
    CHECK(max_ep > 1);
    // the plan as found estimates to the same time
    CHECK(estimate(sc, r.plans[0].plan).iteration_time_s == Approx(r.plans[0].iteration_time_s).epsilon(1e-12));
    bool noted = false;
    // ep 1, 2, 4, 8, and with ep at the 8 experts, each expert over etp 2, 4 or 8 GPUs of a node
    for (const auto& n : r.stats.notes) noted = noted || n == "expert parallelism: 7 expert grids searched (ep x etp: 8x8, 8x4, 8x2, 8x1, 4x1, 2x1, 1x1), every stage of a plan on the same one";
    CHECK(noted);
}

TEST_CASE("expert tensor parallelism is searched where ep reaches the experts", "[search][moe][ep][etp]") {
    // Mixtral 8x22B (8 experts of 16,384) on 64 H100 with a long sequence: grids 8 x 2, 8 x 4 and
    // 8 x 8 join ep 1-8; every plan's stages hold whole grids, and the plan estimates as found.
    const Scenario sc = parse_scenario_text(R"({"model": {"preset": "mixtral-8x22b", "num_layers": 16}, "cluster": {"name": "h", "groups": [{"device": "h100-sxm5-80gb", "nodes": 8, "gpus_per_node": 8, "inter_node_bw_GBps": 400}]},
        "training": {"global_batch_size": 64, "sequence_parallel": true, "distributed_optimizer": true, "recompute": "full"}})");
    const SearchResult r = search(sc, quiet(3, false, 1));
    REQUIRE(!r.plans.empty());
    bool noted = false;
    for (const auto& n : r.stats.notes) noted = noted || n.find("(ep x etp: 8x8, 8x4, 8x2, 8x1, 4x1, 2x1, 1x1)") != std::string::npos;
    CHECK(noted);
    for (const auto& p : r.plans) {
        for (const auto& st : p.plan.stages) CHECK(st.gpus() % (st.ep * st.etp) == 0);
        CHECK(estimate(sc, p.plan).iteration_time_s == Approx(p.iteration_time_s).epsilon(1e-12));
    }
    // the same top 3 as the exhaustive search over the same grids
    const SearchResult x = search(sc, quiet(3, true, 1));
    REQUIRE(x.plans.size() == r.plans.size());
    for (std::size_t i = 0; i < r.plans.size(); ++i) CHECK(x.plans[i].iteration_time_s == Approx(r.plans[i].iteration_time_s).epsilon(1e-12));
}

TEST_CASE("stage sizes the expert grid does not divide are counted as 'expert grid', not memory", "[search][moe][ep]") {
    // Mixtral 8x7B (8 experts) on 16 H100: ep 8 does not divide stages of 1, 2 or 4 GPUs, ep 4 not
    // those of 1 or 2: refused where the options are built, with their own reason
    const Scenario sc = parse_scenario_text(R"({"model": "mixtral-8x7b", "cluster": "dgx-h100-16",
        "training": {"global_batch_size": 64, "sequence_parallel": true, "distributed_optimizer": true, "recompute": "full"}})");
    const SearchResult r = search(sc, quiet(3, false, 1));
    REQUIRE(!r.plans.empty());
    const auto it = r.stats.infeasible.find("expert grid");
    REQUIRE(it != r.stats.infeasible.end());
    CHECK(it->second > 0);
    // every stage of every plan returned holds a whole number of expert grids
    for (const auto& p : r.plans)
        for (const auto& st : p.plan.stages) CHECK(st.gpus() % (st.ep * st.etp) == 0);
}
