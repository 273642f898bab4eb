// The space of the plan search at one micro-batch size (search_space.hpp; docs/search.md, "The
// space"), and its size without evaluating anything (search_space_size).
#include "poseidon/combined_1f1b.hpp"
#include "search_space.hpp"

#include <algorithm>
#include <cmath>
#include <map>
#include <numeric>
#include <set>

#include "grid_rules.hpp"
#include "poseidon/scenario.hpp"
#include "search_util.hpp"
#include "search_walk.hpp"

namespace poseidon::detail {

std::vector<int> node_choices(int nodes, bool all) {
    std::vector<int> out;
    if (all) {  // options.node_counts "all": every whole-node count, most first
        for (int n = nodes; n >= 1; --n) out.push_back(n);
        return out;
    }
    for (int n = nodes;; n = (n + 1) / 2) {
        if (out.empty() || out.back() != n) out.push_back(n);
        if (n == 1) break;
    }
    // Powers of two as well: data parallelism must divide a power-of-two batch, and the halvings of
    // 170 nodes (85, 43, 22, ...) reach a power-of-two GPU count only at 2 nodes: a pipeline on
    // more of them had 85, 43, 11 or 3 stages or a multiple.
    for (int p = 1; p < nodes; p *= 2) out.push_back(p);
    std::sort(out.begin(), out.end(), std::greater<int>());
    out.erase(std::unique(out.begin(), out.end()), out.end());
    return out;
}

bool tp_valid(const Scenario& sc, int tp) {
    const auto& m = sc.model;
    if (m.num_attention_heads % tp || m.kv_heads() % tp || m.ffn_hidden_size % tp) return false;
    if (sc.training.sequence_parallel && m.seq_length % tp) return false;
    // Ulysses context parallelism splits each TP rank's heads over the cp ranks (plan_format.cpp)
    const int cp = sc.search_cp;
    if (cp > 1 && sc.training.cp_comm_type == "a2a" && !a2a_heads_problem(m, tp, cp).empty()) return false;
    return true;
}

std::vector<std::vector<int>> group_tps(const Scenario& sc, SearchStats& stats) {
    const int G = static_cast<int>(sc.cluster.groups.size());
    std::vector<std::vector<int>> tps(G);
    for (int g = 0; g < G; ++g) {
        const Group& gr = sc.cluster.groups[g];
        // Transformer Engine's context parallelism runs on its fused attention backends only
        // (validate_plan refuses the stage): a grid with cp > 1 has no option on such a GPU
        if (!group_runs_cp(sc, gr)) {
            ++stats.infeasible["cp without fused attention"];
            continue;
        }
        for (int tp = 1; tp <= gr.gpus_per_node; ++tp) {
            if (gr.gpus_per_node % tp) continue;
            if (tp_valid(sc, tp))
                tps[g].push_back(tp);
            else
                ++stats.infeasible["tp divisibility"];
        }
    }
    return tps;
}

int max_stages_at(const Scenario& sc, std::int64_t m) {
    return static_cast<int>(std::min<std::int64_t>({sc.model.num_layers, max_stages, max_dag_cells / m}));
}

std::int64_t ctx_bytes(const Scenario& sc, std::int64_t mbs, std::int64_t m, const std::vector<std::vector<int>>& tps, bool all_nodes) {
    const int smax = max_stages_at(sc, m);
    const std::int64_t L = sc.model.num_layers;
    std::int64_t tables = 0, minima = 0;
    for (std::size_t g = 0; g < sc.cluster.groups.size(); ++g) {
        const int P = sc.cluster.groups[g].gpus_per_node;
        auto add = [&](int s) {
            int k = 0;
            for (int tp : tps[g]) k += replicas_divide(sc, s, tp, mbs);
            tables += k;
            minima += k > 0;
        };
        if (all_nodes) {
            // every node count: the sizes of one node's divisors (P / d stages on one node) and
            // every whole number of nodes (one stage of c nodes), without visiting each count
            for (std::int64_t d : divisors(P))
                if (d < P && P / d <= smax) add(static_cast<int>(d));
            for (int c = 1; c <= sc.cluster.groups[g].nodes; ++c) add(c * P);
            continue;
        }
        std::set<int> seen;  // stage sizes (a size's tables serve every node count)
        for (int n : node_choices(sc.cluster.groups[g].nodes, all_nodes))
            for (int s : stage_sizes(P, n)) {
                if (static_cast<long long>(n) * P / s > smax || !seen.insert(s).second) continue;
                add(s);
            }
    }
    return tables * static_cast<std::int64_t>(table_bytes(static_cast<int>(L))) + minima * (L + 1) * static_cast<std::int64_t>(sizeof(double));
}

std::int64_t walker_bytes(const Scenario& sc, std::int64_t m) {
    const std::int64_t entries = (static_cast<std::int64_t>(max_stages_at(sc, m)) + 1) * (sc.model.num_layers + 1);
    return kSuffixTables * (entries > suffix_table_entries_max ? sc.model.num_layers + 1 : entries) * static_cast<std::int64_t>(sizeof(double));
}

std::unique_ptr<MbsCtx> build_ctx(const Scenario& sc_, std::int64_t mbs, std::int64_t m_, bool all_nodes, const std::vector<std::vector<int>>& tp_ok_, SearchStats& stats_,
                                  std::atomic<std::int64_t>* account, const std::function<bool()>& halted, bool empty_stages) {
    const int L_ = sc_.model.num_layers;
    const int G_ = static_cast<int>(sc_.cluster.groups.size());
    auto c = std::make_unique<MbsCtx>();
    c->mbs = mbs;
    c->m = m_;
    // the iteration trains mbs m samples: bounds in seconds of it compare with the top-K keys,
    // seconds per global_batch_size samples, divided by this (exactly 1 without a tolerance)
    c->scale = static_cast<double>(mbs * m_) / static_cast<double>(sc_.training.global_batch_size);
    c->smax = max_stages_at(sc_, m_);
    if (c->smax < 1) {
        ++stats_.infeasible["DAG size"];
        return nullptr;
    }
    c->costs = std::make_unique<Costs>(sc_, mbs, c->m, account, empty_stages);
    c->account = account;
    auto fail = [&]() -> std::unique_ptr<MbsCtx> {  // the probes made are counted all the same
        stats_.cost_probes += c->costs->probes();
        return nullptr;
    };
    c->opts.assign(G_, {});
    c->rho_a.assign(G_, 0);
    c->rho_b.assign(G_, 0);
    c->host.assign(G_, 0);
    bool any = false;
    const double m = static_cast<double>(c->m);
    for (int g = 0; g < G_; ++g) {
        const Group& gr = sc_.cluster.groups[g];
        const int P = gr.gpus_per_node;
        for (int n : node_choices(gr.nodes, all_nodes)) {
            const std::vector<int> sizes = detail::stage_sizes(P, n);
            for (int s : sizes) {
                const long long count = static_cast<long long>(n) * P / s;
                if (count > c->smax) {
                    ++stats_.infeasible["stages over limit"];
                    continue;
                }
                if (halted && halted()) return fail();
                // the expert grid (ep x etp GPUs) divides a stage's GPUs (Megatron-Core's MoE
                // parallel folding; stage_costs.cpp refuses the others as well)
                if (s % (sc_.search_ep * sc_.search_etp) != 0) {
                    ++stats_.infeasible["expert grid"];
                    continue;
                }
                OptInfo info;
                info.o = GroupOpt{n, s, static_cast<int>(count)};
                for (int tp : tp_ok_[g]) {
                    if (s % replica_gpus(sc_, tp)) continue;
                    const int dp = s / replica_gpus(sc_, tp);
                    if (mbs % dp) {
                        ++stats_.infeasible["dp divisibility"];
                        continue;
                    }
                    const int cap = c->costs->cap_anywhere(g, s, tp);
                    if (cap < 1) {  // (a stage that holds no layer anywhere is not an option, even with empty stages)
                        ++stats_.infeasible["memory"];
                        continue;
                    }
                    const Table& tb = c->costs->middle(g, s, tp);
                    info.tps.push_back({tp, tb.rates, cap, &tb});
                    info.cap = std::max(info.cap, cap);
                }
                if (info.tps.empty()) continue;
                std::stable_sort(info.tps.begin(), info.tps.end(), [](const TpChoice& x, const TpChoice& y) { return x.r.a < y.r.a; });
                Rates& b = info.best;
                b = info.tps.front().r;
                for (const auto& t : info.tps) {
                    b.a = std::min(b.a, t.r.a);
                    b.phi_f = std::min(b.phi_f, t.r.phi_f);
                    b.mu_b = std::min(b.mu_b, t.r.mu_b);
                    b.dp_min = std::min(b.dp_min, t.r.dp_min);
                    b.opt_min = std::min(b.opt_min, t.r.opt_min);
                }
                for (auto& t : info.tps) {
                    t.decay_a = std::pow(1 - t.r.a / (m * t.r.a), info.o.count);
                    t.decay_b = std::pow(1 - t.r.phi_f / t.r.mu_b, info.o.count);
                }
                info.vs_a = 1 / b.a;
                info.vs_b = 1 / b.phi_f;
                info.decay_a = std::pow(1 - b.a / (m * b.a), info.o.count);
                info.decay_b = std::pow(1 - b.phi_f / b.mu_b, info.o.count);
                c->rho_a[g] = std::max(c->rho_a[g], info.o.count / (m * b.a));
                c->rho_b[g] = std::max(c->rho_b[g], info.o.count / b.mu_b);
                c->host[g] = std::max(c->host[g], static_cast<long long>(info.o.count) * info.cap);
                c->opts[g].push_back(std::move(info));
                any = true;
            }
        }
        // Most compute first; then fewer stages.
        std::stable_sort(c->opts[g].begin(), c->opts[g].end(), [](const OptInfo& x, const OptInfo& y) {
            double rx = x.o.count / x.best.a, ry = y.o.count / y.best.a;
            if (rx != ry) return rx > ry;
            return x.o.count < y.o.count;
        });
    }
    if (!any) return fail();
    if (std::accumulate(c->host.begin(), c->host.end(), 0LL) < L_) {
        ++stats_.infeasible["memory"];
        return fail();
    }
    // the least F+B over the TP degrees of each stage size (tp_bottleneck_bound), and the least
    // forward and backward apart (ilv_tp_family_c)
    for (int g = 0; g < G_; ++g) {
        struct Least {
            std::shared_ptr<const std::vector<double>> c, f, b;
            bool mono = false;
        };
        std::map<int, Least> by_size;
        for (auto& info : c->opts[g]) {
            Least& least = by_size[info.o.size];
            if (!least.c) {
                auto v = std::make_shared<std::vector<double>>(L_ + 1, kInf);
                auto f = std::make_shared<std::vector<double>>(L_ + 1, kInf);
                auto b = std::make_shared<std::vector<double>>(L_ + 1, kInf);
                for (const auto& t : info.tps) {
                    const Table& tb = c->costs->middle(g, info.o.size, t.tp);
                    for (int l = c->costs->l_min(); l <= L_; ++l) {
                        (*v)[l] = std::min((*v)[l], tb.c[l]);
                        (*f)[l] = std::min((*f)[l], tb.t[l].forward_s);
                        (*b)[l] = std::min((*b)[l], tb.t[l].backward_s);
                    }
                }
                least.mono = true;
                for (int l = c->costs->l_min() + 1; l <= L_; ++l) least.mono = least.mono && (*v)[l] >= (*v)[l - 1];
                least.c = std::move(v);
                least.f = std::move(f);
                least.b = std::move(b);
                c->add_bytes(3 * static_cast<std::int64_t>(L_ + 1) * static_cast<std::int64_t>(sizeof(double)));
            }
            info.cmin = least.c;
            info.cmin_monotone = least.mono;
            info.fmin = least.f;
            info.bmin = least.b;
        }
    }
    // the exact suffix rates per set of groups, with each option at its best rates and decays as
    // layout_bound takes a block whose TP is open
    c->suf_a = suffix_rates(*c, [](const OptInfo& o, double v) { return lp_steps(v, o.best.a, o.decay_a); });
    c->suf_b = suffix_rates(*c, [](const OptInfo& o, double v) { return lp_steps(v, o.best.phi_f, o.decay_b); });
    c->add_bytes(static_cast<std::int64_t>(c->suf_a.size() + c->suf_b.size()) * static_cast<std::int64_t>(sizeof(double)));
    if (!c->suf_a.empty()) {
        const std::uint64_t all = c->suf_a.size() - 1;
        for (std::uint64_t U = 0; U <= all; ++U) c->suf_info.push_back(suffix_info(*c, all & ~U));
        c->add_bytes(static_cast<std::int64_t>(c->suf_info.size() * sizeof(SuffixInfo)));
    }
    c->group_order.resize(G_);
    std::iota(c->group_order.begin(), c->group_order.end(), 0);
    std::stable_sort(c->group_order.begin(), c->group_order.end(), [&](int x, int y) { return c->rho_a[x] > c->rho_a[y]; });
    c->keep_a.resize(c->smax + 1);
    for (int n = 0; n <= c->smax; ++n) c->keep_a[n] = std::pow(1 - 1 / m, n);
    // Root bound: every group optimistic, no stage fixed.
    double dp0 = kInf;
    for (int g = 0; g < G_; ++g)
        for (const auto& o : c->opts[g]) dp0 = std::min(dp0, o.best.dp_min);
    SuffixCache cache;
    auto [va, vb] = suffix_cap(*c, cache, 0, c->smax);
    c->root_bound = va > 0 ? std::max(L_ / va + dp0, L_ / vb) : kInf;
    // the sizes are visited in the order of the bound at the per-group summaries (Walker::Child)
    auto [oa, ob] = suffix_cap(*c, cache, 0, c->smax, false);
    c->root_order = oa > 0 ? std::max(L_ / oa + dp0, L_ / ob) : kInf;
    return c;
}

}  // namespace poseidon::detail

namespace poseidon {

using detail::divisors;
using detail::node_choices;
using detail::tp_valid;

SpaceSize search_space_size(const Scenario& sc, bool tp_per_stage, const std::string& schedule, const std::string& node_counts, int group_blocks,
                            bool split_nodes, bool empty_stages) {
    // the search runs once per grid (expert grids of an MoE model, context-parallel sizes of a
    // long sequence: search_grids.cpp), each over its own space: their sizes add up
    SpaceSize out;
    for (const auto& [cp, ep, etp] : detail::search_grids(sc)) {
        Scenario one = sc;
        one.search_cp = cp, one.search_ep = ep, one.search_etp = etp;
        detail::add_space(out, detail::grid_space_size(one, tp_per_stage, schedule, node_counts, group_blocks, split_nodes, empty_stages));
    }
    return out;
}

SpaceSize detail::grid_space_size(const Scenario& sc, bool tp_per_stage, const std::string& schedule, const std::string& node_counts, int group_blocks,
                                  bool split_nodes, bool empty_stages) {
    SpaceSize out;
    if (group_blocks > 1)
        return detail::group_blocks_space_size(sc, tp_per_stage, schedule, node_counts, group_blocks, split_nodes, empty_stages);
    const int L = sc.model.num_layers;
    const int G = static_cast<int>(sc.cluster.groups.size());
    if (G > 16) return out;
    // log-free binomials as doubles
    auto comp = [](int n, int S) {  // compositions of n into S positive parts
        double c = 1;
        for (int i = 1; i < S; ++i) c = c * (n - i) / i;
        return S <= n ? c : 0.0;
    };
    // 1F1B splits: with empty stages, compositions of L into S parts that may be 0 (of L + S
    // into S positive parts), or where the stack cannot build a stage without parameters, whose
    // first and last parts only may be 0; interleaved splits always give each stage a chunk
    const bool mid_empty = detail::middle_may_be_empty(sc, empty_stages);
    auto comp_1f1b = [&](int n, int S) {
        if (!empty_stages || S == 1) return comp(n, S);
        if (mid_empty) return comp(n + S, S);
        return comp(n, S) + 2 * comp(n, S - 1) + (S >= 3 ? comp(n, S - 2) : 0.0);
    };
    const bool one_f1b = schedule != "interleaved-1f1b";
    std::vector<int> vs;
    if (schedule != "1f1b")
        for (int V = 2; V <= std::min(search_max_virtual_stages, L / 2); ++V)
            if (L % V == 0) vs.push_back(V);
    std::vector<int> tps_ok;
    for (auto [mbs, m] : detail::batch_shapes(sc.training)) {
        if (m > max_num_micro_batches) continue;
        const int smax = static_cast<int>(std::min<std::int64_t>({L, max_stages, max_dag_cells / m}));
        if (smax < 1) continue;
        // options per group: (count, TP assignments of its stages: one degree for all, or with
        // tp_per_stage one per stage, ntp^count)
        std::vector<std::vector<std::pair<int, double>>> opts(G);
        bool any = false;
        for (int g = 0; g < G; ++g) {
            const Group& gr = sc.cluster.groups[g];
            const int P = gr.gpus_per_node;
            if (!detail::group_runs_cp(sc, gr)) continue;
            for (int n : node_choices(gr.nodes, node_counts == "all")) {
                const std::vector<int> sizes = detail::stage_sizes(P, n);
                for (int s : sizes) {
                    const long long count = static_cast<long long>(n) * P / s;
                    if (count > smax || s % (sc.search_ep * sc.search_etp) != 0) continue;
                    int ntp = 0;
                    for (int tp = 1; tp <= P; ++tp)
                        if (P % tp == 0 && tp_valid(sc, tp) && detail::replicas_divide(sc, s, tp, mbs)) ++ntp;
                    if (ntp) {
                        const double seqs = tp_per_stage ? std::pow(static_cast<double>(ntp), static_cast<double>(count)) : ntp;
                        opts[g].push_back({static_cast<int>(count), seqs});
                        any = true;
                    }
                }
            }
        }
        if (!any) continue;
        out.micro_batch_sizes += 1;
        // f[mask][S] = (layouts, configurations) over ordered sequences of the groups in mask; the
        // two halves of a node (options.split_nodes) come first half, then second, with no other
        // part of their group between them (NodeHalves::may_place), and a sequence ends only when
        // no half waits for its second.
        const detail::NodeHalves halves = detail::node_halves(sc.cluster);
        const std::size_t masks = std::size_t{1} << G;
        std::vector<std::vector<std::pair<double, double>>> f(masks, std::vector<std::pair<double, double>>(smax + 1, {0, 0}));
        f[0][0] = {1, 1};
        for (std::size_t mask = 0; mask < masks; ++mask)
            for (int S = 0; S <= smax; ++S) {
                auto [ly, cf] = f[mask][S];
                if (ly == 0) continue;
                for (int g = 0; g < G; ++g) {
                    if (mask >> g & 1 || !halves.may_place(g, mask, sc.cluster.group_origin)) continue;
                    for (auto [cnt, ntp] : opts[g]) {
                        if (S + cnt > smax) continue;
                        auto& t = f[mask | (std::size_t{1} << g)][S + cnt];
                        t.first += ly;
                        t.second += cf * ntp;
                    }
                }
            }
        for (std::size_t mask = 1; mask < masks; ++mask) {
            if (halves.open(mask)) continue;
            for (int S = 1; S <= smax; ++S) {
                const double cf = f[mask][S].second;
                out.stage_layouts += f[mask][S].first;
                out.configurations += cf;
                // the combined 1F1B pipelines only interleaved (validate_plan)
                if (one_f1b && (S == 1 || !merges_passes(sc))) {
                    out.schedules += cf;
                    out.plans += cf * comp_1f1b(L, S);
                }
                for (int V : vs)
                    if (detail::interleave_ok(S, m, V, L)) {
                        out.schedules += cf;
                        out.plans += cf * comp(L / V, S);
                    }
            }
        }
    }
    return out;
}

}  // namespace poseidon
