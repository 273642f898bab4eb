// The plan search (docs/search.md): the pruned search against the exhaustive reference,
// re-estimation, determinism, the time limit, cancellation, idle GPUs, the ridge walk and the
// JSON output.
#include <catch2/catch.hpp>

#include <chrono>
#include <cmath>
#include <random>
#include <set>

#include "poseidon/json_util.hpp"
#include "poseidon/scenario.hpp"
#include "../../core/src/search_topk.hpp"
#include "poseidon/search.hpp"
#include "search_random.hpp"

using namespace poseidon;

using search_test::close;
using search_test::quiet;
using search_test::random_scenario;
using search_test::require_pruned_equals_exhaustive;

TEST_CASE("the pruned search returns the exhaustive optimum and top-K times on 200 random scenarios", "[search][differential]") {
    // both spaces: one TP per group (the default) and TP per stage
    const bool per_stage = GENERATE(false, true);
    int checked = 0, feasible = 0;
    std::int64_t pruned_evals = 0, exhaustive_evals = 0;
    SearchOptions pruned = quiet(3), exhaustive = quiet(3, true);
    pruned.tp_per_stage = exhaustive.tp_per_stage = per_stage;
    for (std::uint64_t seed = 1; checked < 200; ++seed) {
        std::mt19937_64 rng(seed);
        Scenario sc = parse_scenario(random_scenario(rng));
        // keep the exhaustive reference affordable
        if (search_space_size(sc, per_stage).plans > 1e6) continue;
        INFO("TP per stage " << per_stage << ", seed " << seed << ": " << to_json(sc).dump());
        const SearchResult pr = require_pruned_equals_exhaustive(sc, pruned, exhaustive, pruned_evals, exhaustive_evals);
        if (!pr.plans.empty()) ++feasible;
        ++checked;
    }
    // most random scenarios have a feasible plan, and pruning does save work
    CHECK(feasible >= 150);
    CHECK(pruned_evals * 3 < exhaustive_evals);
}

TEST_CASE("returned plans re-estimate to the same time through their JSON", "[search]") {
    Scenario sc = parse_scenario_text(R"({"model":"gpt3-1.7b","training":{"global_batch_size":64},"cluster":"demo-mixed-16"})");
    auto r = search(sc, quiet(3));
    REQUIRE(r.plans.size() == 3);
    Json j = to_json(sc, r);
    for (std::size_t k = 0; k < 3; ++k) {
        Plan p = parse_plan(j["plans"][k]["plan"], sc);
        Estimate e = estimate(sc, p, false);
        CHECK(e.iteration_time_s == r.plans[k].iteration_time_s);
        CHECK(e.iteration_time_s == r.scores[k]);
    }
    // best first: by time, ties (a tie bucket) by the plan (docs/search.md, "Results")
    for (std::size_t k = 1; k < 3; ++k) CHECK(r.plans[k - 1].iteration_time_s <= poseidon::detail::tie_last(r.plans[k].iteration_time_s));
}

TEST_CASE("the search is deterministic", "[search]") {
    // one thread: plans and every count; several: the plans (their counts depend on timing)
    Scenario sc = parse_scenario_text(R"({"model":"gpt3-1.7b","training":{"global_batch_size":128},"cluster":"mixed-a100-a10-t4"})");
    auto a = search(sc, quiet(5, false, 1));
    auto b = search(sc, quiet(5, false, 1));
    auto c = search(sc, quiet(5, false, 4));
    REQUIRE(a.plans.size() == b.plans.size());
    REQUIRE(a.plans.size() == c.plans.size());
    for (std::size_t k = 0; k < a.plans.size(); ++k) {
        CHECK(a.plans[k].plan == b.plans[k].plan);
        CHECK(a.plans[k].plan == c.plans[k].plan);
    }
    CHECK(a.stats.evaluated == b.stats.evaluated);
    CHECK(a.stats.pruned == b.stats.pruned);
    CHECK(a.stats.infeasible == b.stats.infeasible);
    CHECK(a.stats.configurations == b.stats.configurations);
    CHECK(a.stats.threads == 1);
}

TEST_CASE("the time limit is honoured and reported as incomplete", "[search][time]") {
    Scenario sc = parse_scenario_text(R"({"model":"gpt3-1.7b","training":{"global_batch_size":64},"cluster":"demo-mixed-16"})");
    SearchOptions o = quiet(3, true);  // the exhaustive search takes far longer than the limit
    o.time_limit_s = 0.3;
    const auto t0 = std::chrono::steady_clock::now();
    auto r = search(sc, o);
    const double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    CHECK(took < 0.3 + 0.25);
    CHECK_FALSE(r.stats.complete);
    CHECK_FALSE(r.stats.cancelled);
    CHECK(!r.plans.empty());  // the best so far
    CHECK(to_json(sc, r)["stats"]["complete"] == false);
}

TEST_CASE("on_progress reports and can cancel the search", "[search][time]") {
    Scenario sc = parse_scenario_text(R"({"model":"gpt3-1.7b","training":{"global_batch_size":64},"cluster":"demo-mixed-16"})");
    SearchOptions o = quiet(3, true);
    int calls = 0;
    bool saw_best = false;
    o.on_progress = [&](const SearchProgress& p) {
        ++calls;
        saw_best = saw_best || p.best != nullptr;
        return p.evaluated < 1000;
    };
    auto r = search(sc, o);
    CHECK(calls > 0);
    CHECK(saw_best);
    CHECK(r.stats.cancelled);
    CHECK_FALSE(r.stats.complete);
    CHECK(r.stats.evaluated < 50000);
}

TEST_CASE("leaving a slow, badly connected group idle is found", "[search][idle]") {
    // Two A100 nodes plus one node of a slow GPU behind a 0.05 GB/s link: using it only slows
    // the pipeline down, so the best plan leaves it idle.
    const char* text = R"({
      "model": {"name": "m", "num_layers": 12, "hidden_size": 1024, "num_attention_heads": 8, "vocab_size": 32000, "seq_length": 1024},
      "training": {"global_batch_size": 16},
      "cluster": {"name": "c", "groups": [
        {"device": "a100-sxm4-80gb", "nodes": 2, "gpus_per_node": 4, "inter_node_bw_GBps": 25},
        {"device": {"name": "slow", "peak_tflops": 8, "memory_GiB": 8, "memory_bw_GBps": 300, "intra_node_bw_GBps": 8},
         "nodes": 1, "gpus_per_node": 4, "inter_node_bw_GBps": 0.05}]}})";
    Scenario sc = parse_scenario_text(text);
    auto r = search(sc, quiet(1));
    REQUIRE(r.plans.size() == 1);
    CHECK(r.plans[0].num_gpus == 8);
    for (const auto& st : r.plans[0].plan.stages) CHECK(st.replicas[0].group == 0);
    auto ex = search(sc, quiet(1, true));
    REQUIRE(ex.plans.size() == 1);
    CHECK(close(ex.plans[0].iteration_time_s, r.plans[0].iteration_time_s));
    // plans that do use the slow group exist and fit, and are slower
    Plan with_slow = parse_plan(Json::parse(R"({"micro_batch_size": 4, "num_micro_batches": 4, "stages": [
        {"group": 0, "num_layers": 10, "tp": 1, "dp": 4}, {"group": 0, "num_layers": 1, "tp": 1, "dp": 4},
        {"group": 1, "num_layers": 1, "tp": 1, "dp": 4}]})"), sc);
    Estimate e = estimate(sc, with_slow, false);
    CHECK(e.memory_fits);
    CHECK(e.iteration_time_s > r.plans[0].iteration_time_s);
    // the same cluster with the slow group on a normal link and a normal GPU uses all 12 GPUs
    Json fast = Json::parse(text);
    fast["cluster"]["groups"][1]["inter_node_bw_GBps"] = 25;
    fast["cluster"]["groups"][1]["device"] = "a100-sxm4-80gb";
    auto rf = search(parse_scenario(fast), quiet(1));
    REQUIRE(rf.plans.size() == 1);
    CHECK(rf.plans[0].num_gpus == 12);
}

TEST_CASE("no feasible plan: empty result with reasons", "[search]") {
    const char* text = R"({
      "model": "gpt3-175b", "training": {"global_batch_size": 8},
      "cluster": {"name": "c", "groups": [{"device": "t4-16gb", "nodes": 1, "gpus_per_node": 2, "inter_node_bw_GBps": 4}]}})";
    Scenario sc = parse_scenario_text(text);
    auto r = search(sc, quiet(3));
    CHECK(r.plans.empty());
    CHECK(r.stats.infeasible.count("memory"));
    Json j = to_json(sc, r);
    CHECK(j["plans"].empty());
    CHECK(j["stats"]["infeasible"]["memory"].get<long long>() > 0);
}

TEST_CASE("the ridge walk finds the best split of a configuration with few evaluations", "[search][ridge]") {
    Scenario sc = parse_scenario_text(R"({"model":"gpt3-1.7b","training":{"global_batch_size":64},"cluster":"mixed-a100-a10-t4"})");
    // three stages: the A100 node, the A10 nodes, the T4 nodes
    Plan p = parse_plan(Json::parse(R"({"micro_batch_size": 8, "num_micro_batches": 8, "stages": [
        {"group": 0, "num_layers": 8, "tp": 1, "dp": 8}, {"group": 1, "num_layers": 8, "tp": 1, "dp": 8},
        {"group": 2, "num_layers": 8, "tp": 1, "dp": 8}]})"), sc);
    RidgeReport rep = ridge_report(sc, p, 1);
    REQUIRE(rep.points.size() == 253);  // C(23, 2)
    CHECK(close(rep.best_time_s, rep.exhaustive_best_time_s));
    double best = INFINITY;
    for (const auto& pt : rep.points) best = std::min(best, pt.iteration_time_s);
    CHECK(close(best, rep.best_time_s));
    CHECK(rep.ridge_evaluations * 10 < rep.exhaustive_evaluations);
    // the walk evaluated a handful of splits, all of them feasible ones
    int visited = 0;
    for (const auto& pt : rep.points)
        if (pt.visited) {
            ++visited;
            CHECK(std::isfinite(pt.iteration_time_s));
        }
    CHECK(visited == rep.ridge_evaluations);
}

TEST_CASE("plan --json carries plans, baselines and stats", "[search][json]") {
    Scenario sc = parse_scenario_text(R"({"model":"gpt3-1.7b","training":{"global_batch_size":64},"cluster":"demo-mixed-16"})");
    SearchOptions o;
    o.top_k = 2;
    auto r = search(sc, o);
    Json j = to_json(sc, r);
    REQUIRE(j["plans"].size() == 2);
    CHECK(j["plans"][0].contains("timeline"));
    CHECK_FALSE(j["plans"][1].contains("timeline"));
    // a listed breakdown is a real one: its parts sum to the iteration time
    for (const auto& p : j["plans"])
        if (p.contains("breakdown")) {
            double sum = 0;
            for (const char* part : {"compute_s", "bubble_s", "tp_comm_s", "pp_comm_s", "dp_comm_s", "optimizer_s", "ep_comm_s"}) sum += p["breakdown"][part].get<double>();
            CHECK(std::abs(sum - p["iteration_time_s"].get<double>()) <= 1e-6 * p["iteration_time_s"].get<double>());
        }
    for (const char* key : {"iteration_time_s", "tokens_per_s", "mfu", "stages", "plan"}) CHECK(j["plans"][0].contains(key));
    REQUIRE(j["baselines"].size() == 2);
    CHECK(j["baselines"][0]["name"] == "megatron-uniform");
    CHECK(j["baselines"][1]["name"] == "metis-heuristic");
    for (const auto& b : j["baselines"]) {
        CHECK(b.contains("description"));
        if (b["plan"].is_null()) {
            CHECK(b.contains("reason"));
        } else {
            // scored by the same model: never better than the search's best
            CHECK(b["speedup"].get<double>() >= 1.0 - 1e-9);
            // scored without a breakdown: none listed (it was all zeros), estimate gives it
            CHECK_FALSE(b.contains("breakdown"));
            Plan bp = parse_plan(b["plan"], sc);
            CHECK(close(estimate(sc, bp, false).iteration_time_s, b["iteration_time_s"].get<double>()));
        }
    }
    for (const char* key : {"evaluated", "pruned", "infeasible", "elapsed_s", "complete", "cancelled"}) CHECK(j["stats"].contains(key));
    CHECK(parse_search_options(Json::parse(R"({"top": 4, "exhaustive": true, "time_limit_s": 2})")).top_k == 4);
    CHECK_THROWS_AS(parse_search_options(Json::parse(R"({"topk": 4})")), InputError);
}

TEST_CASE("the exhaustive search enumerates exactly the configurations search_space_size counts", "[search][space]") {
    // a model that fits anywhere, so that no option is dropped for memory
    for (const char* cluster : {"demo-mixed-16", "metis-t4-a100"})
        for (bool per_group : {false, true}) {
            Scenario sc = parse_scenario_text(std::string(R"({"model":"tiny-8l","training":{"global_batch_size":8},"cluster":")") + cluster + "\"}");
            SearchOptions o = quiet(1, true);
            o.tp_per_stage = !per_group;
            const SearchResult r = search(sc, o);
            INFO(cluster << (per_group ? ", TP per group" : ", TP per stage"));
            REQUIRE(r.stats.complete);
            CHECK(static_cast<double>(r.stats.configurations) == search_space_size(sc, !per_group).configurations);
        }
}

TEST_CASE("TP chosen per stage finds plans that one TP per group cannot", "[search][space]") {
    // Found by scanning the differential generator: 14 V100-16GB, a 7-layer model; the best plan
    // gives the first stage of a group a higher TP degree than the stages after it (with TP
    // collectives that block their GEMMs, as they were when it was found).
    Scenario sc = parse_scenario_text(R"({"cluster":{"groups":[{"device":"v100-sxm2-16gb","gpus_per_node":4,"inter_node_bw_GBps":5.831655390651158,"nodes":3},{"device":"v100-sxm2-16gb","gpus_per_node":8,"inter_node_bw_GBps":19.358588444562645,"nodes":2},{"device":"v100-sxm2-16gb","gpus_per_node":1,"inter_node_bw_GBps":46.79598239135227,"nodes":4}],"name":"random"},"model":{"hidden_size":1024,"name":"random","num_attention_heads":4,"num_kv_heads":4,"num_layers":7,"seq_length":256,"vocab_size":4698},"training":{"global_batch_size":16,"stack":{"base":"megatron-core","tp_async_backward":false}}})");
    SearchOptions per_stage = quiet(1, false), per_group = quiet(1, false);
    per_stage.tp_per_stage = true;
    const SearchResult a = search(sc, per_stage), b = search(sc, per_group);
    REQUIRE(!a.plans.empty());
    REQUIRE(!b.plans.empty());
    CHECK(a.plans[0].iteration_time_s < b.plans[0].iteration_time_s);
    bool mixed = false;
    const auto& st = a.plans[0].plan.stages;
    for (std::size_t s = 1; s < st.size(); ++s)
        mixed = mixed || (st[s].replicas[0].group == st[s - 1].replicas[0].group && st[s].replicas[0].tp != st[s - 1].replicas[0].tp);
    CHECK(mixed);
    // and the exhaustive search over the per-stage space agrees
    SearchOptions ex = quiet(1, true);
    ex.tp_per_stage = true;
    const SearchResult e = search(sc, ex);
    CHECK(e.plans[0].iteration_time_s == a.plans[0].iteration_time_s);
}
