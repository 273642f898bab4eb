// The critical-path breakdown (docs/model.md, "Breakdown"): its parts sum to the iteration time,
// and on cases whose answer is known by hand they take the hand-derived values.
#include <catch2/catch.hpp>

#include <vector>

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
    // The steady state runs on stage 1: all of its work lies on the path except its second
    // warm-up forward F(1,1) (3.1-5.1), which runs while the path goes through stage 2
    // (F(2,0) 3.2-4.2, B(2,0) 4.2-6.2, send to 6.3, where B(1,0) starts).
    CHECK(b.compute_s + b.tp_comm_s == Approx(m * 6.0 - 2.0));
    CHECK(b.tp_comm_s == Approx(m * 1.5 - 0.5));
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
