// One stage whose data-parallel replicas mix GPU types (options.mixed_stages; docs/search.md,
// "The space", step 7): pure data parallelism over the GPUs of two or more groups, each group's
// replicas with their own TP degree and number of samples, so that fast and slow GPUs finish
// together. Enumerated apart from the pipeline layouts (it is a layout of its own: one stage, no
// layer split) with two lower bounds that need no DAG:
//   - per choice of groups, nodes and TP: a replica of group g computes s samples in at least
//     s a_g (a_g the least F+B time per sample over the sample counts searched), so with
//     sum_g r_g s_g = mbs samples a micro-batch the slowest replica needs at least
//     mbs / sum_g (r_g / a_g), and the iteration m times that: key >= B / sum_g (r_g / a_g)
//     whatever the micro-batch shape;
//   - per sample split: the iteration is m max_g c_g(s_g) plus the gradient sync and the step.
// Both are below the DAG's time of the one-stage plan (m (f + b) + sync + step), so the cut is
// safe; --exhaustive skips them.
#include <algorithm>
#include <array>
#include <functional>
#include <map>

#include "poseidon/scenario.hpp"
#include "search_driver.hpp"
#include "search_mixed.hpp"
#include "search_space.hpp"
#include "search_util.hpp"

namespace poseidon::detail {

// The groups' choices: node counts (as in step 2) and TP degrees that divide a node and that the
// model allows.
std::vector<MixedGroup> mixed_groups(const Scenario& sc, const SearchOptions& opt) {
    std::vector<MixedGroup> out;
    for (int g = 0; g < static_cast<int>(sc.cluster.groups.size()); ++g) {
        const Group& gr = sc.cluster.groups[g];
        if (!group_runs_cp(sc, gr)) continue;
        MixedGroup m;
        m.g = g;
        m.P = gr.gpus_per_node;
        m.nodes = node_choices(gr.nodes, opt.node_counts == "all");
        for (std::int64_t t : divisors(gr.gpus_per_node))
            if (tp_valid(sc, static_cast<int>(t))) m.tps.push_back(static_cast<int>(t));
        if (!m.tps.empty()) out.push_back(std::move(m));
    }
    return out;
}

// Calls fn(choice) for every subset of at least two groups, node count and TP per group; choice[i]
// = {group, nodes, tp} of the subset's i-th group. Stops when fn returns false.
bool for_each_choice(const std::vector<MixedGroup>& gs, const std::function<bool(const std::vector<std::array<int, 3>>&)>& fn) {
    const int G = static_cast<int>(gs.size());
    if (G < 2 || G > 20) return true;
    std::vector<std::array<int, 3>> choice;
    std::function<bool(int)> rec = [&](int i) -> bool {
        if (i == G) return choice.size() < 2 || fn(choice);
        if (!rec(i + 1)) return false;  // group i unused
        for (int n : gs[i].nodes)
            for (int tp : gs[i].tps) {
                choice.push_back({gs[i].g, n, tp});
                const bool go = rec(i + 1);
                choice.pop_back();
                if (!go) return false;
            }
        return true;
    };
    return rec(0);
}

// Calls fn(s) for every split s_i >= 1 of mbs samples with sum_i r_i s_i = mbs.
void for_each_split(const std::vector<std::int64_t>& r, std::int64_t mbs, const std::function<bool(const std::vector<int>&)>& fn) {
    const std::size_t K = r.size();
    std::vector<std::int64_t> rest(K + 1, 0);  // least samples the groups from i on take (one each)
    for (std::size_t i = K; i-- > 0;) rest[i] = rest[i + 1] + r[i];
    std::vector<int> s(K, 0);
    bool go = true;
    std::function<void(std::size_t, std::int64_t)> rec = [&](std::size_t i, std::int64_t left) {
        if (!go) return;
        if (i + 1 == K) {
            if (left % r[i] == 0 && left / r[i] >= 1) {
                s[i] = static_cast<int>(left / r[i]);
                go = fn(s);
            }
            return;
        }
        for (std::int64_t x = 1; r[i] * x + rest[i + 1] <= left && go; ++x) {
            s[i] = static_cast<int>(x);
            rec(i + 1, left - r[i] * x);
        }
    };
    if (mbs >= rest[0]) rec(0, mbs);
}

// Replicas of each group of a choice: its GPUs over its TP degree.
std::vector<std::int64_t> replica_counts(const Scenario& sc, const std::vector<std::array<int, 3>>& choice) {
    std::vector<std::int64_t> r;
    for (const auto& c : choice) r.push_back(static_cast<std::int64_t>(c[1]) * sc.cluster.groups[c[0]].gpus_per_node / c[2]);
    return r;
}

namespace {

Plan mixed_plan(const Scenario& sc, const std::vector<std::array<int, 3>>& choice, const std::vector<std::int64_t>& r, const std::vector<int>& s,
                std::int64_t mbs, std::int64_t m) {
    Plan p;
    p.micro_batch_size = mbs;
    p.num_micro_batches = m;
    p.stages.resize(1);
    p.stages[0].num_layers = sc.model.num_layers;
    p.stages[0].homogeneous_form = false;
    for (std::size_t i = 0; i < choice.size(); ++i) p.stages[0].replicas.push_back(ReplicaSet{choice[i][0], choice[i][2], static_cast<int>(r[i]), s[i]});
    return p;
}

}  // namespace

double mixed_space_size(const Scenario& sc, const SearchOptions& opt) {
    if (opt.schedule == "interleaved-1f1b") return 0;  // a one-stage plan is not interleaved
    double plans = 0;
    const auto shapes = batch_shapes(sc.training);
    for_each_choice(mixed_groups(sc, opt), [&](const std::vector<std::array<int, 3>>& choice) {
        const std::vector<std::int64_t> r = replica_counts(sc, choice);
        for (auto [mbs, m] : shapes)
            if (m <= max_num_micro_batches) for_each_split(r, mbs, [&](const std::vector<int>&) { return ++plans, true; });
        return true;
    });
    return plans + mixed_pipeline_space_size(sc, opt);
}

void search_mixed(const Scenario& sc, const SearchOptions& opt, TopK& top, SearchStats& stats, const std::function<bool()>& halted) {
    if (opt.schedule == "interleaved-1f1b") return;
    const auto shapes = batch_shapes(sc.training);
    const double B = static_cast<double>(sc.training.global_batch_size);
    std::int64_t max_mbs = 0;
    for (auto [mbs, m] : shapes) max_mbs = std::max(max_mbs, mbs);
    // F + B of one replica of group g at TP tp with s samples holding every layer (first and last
    // stage at once), memoised; and the least per sample over s = 1 .. max_mbs
    std::map<std::array<int, 3>, double> cost;
    auto c = [&](int g, int tp, int s) {
        auto [it, fresh] = cost.try_emplace({g, tp, s}, 0.0);
        if (fresh) {
            Device buffer;
            const Device& d = replica_device(sc.cluster.groups[g], tp, buffer);
            // (one stage: it holds the leading dense blocks, if any)
            StagePosition only{0, 1, 1, 1, -1};
            const int F = leading_dense_blocks(sc.model);
            if (F > 0) only.prefix_share = prefix_share_of(F, sc.model.num_layers);
            const ReplicaCost rc = replica_cost(sc, d, tp, s, sc.model.num_layers, only);
            it->second = rc.forward_s + rc.backward_s;
        }
        return it->second;
    };
    std::map<std::pair<int, int>, double> per_sample;
    auto a = [&](int g, int tp) {
        auto [it, fresh] = per_sample.try_emplace({g, tp}, kInf);
        if (fresh)
            for (int s = 1; s <= max_mbs; ++s) it->second = std::min(it->second, c(g, tp, s) / s);
        return it->second;
    };
    auto cut = [&](double key) { return !opt.exhaustive && key * (1 - kBoundSlack) >= top.threshold(); };
    for_each_choice(mixed_groups(sc, opt), [&](const std::vector<std::array<int, 3>>& choice) {
        if (halted()) return false;
        ++stats.configurations;
        const std::vector<std::int64_t> r = replica_counts(sc, choice);
        double rate = 0;
        for (std::size_t i = 0; i < choice.size() && !opt.exhaustive; ++i) rate += static_cast<double>(r[i]) / a(choice[i][0], choice[i][2]);
        if (!opt.exhaustive && cut(B / rate)) {
            ++stats.pruned;
            return true;
        }
        for (const auto& shape : shapes) {
            const std::int64_t mbs = shape.first, m = shape.second;  // named: a lambda below uses them
            if (m > max_num_micro_batches) continue;
            const double scale = static_cast<double>(mbs * m) / B;  // keys are per global batch
            for_each_split(r, mbs, [&](const std::vector<int>& s) {
                if (!opt.exhaustive) {
                    double slowest = 0;
                    for (std::size_t i = 0; i < choice.size(); ++i) slowest = std::max(slowest, c(choice[i][0], choice[i][2], s[i]));
                    if (cut(static_cast<double>(m) * slowest / scale)) {
                        ++stats.pruned;
                        return true;
                    }
                }
                Plan p = mixed_plan(sc, choice, r, s, mbs, m);
                const Estimate e = estimate(sc, p, false);
                ++stats.evaluated;
                if (!e.memory_fits || !e.feasible) {
                    ++stats.infeasible[e.memory_fits ? "stack" : "memory"];
                    return !halted();
                }
                top.insert(e.iteration_time_s / scale, std::move(p), e.iteration_time_s);
                return !halted();
            });
            if (halted()) return false;
        }
        return true;
    });
}

}  // namespace poseidon::detail
