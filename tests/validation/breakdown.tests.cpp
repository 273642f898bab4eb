// The breakdown (docs/model.md, "Breakdown"): its parts sum to the iteration time, compute and TP
// are the bottleneck stage's busy time, and on cases whose answer is known by hand they take the
// hand-derived values.
#include <catch2/catch.hpp>

#include <algorithm>
#include <random>
#include <vector>

#include "poseidon/cost_model.hpp"
#include "poseidon/dag.hpp"
#include "poseidon/estimate.hpp"
#include "poseidon/scenario.hpp"

using namespace poseidon;

namespace {
StageTimes stage(double f, double b) {
    StageTimes t;
    t.forward_s = f;
    t.backward_s = b;
    return t;
}
double sum(const Breakdown& b) { return b.compute_s + b.bubble_s + b.tp_comm_s + b.pp_comm_s + b.dp_comm_s + b.optimizer_s; }
}  // namespace

TEST_CASE("breakdown of equal stages: compute m(f+b), bubble (S-1)(f+b)", "[breakdown]") {
    DagWorkspace ws;
    for (int S : {1, 2, 4, 8})
        for (int m : {1, 3, 8, 32}) {
            std::vector<StageTimes> st(S, stage(1, 2));
            auto r = evaluate_dag(st, m, true, ws);
            INFO("S=" << S << " m=" << m);
            CHECK(sum(r.breakdown) == Approx(r.iteration_time_s).epsilon(1e-12));
            CHECK(r.breakdown.compute_s == Approx(3.0 * m));
            CHECK(r.breakdown.bubble_s == Approx(3.0 * (S - 1)).margin(1e-12));
        }
}

TEST_CASE("breakdown of a slow middle stage names it the bottleneck", "[breakdown]") {
    DagWorkspace ws;
    std::vector<StageTimes> st{stage(1, 2), stage(2, 4), stage(1, 2)};
    st[1].forward_tp_comm_s = 0.5;
    st[1].backward_tp_comm_s = 1.0;
    for (auto& t : st) {
        t.send_forward_s = 0.1;
        t.send_backward_s = 0.1;
    }
    st[0].dp_sync_s = 0.3;
    st[1].dp_sync_s = 0.6;
    st[2].dp_sync_s = 0.3;
    for (auto& t : st) t.optimizer_s = 0.05;
    const int m = 10;
    auto r = evaluate_dag(st, m, true, ws);
    const auto& b = r.breakdown;
    CHECK(b.bottleneck_stage == 1);
    CHECK(sum(b) == Approx(r.iteration_time_s).epsilon(1e-12));
    // All of stage 1's work: compute and TP are its busy time m(f+b), whatever path is critical
    // (the critical-path walk used to leave out its F(1,1), which runs while the path goes through
    // stage 2, and reported m*6-2 and m*1.5-0.5).
    CHECK(b.compute_s + b.tp_comm_s == Approx(m * 6.0));
    CHECK(b.tp_comm_s == Approx(m * 1.5));
    CHECK(b.dp_comm_s > 0);
    CHECK(b.optimizer_s == Approx(0.05));
    CHECK(b.pp_comm_s > 0);
    for (double x : {b.compute_s, b.bubble_s, b.tp_comm_s, b.pp_comm_s, b.dp_comm_s, b.optimizer_s}) CHECK(x >= 0);
}

TEST_CASE("breakdown of real estimates sums to the iteration time", "[breakdown]") {
    const char* scenario = R"({"model":"gpt3-39.1b","cluster":"megatron-a100-3072",
        "training":{"global_batch_size":512,"recompute":"full","flash_attention":false}})";
    Scenario sc = parse_scenario_text(scenario);
    for (int pp : {1, 2, 4, 8}) {
        Plan plan;
        int dp = 4;
        plan.micro_batch_size = dp * 2;
        plan.num_micro_batches = 512 / plan.micro_batch_size;
        for (int p = 0; p < pp; ++p) {
            StagePlan s;
            s.num_layers = 48 / pp;
            s.replicas.push_back({0, 8, dp, 2});
            plan.stages.push_back(s);
        }
        Estimate e = estimate(sc, plan, true);
        INFO("pp=" << pp);
        const auto& b = e.dag.breakdown;
        CHECK(sum(b) == Approx(e.iteration_time_s).epsilon(1e-9));
        CHECK(b.tp_comm_s > 0);
        CHECK(b.dp_comm_s > 0);
        CHECK(b.optimizer_s > 0);
        if (pp == 1) {
            CHECK(b.bubble_s == Approx(0).margin(1e-12));
            CHECK(b.pp_comm_s == 0);
        } else {
            CHECK(b.pp_comm_s > 0);
            CHECK(b.bubble_s > 0);
        }
    }
}

// Stages whose first and last differ. The 1F1B orders (S = 3, m = 4): stage 0 F0 F1 F2 B0 F3 B1 B2
// B3, stage 1 F0 F1 B0 F2 B1 F3 B2 B3, stage 2 F0 B0 F1 B1 F2 B2 F3 B3; no communication. The
// schedules below are derived by hand, node by node (start = max(previous node on the stage, input)).
TEST_CASE("breakdown of a slow first stage: its idle time only is bubble", "[breakdown]") {
    DagWorkspace ws;
    std::vector<StageTimes> st{stage(2, 4), stage(1, 2), stage(1, 2)};
    for (auto& t : st) {
        t.dp_sync_s = 0.5;
        t.optimizer_s = 0.25;
    }
    auto r = evaluate_dag(st, 4, true, ws);
    const auto& b = r.breakdown;
    // Stage 0 runs F0-F2 in [0,6], waits for the gradient of micro-batch 0 (B(2,0) 4-6, B(1,0)
    // 6-8), then runs B0 F3 B1 B2 B3 back to back in [8,26]; sync to 26.5, step to 26.75.
    CHECK(r.iteration_time_s == Approx(26.75));
    CHECK(b.bottleneck_stage == 0);
    CHECK(b.compute_s == Approx(24));  // the critical-path walk reported 20 (and bubble 6)
    CHECK(b.bubble_s == Approx(2));
    CHECK(b.dp_comm_s == Approx(0.5));
    CHECK(b.optimizer_s == Approx(0.25));
    CHECK(b.tp_comm_s == 0);
    CHECK(b.pp_comm_s == 0);
}

TEST_CASE("breakdown of a slow last stage: fill and drain are bubble", "[breakdown]") {
    DagWorkspace ws;
    std::vector<StageTimes> st{stage(1, 2), stage(1, 2), stage(2, 4)};
    auto r = evaluate_dag(st, 4, true, ws);
    const auto& b = r.breakdown;
    // Stage 2 waits for F(0,0) 0-1 and F(1,0) 1-2, runs without a gap in [2,26]; then the drain
    // B(1,3) 26-28 and B(0,3) 28-30 ends the iteration.
    CHECK(r.iteration_time_s == Approx(30));
    CHECK(b.bottleneck_stage == 2);
    CHECK(b.compute_s == Approx(24));
    CHECK(b.bubble_s == Approx(6));
}

TEST_CASE("breakdown of slow first and last stages, a fast middle", "[breakdown]") {
    DagWorkspace ws;
    SECTION("the first stage is the busiest (the reported kind of plan)") {
        std::vector<StageTimes> st{stage(2, 4), stage(1, 2), stage(2, 3.9)};
        auto r = evaluate_dag(st, 4, true, ws);
        const auto& b = r.breakdown;
        // Stage 0 (busy 24; stage 2: 23.6) runs F0-F2 in [0,6] and waits to 10.9 (B(2,0) 5-8.9,
        // B(1,0) 8.9-10.9); B0 10.9-14.9, F3 -16.9, B1 -20.9; waits to 22.7 (B(1,2) 20.7-22.7);
        // B2 -26.7; waits to 28.6 (B(1,3) 26.6-28.6); B3 -32.6. Idle: 4.9 + 1.8 + 1.9.
        CHECK(r.iteration_time_s == Approx(32.6));
        CHECK(b.bottleneck_stage == 0);
        CHECK(b.compute_s == Approx(24));  // the critical-path walk reported 6 (and bubble 26.6)
        CHECK(b.bubble_s == Approx(8.6));
    }
    SECTION("the last stage is the busiest") {
        std::vector<StageTimes> st{stage(2, 4), stage(1, 2), stage(2, 5)};
        auto r = evaluate_dag(st, 4, true, ws);
        const auto& b = r.breakdown;
        // Stage 2 (busy 28) waits for F(0,0) 0-2 and F(1,0) 2-3, runs without a gap in [3,31];
        // the drain B(1,3) 31-33, B(0,3) 33-37 follows.
        CHECK(r.iteration_time_s == Approx(37));
        CHECK(b.bottleneck_stage == 2);
        CHECK(b.compute_s == Approx(28));
        CHECK(b.bubble_s == Approx(9));
    }
    SECTION("many micro-batches: compute stays the busiest stage's work") {
        std::vector<StageTimes> st{stage(2, 4), stage(1, 2), stage(1, 2), stage(1.9, 4)};
        const int m = 16;
        auto r = evaluate_dag(st, m, true, ws);
        const auto& b = r.breakdown;
        CHECK(b.bottleneck_stage == 0);
        CHECK(b.compute_s == Approx(6.0 * m));  // the critical-path walk reported 6
        CHECK(b.bubble_s == Approx(r.iteration_time_s - 6.0 * m));
        CHECK(b.bubble_s < 0.1 * r.iteration_time_s);
    }
}

TEST_CASE("breakdown with TP, sends, sync and step: the waits split by what is waited for", "[breakdown]") {
    DagWorkspace ws;
    StageTimes a = stage(2, 4), c = stage(1, 2);
    a.forward_tp_comm_s = 0.5;
    a.backward_tp_comm_s = 1;
    a.send_forward_s = 0.5;
    a.dp_sync_s = 0.3;
    a.optimizer_s = 0.1;
    c.send_backward_s = 0.5;
    c.dp_sync_s = 0.2;
    c.optimizer_s = 0.1;
    std::vector<StageTimes> st{a, c};
    auto r = evaluate_dag(st, 2, true, ws);
    const auto& b = r.breakdown;
    // Stage 0: F0 0-2, F1 2-4; stage 1: F0 2.5-3.5, B0 3.5-5.5, its gradient send 5.5-6; stage 0
    // waits in [4,6]: 1.5 of B(1,0) (its part after 4) and 0.5 of the send. B0 6-10, B1 10-14
    // (stage 1's B1 6.5-8.5 and send 8.5-9 hide behind it), sync 14-14.3, step 14.3-14.4.
    CHECK(r.iteration_time_s == Approx(14.4));
    CHECK(b.bottleneck_stage == 0);
    CHECK(b.compute_s == Approx(9));
    CHECK(b.tp_comm_s == Approx(3));
    CHECK(b.bubble_s == Approx(1.5));
    CHECK(b.pp_comm_s == Approx(0.5));
    CHECK(b.dp_comm_s == Approx(0.3));
    CHECK(b.optimizer_s == Approx(0.1));
}

TEST_CASE("breakdown of random pipelines: exact parts, the busiest stage's work", "[breakdown]") {
    DagWorkspace ws;
    std::mt19937 rng(20240610);
    auto uni = [&](double lo, double hi) { return std::uniform_real_distribution<double>(lo, hi)(rng); };
    for (int trial = 0; trial < 600; ++trial) {
        const int S = std::uniform_int_distribution<int>(1, 8)(rng);
        const int m = std::uniform_int_distribution<int>(1, 24)(rng);
        const bool comm = trial % 3 != 0;
        std::vector<StageTimes> st;
        for (int s = 0; s < S; ++s) {
            StageTimes t = stage(uni(0.1, 2), 0);
            t.backward_s = t.forward_s * uni(1, 3);
            t.forward_tp_comm_s = t.forward_s * uni(0, 0.4);
            t.backward_tp_comm_s = t.backward_s * uni(0, 0.4);
            if (comm) {
                t.send_forward_s = uni(0, 0.5);
                t.send_backward_s = uni(0, 0.5);
            }
            t.dp_sync_s = uni(0, 2);
            t.optimizer_s = uni(0, 0.5);
            st.push_back(t);
        }
        if (trial % 5 == 0 && S > 1) st[S - 1] = st[0];  // ties: the lowest index is the bottleneck
        auto r = evaluate_dag(st, m, true, ws);
        const auto& b = r.breakdown;
        INFO("trial " << trial << " S=" << S << " m=" << m);
        const double T = r.iteration_time_s;
        CHECK(sum(b) == Approx(T).epsilon(1e-12));
        for (double x : {b.compute_s, b.bubble_s, b.tp_comm_s, b.pp_comm_s, b.dp_comm_s, b.optimizer_s}) CHECK(x >= 0);
        int bn = 0;
        double opt = 0;
        for (int s = 0; s < S; ++s) {
            if (st[s].forward_s + st[s].backward_s > st[bn].forward_s + st[bn].backward_s) bn = s;
            opt = std::max(opt, st[s].optimizer_s);
        }
        REQUIRE(b.bottleneck_stage == bn);
        const StageTimes& t = st[bn];
        CHECK(b.compute_s + b.tp_comm_s == Approx(m * (t.forward_s + t.backward_s)));
        CHECK(b.tp_comm_s == Approx(m * (t.forward_tp_comm_s + t.backward_tp_comm_s)));
        CHECK(b.optimizer_s == Approx(opt));
        // Before the bottleneck's last backward ends (at Tb) it is busy or waiting (bubble, sends);
        // sync and step come after it.
        double Tb = 0;
        for (const auto& ev : r.timeline)
            if (ev.stage == bn && ev.kind == NodeKind::backward) Tb = std::max(Tb, ev.end_s);
        CHECK(b.bubble_s + b.pp_comm_s >= Tb - m * (t.forward_s + t.backward_s) - 1e-9 * T);
        CHECK(b.dp_comm_s + b.optimizer_s <= T - Tb + 1e-9 * T);
        if (!comm && S > 1) CHECK(b.pp_comm_s == 0);
    }
}

TEST_CASE("a blocking stack's folded sends count as pp_comm of the bottleneck stage, not compute", "[breakdown]") {
    // Two stages f = 1, b = 2, sends of 0.5 each way, m = 4. Folded: stage 0 F = 1.5, B = 2;
    // stage 1 F = 1, B = 2.5; both are busy 14 s, so b = stage 0 (lowest index): compute
    // 4 x (1 + 2) = 12 and its own folded sends 4 x 0.5 = 2 of pp_comm.
    std::vector<StageTimes> st{stage(1, 2), stage(1, 2)};
    st[0].send_forward_s = 0.5;
    st[1].send_backward_s = 0.5;
    Stack blocking;
    blocking.p2p_blocking = true;
    fold_blocking_sends(blocking, st);
    CHECK(st[0].forward_s == 1.5);
    CHECK(st[0].send_forward_s == 0);
    DagWorkspace ws;
    auto r = evaluate_dag(st, 4, true, ws);
    CHECK(r.breakdown.bottleneck_stage == 0);
    CHECK(r.breakdown.compute_s == Approx(12));
    CHECK(r.breakdown.pp_comm_s >= 2 - 1e-12);
    CHECK(sum(r.breakdown) == Approx(r.iteration_time_s).epsilon(1e-12));
}
