// Overlap as graph structure (docs/model.md, "Overlap"): the gradient bucket chain against the
// closed form it replaced, hand-computed chains for both overlap switches, the contention the drawn
// timeline obeys, and estimates with the bucket events on the dp resource. The longest-path
// comparison with the graph built node by node is in overlap_graph.tests.cpp.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "overlap_helpers.hpp"
#include "poseidon/cost_model.hpp"
#include "poseidon/dag.hpp"
#include "poseidon/estimate.hpp"
#include "poseidon/json_util.hpp"
#include "poseidon/scenario.hpp"

using namespace poseidon;

TEST_CASE("the bucket chain's end is the closed form of the exposed reduction", "[overlap][dag]") {
    // Without contention the chain ends max(d/K, d - (K-1)/K b) after the backward, for any d, b, K.
    std::mt19937_64 rng(7);
    std::uniform_real_distribution<double> u(0.0, 1.0);
    for (int n = 0; n < 2000; ++n) {
        const double b = u(rng), d = 3 * u(rng), params = 40e6 * (0.1 + 12 * u(rng));
        StageTimes t;
        t.backward_s = b;
        set_grad_buckets(t, d, b, params, 0.0);
        INFO("b=" << b << " d=" << d << " params=" << params);
        REQUIRE(t.last_backward_extra_s == 0.0);
        REQUIRE(overlap_test::close(t.dp_sync_s, overlapped_bucket_sync_s(d, b, params, 0.0)));
        // with contention the chain ends max(d - (K-1)/K b, d/K + kappa (K-1)/K d) after the
        // unslowed backward: the earlier closed form (exposed + kappa hidden) when d <= b; less
        // when the buckets are the longer, as the slowed sub-steps then hide behind them
        for (double kappa : {0.1, 0.5, 1.0}) {
            StageTimes c;
            set_grad_buckets(c, d, b, params, kappa);
            const int K = grad_bucket_count(params);
            const double after_backward = c.last_backward_extra_s + c.dp_sync_s;
            REQUIRE(overlap_test::close(after_backward, std::max(d - (K - 1) * (b / K), d / K + kappa * (K - 1) * (d / K))));
            if (d <= b)
                REQUIRE(overlap_test::close(after_backward, overlapped_bucket_sync_s(d, b, params, kappa)));
            else
                REQUIRE(after_backward <= overlapped_bucket_sync_s(d, b, params, kappa) * (1 + 1e-12));
        }
    }
}

TEST_CASE("gradient buckets by hand: compute-bound and communication-bound", "[overlap][dag]") {
    DagWorkspace ws;
    // One stage, one micro-batch: forward 1, backward 1, 80 M parameters (2 buckets), kappa 0.1.
    std::vector<StageTimes> st(1);
    st[0].forward_s = 1;
    st[0].backward_s = 1;
    // Sync 1 s: bucket 0 ready at 0.5 into the backward runs 0.5 s beside the second half, which
    // then takes 0.5 + 0.1 x 0.5 = 0.55; bucket 1 follows it: 1 + 1.05 + 0.5 = 2.55, the closed form's
    // 2 + max(0.5, 0.5) + 0.1 x 0.5.
    set_grad_buckets(st[0], 1.0, 1.0, 80e6, 0.1);
    CHECK(st[0].grad_buckets == 2);
    CHECK(st[0].last_backward_extra_s == Approx(0.05));
    CHECK(st[0].dp_sync_s == Approx(0.5));
    CHECK(dag_iteration_time(st, 1, ws) == Approx(2.55));
    DagResult r = evaluate_dag(st, 1, true, ws);
    std::vector<TimelineEvent> buckets;
    for (const auto& e : r.timeline) {
        CHECK(e.kind != NodeKind::dp_sync);  // the buckets replace it
        if (e.kind == NodeKind::grad_bucket) buckets.push_back(e);
    }
    REQUIRE(buckets.size() == 2);
    CHECK(buckets[0].bucket == 0);
    CHECK(buckets[0].start_s == Approx(1.5));
    CHECK(buckets[0].end_s == Approx(2.0));
    CHECK(buckets[1].start_s == Approx(2.05));
    CHECK(buckets[1].end_s == Approx(2.55));
    CHECK(std::string(resource_of(NodeKind::grad_bucket)) == "dp");
    CHECK(r.breakdown.dp_comm_s == Approx(0.55));  // slowdown 0.05 + exposed bucket 0.5
    CHECK(r.breakdown.compute_s == Approx(2.0));
    // Sync 4 s: communication-bound; the buckets run back to back from 0.5 into the backward, the
    // slowed second half (0.5 / 0.9) hides behind them: 1 + 0.5 + 4 = 5.5 (the closed form charged
    // the slowdown on top: 5.55).
    st[0] = StageTimes{};
    st[0].forward_s = 1;
    st[0].backward_s = 1;
    set_grad_buckets(st[0], 4.0, 1.0, 80e6, 0.1);
    CHECK(st[0].last_backward_extra_s == Approx(0.5 / 0.9 - 0.5));
    CHECK(dag_iteration_time(st, 1, ws) == Approx(5.5));
    r = evaluate_dag(st, 1, true, ws);
    CHECK(r.breakdown.dp_comm_s + r.breakdown.compute_s == Approx(5.5));
}

TEST_CASE("parameter all-gather buckets by hand", "[overlap][dag]") {
    DagWorkspace ws;
    // One stage, forward 1, backward 2, all-gather 1 s in 2 buckets, kappa 0.1: bucket 0 (0.5)
    // before the forward; the first half runs beside bucket 1: 0.5 + 0.05; the second half 0.5.
    // 0.5 + 1.05 + 2 = 3.55 = 3 + the closed form's 0.5 + 0.1 x 0.5.
    std::vector<StageTimes> st(1);
    st[0].forward_s = 1;
    st[0].backward_s = 2;
    set_param_gather(st[0], 1.0, 1.0, 80e6, 0.1);
    CHECK(st[0].first_forward_extra_s == Approx(0.05));
    CHECK(dag_iteration_time(st, 1, ws) == Approx(3.55));
    DagResult r = evaluate_dag(st, 1, true, ws);
    std::vector<TimelineEvent> g;
    for (const auto& e : r.timeline)
        if (e.kind == NodeKind::param_gather) g.push_back(e);
    REQUIRE(g.size() == 2);
    CHECK(g[0].start_s == 0.0);
    CHECK(g[0].end_s == Approx(0.5));
    CHECK(g[1].start_s == Approx(0.5));
    CHECK(g[1].end_s == Approx(1.0));
    CHECK(r.breakdown.dp_comm_s == Approx(0.55));
    // All-gather 3 s (communication-bound): each sub-step waits for its bucket: 1.5 + 1.5 + 0.5 + 2.
    st[0] = StageTimes{};
    st[0].forward_s = 1;
    st[0].backward_s = 2;
    set_param_gather(st[0], 3.0, 1.0, 80e6, 0.1);
    CHECK(dag_iteration_time(st, 1, ws) == Approx(5.5));
}

TEST_CASE("in a pipeline the slowed passes delay the neighbours: hand-computed", "[overlap][dag]") {
    DagWorkspace ws;
    // Two stages, one micro-batch, f = b = 1, free sends. Stage 1 reduces 1 s in 2 buckets beside
    // its backward (kappa 0.1): B(1,0) runs [2, 3.05], its buckets [2.5, 3] and [3.05, 3.55], and
    // the gradient reaches stage 0 at 3.05, not 3: B(0,0) ends 4.05 (the closed-form discount
    // left the backward alone: 4.0).
    std::vector<StageTimes> st(2);
    for (auto& t : st) t.forward_s = t.backward_s = 1;
    set_grad_buckets(st[1], 1.0, 1.0, 80e6, 0.1);
    CHECK(dag_iteration_time(st, 1, ws) == Approx(4.05));
    DagResult r = evaluate_dag(st, 1, true, ws);
    std::vector<double> ends;
    for (const auto& e : r.timeline)
        if (e.kind == NodeKind::grad_bucket) ends.push_back(e.end_s);
    REQUIRE(ends.size() == 2);
    CHECK(ends[0] == Approx(3.0));
    CHECK(ends[1] == Approx(3.55));
    // Stage 1 all-gathers 1 s in 2 buckets instead: bucket 0 [0, 0.5] is done when the activation
    // arrives at 1; F(1,0) dispatches bucket 1 at 1 and runs beside it, 1.05; then 2 backwards.
    st[1] = StageTimes{};
    st[1].forward_s = st[1].backward_s = 1;
    set_param_gather(st[1], 1.0, 1.0, 80e6, 0.1);
    CHECK(dag_iteration_time(st, 1, ws) == Approx(4.05));
    r = evaluate_dag(st, 1, true, ws);
    std::vector<TimelineEvent> g;
    for (const auto& e : r.timeline)
        if (e.kind == NodeKind::param_gather) g.push_back(e);
    REQUIRE(g.size() == 2);
    CHECK(g[0].end_s == Approx(0.5));
    CHECK(g[1].start_s == Approx(1.0));
    CHECK(g[1].end_s == Approx(1.5));
    CHECK(std::string(resource_of(NodeKind::param_gather)) == "dp");
}

TEST_CASE("the drawn sub-steps lose kappa of every second a bucket runs beside them", "[overlap][dag]") {
    // The contention is structure: compute runs at rate 1 - kappa while a bucket of its GPU runs.
    // Each sub-step of the last backward, with the buckets the timeline draws, does exactly b/K of work.
    std::mt19937_64 rng(3);
    std::uniform_real_distribution<double> u(0.0, 1.0);
    DagWorkspace ws;
    for (int n = 0; n < 500; ++n) {
        std::vector<StageTimes> st(1);
        st[0].forward_s = u(rng);
        st[0].backward_s = u(rng);
        const double kappa = 0.9 * u(rng);
        set_grad_buckets(st[0], 3 * u(rng) * st[0].backward_s, st[0].backward_s, 40e6 * (1 + 8 * u(rng)), kappa);
        const DagResult d = evaluate_dag(st, 1, true, ws);
        std::vector<TimelineEvent> buckets;
        double b_end = 0;
        for (const auto& e : d.timeline) {
            if (e.kind == NodeKind::grad_bucket) buckets.push_back(e);
            if (e.kind == NodeKind::backward) b_end = e.end_s;
        }
        const StageTimes& t = st[0];
        const int K = t.grad_buckets;
        REQUIRE(static_cast<int>(buckets.size()) == K);
        const double anchor = b_end - (t.grad_bucket_ready_s + (K - 1) * t.grad_bucket_step_s);
        for (int k = 1; k < K; ++k) {
            const double s0 = anchor + t.grad_bucket_ready_s + (k - 1) * t.grad_bucket_step_s, s1 = s0 + t.grad_bucket_step_s;
            double beside = 0;
            for (const auto& e : buckets) beside += std::max(0.0, std::min(s1, e.end_s) - std::max(s0, e.start_s));
            INFO("instance " << n << " sub-step " << k);
            REQUIRE(std::abs((s1 - s0) - kappa * beside - t.grad_bucket_ready_s) <= 1e-12);
        }
    }
}

namespace {

// An event simulation of one last backward and its buckets, independent of the chain's formulas:
// K sub-steps of work b/K on the compute stream, at rate 1 - kappa while a bucket runs; bucket k
// (d/K) queued when sub-step k ends and run in order on the dp stream. Returns {backward end,
// last bucket end}, from the backward's start.
std::pair<double, double> simulate_grad(double b, double d, int K, double kappa) {
    const double r = b / K, g = d / K, inf = 1e300;
    double t = 0, w = r, dp_end = -1, compute_end = 0, last = 0;
    int k = 0, queued = 0;
    while (k < K || queued > 0 || dp_end > t) {
        const bool busy = dp_end > t;
        const double rate = busy ? 1 - kappa : 1.0;
        const double next_compute = k < K && rate > 0 ? t + w / rate : inf;
        const double next_dp = busy ? dp_end : inf;
        if (next_compute <= next_dp) {
            t = next_compute;
            ++k;
            ++queued;
            w = r;
            compute_end = t;
        } else {
            if (k < K) w -= rate * (next_dp - t);
            t = next_dp;
        }
        if (dp_end <= t && queued > 0) {
            dp_end = t + g;
            last = dp_end;
            --queued;
        }
    }
    return {compute_end, last};
}

}  // namespace

TEST_CASE("an event simulation of compute at rate 1 - kappa beside the buckets gives the chain", "[overlap][dag]") {
    std::mt19937_64 rng(5);
    std::uniform_real_distribution<double> u(0.0, 1.0);
    for (int n = 0; n < 3000; ++n) {
        const double b = u(rng), d = 3 * u(rng), kappa = n % 4 == 0 ? 0.0 : 0.95 * u(rng), params = 40e6 * (0.5 + 10 * u(rng));
        StageTimes t;
        set_grad_buckets(t, d, b, params, kappa);
        const auto [bwd_end, chain_end] = simulate_grad(b, d, t.grad_buckets, kappa);
        INFO("b=" << b << " d=" << d << " kappa=" << kappa << " K=" << t.grad_buckets);
        REQUIRE(std::abs(bwd_end - (b + t.last_backward_extra_s)) <= 1e-9);
        REQUIRE(std::abs(chain_end - (b + t.last_backward_extra_s + t.dp_sync_s)) <= 1e-9);
        // the all-gather: bucket 0 from time 0, sub-step k dispatches bucket k+1 as it starts
        // and runs at rate 1 - kappa while it does; sub-step k+1 waits for it
        StageTimes p;
        const double f = b, a = d;
        set_param_gather(p, a, f, params, kappa);
        const int K = p.param_gather_buckets;
        const double r = f / K, g = a / K;
        double gather_end = g, end = 0;
        for (int k = 0; k < K; ++k) {
            const double start = std::max(end, gather_end);
            if (k + 1 < K) {
                gather_end = start + g;
                end = start + (r <= (1 - kappa) * g ? r / (1 - kappa) : g + (r - (1 - kappa) * g));
            } else {
                end = start + r;
            }
        }
        REQUIRE(std::abs(end - (g + f + p.first_forward_extra_s)) <= 1e-9);
    }
}

TEST_CASE("estimate with overlap: bucket events on the dp resource, identity with the closed form", "[overlap][dag]") {
    {
        const char* schedule = "";  // 1F1B (interleaved plans: overlap_interleaved.tests.cpp)
        const Scenario sc = overlap_test::scenario(R"("distributed_optimizer": true, "overlap_grad_reduce": true, "overlap_param_gather": true)");
        const Plan plan = parse_plan_text(std::string(R"({"micro_batch_size": 32, "num_micro_batches": 16, )") + schedule +
                                              R"("stages": [{"group": 0, "num_layers": 18, "tp": 4, "dp": 32}, {"group": 0, "num_layers": 18, "tp": 4, "dp": 32}]})",
                                          sc);
        const Estimate e = estimate(sc, plan, true);
        INFO(schedule);
        for (std::size_t s = 0; s < e.stages.size(); ++s) {
            const StageTimes& t = e.stages[s].times;
            REQUIRE(t.grad_buckets > 1);
            // the chain (kappa of the device) against the closed form it replaces
            const int K = t.grad_buckets;
            const double d = K * t.grad_bucket_s, b = K * t.grad_bucket_ready_s;
            const double kappa = sc.cluster.groups[0].device.comm_compute_slowdown;
            // the tied embeddings' all-reduce between the two stages follows the chain
            CHECK(t.embedding_sync_s > 0);
            const double tail = t.last_backward_extra_s + t.dp_sync_s - t.embedding_sync_s;
            if (d <= b) CHECK(tail == Approx(overlapped_bucket_sync_s(d, b, K * 40e6, kappa)).epsilon(1e-12));
            CHECK(tail == Approx(std::max(d - (K - 1) * (b / K), d / K + kappa * (K - 1) * (d / K))).epsilon(1e-12));
        }
        const Json j = to_json(sc, e, true);
        int buckets = 0, gathers = 0;
        for (const auto& ev : j["timeline"]) {
            REQUIRE(ev.contains("resource"));
            const std::string kind = ev["kind"], res = ev["resource"];
            // the bucket chains replace the gradient synchronisation; the tied embeddings' all-reduce
            // between the first and last stage follows them
            CHECK(kind != "dp_sync");
            if (kind == "embedding_sync") {
                const double emb = e.stages.at(ev["stage"].get<std::size_t>()).times.embedding_sync_s;
                CHECK(emb > 0);
                CHECK(ev["end_s"].get<double>() - ev["start_s"].get<double>() == Approx(emb).epsilon(1e-9));
            }
            if (kind == "grad_bucket") {
                ++buckets;
                CHECK(res == "dp");
                CHECK(ev["bucket"].is_number_integer());
                CHECK(ev["micro_batch"].is_null());
            }
            if (kind == "param_gather") ++gathers;
            if (kind == "forward" || kind == "backward" || kind == "optimizer") CHECK(res == "compute");
            if (kind == "send_forward" || kind == "send_backward") CHECK(res == "p2p");
        }
        CHECK(buckets == e.stages[0].times.grad_buckets + e.stages[1].times.grad_buckets);
        CHECK(gathers == (std::string(schedule).empty() ? e.stages[0].times.param_gather_buckets + e.stages[1].times.param_gather_buckets : 0));
        const auto& bd = e.dag.breakdown;
        CHECK(bd.compute_s + bd.bubble_s + bd.tp_comm_s + bd.pp_comm_s + bd.dp_comm_s + bd.optimizer_s + bd.ep_comm_s == Approx(e.iteration_time_s).epsilon(1e-12));
    }
}
