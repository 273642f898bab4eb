// Overlap under interleaving (docs/model.md, "Overlap under interleaving"): each model chunk's
// gradient buckets leave the sub-steps of its own last backward and its parameter all-gather is
// dispatched ahead of its first forward, all on the stage's one dp stream, compute at rate
// 1 - kappa beside a bucket. Checked against an explicit graph (kappa = 0, where the stream is a
// chain of nodes), against the 1F1B chain's closed form (one chunk's buckets on a free stream),
// by hand, and on estimates.
#include <catch2/catch.hpp>

#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "../../core/src/dag_stream.hpp"
#include "explicit_graph.hpp"
#include "overlap_helpers.hpp"
#include "poseidon/cost_model.hpp"
#include "poseidon/dag.hpp"
#include "poseidon/estimate.hpp"
#include "poseidon/json_util.hpp"
#include "poseidon/scenario.hpp"

using namespace poseidon;
using poseidon::testing::Graph;
using poseidon::testing::Pass;

namespace {

// The interleaved iteration node by node without contention (kappa = 0): every pass a start node,
// its sub-steps and a blocking stack's send after them; every bucket a node on its stage's chain
// in dispatch order, after its dispatch (iteration start, the start of chunk c - 1's first forward,
// or a last-backward sub-step); first-forward sub-step k after gathered bucket k.
double explicit_interleaved(const std::vector<StageTimes>& chunks, const std::vector<StageTimes>& stages, int V, std::int64_t m) {
    const int p = static_cast<int>(stages.size());
    const std::int64_t PV = static_cast<std::int64_t>(p) * V;
    Graph G;
    std::vector<Pass> F(PV * m), B(PV * m);
    std::vector<std::vector<int>> gathers(PV);   // bucket nodes of each chunk's all-gather
    std::vector<int> stream_last(p, -1);          // the stage's last bucket so far
    std::vector<char> synced(p, 0);
    auto bucket = [&](int s, double d, int dispatch) {
        const int b = G.add(d);
        if (dispatch >= 0) G.edge(dispatch, b);
        if (stream_last[s] >= 0) G.edge(stream_last[s], b);
        stream_last[s] = b;
        return b;
    };
    for (std::int64_t v = 0; v < PV; ++v)
        for (std::int64_t j = 0; j < m; ++j) {
            const StageTimes& t = chunks[v];
            for (int fwd = 0; fwd < 2; ++fwd) {
                const int start = G.add(0);
                const double work = fwd ? t.forward_s : t.backward_s, send = fwd ? t.forward_send_blocking_s : t.backward_send_blocking_s;
                const int K = fwd && j == 0 ? t.param_gather_buckets : !fwd && j == m - 1 ? t.grad_buckets : 0;
                int prev = start;
                for (int k = 0; k < K; ++k) {
                    const int sub = G.add((work - send) / K);
                    G.edge(prev, sub);
                    prev = sub;
                }
                if (K == 0) {
                    const int n = G.add(work - send);
                    G.edge(prev, n);
                    prev = n;
                }
                const int fold = G.add(send);
                G.edge(prev, fold);
                (fwd ? F : B)[v * m + j] = {start, fold};
            }
        }
    // the streams: walk each stage's order, dispatching as the sweep does
    for (int s = 0; s < p; ++s) {
        auto dispatch_gathers = [&](int c, int at) {
            const std::int64_t v = static_cast<std::int64_t>(c) * p + s;
            for (int k = 0; k < chunks[v].param_gather_buckets; ++k) gathers[v].push_back(bucket(s, chunks[v].param_gather_bucket_s, at));
        };
        for (int c = 0; c < std::min(V, 2); ++c) dispatch_gathers(c, -1);
        std::vector<ChunkPass> order;
        interleaved_order(s, p, V, m, order);
        for (const ChunkPass& u : order) {
            const std::int64_t v = static_cast<std::int64_t>(u.chunk) * p + s;
            if (u.forward && u.micro_batch == 0 && u.chunk + 1 >= 2 && u.chunk + 1 < V) dispatch_gathers(u.chunk + 1, F[v * m].in);
            if (!u.forward && u.micro_batch == m - 1 && chunks[v].grad_buckets > 0) {
                synced[s] = 1;
                // sub-step k is the k-th successor of the start node
                int sub = B[v * m + m - 1].in;
                for (int k = 0; k < chunks[v].grad_buckets; ++k) {
                    sub = G.succ[sub][0];
                    bucket(s, chunks[v].grad_bucket_s, sub);
                }
            }
        }
    }
    // first-forward sub-step k waits for gathered bucket k
    for (std::int64_t v = 0; v < PV; ++v) {
        int sub = F[v * m].in;
        for (int g : gathers[v]) {
            sub = G.succ[sub][0];
            G.edge(g, sub);
        }
    }
    // data edges, each stage's order, the order of sends on each link
    const std::vector<int> last = poseidon::testing::pipeline_edges(G, F, B, chunks, p, V, m);
    const int barrier = G.add(0);
    for (int s = 0; s < p; ++s) {
        const int prev = last[s];
        const int sync = G.add(synced[s] ? 0.0 : stages[s].dp_sync_s);
        G.edge(prev, sync);
        if (synced[s]) G.edge(stream_last[s], sync);
        G.edge(sync, barrier);
    }
    for (int s = 0; s < p; ++s) G.edge(barrier, G.add(stages[s].optimizer_s));
    return G.longest_path();
}

struct Instance {
    int p, V;
    std::int64_t m;
    std::vector<StageTimes> chunks, stages;
};

Instance random_instance(std::mt19937_64& rng, double kappa) {
    std::uniform_real_distribution<double> u(0.0, 1.0);
    Instance in;
    in.p = 2 + static_cast<int>(rng() % 3);
    in.V = 2 + static_cast<int>(rng() % 3);
    in.m = in.p * (1 + static_cast<std::int64_t>(rng() % 3));
    in.chunks.resize(static_cast<std::size_t>(in.p) * in.V);
    in.stages.resize(in.p);
    const bool blocking = rng() % 4 == 0;
    for (auto& t : in.chunks) {
        t.forward_s = u(rng);
        t.backward_s = 2 * u(rng);
        t.send_forward_s = 0.2 * u(rng);
        t.send_backward_s = 0.2 * u(rng);
        if (blocking) {
            t.forward_send_blocking_s = 0.3 * t.forward_s * u(rng);
            t.backward_send_blocking_s = 0.3 * t.backward_s * u(rng);
        }
        t.stream_slowdown = kappa;
        if (rng() % 3 != 0) {
            t.grad_buckets = 1 + static_cast<int>(rng() % 4);
            t.grad_bucket_s = 0.5 * u(rng);
        }
        if (rng() % 3 == 0) {
            t.param_gather_buckets = 1 + static_cast<int>(rng() % 3);
            t.param_gather_bucket_s = 0.4 * u(rng);
        }
    }
    in.chunks.back().send_forward_s = 0;
    in.chunks.front().send_backward_s = 0;
    for (auto& t : in.stages) {
        t.optimizer_s = 0.1 * u(rng);
        t.dp_sync_s = u(rng);
    }
    return in;
}

}  // namespace

TEST_CASE("the dp stream: compute beside a bucket runs at 1 - kappa, by hand", "[overlap][interleaved]") {
    detail::DpStream st;
    CHECK(st.advance(1.0, 2.0, 0.5) == 3.0);  // no bucket: rate 1
    CHECK(st.enqueue(2.0, 1.0) == std::pair<double, double>{2.0, 3.0});
    CHECK(st.enqueue(2.5, 1.0) == std::pair<double, double>{3.0, 4.0});  // first in, first out
    CHECK(st.enqueue(6.0, 1.0) == std::pair<double, double>{6.0, 7.0});
    // from 1: 1 s free, then [2, 4] at half rate (1 s of work), 2 s free, [6, 7] at half rate
    CHECK(st.advance(1.0, 1.5, 0.5) == 3.0);
    CHECK(st.advance(1.0, 3.0, 0.5) == 5.0);
    CHECK(st.advance(1.0, 4.5, 0.5) == 7.0);
    CHECK(st.advance(1.0, 5.0, 0.5) == 7.5);
    CHECK(st.advance(4.0, 1.0, 1.0) == 5.0);  // kappa 1: nothing moves beside a bucket
    CHECK(st.advance(5.5, 1.0, 1.0) == 7.5);
    CHECK(st.tail_s() == 7.0);
}

TEST_CASE("interleaved, no contention: the walk with per-chunk buckets is the longest path of the graph drawn node by node",
          "[overlap][dag][interleaved]") {
    std::mt19937_64 rng(13);
    for (int n = 0; n < 400; ++n) {
        const Instance in = random_instance(rng, 0.0);
        INFO("p=" << in.p << " V=" << in.V << " m=" << in.m << " instance " << n);
        const double fast = interleaved_iteration_time(in.chunks, in.stages, in.V, in.m);
        REQUIRE(overlap_test::close(fast, explicit_interleaved(in.chunks, in.stages, in.V, in.m)));
        const DagResult d = evaluate_interleaved_dag(in.chunks, in.stages, in.V, in.m, true);
        REQUIRE(d.iteration_time_s == fast);
    }
}

TEST_CASE("interleaved with contention: the timeline is consistent and the parts add up", "[overlap][dag][interleaved]") {
    std::mt19937_64 rng(17);
    std::uniform_real_distribution<double> u(0.0, 1.0);
    for (int n = 0; n < 300; ++n) {
        const double kappa = n % 5 == 0 ? 1.0 : 0.9 * u(rng);
        const Instance in = random_instance(rng, kappa);
        INFO("p=" << in.p << " V=" << in.V << " m=" << in.m << " kappa=" << kappa << " instance " << n);
        const DagResult d = evaluate_interleaved_dag(in.chunks, in.stages, in.V, in.m, true);
        const double T = d.iteration_time_s;
        // never faster than without contention, never slower than with every bucket exposed
        Instance free = in;
        for (auto& t : free.chunks) t.stream_slowdown = 0;
        REQUIRE(T >= interleaved_iteration_time(free.chunks, free.stages, in.V, in.m) * (1 - 1e-12));
        std::vector<std::vector<std::pair<double, double>>> dp(in.p);
        std::vector<int> grad(in.p * in.V, 0), gather(in.p * in.V, 0);
        for (const auto& e : d.timeline) {
            REQUIRE(e.end_s <= T * (1 + 1e-12));
            REQUIRE(e.start_s <= e.end_s);
            if (e.kind == NodeKind::grad_bucket || e.kind == NodeKind::param_gather) {
                dp[e.stage].push_back({e.start_s, e.end_s});
                (e.kind == NodeKind::grad_bucket ? grad : gather)[e.chunk * in.p + e.stage]++;
            }
        }
        for (int v = 0; v < in.p * in.V; ++v) {
            REQUIRE(grad[v] == in.chunks[v].grad_buckets);
            REQUIRE(gather[v] == in.chunks[v].param_gather_buckets);
        }
        for (auto& l : dp) {  // one stream: its buckets never overlap
            std::sort(l.begin(), l.end());
            for (std::size_t i = 1; i < l.size(); ++i) REQUIRE(l[i].first >= l[i - 1].second - 1e-12);
        }
        const auto& bd = d.breakdown;
        REQUIRE(std::abs(bd.compute_s + bd.bubble_s + bd.tp_comm_s + bd.pp_comm_s + bd.dp_comm_s + bd.optimizer_s + bd.ep_comm_s - T) <= 1e-9 * T);
    }
}

TEST_CASE("one chunk's gradient buckets on a free stream give the 1F1B chain's closed form", "[overlap][dag][interleaved]") {
    std::mt19937_64 rng(19);
    std::uniform_real_distribution<double> u(0.0, 1.0);
    for (int n = 0; n < 500; ++n) {
        const int p = 2, V = 2;
        const std::int64_t m = 2 * (1 + static_cast<std::int64_t>(rng() % 3));
        const double kappa = n % 4 == 0 ? 0.0 : 0.95 * u(rng), params = 40e6 * (0.5 + 8 * u(rng));
        std::vector<StageTimes> chunks(p * V), stages(p);
        for (auto& t : chunks) {
            t.forward_s = u(rng);
            t.backward_s = 2 * u(rng);
            t.stream_slowdown = kappa;
        }
        // chunk 0 of stage 0: the closed form's buckets (its last backward is the stage's last pass)
        StageTimes ref;
        const double d = 3 * u(rng);
        set_grad_buckets(ref, d, chunks[0].backward_s, params, kappa);
        chunks[0].grad_buckets = ref.grad_buckets;
        chunks[0].grad_bucket_s = ref.grad_bucket_s;
        INFO("m=" << m << " kappa=" << kappa << " K=" << ref.grad_buckets << " instance " << n);
        const DagResult r = evaluate_interleaved_dag(chunks, stages, V, m, true);
        double pass_start = -1, pass_end = -1, chain_end = -1;
        for (const auto& e : r.timeline) {
            if (e.stage != 0) continue;
            if (e.kind == NodeKind::backward && e.chunk == 0 && e.micro_batch == m - 1) {
                pass_start = e.start_s;
                pass_end = e.end_s;
            }
            if (e.kind == NodeKind::grad_bucket) chain_end = std::max(chain_end, e.end_s);
        }
        REQUIRE(std::abs(pass_end - pass_start - (chunks[0].backward_s + ref.last_backward_extra_s)) <= 1e-9);
        REQUIRE(std::abs(chain_end - pass_end - ref.dp_sync_s) <= 1e-9);
    }
}

TEST_CASE("a first forward waits for its gathered buckets and runs slowed beside them, by hand", "[overlap][dag][interleaved]") {
    // stage 0, chunk 0: two buckets of 1 s dispatched at 0 ([0, 1], [1, 2]); a forward of 2 s in
    // two sub-steps: sub-step 0 waits for bucket 0, runs [1, 2] at half rate (0.5 s of work) and
    // ends at 2.5; sub-step 1 (bucket 1 done at 2) runs 2.5 -> 3.5.
    const int p = 2, V = 2;
    std::vector<StageTimes> chunks(p * V), stages(p);
    for (auto& t : chunks) {
        t.forward_s = 1;
        t.backward_s = 1;
        t.stream_slowdown = 0.5;
    }
    chunks[0].forward_s = 2;
    chunks[0].param_gather_buckets = 2;
    chunks[0].param_gather_bucket_s = 1;
    const DagResult r = evaluate_interleaved_dag(chunks, stages, V, 2, true);
    bool seen = false;
    for (const auto& e : r.timeline)
        if (e.stage == 0 && e.kind == NodeKind::forward && e.chunk == 0 && e.micro_batch == 0) {
            CHECK(e.start_s == 0.0);
            CHECK(e.end_s == 3.5);
            seen = true;
        }
    CHECK(seen);
    CHECK(r.breakdown.dp_comm_s >= 1.5);  // the stage waited 1 s and lost 0.5 s beside bucket 1
}

TEST_CASE("estimate, interleaved with overlap: buckets per chunk, on the dp resource, in the JSON", "[overlap][interleaved][estimate]") {
    const std::string plan_text =
        R"({"micro_batch_size": 32, "num_micro_batches": 16, "schedule": "interleaved-1f1b", "virtual_stages": 3, )"
        R"("stages": [{"group": 0, "num_layers": 18, "tp": 4, "dp": 32}, {"group": 0, "num_layers": 18, "tp": 4, "dp": 32}]})";
    const Scenario on = overlap_test::scenario(R"("distributed_optimizer": true, "overlap_grad_reduce": true, "overlap_param_gather": true)");
    const Scenario off = overlap_test::scenario(R"("distributed_optimizer": true)");
    const Estimate e = estimate(on, parse_plan_text(plan_text, on), true);
    const Estimate base = estimate(off, parse_plan_text(plan_text, off), true);
    // hiding the synchronisation and the all-gather behind the passes beats running them after
    CHECK(e.iteration_time_s < base.iteration_time_s);
    const Json j = to_json(on, e, true);
    int grad = 0, gathers = 0, expect_grad = 0, expect_gather = 0;
    for (const auto& st : e.stages) {
        REQUIRE(st.chunk_times.size() == 3);
        for (const auto& c : st.chunk_times) {
            CHECK(c.grad_buckets >= 1);
            CHECK(c.param_gather_buckets >= 1);
            expect_grad += c.grad_buckets;
            expect_gather += c.param_gather_buckets;
        }
        CHECK(st.times.optimizer_s < base.stages[&st - &e.stages[0]].times.optimizer_s);  // the all-gather left the step
    }
    for (const auto& ev : j["timeline"]) {
        const std::string kind = ev["kind"];
        // the bucket chains replace the gradient synchronisation; the tied embeddings' all-reduce
        // between the first and last stage follows them
        CHECK(kind != "dp_sync");
        if (kind == "embedding_sync") {
            const double emb = e.stages.at(ev["stage"].get<std::size_t>()).times.embedding_sync_s;
            CHECK(emb > 0);
            CHECK(ev["end_s"].get<double>() - ev["start_s"].get<double>() == Approx(emb).epsilon(1e-9));
        }
        if (kind == "grad_bucket" || kind == "param_gather") {
            CHECK(ev["resource"] == "dp");
            CHECK(ev["bucket"].is_number_integer());
            (kind == "grad_bucket" ? grad : gathers)++;
        }
    }
    CHECK(grad == expect_grad);
    CHECK(gathers == expect_gather);
    for (const auto& st : j["stages"]) {
        CHECK(st["grad_overlap"]["chunks"].size() == 3);
        CHECK(st["param_gather_overlap"]["chunks"].size() == 3);
    }
    const auto& bd = e.dag.breakdown;
    CHECK(bd.compute_s + bd.bubble_s + bd.tp_comm_s + bd.pp_comm_s + bd.dp_comm_s + bd.optimizer_s + bd.ep_comm_s == Approx(e.iteration_time_s).epsilon(1e-12));
}

TEST_CASE("the interleaved walk with a cutoff: exact below it, never below it above it", "[overlap][dag][interleaved][search]") {
    std::mt19937_64 rng(29);
    std::uniform_real_distribution<double> u(0.0, 1.0);
    for (int n = 0; n < 1500; ++n) {
        Instance in = random_instance(rng, n % 3 == 0 ? 0.0 : 0.9 * u(rng));
        if (n % 4 == 0)  // no overlap: no stream
            for (auto& t : in.chunks) t.grad_buckets = t.param_gather_buckets = 0;
        INFO("p=" << in.p << " V=" << in.V << " m=" << in.m << " instance " << n);
        const double T = evaluate_interleaved_dag(in.chunks, in.stages, in.V, in.m, true).iteration_time_s;
        REQUIRE(interleaved_iteration_time(in.chunks, in.stages, in.V, in.m) == T);
        for (double f : {0.5, 0.9, 0.99, 0.999, 1.0, 1.001, 1.5}) {
            const double below = interleaved_iteration_time_below(in.chunks, in.stages, in.V, in.m, f * T);
            if (T < f * T) REQUIRE(below == T);
            else REQUIRE(below >= f * T);
        }
    }
}
