// Pipelines whose stages mix GPU types (options.mixed_stages; docs/search.md, "The space", step 7):
// S >= 2 stages, each holding the same replica mix, an S-th of every chosen group's GPUs, each
// group's replicas with their own TP degree and samples (Sailor's and HexiScale's heterogeneous
// data-parallel stages, here inside a 1F1B pipeline). The layers are split freely over the stages.
// The walk over layer splits is cut by a bound that needs no DAG. A stage runs m forwards and m
// backwards one after another, each as long as its slowest replica's (e_j = max_g c_g(l_j) for
// F + B), and the first micro-batch reaches stage k through the forwards of the stages before it,
// the last leaves through their backwards, so the iteration takes at least
// max_k (sum_{j<k} e_j + m e_k) (the DAG's path through stage k); for the stages not placed yet e_k
// is at least their integer bottleneck (the least max over their layer splits, search_bounds.hpp).
// A stage holds at most the layers with which every replica fits in memory at its place (1F1B's
// min(S - j, m) micro-batches in flight), so plans that cannot fit are not built; --exhaustive
// evaluates every split.
#include <algorithm>
#include <map>

#include "poseidon/cost_model.hpp"
#include "poseidon/estimate.hpp"
#include "search_bounds.hpp"
#include "search_driver.hpp"
#include "search_mixed.hpp"
#include "search_space.hpp"
#include "search_util.hpp"

namespace poseidon::detail {

namespace {

// A stage part of s GPUs of a group with P per node keeps every TP group inside a node when it
// divides a node or is whole nodes (as the pipelines of step 3).
bool part_ok(int s, int P, int tp) { return s % tp == 0 && (P % s == 0 || s % P == 0); }

// C(n, k) as a double (the space size).
double choose(int n, int k) {
    double c = 1;
    for (int i = 1; i <= k; ++i) c = c * (n - k + i) / i;
    return c;
}

Plan pipeline_plan(const std::vector<std::array<int, 3>>& choice, const std::vector<std::int64_t>& r, const std::vector<int>& s,
                   const std::vector<int>& layers, std::int64_t mbs, std::int64_t m) {
    Plan p;
    p.micro_batch_size = mbs;
    p.num_micro_batches = m;
    p.stages.resize(layers.size());
    for (std::size_t j = 0; j < layers.size(); ++j) {
        p.stages[j].num_layers = layers[j];
        p.stages[j].homogeneous_form = false;
        for (std::size_t i = 0; i < choice.size(); ++i)
            p.stages[j].replicas.push_back(ReplicaSet{choice[i][0], choice[i][2], static_cast<int>(r[i]), s[i]});
    }
    return p;
}

}  // namespace

std::vector<int> mixed_stage_counts(const Scenario& sc, const std::vector<std::array<int, 3>>& choice) {
    std::vector<int> out;
    for (int S = 2; S <= sc.model.num_layers; ++S) {
        bool ok = true;
        for (const auto& c : choice) {
            const int P = sc.cluster.groups[c[0]].gpus_per_node, gpus = c[1] * P;
            ok = ok && gpus % S == 0 && part_ok(gpus / S, P, c[2]);
        }
        if (ok) out.push_back(S);
    }
    return out;
}

double mixed_pipeline_space_size(const Scenario& sc, const SearchOptions& opt) {
    if (opt.schedule == "interleaved-1f1b") return 0;
    double plans = 0;
    const auto shapes = batch_shapes(sc.training);
    const int L = sc.model.num_layers;
    for_each_choice(mixed_groups(sc, opt), [&](const std::vector<std::array<int, 3>>& choice) {
        const std::vector<std::int64_t> all = replica_counts(sc, choice);
        for (int S : mixed_stage_counts(sc, choice)) {
            std::vector<std::int64_t> r = all;
            for (auto& x : r) x /= S;
            for (auto [mbs, m] : shapes)
                if (m <= max_num_micro_batches && S <= max_stages_at(sc, m))
                    for_each_split(r, mbs, [&](const std::vector<int>&) { return plans += choose(L - 1, S - 1), true; });
        }
        return true;
    });
    return plans;
}

void search_mixed_pipelines(const Scenario& sc, const SearchOptions& opt, TopK& top, SearchStats& stats, const std::function<bool()>& halted) {
    if (opt.schedule == "interleaved-1f1b") return;
    const auto shapes = batch_shapes(sc.training);
    const double B = static_cast<double>(sc.training.global_batch_size);
    const int L = sc.model.num_layers;
    // F + B of one replica per layer count (index l), for a group, TP, samples, stage count and
    // position (0 first, 1 middle, 2 last), made nondecreasing in l by a suffix minimum so that it
    // stays below every cost and the integer bottleneck applies
    std::map<std::array<int, 5>, std::vector<double>> tables;
    // The model's leading dense blocks (docs/model.md, "Expert parallelism"): the first stage holds
    // the first min(F, l) of its l blocks; a later one between none and min(F, l) of them (with
    // empty stages before it, all), so its bounds take the cheaper of the two (the cost is linear
    // in the share).
    const int F = leading_dense_blocks(sc.model);
    auto shares = [&](int pos, int l) -> std::array<double, 2> {
        if (F == 0) return {-1.0, -1.0};
        if (pos == 0) return {prefix_share_of(std::min(F, l), l), prefix_share_of(std::min(F, l), l)};
        return {0.0, prefix_share_of(std::min(F, l), l)};
    };
    auto table = [&](int g, int tp, int s, int S, int pos) -> const std::vector<double>& {
        auto [it, fresh] = tables.try_emplace({g, tp, s, S, pos});
        if (fresh) {
            Device buffer;
            const Device& d = replica_device(sc.cluster.groups[g], tp, buffer);
            StagePosition at{pos == 0 ? 0 : pos == 2 ? S - 1 : 1, S, 1, 1, -1};
            std::vector<double>& t = it->second;
            t.assign(L + 1, 0.0);
            for (int l = 1; l <= L; ++l) {
                t[l] = kInf;
                for (const double share : shares(pos, l)) {
                    at.prefix_share = share;
                    const ReplicaCost rc = replica_cost(sc, d, tp, s, l, at);
                    t[l] = std::min(t[l], rc.forward_s + rc.backward_s);
                }
            }
            for (int l = L - 1; l >= 1; --l) t[l] = std::min(t[l], t[l + 1]);
        }
        return it->second;
    };
    // The most layers a replica of group g at TP tp with s samples holds in memory at stage j of S
    // (m micro-batches, dp replicas in the stage): memory grows with the layers, so by bisection.
    std::map<std::array<std::int64_t, 7>, int> caps_memo;
    auto layer_cap = [&](int g, int tp, int s, int S, int j, std::int64_t m, int dp) {
        const std::int64_t in_flight = std::min<std::int64_t>(S - j, m);
        const int pos = j == 0 ? 0 : j == S - 1 ? 2 : 1;
        auto [it, fresh] = caps_memo.try_emplace({g, tp, s, S, pos, in_flight, dp}, 0);
        if (fresh) {
            Device buffer;
            const Device& d = replica_device(sc.cluster.groups[g], tp, buffer);
            auto fits = [&](int l) {
                StagePosition at{j, S, m, dp, -1};
                for (const double share : shares(pos, l)) {
                    at.prefix_share = share;
                    if (replica_cost(sc, d, tp, s, l, at).memory.total_GiB() <= d.memory_GiB) return true;
                }
                return false;
            };
            int lo = 0, hi = L;  // fits(lo) or lo == 0; !fits(hi + 1)
            if (fits(L)) lo = L;
            else
                while (hi - lo > 1) {
                    const int mid = (lo + hi) / 2;
                    (fits(mid) ? lo : hi) = mid;
                }
            it->second = lo;
        }
        return it->second;
    };
    auto cut = [&](double key) { return !opt.exhaustive && key * (1 - kBoundSlack) >= top.threshold(); };
    std::vector<std::vector<double>> stage_t(3);
    std::vector<const double*> ptrs;
    std::vector<int> caps, layers;
    std::vector<double> suffix, merged, scratch;
    for_each_choice(mixed_groups(sc, opt), [&](const std::vector<std::array<int, 3>>& choice) {
        const std::vector<std::int64_t> all = replica_counts(sc, choice);
        for (int S : mixed_stage_counts(sc, choice)) {
            if (halted()) return false;
            ++stats.configurations;
            std::vector<std::int64_t> r = all;
            for (auto& x : r) x /= S;
            for (const auto& shape : shapes) {
                const std::int64_t mbs = shape.first, m = shape.second;
                if (m > max_num_micro_batches || S > max_stages_at(sc, m)) continue;
                const double scale = static_cast<double>(mbs * m) / B;  // keys are per global batch
                bool go = true;
                for_each_split(r, mbs, [&](const std::vector<int>& s) {
                    // the stage's cost at each position: its slowest replica's
                    for (int pos = 0; pos < 3; ++pos) {
                        if (pos == 1 && S == 2) continue;  // no middle stage
                        stage_t[pos].assign(L + 1, 0.0);
                        for (std::size_t i = 0; i < choice.size(); ++i) {
                            const auto& t = table(choice[i][0], choice[i][2], s[i], S, pos);
                            for (int l = 1; l <= L; ++l) stage_t[pos][l] = std::max(stage_t[pos][l], t[l]);
                        }
                    }
                    ptrs.assign(S, stage_t[1].data());
                    ptrs.front() = stage_t[0].data();
                    ptrs.back() = stage_t[2].data();
                    caps.assign(S, L - S + 1);
                    if (!opt.exhaustive) {
                        int dp = 0;
                        for (auto x : r) dp += static_cast<int>(x);
                        for (int j = 0; j < S; ++j)
                            for (std::size_t i = 0; i < choice.size(); ++i)
                                caps[j] = std::min(caps[j], layer_cap(choice[i][0], choice[i][2], s[i], S, j, m, dp));
                    }
                    integer_bottleneck_suffixes(ptrs, caps, L, suffix, merged, scratch);
                    const double md = static_cast<double>(m);
                    if (cut(md * suffix[L] / scale)) {
                        ++stats.pruned;
                        return go = !halted();
                    }
                    layers.assign(S, 0);
                    // compositions of L over the S stages, stage by stage; `before` = sum of the
                    // placed stages' e_j, `path` = the longest path through one of them
                    std::function<bool(int, int, double, double)> walk = [&](int j, int left, double before, double path) -> bool {
                        const int most = j == S - 1 ? left : std::min(caps[j], left - (S - 1 - j));
                        for (int l = j == S - 1 ? left : 1; l <= most; ++l) {
                            const double e = ptrs[j][l], through = std::max(path, before + md * e);
                            const double rest = j == S - 1 ? 0.0 : before + e + md * suffix[(j + 1) * (L + 1) + left - l];
                            if ((j == S - 1 && l > caps[j]) || cut(std::max(through, rest) / scale)) {
                                ++stats.pruned;
                                continue;
                            }
                            layers[j] = l;
                            if (j + 1 < S) {
                                if (!walk(j + 1, left - l, before + e, through)) return false;
                                continue;
                            }
                            Plan p = pipeline_plan(choice, r, s, layers, mbs, m);
                            const Estimate est = estimate(sc, p, false);
                            ++stats.evaluated;
                            if (!est.memory_fits || !est.feasible)
                                ++stats.infeasible[est.memory_fits ? "stack" : "memory"];
                            else
                                top.insert(est.iteration_time_s / scale, std::move(p), est.iteration_time_s);
                            if (halted()) return false;
                        }
                        return true;
                    };
                    return go = walk(0, L, 0.0, 0.0);
                });
                if (!go) return false;
            }
        }
        return true;
    });
}

}  // namespace poseidon::detail
