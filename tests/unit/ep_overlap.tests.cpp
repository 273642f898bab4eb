// training.overlap_moe_expert_parallel_comm (docs/model.md, "Expert-parallel overlap across
// micro-batches"): Megatron-Core's combined 1F1B as DAG structure. A single stage's order by hand,
// the interleaved walk's merged pairs against the plain walk they bound, what a block saves, the
// checks, the memory of the extra warm-up, and pruned = exhaustive with it.
#include <catch2/catch.hpp>

#include <random>
#include <string>

#include "poseidon/combined_1f1b.hpp"
#include "poseidon/dag.hpp"
#include "poseidon/estimate.hpp"
#include "poseidon/json_util.hpp"
#include "poseidon/scenario.hpp"
#include "poseidon/search.hpp"
#include "search_random.hpp"

using namespace poseidon;

using search_test::quiet;
using search_test::require_pruned_equals_exhaustive;

TEST_CASE("a merged block takes the longer of exchange and compute in each of its four phases", "[ep_overlap][model]") {
    // forward: 3 ms attention, 4 ms experts, 2 ms exchange; backward: 6, 8, 2 (no slowdown)
    const BlockPass f{3e-3, 4e-3, 2e-3}, b{6e-3, 8e-3, 2e-3};
    // phases: max(1, 3) + max(1, 4) + max(1, 4 + 4) + max(1, 6) = 21 ms against 25 ms apart
    CHECK(ep_pair_save_s(f, b, 0.0) == Approx(4e-3));
    // an exchange longer than the compute beside it stays exposed: 10 ms each way
    const BlockPass fl{1e-3, 1e-3, 20e-3}, bl{1e-3, 1e-3, 20e-3};
    // max(10, 1) + max(10, 0.5) + max(10, 1.5) + max(10, 1) = 40 against 44
    CHECK(ep_pair_save_s(fl, bl, 0.0) == Approx(4e-3));
    // the compute beside an exchange slows by kappa x the shorter: 21 + 0.1 x (1 + 1 + 1 + 1)
    CHECK(ep_pair_save_s(f, b, 0.1) == Approx(25e-3 - 21.4e-3));
    CHECK(ep_pair_save_s({}, {}, 0.0) == 0.0);
}

TEST_CASE("a single stage's combined 1F1B: F0, (F1 B0), ..., B(m-1) by hand", "[ep_overlap][dag]") {
    // 10 blocks, F = 1.0 s, B = 2.0 s, each merged pair saves 0.03 s per block (0.3 s)
    StageTimes t;
    t.forward_s = 1.0;
    t.backward_s = 2.0;
    t.dp_sync_s = 0.25;
    t.optimizer_s = 0.125;
    t.pair_layers = 10;
    t.pair_save_per_layer_s = 0.03;
    reserve_pair_savings(t, true);
    CHECK(t.forward_s == Approx(0.85));
    CHECK(t.first_forward_extra_s == Approx(0.15));
    DagWorkspace ws;
    for (std::int64_t m : {1, 2, 7}) {
        const std::vector<StageTimes> one{t};
        // F + (m - 1) (F + B - 0.3) + B, then the sync and the step
        const double expect = 1.0 + static_cast<double>(m - 1) * (3.0 - 0.3) + 2.0 + 0.25 + 0.125;
        CHECK(dag_iteration_time(one, m, ws) == Approx(expect));
        CHECK(evaluate_dag(one, m, true, ws).iteration_time_s == Approx(expect));
    }
}

namespace {

// p x V chunks of random times with merged pairs, and the same chunks for the plain walk.
std::vector<StageTimes> random_chunks(std::mt19937_64& rng, int p, int V, bool merged) {
    std::uniform_real_distribution<double> u(0.5, 2.0), w(0.0, 0.2);
    std::vector<StageTimes> c(static_cast<std::size_t>(p) * V);
    for (std::size_t v = 0; v < c.size(); ++v) {
        StageTimes& t = c[v];
        t.forward_s = u(rng);
        t.backward_s = 2 * u(rng);
        t.send_forward_s = v + 1 < c.size() ? w(rng) : 0.0;
        t.send_backward_s = v > 0 ? w(rng) : 0.0;
        t.pair_layers = 1 + static_cast<int>(rng() % 4);
        t.pair_save_per_layer_s = 0.1 * std::min(t.forward_s, t.backward_s) / t.pair_layers * static_cast<double>(rng() % 6);
        if (merged) reserve_pair_savings(t, false);
    }
    return c;
}

}  // namespace

TEST_CASE("the interleaved walk with merged pairs never deadlocks and is bounded below by the plain walk of its reduced passes",
          "[ep_overlap][dag][interleaved]") {
    // The search's bounds are bounds of the plain interleaved DAG on the chunks' times; with
    // merged pairs those times are the passes less their reserves, and the merged DAG (one more
    // warm-up, each steady forward merged with the backward after it) must never be shorter.
    std::mt19937_64 rng(42);
    int runs = 0, shorter = 0;
    for (int p = 2; p <= 5; ++p)
        for (int V = 2; V <= 4; ++V)
            for (int k = 1; k <= 3; ++k)
                for (int G : {0, p + 1}) {
                    const std::int64_t m = static_cast<std::int64_t>(p) * k;
                    if (G > m) continue;
                    const std::vector<StageTimes> merged = random_chunks(rng, p, V, true);
                    std::vector<StageTimes> plain = merged;
                    for (auto& t : plain) t.merged_pairs = false, t.pair_reserve_s = 0;
                    std::vector<StageTimes> stages(p);
                    for (auto& s : stages) s.dp_sync_s = 0.1, s.optimizer_s = 0.05;
                    const double tm = interleaved_iteration_time(merged, stages, V, m, G);
                    const double tp = interleaved_iteration_time(plain, stages, V, m, G);
                    INFO("p " << p << ", V " << V << ", m " << m << ", group " << G);
                    REQUIRE(std::isfinite(tm));
                    CHECK(tp <= tm * (1 + 1e-12));
                    // the detailed walk gives the same time, and draws every pass once
                    const DagResult d = evaluate_interleaved_dag(merged, stages, V, m, true, G);
                    CHECK(d.iteration_time_s == tm);
                    std::size_t passes = 0;
                    for (const auto& e : d.timeline) passes += e.kind == NodeKind::forward || e.kind == NodeKind::backward;
                    CHECK(passes == 2 * merged.size() * static_cast<std::size_t>(m));
                    ++runs;
                    shorter += tp < tm;
                }
    CHECK(runs >= 60);
    CHECK(shorter > 0);
}

TEST_CASE("a merged pair of no saving runs its two passes back to back", "[ep_overlap][dag][interleaved]") {
    // With nothing saved, merging only delays: each pair waits for both inputs and sends both
    // outputs at its end, so the iteration is never shorter than the plain order's.
    std::mt19937_64 rng(7);
    for (int rep = 0; rep < 20; ++rep) {
        std::vector<StageTimes> c = random_chunks(rng, 3, 2, false);
        std::vector<StageTimes> plain = c;
        for (auto& t : c) t.pair_save_per_layer_s = 0, reserve_pair_savings(t, false);
        std::vector<StageTimes> stages(3);
        CHECK(interleaved_iteration_time(c, stages, 2, 6) >= interleaved_iteration_time(plain, stages, 2, 6) * (1 - 1e-12));
    }
}

namespace {

// Qwen3 30B-A3B cut to 8 blocks on 16 H100s, training extended by `extra` (JSON members).
Scenario qwen(const std::string& extra) {
    Json j = parse_json(R"({"model": {"preset": "qwen3-30b-a3b", "num_layers": 8, "seq_length": 2048},
  "cluster": {"name": "16 H100", "groups": [{"device": "h100-sxm5-80gb", "nodes": 2, "gpus_per_node": 8, "inter_node_bw_GBps": 50}]},
  "training": {"global_batch_size": 64, "recompute": "selective", "distributed_optimizer": true}})",
                        "test");
    const Json more = parse_json("{" + extra + "}", "extra");
    for (const auto& [k, v] : more.items()) j["training"][k] = v;
    return parse_scenario(j);
}

Plan qwen_plan(int pp, int vp) {
    Plan p;
    p.micro_batch_size = 16 / pp;  // one sample per replica
    p.num_micro_batches = 4 * pp;
    p.schedule = vp > 1 ? "interleaved-1f1b" : "1f1b";
    p.virtual_stages = vp;
    for (int s = 0; s < pp; ++s) {
        StagePlan st;
        st.num_layers = 8 / pp;
        st.ep = 8;
        st.replicas.push_back({0, 1, 16 / pp, 1});
        p.stages.push_back(st);
    }
    return p;
}

}  // namespace

TEST_CASE("the combined 1F1B shortens an expert-parallel iteration and holds one more micro-batch", "[ep_overlap][estimate]") {
    const Scenario off = qwen(""), on = qwen(R"("overlap_moe_expert_parallel_comm": true)");
    for (const auto& [pp, vp] : {std::pair{1, 1}, std::pair{2, 2}}) {
        const Plan plan = qwen_plan(pp, vp);
        INFO("pp " << pp << ", vp " << vp);
        const Estimate a = estimate(off, plan, false), b = estimate(on, plan, false);
        REQUIRE(a.feasible);
        REQUIRE(b.feasible);
        CHECK(b.iteration_time_s < a.iteration_time_s);
        // the next forward's activations beside the previous backward's (one more warm-up pass)
        CHECK(b.stages[0].memory.activations_GiB > a.stages[0].memory.activations_GiB);
    }
    CHECK(to_json(on)["training"]["overlap_moe_expert_parallel_comm"] == true);
    CHECK_FALSE(to_json(off)["training"].contains("overlap_moe_expert_parallel_comm"));
}

TEST_CASE("the combined 1F1B's conditions are named", "[ep_overlap][errors]") {
    const Scenario on = qwen(R"("overlap_moe_expert_parallel_comm": true)");
    try {
        estimate(on, qwen_plan(2, 1), false);
        FAIL("a 1F1B pipeline was accepted");
    } catch (const InputError& e) {
        CHECK_THAT(e.what(), Catch::Contains("plan.schedule") && Catch::Contains("interleaved-1f1b"));
    }
    CHECK_THROWS_WITH(qwen(R"("overlap_moe_expert_parallel_comm": true, "recompute": "full")"),
                      Catch::Contains("scenario.training.overlap_moe_expert_parallel_comm") && Catch::Contains("full"));
    // full recomputation chosen by a plan, or offered to the search, meets the same rule
    const std::string full_plan = R"({"micro_batch_size": 8, "num_micro_batches": 8, "recompute": "full", "stages": [{"group": 0, "num_layers": 8, "tp": 1, "dp": 8, "ep": 8}]})";
    CHECK_THROWS_WITH(parse_plan_text(full_plan, on), Catch::Contains("plan.recompute: \"full\" is not allowed with training.overlap_moe_expert_parallel_comm true"));
    SearchOptions any = quiet(3, false, 1);
    any.recomputes = {Recompute::none, Recompute::selective, Recompute::full};
    const SearchResult searched = search(on, any);
    REQUIRE_FALSE(searched.plans.empty());
    for (const auto& e : searched.plans) CHECK(e.plan.recompute != Recompute::full);
    CHECK(std::any_of(searched.stats.notes.begin(), searched.stats.notes.end(),
                      [](const std::string& n) { return n.rfind("full recomputation not searched: training.overlap_moe_expert_parallel_comm", 0) == 0; }));
    SearchOptions only_full = any;
    only_full.recomputes = {Recompute::full};
    CHECK_THROWS_WITH(search(on, only_full), Catch::Contains("options.recompute: full recomputation only"));
    CHECK_THROWS_WITH(qwen(R"("overlap_moe_expert_parallel_comm": true, "moe_shared_expert_overlap": true)"),
                      Catch::Contains("scenario.training.overlap_moe_expert_parallel_comm") && Catch::Contains("moe_shared_expert_overlap"));
    const Scenario dense = parse_scenario_text(
        R"({"model": "gpt3-1.7b", "cluster": "mixed-h100-a100-4090", "training": {"global_batch_size": 64, "overlap_moe_expert_parallel_comm": true}})");
    const std::vector<std::string> notes = scenario_notes(dense);
    CHECK(std::any_of(notes.begin(), notes.end(), [](const std::string& n) { return n.find("overlap_moe_expert_parallel_comm changes nothing") != std::string::npos; }));
    // and the search's plans of it estimate: a 1F1B pipeline of a dense model is one (it was
    // refused at plan.schedule after the search had returned it)
    SearchOptions o = quiet(3, false, 1);
    o.schedule = "1f1b";
    const SearchResult r = search(dense, o);
    REQUIRE_FALSE(r.plans.empty());
    CHECK(r.plans[0].plan.stages.size() > 1);
    for (const auto& e : r.plans) CHECK(estimate(dense, e.plan, false).iteration_time_s == e.iteration_time_s);
}

TEST_CASE("with the combined 1F1B the pruned search returns the exhaustive top-K on random MoE scenarios", "[search][differential][moe][ep_overlap]") {
    int checked = 0, feasible = 0, pipelined = 0;
    std::int64_t pruned_evals = 0, exhaustive_evals = 0;
    SearchOptions pruned = quiet(3), exhaustive = quiet(3, true);
    for (std::uint64_t seed = 9100; checked < 60; ++seed) {
        std::mt19937_64 rng(seed);
        Json j = search_test::random_moe_scenario(rng, seed);
        if (j["training"].value("recompute", "") == "full") j["training"].erase("recompute");
        j["training"]["overlap_moe_expert_parallel_comm"] = true;
        const Scenario sc = parse_scenario(j);
        if (search_space_size(sc, false).plans > 1e5) continue;
        INFO("seed " << seed << ": " << to_json(sc).dump());
        const SearchResult pr = require_pruned_equals_exhaustive(sc, pruned, exhaustive, pruned_evals, exhaustive_evals);
        for (const auto& e : pr.plans) {
            // a pipeline only interleaved, and the score is estimate's
            if (e.plan.stages.size() > 1) REQUIRE(e.plan.schedule == "interleaved-1f1b");
            pipelined += e.plan.stages.size() > 1;
            REQUIRE(estimate(sc, e.plan, false).iteration_time_s == Approx(e.iteration_time_s).epsilon(1e-9));
        }
        feasible += !pr.plans.empty();
        ++checked;
    }
    CHECK(feasible >= 30);
    CHECK(pipelined > 0);
    CHECK(pruned_evals < exhaustive_evals);
}

TEST_CASE("with the combined 1F1B the exhaustive search evaluates exactly the plans search_space_size counts", "[search][space][ep_overlap]") {
    // tiny-8l made MoE (fits anywhere, so nothing is dropped for memory); a pipeline only interleaved
    Json j = parse_json(R"({"model": {"preset": "tiny-8l", "num_experts": 4, "moe_top_k": 1, "moe_ffn_hidden_size": 256},
                            "training": {"global_batch_size": 8}, "cluster": "demo-mixed-16"})",
                        "test");
    const Scenario plain = parse_scenario(j);
    j["training"]["overlap_moe_expert_parallel_comm"] = true;
    const Scenario sc = parse_scenario(j);
    const SearchResult r = search(sc, quiet(1, true));
    const SpaceSize sz = search_space_size(sc, false);
    REQUIRE(r.stats.complete);
    CHECK(static_cast<double>(r.stats.evaluated) == sz.plans);
    CHECK(std::any_of(r.stats.notes.begin(), r.stats.notes.end(), [](const std::string& n) { return n.find("runs only under interleaved 1F1B") != std::string::npos; }));
    CHECK(sz.plans < search_space_size(plain, false).plans);
}
