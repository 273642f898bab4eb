#include <catch2/catch.hpp>

#include <random>
#include <vector>

#include "poseidon/dag.hpp"

using namespace poseidon;

namespace {
StageTimes compute_only(double f, double b) {
    StageTimes t;
    t.forward_s = f;
    t.backward_s = b;
    return t;
}
}  // namespace

TEST_CASE("equal stages with free communication reduce to sum + (m-1) x max", "[dag][identity]") {
    DagWorkspace ws;
    for (int S : {1, 2, 3, 4, 8}) {
        for (int m : {1, 2, 3, 7, 16, 64}) {
            std::vector<StageTimes> st(S, compute_only(0.013, 0.029));
            double expected = S * 0.042 + (m - 1) * 0.042;
            INFO("S=" << S << " m=" << m);
            CHECK(dag_iteration_time(st, m, ws) == Approx(expected).epsilon(1e-12));
            CHECK(closed_form_time_s(st, m) == Approx(expected).epsilon(1e-12));
        }
    }
}

TEST_CASE("one stage is m x (f + b) plus gradient synchronisation and the optimizer step", "[dag][identity]") {
    DagWorkspace ws;
    StageTimes t = compute_only(0.1, 0.2);
    t.dp_sync_s = 0.05;
    t.optimizer_s = 0.01;
    std::vector<StageTimes> st{t};
    CHECK(dag_iteration_time(st, 10, ws) == Approx(10 * 0.3 + 0.05 + 0.01).epsilon(1e-12));
}

TEST_CASE("a slow first stage: the DAG gives the hand-derived 19, the closed form 21", "[dag][heterogeneous]") {
    // Stage 0: f=2, b=4; stage 1: f=1, b=2; m=3; 1F1B. Hand-derived schedule (docs/model.md):
    // s0: F0 0-2, F1 2-4, B0 5-9, F2 9-11, B1 11-15, B2 15-19
    // s1: F0 2-3, B0 3-5, F1 5-6, B1 6-8, F2 11-12, B2 12-14
    DagWorkspace ws;
    std::vector<StageTimes> st{compute_only(2, 4), compute_only(1, 2)};
    auto r = evaluate_dag(st, 3, true, ws);
    CHECK(r.iteration_time_s == Approx(19));
    CHECK(closed_form_time_s(st, 3) == Approx(21));
    // The timeline carries every F/B with the hand-derived start times.
    auto find = [&](int s, NodeKind k, int j) {
        for (const auto& e : r.timeline)
            if (e.stage == s && e.kind == k && e.micro_batch == j) return e.start_s;
        return -1.0;
    };
    CHECK(find(0, NodeKind::backward, 0) == Approx(5));
    CHECK(find(0, NodeKind::forward, 2) == Approx(9));
    CHECK(find(1, NodeKind::forward, 2) == Approx(11));
    CHECK(find(0, NodeKind::backward, 2) == Approx(15));
}

TEST_CASE("a slow last stage matches the closed form (the bottleneck runs back to back)", "[dag][heterogeneous]") {
    DagWorkspace ws;
    std::vector<StageTimes> st{compute_only(1, 2), compute_only(2, 4)};
    CHECK(dag_iteration_time(st, 3, ws) == Approx(21));
}

TEST_CASE("sends delay the dependent stage and overlap with compute elsewhere", "[dag][communication]") {
    DagWorkspace ws;
    StageTimes a = compute_only(1, 2), b = compute_only(1, 2);
    a.send_forward_s = 0.5;
    b.send_backward_s = 0.5;
    std::vector<StageTimes> st{a, b};
    // m = 1: F0(s0) 0-1, send 1-1.5, F0(s1) 1.5-2.5, B0(s1) 2.5-4.5, send 4.5-5, B0(s0) 5-7.
    CHECK(dag_iteration_time(st, 1, ws) == Approx(7));
}

TEST_CASE("neighbouring stages with sends lock into a two-micro-batch cycle; a deeper warm-up loosens it", "[dag][communication]") {
    // Stage 0's backward of micro-batch k waits for stage 1's; in 1F1B stage 0 then runs the
    // forward of k + 2, and stage 1 runs that forward and then the backward of k + 2. Per two
    // micro-batches the cycle takes both stages' F + B and both sends: (3 + 3 + 1) / 2 = 3.5 s per
    // micro-batch, where each stage alone needs 3 (docs/model.md, "Neighbouring stages").
    DagWorkspace ws;
    StageTimes a = compute_only(1, 2), b = compute_only(1, 2);
    a.send_forward_s = 0.5;
    b.send_backward_s = 0.5;
    const std::vector<StageTimes> two{a, b};
    CHECK(dag_iteration_time(two, 42, ws) - dag_iteration_time(two, 40, ws) == Approx(7).epsilon(1e-12));
    // A stage with no work between them (only its two sends each way) gives stage 0 one more
    // warm-up forward: the cycle now spans three micro-batches, (3 + 3 + 4 x 0.5) / 3 < 3, so each
    // stage runs back to back at 3 s per micro-batch although the path is longer.
    StageTimes empty = compute_only(0, 0);
    empty.send_forward_s = 0.5;
    empty.send_backward_s = 0.5;
    const std::vector<StageTimes> three{a, empty, b};
    CHECK(dag_iteration_time(three, 42, ws) - dag_iteration_time(three, 40, ws) == Approx(6).epsilon(1e-12));
    CHECK(dag_iteration_time(three, 40, ws) < dag_iteration_time(two, 40, ws));
}

TEST_CASE("the optimizer waits for every stage's gradient synchronisation (global norm)", "[dag][communication]") {
    DagWorkspace ws;
    StageTimes a = compute_only(1, 2), b = compute_only(1, 2);
    a.dp_sync_s = 10;  // stage 0 finishes last anyway; its sync dominates
    a.optimizer_s = 1;
    b.optimizer_s = 1;
    std::vector<StageTimes> st{a, b};
    // m = 1: stage 0's backward ends at 6, sync 6-16, then both optimizers 16-17.
    auto r = evaluate_dag(st, 1, true, ws);
    CHECK(r.iteration_time_s == Approx(17));
    for (const auto& e : r.timeline)
        if (e.kind == NodeKind::optimizer) CHECK(e.start_s == Approx(16));
}

TEST_CASE("the 1F1B order has warm-up forwards, alternation and drain", "[dag][schedule]") {
    std::vector<std::int64_t> order;
    one_f_one_b_order(0, 4, 6, order);  // warm-up min(S-s-1, m) = 3
    std::vector<std::int64_t> expected{0, 1, 2, 3, -1, 4, -2, 5, -3, -4, -5, -6};
    CHECK(order == expected);
    one_f_one_b_order(3, 4, 2, order);
    CHECK(order == std::vector<std::int64_t>{0, -1, 1, -2});
    one_f_one_b_order(0, 8, 2, order);  // fewer micro-batches than stages: all forwards first
    CHECK(order == std::vector<std::int64_t>{0, 1, -1, -2});
}

TEST_CASE("the critical-path breakdown sums to the iteration time", "[dag][breakdown]") {
    DagWorkspace ws;
    StageTimes a = compute_only(2, 4), b = compute_only(1, 2);
    a.forward_tp_comm_s = 0.5;
    a.send_forward_s = 0.25;
    b.send_backward_s = 0.25;
    a.dp_sync_s = 0.3;
    b.dp_sync_s = 0.2;
    a.optimizer_s = b.optimizer_s = 0.1;
    std::vector<StageTimes> st{a, b};
    auto r = evaluate_dag(st, 5, true, ws);
    const auto& d = r.breakdown;
    CHECK(d.bottleneck_stage == 0);
    CHECK(d.compute_s + d.bubble_s + d.tp_comm_s + d.pp_comm_s + d.dp_comm_s + d.optimizer_s + d.ep_comm_s == Approx(r.iteration_time_s).epsilon(1e-12));
    CHECK(d.optimizer_s == Approx(0.1));
    CHECK(d.dp_comm_s == Approx(0.3));
}

TEST_CASE("the DAG stays linear in stages x micro-batches", "[dag][scale]") {
    DagWorkspace ws;
    std::vector<StageTimes> st(64, compute_only(0.01, 0.02));
    CHECK(dag_iteration_time(st, 4096, ws) == Approx((64 + 4095) * 0.03).epsilon(1e-9));
}

TEST_CASE("early stopping on near-equal pipelines (the window bound's case) is exact below the cutoff", "[dag][search]") {
    // stages of one to three layers with small sends and many micro-batches: the search's
    // plateaus, where the window bound stops most evaluations after a few steady rounds
    std::mt19937_64 rng(11);
    std::uniform_real_distribution<double> u(0.0, 1.0);
    DagWorkspace ws;
    for (int n = 0; n < 400; ++n) {
        const int S = 2 + static_cast<int>(rng() % 40);
        const std::int64_t m = S + 4 + static_cast<std::int64_t>(rng() % 200);
        std::vector<StageTimes> st(S);
        const double send = n % 4 == 0 ? 0.0 : 0.05 * u(rng);
        for (auto& t : st) {
            const double layers = 1.0 + static_cast<double>(rng() % 3);
            t.forward_s = layers;
            t.backward_s = 2 * layers;
            t.send_forward_s = rng() % 8 == 0 ? 3 * send : send;
            t.send_backward_s = send;
            t.dp_sync_s = u(rng);
            t.optimizer_s = 0.1 * u(rng);
        }
        st.back().send_forward_s = 0;
        st.front().send_backward_s = 0;
        INFO("S=" << S << " m=" << m << " instance " << n);
        const double T = dag_iteration_time(st, m, ws);
        for (double f : {0.9, 0.999, 0.9999, 0.99999, 1.0, 1.00001, 1.0001, 1.01}) {
            const double below = dag_iteration_time_below(st, m, f * T, ws);
            if (T < f * T) REQUIRE(below == T);
            else REQUIRE(below >= f * T);
        }
    }
}

TEST_CASE("the search's graph-free sweep gives the explicit DAG's longest path bit for bit", "[dag][search]") {
    std::mt19937_64 rng(42);
    std::uniform_real_distribution<double> u(0.0, 1.0);
    DagWorkspace ws1, ws2;
    for (int n = 0; n < 3000; ++n) {
        const int S = 1 + static_cast<int>(rng() % 12);
        const std::int64_t m = 1 + static_cast<std::int64_t>(rng() % (n % 10 == 0 ? 200 : 24));
        std::vector<StageTimes> st(S);
        for (auto& t : st) {
            t.forward_s = u(rng);
            t.backward_s = rng() % 5 == 0 ? t.forward_s : 2 * u(rng);
            t.send_forward_s = rng() % 3 == 0 ? 0.0 : 0.3 * u(rng);   // free links too
            t.send_backward_s = rng() % 3 == 0 ? 0.0 : 0.3 * u(rng);
            t.dp_sync_s = u(rng);
            t.optimizer_s = 0.1 * u(rng);
        }
        INFO("S=" << S << " m=" << m << " instance " << n);
        const double T = evaluate_dag(st, m, true, ws2).iteration_time_s;  // the explicit graph walk
        REQUIRE(dag_iteration_time(st, m, ws1) == T);
        // early stopping: exact below the cutoff, never below the cutoff above it
        for (double f : {0.5, 0.9, 0.999, 1.0, 1.001, 1.5}) {
            const double below = dag_iteration_time_below(st, m, f * T, ws1);
            if (T < f * T) REQUIRE(below == T);
            else REQUIRE(below >= f * T);
        }
    }
}
