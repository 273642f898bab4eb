// Overlap as graph structure (docs/model.md, "Overlap"): the whole iteration built node by node
// with the gradient bucket chain after the sub-steps of each stage's last backward and the
// parameter all-gather chain before the sub-steps of its first forward; the DAG's walks, which
// keep one node per chain, must give its longest path on random 1F1B instances (interleaved
// plans keep their buckets per chunk: overlap_interleaved.tests.cpp).
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <random>
#include <vector>

#include "explicit_graph.hpp"
#include "overlap_helpers.hpp"
#include "poseidon/cost_model.hpp"
#include "poseidon/dag.hpp"

using namespace poseidon;
using poseidon::testing::Graph;
using poseidon::testing::Pass;

namespace {

// The first forward of a stage with overlap_param_gather, node by node: gather 0 from time 0;
// dispatch point D_k (zero) after sub-step k-1 and gather k; sub-step k and gather k+1 after D_k.
Pass first_forward(Graph& G, const StageTimes& t) {
    const int K = t.param_gather_buckets;
    const double r = (t.forward_s - t.forward_send_blocking_s) / K, g = t.param_gather_bucket_s;
    // A sub-step beside a gather: r + kappa g when that is at least g; otherwise it ends before the
    // gather and the next dispatch waits for the gather, so any length up to g gives the same
    // path: take param_gather_step_s, max(g, r + kappa g).
    const double beside = t.param_gather_step_s;
    int gather = G.add(g), prev_sub = -1, first = -1;
    for (int k = 0; k < K; ++k) {
        const int D = G.add(0);
        if (first < 0) first = D;
        G.edge(gather, D);
        if (prev_sub >= 0) G.edge(prev_sub, D);
        const int sub = G.add(k + 1 < K ? beside : r);
        G.edge(D, sub);
        if (k + 1 < K) {
            gather = G.add(g);
            G.edge(D, gather);
        }
        prev_sub = sub;
    }
    const int fold = G.add(t.forward_send_blocking_s);  // a blocking stack's send, after the compute
    G.edge(prev_sub, fold);
    return {first, fold};
}

// The last backward with overlap_grad_reduce: sub-step 0 (r), sub-steps 1..K-1 (x), bucket k after
// sub-step k and bucket k-1; a blocking stack's folded send before the sub-steps. `join` (zero)
// after the node and the last bucket stands for DP's start.
Pass last_backward(Graph& G, const StageTimes& t, int& chain_end) {
    const int K = t.grad_buckets;
    const double r = t.grad_bucket_ready_s, x = t.grad_bucket_step_s;
    const double fold = t.backward_s + t.last_backward_extra_s - (r + (K - 1) * x);
    int prev = G.add(fold);
    const int first = prev;
    int bucket = -1;
    for (int k = 0; k < K; ++k) {
        const int sub = G.add(k == 0 ? r : x);
        G.edge(prev, sub);
        const int b = G.add(t.grad_bucket_s);
        G.edge(sub, b);
        if (bucket >= 0) G.edge(bucket, b);
        bucket = b;
        prev = sub;
    }
    chain_end = bucket;
    return {first, prev};
}

// The whole iteration, for 1F1B (V = 1, each stage's 1F1B order) or interleaved (V > 1, Megatron's
// order): chunks in data order, stages for the tail; overlap chains where the times have them.
double explicit_iteration(const std::vector<StageTimes>& chunks, const std::vector<StageTimes>& stages, int V, std::int64_t m) {
    const int p = static_cast<int>(stages.size());
    const std::int64_t PV = static_cast<std::int64_t>(p) * V;
    Graph G;
    std::vector<Pass> F(PV * m), B(PV * m);
    std::vector<int> chain(p, -1);
    for (std::int64_t v = 0; v < PV; ++v)
        for (std::int64_t j = 0; j < m; ++j) {
            const int s = static_cast<int>(v % p);
            const StageTimes& t = chunks[v];
            const bool first_pass = v == s && j == 0, last_pass = v == s && j == m - 1;
            if (first_pass && stages[s].param_gather_buckets > 0) {
                StageTimes ft = stages[s];
                ft.forward_s = t.forward_s;
                F[v * m + j] = first_forward(G, ft);
            } else {
                const int n = G.add(t.forward_s);
                F[v * m + j] = {n, n};
            }
            if (last_pass && stages[s].grad_buckets > 0) {
                StageTimes bt = stages[s];
                bt.backward_s = t.backward_s;
                B[v * m + j] = last_backward(G, bt, chain[s]);
            } else {
                const int n = G.add(t.backward_s);
                B[v * m + j] = {n, n};
            }
        }
    const std::vector<int> last = poseidon::testing::pipeline_edges(G, F, B, chunks, p, V, m);
    const int barrier = G.add(0);
    for (int s = 0; s < p; ++s) {
        const int prev = last[s];
        const int dp = G.add(0);
        G.edge(prev, dp);
        if (chain[s] >= 0) {
            G.edge(chain[s], dp);
        } else {
            const int sync = G.add(stages[s].dp_sync_s);
            G.edge(prev, sync);
            G.edge(sync, dp);
        }
        G.edge(dp, barrier);
    }
    for (int s = 0; s < p; ++s) G.edge(barrier, G.add(stages[s].optimizer_s));
    return G.longest_path();
}

// Overlap fields on a stage: random synchronisation, all-gather, bucket counts and contention.
void random_overlap(StageTimes& t, double backward_s, double forward_s, std::mt19937_64& rng, bool grad, bool gather) {
    std::uniform_real_distribution<double> u(0.0, 1.0);
    const double kappas[] = {0.0, 0.1, 0.5, 1.0};
    const double kappa = kappas[rng() % 4];
    const double params = 40e6 * (0.2 + 7 * u(rng));
    if (grad) set_grad_buckets(t, 3 * backward_s * u(rng), backward_s, params, kappa);
    if (gather) set_param_gather(t, 3 * forward_s * u(rng), forward_s, params, kappa);
}

}  // namespace

TEST_CASE("with overlap the DAG's walks give the longest path of the graph drawn node by node", "[overlap][dag]") {
    std::mt19937_64 rng(2026);
    std::uniform_real_distribution<double> u(0.0, 1.0);
    DagWorkspace ws;
    for (int n = 0; n < 600; ++n) {
        const int S = 1 + static_cast<int>(rng() % 5);
        const std::int64_t m = 1 + static_cast<std::int64_t>(rng() % 8);
        const bool grad = rng() % 4 != 0, gather = rng() % 2 == 0, blocking = rng() % 5 == 0;
        std::vector<StageTimes> st(S);
        for (auto& t : st) {
            t.forward_s = u(rng);
            t.backward_s = 2 * u(rng);
            t.send_forward_s = 0.3 * u(rng);
            t.send_backward_s = 0.3 * u(rng);
            t.optimizer_s = 0.1 * u(rng);
            t.dp_sync_s = u(rng);
            random_overlap(t, t.backward_s, t.forward_s, rng, grad, gather);
        }
        st.back().send_forward_s = 0;
        st.front().send_backward_s = 0;
        if (blocking) {
            Stack stack;
            stack.p2p_blocking = true;
            fold_blocking_sends(stack, st);
        }
        INFO("S=" << S << " m=" << m << " instance " << n);
        const double fast = dag_iteration_time(st, m, ws);
        const DagResult d = evaluate_dag(st, m, true, ws);
        REQUIRE(fast == d.iteration_time_s);
        REQUIRE(overlap_test::close(fast, explicit_iteration(st, st, 1, m)));
        // the drawn chains end where the DAG's nodes for them do, and the parts sum to the time
        const auto& bd = d.breakdown;
        REQUIRE(overlap_test::close(bd.compute_s + bd.bubble_s + bd.tp_comm_s + bd.pp_comm_s + bd.dp_comm_s + bd.optimizer_s + bd.ep_comm_s, fast));
        for (const auto& e : d.timeline) REQUIRE(e.end_s <= fast * (1 + 1e-12));
    }
}
