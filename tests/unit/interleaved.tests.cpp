// Interleaved 1F1B (docs/model.md, "Interleaved 1F1B"): Megatron's order, the closed form on equal
// stages, the graph-free walk against an explicit longest path, the in-flight count, and plans.
#include <catch2/catch.hpp>

#include <algorithm>
#include <map>
#include <random>
#include <set>
#include <tuple>
#include <vector>

#include "poseidon/dag.hpp"
#include "poseidon/error.hpp"
#include "poseidon/estimate.hpp"
#include "poseidon/json_util.hpp"
#include "poseidon/scenario.hpp"

using namespace poseidon;

namespace {

StageTimes times(double f, double b, double sf = 0, double sb = 0) {
    StageTimes t;
    t.forward_s = f;
    t.backward_s = b;
    t.send_forward_s = sf;
    t.send_backward_s = sb;
    return t;
}

// The longest path of the interleaved DAG built explicitly (nodes and edges as in docs/model.md),
// by relaxing edges in a topological order found with Kahn's algorithm.
double explicit_longest_path(const std::vector<StageTimes>& chunks, const std::vector<StageTimes>& stages, int V, std::int64_t m, int group = 0) {
    const int p = static_cast<int>(stages.size());
    const std::int64_t PV = static_cast<std::int64_t>(p) * V;
    // node ids: F(v,j), B(v,j), SF(v,j), SB(v,j), DP(s), barrier, OPT(s)
    auto F = [&](std::int64_t v, std::int64_t j) { return v * m + j; };
    auto B = [&](std::int64_t v, std::int64_t j) { return PV * m + v * m + j; };
    auto SF = [&](std::int64_t v, std::int64_t j) { return 2 * PV * m + v * m + j; };
    auto SB = [&](std::int64_t v, std::int64_t j) { return 3 * PV * m + v * m + j; };
    const std::int64_t base = 4 * PV * m, N = base + 2 * p + 1;
    std::vector<double> dur(N, 0.0);
    std::vector<std::vector<std::int64_t>> succ(N);
    for (std::int64_t v = 0; v < PV; ++v)
        for (std::int64_t j = 0; j < m; ++j) {
            dur[F(v, j)] = chunks[v].forward_s;
            dur[B(v, j)] = chunks[v].backward_s;
            dur[SF(v, j)] = chunks[v].send_forward_s;
            dur[SB(v, j)] = chunks[v].send_backward_s;
            if (v + 1 < PV) {
                succ[F(v, j)].push_back(SF(v, j));
                succ[SF(v, j)].push_back(F(v + 1, j));
            } else {
                succ[F(v, j)].push_back(B(v, j));
            }
            if (v > 0) {
                succ[B(v, j)].push_back(SB(v, j));
                succ[SB(v, j)].push_back(B(v - 1, j));
            }
        }
    for (int s = 0; s < p; ++s) {
        std::vector<ChunkPass> order;
        interleaved_order(s, p, V, m, order, group);
        std::int64_t prev = -1, prev_sf = -1, prev_sb = -1;
        for (const ChunkPass& u : order) {
            const std::int64_t v = static_cast<std::int64_t>(u.chunk) * p + s;
            const std::int64_t node = u.forward ? F(v, u.micro_batch) : B(v, u.micro_batch);
            if (prev >= 0) succ[prev].push_back(node);
            prev = node;
            if (u.forward && v + 1 < PV) {
                if (prev_sf >= 0) succ[prev_sf].push_back(SF(v, u.micro_batch));
                prev_sf = SF(v, u.micro_batch);
            }
            if (!u.forward && v > 0) {
                if (prev_sb >= 0) succ[prev_sb].push_back(SB(v, u.micro_batch));
                prev_sb = SB(v, u.micro_batch);
            }
        }
        dur[base + s] = stages[s].dp_sync_s;
        dur[base + p + 1 + s] = stages[s].optimizer_s;
        succ[prev].push_back(base + s);
        succ[base + s].push_back(base + p);
        succ[base + p].push_back(base + p + 1 + s);
    }
    std::vector<int> indeg(N, 0);
    for (const auto& l : succ)
        for (auto v : l) ++indeg[v];
    std::vector<double> start(N, 0.0);
    std::vector<std::int64_t> ready;
    for (std::int64_t u = 0; u < N; ++u)
        if (indeg[u] == 0) ready.push_back(u);
    double best = 0;
    std::size_t seen = 0;
    while (!ready.empty()) {
        const std::int64_t u = ready.back();
        ready.pop_back();
        ++seen;
        const double fin = start[u] + dur[u];
        best = std::max(best, fin);
        for (auto v : succ[u]) {
            start[v] = std::max(start[v], fin);
            if (--indeg[v] == 0) ready.push_back(v);
        }
    }
    REQUIRE(seen == static_cast<std::size_t>(N));  // acyclic
    return best;
}

}  // namespace

TEST_CASE("interleaved order: every chunk pass once, each forward before its backward", "[interleaved]") {
    for (int p : {2, 3, 4, 8})
        for (int V : {2, 3, 4})
            for (std::int64_t k : {1, 2, 5}) {
                const std::int64_t m = k * p;
                for (int s = 0; s < p; ++s) {
                    std::vector<ChunkPass> order;
                    interleaved_order(s, p, V, m, order);
                    INFO("p=" << p << " V=" << V << " m=" << m << " s=" << s);
                    REQUIRE(order.size() == static_cast<std::size_t>(2 * m * V));
                    std::set<std::tuple<int, std::int64_t, bool>> seen;
                    std::map<std::pair<int, std::int64_t>, std::size_t> fwd_at;
                    for (std::size_t i = 0; i < order.size(); ++i) {
                        const auto& u = order[i];
                        CHECK(u.chunk >= 0);
                        CHECK(u.chunk < V);
                        CHECK(u.micro_batch < m);
                        CHECK(seen.insert({u.chunk, u.micro_batch, u.forward}).second);
                        if (u.forward)
                            fwd_at[{u.chunk, u.micro_batch}] = i;
                        else
                            CHECK(fwd_at.count({u.chunk, u.micro_batch}) == 1);
                    }
                }
            }
}

TEST_CASE("interleaved 1F1B on equal stages with free communication: (m + (p-1)/V)(f+b)", "[interleaved]") {
    for (int p : {2, 4, 8})
        for (int V : {2, 3, 4})
            for (std::int64_t k : {1, 2, 4}) {
                const std::int64_t m = k * p;
                const double f = 1.0, b = 2.0;  // per stage; a chunk takes 1/V of it
                std::vector<StageTimes> chunks(static_cast<std::size_t>(p) * V, times(f / V, b / V)), stages(p, times(0, 0));
                const double t = interleaved_iteration_time(chunks, stages, V, m);
                INFO("p=" << p << " V=" << V << " m=" << m);
                CHECK(t == Approx((static_cast<double>(m) + (p - 1.0) / V) * (f + b)).epsilon(1e-12));
                CHECK(closed_form_time_s(std::vector<StageTimes>(p, times(f, b)), m, V) == Approx(t).epsilon(1e-12));
            }
}

TEST_CASE("interleaved walk equals the explicit DAG's longest path on random pipelines", "[interleaved]") {
    std::mt19937_64 rng(20261201);
    std::uniform_real_distribution<double> u(0.1, 2.0), c(0.0, 0.5);
    for (int trial = 0; trial < 300; ++trial) {
        const int p = 2 + static_cast<int>(rng() % 5), V = 2 + static_cast<int>(rng() % 3);
        const std::int64_t m = p * (1 + static_cast<std::int64_t>(rng() % 4));
        std::vector<StageTimes> chunks, stages;
        for (int v = 0; v < p * V; ++v) chunks.push_back(times(u(rng), u(rng), c(rng), c(rng)));
        for (int s = 0; s < p; ++s) {
            StageTimes t;
            t.dp_sync_s = c(rng);
            t.optimizer_s = c(rng);
            stages.push_back(t);
        }
        // every other trial runs the order in micro-batch groups of G in [p, m] (not only divisors of m)
        const int G = trial % 2 ? p + static_cast<int>(rng() % (m - p + 1)) : 0;
        INFO("trial " << trial << " p=" << p << " V=" << V << " m=" << m << " G=" << G);
        const double walk = interleaved_iteration_time(chunks, stages, V, m, G);
        CHECK(walk == Approx(explicit_longest_path(chunks, stages, V, m, G)).epsilon(1e-12));
        const DagResult r = evaluate_interleaved_dag(chunks, stages, V, m, true, G);
        CHECK(r.iteration_time_s == walk);
        const Breakdown& bd = r.breakdown;
        CHECK(bd.compute_s + bd.bubble_s + bd.tp_comm_s + bd.pp_comm_s + bd.dp_comm_s + bd.optimizer_s + bd.ep_comm_s == Approx(walk).epsilon(1e-9));
    }
}

TEST_CASE("interleaved in-flight passes: the first stage holds 1 + (p-1)/(pV) of the 1F1B activations", "[interleaved][memory]") {
    for (int p : {2, 4, 8})
        for (int V : {2, 4}) {
            const std::int64_t m = 4 * p;
            const double ratio = static_cast<double>(interleaved_in_flight(0, p, V, m)) / V / p;  // chunks of 1/V of the stage vs p micro-batches
            CHECK(ratio == Approx(1.0 + (p - 1.0) / (p * V)));
        }
}

TEST_CASE("interleaved plans: Megatron's constraints are checked, V = 1 stays 1F1B", "[interleaved][validation]") {
    const Scenario sc = parse_scenario_text(R"({"model": "gpt3-1.7b", "training": {"global_batch_size": 64}, "cluster": "dgx-a100-1"})");
    auto plan = [&](const char* text) { return parse_plan_text(text, sc); };
    CHECK_THROWS_WITH(plan(R"({"micro_batch_size": 8, "num_micro_batches": 8, "schedule": "1f1b", "virtual_stages": 2,
                              "stages": [{"group": 0, "num_layers": 12, "tp": 1, "dp": 4}, {"group": 0, "num_layers": 12, "tp": 1, "dp": 4}]})"),
                      Catch::Contains("plan.virtual_stages: 2 is not allowed with schedule \"1f1b\""));
    CHECK_THROWS_WITH(plan(R"({"micro_batch_size": 16, "num_micro_batches": 4, "schedule": "interleaved-1f1b", "virtual_stages": 5,
                              "stages": [{"group": 0, "num_layers": 12, "tp": 1, "dp": 4}, {"group": 0, "num_layers": 12, "tp": 1, "dp": 4}]})"),
                      Catch::Contains("plan.stages[0].num_layers: 12 blocks do not split into 5 chunks"));
    CHECK_THROWS_WITH(plan(R"({"micro_batch_size": 8, "num_micro_batches": 8, "schedule": "interleaved-1f1b", "virtual_stages": 2,
                              "stages": [{"group": 0, "num_layers": 8, "tp": 1, "dp": 2}, {"group": 0, "num_layers": 8, "tp": 1, "dp": 2},
                                         {"group": 0, "num_layers": 8, "tp": 1, "dp": 2}]})"),
                      Catch::Contains("plan.num_micro_batches: 8 is not a multiple of the 3 stages"));
    const Plan one = plan(R"({"micro_batch_size": 8, "num_micro_batches": 8,
                              "stages": [{"group": 0, "num_layers": 12, "tp": 1, "dp": 4}, {"group": 0, "num_layers": 12, "tp": 1, "dp": 4}]})");
    Plan two = one;
    two.schedule = "interleaved-1f1b";
    two.virtual_stages = 2;
    const Estimate e1 = estimate(sc, one), e2 = estimate(sc, two);
    // Interleaving shrinks the bubble: the same work in less time, with more sends and more
    // activations held on the first stage.
    CHECK(e2.iteration_time_s < e1.iteration_time_s);
    CHECK(e2.stages[0].memory.activations_GiB > e1.stages[0].memory.activations_GiB);
    CHECK(e2.stages[0].chunk_times.size() == 2);
    CHECK(to_json(two)["virtual_stages"] == 2);
    CHECK(!to_json(one).contains("virtual_stages"));
}

TEST_CASE("with full recompute an interleaved stage holds its chunks' checkpoints and one re-materialised block", "[interleaved][memory]") {
    // llama2-7b (s = h = 4096, f = 11008, 32 heads), bf16, b = 1, TP 4 without SP, 2 stages of 16
    // blocks, m = 16. Per block and micro-batch: the checkpoint 2 s b h = 0.03125 GiB; the block
    // re-materialised in the backward (Korthikanti et al. 2022 with flash attention, and no dropout
    // masks: Llama trains without dropout): 8 s b h + (8 s b h + 6 s b f) / t + 4 a s b / t =
    // 235,536,384 B. Stage 0 also keeps the embedding's output, 2 s b h = 0.03125 GiB per
    // micro-batch in flight.
    const Scenario sc = parse_scenario_text(R"({"model":"llama2-7b","training":{"global_batch_size":16,"recompute":"full"},"cluster":"dgx-a100-1"})");
    const double block_GiB = 235536384.0 / 1073741824.0, checkpoint_GiB = 0.03125, embedding_GiB = 0.03125;
    for (const int V : {1, 2, 4}) {
        Plan plan;
        plan.micro_batch_size = 1;
        plan.num_micro_batches = 16;
        plan.schedule = V == 1 ? "1f1b" : "interleaved-1f1b";
        plan.virtual_stages = V;
        for (int s = 0; s < 2; ++s) {
            StagePlan st;
            st.num_layers = 16;
            st.replicas = {ReplicaSet{0, 4, 1, 1}};
            plan.stages.push_back(st);
        }
        // micro-batches in flight on stage 0: 1F1B's p = 2; interleaved, 2 (p - 1) + (V - 1) p + 1 passes over V chunks
        const double in_flight = V == 1 ? 2.0 : (2.0 + (V - 1) * 2.0 + 1.0) / V;
        const Estimate e = estimate(sc, plan);
        INFO("V = " << V);
        CHECK(e.stages[0].replica_costs[0].memory.activations_GiB == Approx(checkpoint_GiB * 16 * in_flight + embedding_GiB * in_flight + block_GiB).epsilon(1e-12));
    }
}
