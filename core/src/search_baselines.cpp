// The simpler planners that the search is compared with (docs/search.md, "Baselines"). Both are
// scored by `estimate`, the same DAG model as the search.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <numeric>

#include "poseidon/scenario.hpp"
#include "poseidon/search.hpp"

#include "search_space.hpp"
#include "search_util.hpp"

namespace poseidon {

namespace {

using Clock = std::chrono::steady_clock;

bool dag_ok(std::int64_t stages, std::int64_t m) { return m <= max_num_micro_batches && stages * m <= max_dag_cells && stages <= max_stages; }

// Scores a plan; nullopt when estimate rejects it. `fits` tells whether memory fits.
std::optional<Estimate> score(const Scenario& sc, const Plan& p) {
    try {
        return estimate(sc, p, false);
    } catch (const InputError&) {
        return std::nullopt;
    }
}

struct Best {
    std::optional<Estimate> e;
    std::string reason = "no candidate";
    int tried = 0, oom = 0;
    bool timed_out = false;  // stopped at the deadline
    // Why there is no plan when the deadline stopped the sweep, else `otherwise`.
    std::string why(const std::string& otherwise) const {
        if (!timed_out) return otherwise;
        return "stopped by the time limit after " + std::to_string(tried) + " plans, none fitting in memory";
    }
    void offer(std::optional<Estimate> c) {
        ++tried;
        if (!c) return;
        if (!c->memory_fits) {
            ++oom;
            return;
        }
        if (!e || c->iteration_time_s < e->iteration_time_s) e = std::move(c);
    }
};

// A baseline the time limit left no time for.
Baseline not_computed(Baseline b) {
    b.reason = "not computed: the time limit was reached before it";
    return b;
}

// (a) Megatron-LM style: one (TP, PP, DP) for every stage, L/PP layers each, GPUs taken in the
// cluster's group order regardless of their type.
Baseline megatron_uniform(const Scenario& sc, Clock::time_point deadline) {
    Baseline b;
    b.name = "megatron-uniform";
    b.description =
        "Megatron-LM style: one TP, PP and DP for every stage and equal layers per stage; GPUs are taken in the cluster's group order "
        "regardless of type (a stage may mix device types) and every replica gets the same samples. The best such plan under this model.";
    if (Clock::now() > deadline) return not_computed(b);
    const auto& groups = sc.cluster.groups;
    const int L = sc.model.num_layers;
    const std::int64_t B = sc.training.global_batch_size;
    long long N = 0;
    for (const auto& g : groups) N += g.num_gpus();
    Best best;
    for (std::int64_t pp : detail::divisors(L)) {
        for (int tp = 1; tp <= 1024; tp *= 2) {
            bool ok = detail::tp_valid(sc, tp);  // (the search's rule: the scenario has no cp here)
            for (const auto& g : groups) ok = ok && g.gpus_per_node % tp == 0;
            if (!ok) continue;
            long long dmax = N / (tp * pp);
            if (dmax < 1) continue;
            long long d = dmax;
            while (d > 1 && B % d) --d;
            for (std::int64_t mbs = d; mbs <= B && mbs <= 8 * d; mbs *= 2) {
                if (B % mbs) continue;
                const std::int64_t m = B / mbs;
                if (!dag_ok(pp, m)) continue;
                if (Clock::now() > deadline) {
                    best.timed_out = true;
                    goto done;
                }
                Plan p;
                p.micro_batch_size = mbs;
                p.num_micro_batches = m;
                std::size_t g = 0;
                long long used = 0;
                bool placed = true;
                for (std::int64_t s = 0; s < pp && placed; ++s) {
                    StagePlan st;
                    st.num_layers = static_cast<int>(L / pp);
                    for (long long r = 0; r < d; ++r) {
                        while (g < groups.size() && used + tp > groups[g].num_gpus()) {
                            ++g;
                            used = 0;
                        }
                        if (g == groups.size()) {
                            placed = false;
                            break;
                        }
                        used += tp;
                        if (!st.replicas.empty() && st.replicas.back().group == static_cast<int>(g))
                            ++st.replicas.back().count;
                        else
                            st.replicas.push_back(ReplicaSet{static_cast<int>(g), tp, 1, static_cast<int>(mbs / d)});
                    }
                    st.homogeneous_form = st.replicas.size() == 1;
                    p.stages.push_back(std::move(st));
                }
                if (placed) best.offer(score(sc, p));
            }
        }
    }
done:
    b.estimate = std::move(best.e);
    if (!b.estimate)
        b.reason = best.why(best.tried == 0 ? "no uniform TP/PP/DP fits the cluster and batch"
                                            : std::to_string(best.tried) + " uniform plans tried, none fits in memory");
    return b;
}

// (b) Metis-style: device types fastest first, each group cut into equal stages, DP first (the
// smallest TP that fits), layers proportional to each stage's compute speed.
Baseline metis_heuristic(const Scenario& sc, Clock::time_point deadline) {
    Baseline b;
    b.name = "metis-heuristic";
    b.description =
        "Metis-style: groups ordered by device speed (fastest first), each cut into equal stages of about the same GPU count, DP first "
        "(the smallest TP that fits in memory), layers proportional to each stage's compute speed. The best over stage sizes and "
        "micro-batch sizes.";
    if (Clock::now() > deadline) return not_computed(b);
    const auto& groups = sc.cluster.groups;
    const int G = static_cast<int>(groups.size());
    const int L = sc.model.num_layers;
    const std::int64_t B = sc.training.global_batch_size;
    auto speed = [&](int g) { return groups[g].device.peak_tflops * groups[g].device.matmul_efficiency; };
    std::vector<int> order(G);
    std::iota(order.begin(), order.end(), 0);
    std::stable_sort(order.begin(), order.end(), [&](int x, int y) { return speed(x) > speed(y); });
    int biggest = 0;
    for (const auto& g : groups) biggest = std::max(biggest, g.num_gpus());
    Best best;
    for (int x = 1; x <= biggest; x *= 2) {
        // stage size per group: the largest node-aligned size <= x
        std::vector<int> size(G), count(G);
        int S = 0;
        for (int g = 0; g < G; ++g) {
            const int P = groups[g].gpus_per_node, n = groups[g].nodes;
            int s = 1;
            for (int d = 1; d < P; ++d)
                if (P % d == 0 && d <= x) s = d;
            for (int c = 1; c <= n; ++c)
                if (n % c == 0 && c * P <= x) s = c * P;
            if (x >= P && s < P) s = P;
            size[g] = s;
            count[g] = groups[g].num_gpus() / s;
            S += count[g];
        }
        if (S > L || S > max_stages) continue;
        // layers proportional to stage speed (largest remainder, at least one each)
        std::vector<int> stage_group;
        std::vector<double> w;
        for (int g : order)
            for (int k = 0; k < count[g]; ++k) {
                stage_group.push_back(g);
                w.push_back(size[g] * speed(g));
            }
        const double wsum = std::accumulate(w.begin(), w.end(), 0.0);
        std::vector<int> layers(S, 1);
        int left = L - S;
        std::vector<std::pair<double, int>> rem;
        for (int j = 0; j < S; ++j) {
            double want = left * w[j] / wsum;
            int fl = static_cast<int>(std::floor(want));
            layers[j] += fl;
            rem.push_back({want - fl, j});
        }
        int given = std::accumulate(layers.begin(), layers.end(), 0);
        std::stable_sort(rem.begin(), rem.end(), [](auto& p, auto& q) { return p.first > q.first; });
        for (std::size_t i = 0; given < L; ++i, ++given) ++layers[rem[i % rem.size()].second];
        for (std::int64_t mbs : detail::divisors(B)) {
            const std::int64_t m = B / mbs;
            if (!dag_ok(S, m)) continue;
            if (Clock::now() > deadline) {
                best.timed_out = true;
                goto done;
            }
            // DP first: the smallest TP per stage whose DP divides the micro-batch
            std::vector<std::vector<int>> tps(S);
            bool ok = true;
            for (int j = 0; j < S && ok; ++j) {
                const int g = stage_group[j], s = size[g];
                for (int tp = 1; tp <= groups[g].gpus_per_node; ++tp)
                    if (groups[g].gpus_per_node % tp == 0 && s % tp == 0 && detail::tp_valid(sc, tp) && mbs % (s / tp) == 0) tps[j].push_back(tp);
                ok = !tps[j].empty();
            }
            if (!ok) continue;
            // Per-replica samples above 8 are not a Metis choice; keep the sweep small.
            int dpmin = 1 << 30;
            for (int j = 0; j < S; ++j) dpmin = std::min(dpmin, size[stage_group[j]] / tps[j].back());
            if (mbs > 8LL * std::max(1, dpmin) && best.e) continue;
            std::vector<int> pick(S, 0);
            for (int attempt = 0; attempt < 8; ++attempt) {
                Plan p;
                p.micro_batch_size = mbs;
                p.num_micro_batches = m;
                for (int j = 0; j < S; ++j) {
                    const int g = stage_group[j], tp = tps[j][pick[j]], dp = size[g] / tp;
                    StagePlan st;
                    st.num_layers = layers[j];
                    st.replicas.push_back(ReplicaSet{g, tp, dp, static_cast<int>(mbs / dp)});
                    p.stages.push_back(std::move(st));
                }
                auto e = score(sc, p);
                if (!e) break;
                if (e->memory_fits) {
                    best.offer(std::move(e));
                    break;
                }
                ++best.oom;
                bool bumped = false;
                for (int j = 0; j < S; ++j)
                    if (!e->stages[j].fits && pick[j] + 1 < static_cast<int>(tps[j].size())) {
                        ++pick[j];
                        bumped = true;
                    }
                if (!bumped) break;
            }
        }
    }
done:
    b.estimate = std::move(best.e);
    if (!b.estimate) b.reason = best.why("no stage size, TP and micro-batch size gave a plan that fits in memory");
    return b;
}

}  // namespace

std::vector<Baseline> compute_baselines(const Scenario& sc, double time_budget_s) {
    const auto deadline = Clock::now() + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(std::max(0.0, time_budget_s) / 2));
    std::vector<Baseline> out;
    out.push_back(megatron_uniform(sc, deadline));
    const auto deadline2 = Clock::now() + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(std::max(0.0, time_budget_s) / 2));
    out.push_back(metis_heuristic(sc, deadline2));
    return out;
}

}  // namespace poseidon
