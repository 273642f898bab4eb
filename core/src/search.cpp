// The plan search of docs/search.md: a branch and bound over micro-batch size, stage layout
// (group order, GPUs per group, stage size), TP per block and layer split, where every plan it
// reports is scored by the 1F1B DAG of dag.hpp and every cut is a proven lower bound.
//
// All stage numbers come from evaluate_stages (the cost model's only entry point that applies
// measured profiles and links), called on small "probe" plans and cached per micro-batch size:
// a stage's times depend on its group, TP, DP, samples, layers, node span and whether it is the
// first/last/only stage; its memory fit also on its in-flight micro-batches. Sends come from a
// probe of the two neighbouring stages. The returned plans are re-estimated with `estimate`.
#include "poseidon/search.hpp"

#include "search_bounds.hpp"
#include "search_util.hpp"

#include <algorithm>
#include <array>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <functional>
#include <limits>
#include <map>
#include <memory>
#include <numeric>
#include <stdexcept>
#include <unordered_map>

#include "poseidon/scenario.hpp"

namespace poseidon {

SearchOptions parse_search_options(const Json& j) {
    Problems problems;
    SearchOptions o;
    ObjectReader r(j, "options", problems);
    if (r.ok()) {
        r.reject_unknown({"top", "exhaustive", "time_limit_s", "baselines", "tp_per_stage"});
        if (auto v = r.integer("top", false, 1, 100)) o.top_k = static_cast<int>(*v);
        if (auto v = r.boolean("exhaustive", false)) o.exhaustive = *v;
        if (auto v = r.boolean("tp_per_stage", false)) o.tp_per_stage = *v;
        if (auto v = r.number("time_limit_s", false, 0, false, 86400)) o.time_limit_s = *v;
        if (auto v = r.boolean("baselines", false)) o.baselines = *v;
    }
    problems.throw_if_any();
    return o;
}

namespace {

using Clock = std::chrono::steady_clock;
constexpr double kInf = std::numeric_limits<double>::infinity();
// A lower bound is a sum computed in another order than the DAG's longest path; a branch is cut
// only when its bound exceeds the threshold by this relative margin, far above rounding
// (docs/search.md, "Soundness").
constexpr double kBoundSlack = 1e-9;

double seconds_since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

// Position class of a stage: what of its cost depends on where it sits in the pipeline.
enum Pos : int { kMiddle = 0, kFirst = 1, kLast = 2, kOnly = 3 };
Pos pos_of(int i, int S) {
    if (S == 1) return kOnly;
    if (i == 0) return kFirst;
    if (i == S - 1) return kLast;
    return kMiddle;
}

std::uint64_t stage_key(int g, int size, int tp, int pos, int inflight = 0) {
    return (static_cast<std::uint64_t>(g) << 56) | (static_cast<std::uint64_t>(size) << 32) | (static_cast<std::uint64_t>(tp) << 18) |
           (static_cast<std::uint64_t>(pos) << 16) | static_cast<std::uint64_t>(inflight);
}

// Per-layer lower-bound rates of a (group, stage size, TP) at one micro-batch size, exact minima
// over every layer count l of the cached middle-stage costs (docs/search.md, "Bounds").
struct Rates {
    double a = 0;       // min_l (forward + backward)(l) / l
    double phi_f = 0;   // min_l forward(l) / l
    double phi_b = 0;   // min_l backward(l) / l
    double mu_b = 0;    // min_l (m (forward + backward)(l) + dp_sync(l)) / l
    double dp_min = 0;  // min_l dp_sync(l)
    double opt_min = 0; // min_l optimizer(l)
};

struct Table {
    std::vector<StageTimes> t;  // by layer count
    std::vector<std::uint8_t> have;
    Rates rates;
    std::vector<double> c;      // forward + backward by layer count (middle tables)
    bool monotone = false;      // c never decreases with the layer count
};

struct FitMemo {
    int fit_max = 0;    // every l <= fit_max fits
    int nofit_min = 0;  // no l >= nofit_min fits
};

struct ProbeStage {
    int g = 0, size = 1, tp = 1, layers = 1, first_gpu = 0;
};

// The per-micro-batch-size cost cache over evaluate_stages.
class Costs {
public:
    Costs(const Scenario& sc, std::int64_t mbs, std::int64_t m, std::int64_t& probes)
        : sc_(sc), mbs_(mbs), m_(m), L_(sc.model.num_layers), probes_(probes) {
        plan_.micro_batch_size = mbs;
        plan_.num_micro_batches = m;
    }

    std::int64_t m() const { return m_; }

    const std::vector<StageEval>& probe(const std::vector<ProbeStage>& ps) {
        ++probes_;
        plan_.stages.resize(ps.size());
        placement_.resize(ps.size());
        for (std::size_t i = 0; i < ps.size(); ++i) {
            const ProbeStage& p = ps[i];
            const int dp = p.size / p.tp;
            StagePlan& st = plan_.stages[i];
            st.num_layers = p.layers;
            st.homogeneous_form = true;
            st.replicas.assign(1, ReplicaSet{p.g, p.tp, dp, static_cast<int>(mbs_ / dp)});
            auto& reps = placement_[i].replicas;
            reps.resize(dp);
            for (int r = 0; r < dp; ++r) reps[r] = ReplicaPlacement{p.g, p.first_gpu + r * p.tp, p.tp};
        }
        out_ = evaluate_stages(sc_, plan_, placement_);
        return out_;
    }

    // Middle-position costs for every layer count, and the rates derived from them.
    const Table& middle(int g, int size, int tp) {
        auto [it, fresh] = tables_.try_emplace(stage_key(g, size, tp, kMiddle));
        Table& tb = it->second;
        if (!fresh) return tb;
        tb.t.assign(L_ + 1, StageTimes{});
        tb.have.assign(L_ + 1, 1);
        constexpr int chunk = 256;
        for (int l0 = 1; l0 <= L_; l0 += chunk) {
            const int l1 = std::min(L_, l0 + chunk - 1);
            scratch_.clear();
            scratch_.push_back({g, size, tp, 1, 0});
            for (int l = l0; l <= l1; ++l) scratch_.push_back({g, size, tp, l, 0});
            scratch_.push_back({g, size, tp, 1, 0});
            const auto& ev = probe(scratch_);
            for (int l = l0; l <= l1; ++l) {
                StageTimes t = ev[l - l0 + 1].times;
                t.send_forward_s = t.send_backward_s = 0;
                tb.t[l] = t;
            }
        }
        tb.c.assign(L_ + 1, 0);
        tb.monotone = true;
        for (int l = 1; l <= L_; ++l) {
            tb.c[l] = tb.t[l].forward_s + tb.t[l].backward_s;
            if (l > 1 && tb.c[l] < tb.c[l - 1]) tb.monotone = false;
        }
        Rates& r = tb.rates;
        r.a = r.phi_f = r.phi_b = r.mu_b = r.dp_min = r.opt_min = kInf;
        const double m = static_cast<double>(m_);
        for (int l = 1; l <= L_; ++l) {
            const StageTimes& t = tb.t[l];
            const double c = t.forward_s + t.backward_s;
            r.a = std::min(r.a, c / l);
            r.phi_f = std::min(r.phi_f, t.forward_s / l);
            r.phi_b = std::min(r.phi_b, t.backward_s / l);
            r.mu_b = std::min(r.mu_b, (m * c + t.dp_sync_s) / l);
            r.dp_min = std::min(r.dp_min, t.dp_sync_s);
            r.opt_min = std::min(r.opt_min, t.optimizer_s);
        }
        return tb;
    }

    // The table times() fills for this position (node-based map: the reference stays valid).
    Table& table(int g, int size, int tp, Pos pos) {
        if (pos == kMiddle) return const_cast<Table&>(middle(g, size, tp));
        Table& tb = tables_[stage_key(g, size, tp, pos)];
        if (tb.t.empty()) {
            tb.t.assign(L_ + 1, StageTimes{});
            tb.have.assign(L_ + 1, 0);
        }
        return tb;
    }

    const StageTimes& times(int g, int size, int tp, Pos pos, int l) {
        if (pos == kMiddle) return middle(g, size, tp).t[l];
        Table& tb = table(g, size, tp, pos);
        if (!tb.have[l]) {
            scratch_.clear();
            if (pos == kLast) scratch_.push_back({g, size, tp, 1, 0});
            scratch_.push_back({g, size, tp, l, 0});
            if (pos == kFirst) scratch_.push_back({g, size, tp, 1, 0});
            const auto& ev = probe(scratch_);
            StageTimes t = ev[pos == kLast ? 1 : 0].times;
            t.send_forward_s = t.send_backward_s = 0;
            tb.t[l] = t;
            tb.have[l] = 1;
        }
        return tb.t[l];
    }

    void store_times(int g, int size, int tp, Pos pos, int l, const StageTimes& times) {
        if (pos == kMiddle) return;
        Table& tb = tables_[stage_key(g, size, tp, pos)];
        if (tb.t.empty()) {
            tb.t.assign(L_ + 1, StageTimes{});
            tb.have.assign(L_ + 1, 0);
        }
        if (tb.have[l]) return;
        StageTimes t = times;
        t.send_forward_s = t.send_backward_s = 0;
        tb.t[l] = t;
        tb.have[l] = 1;
    }

    FitMemo& memo(int g, int size, int tp, Pos pos, int inflight) {
        auto [it, fresh] = fits_.try_emplace(stage_key(g, size, tp, pos, inflight));
        if (fresh) it->second = FitMemo{0, L_ + 1};
        return it->second;
    }
    // 1: fits, 0: does not, -1: not known yet.
    int fits_known(int g, int size, int tp, Pos pos, int inflight, int l) {
        const FitMemo& f = memo(g, size, tp, pos, inflight);
        if (l <= f.fit_max) return 1;
        if (l >= f.nofit_min) return 0;
        return -1;
    }
    void record_fit(int g, int size, int tp, Pos pos, int inflight, int l, bool fits) {
        FitMemo& f = memo(g, size, tp, pos, inflight);
        if (fits)
            f.fit_max = std::max(f.fit_max, l);
        else
            f.nofit_min = std::min(f.nofit_min, l);
    }
    // Largest layer count that may fit (exact once exact_cap ran).
    int cap_upper(int g, int size, int tp, Pos pos, int inflight) { return memo(g, size, tp, pos, inflight).nofit_min - 1; }

    // Binary search with single-stage probes that reproduce the position and in-flight count.
    int exact_cap(int g, int size, int tp, Pos pos, int inflight) {
        for (;;) {
            FitMemo& f = memo(g, size, tp, pos, inflight);
            if (f.nofit_min <= f.fit_max + 1) return f.fit_max;
            const int l = f.fit_max + (f.nofit_min - f.fit_max) / 2;
            scratch_.clear();
            int target = 0;
            const ProbeStage dummy{g, size, tp, 1, 0};
            switch (pos) {
                case kOnly: scratch_.push_back({g, size, tp, l, 0}); break;
                case kLast:
                    scratch_.push_back(dummy);
                    scratch_.push_back({g, size, tp, l, 0});
                    target = 1;
                    break;
                case kFirst:
                    scratch_.push_back({g, size, tp, l, 0});
                    for (int i = 1; i < std::max(2, inflight); ++i) scratch_.push_back(dummy);
                    break;
                case kMiddle:
                    scratch_.push_back(dummy);
                    scratch_.push_back({g, size, tp, l, 0});
                    for (int i = 1; i < inflight; ++i) scratch_.push_back(dummy);
                    target = 1;
                    break;
            }
            const auto& ev = probe(scratch_);
            record_fit(g, size, tp, pos, inflight, l, ev[target].fits);
            store_times(g, size, tp, pos, l, ev[target].times);
        }
    }

    // An upper bound on the layers a stage of this kind can hold at any position of any pipeline:
    // memory only grows with the in-flight micro-batches, which are at least min(2, m) for a
    // first or middle stage and 1 for a last or only stage.
    int cap_anywhere(int g, int size, int tp) {
        const int two = static_cast<int>(std::min<std::int64_t>(2, m_));
        return std::max({exact_cap(g, size, tp, kFirst, two), exact_cap(g, size, tp, kMiddle, 2), exact_cap(g, size, tp, kLast, 1),
                         exact_cap(g, size, tp, kOnly, 1)});
    }

    // (send_forward of a, send_backward of b) between two neighbouring stages.
    std::pair<double, double> link(const ProbeStage& a, const ProbeStage& b, bool same_node) {
        std::array<int, 7> key{a.g, a.size, a.tp, b.g, b.size, b.tp, same_node ? 1 : 0};
        auto it = links_.find(key);
        if (it != links_.end()) return it->second;
        scratch_.assign({a, b});
        scratch_[0].layers = scratch_[1].layers = 1;
        const auto& ev = probe(scratch_);
        auto v = std::make_pair(ev[0].times.send_forward_s, ev[1].times.send_backward_s);
        links_.emplace(key, v);
        return v;
    }

private:
    const Scenario& sc_;
    std::int64_t mbs_, m_;
    int L_;
    std::int64_t& probes_;
    Plan plan_;
    std::vector<StagePlacement> placement_;
    std::vector<StageEval> out_;
    std::vector<ProbeStage> scratch_;
    std::unordered_map<std::uint64_t, Table> tables_;
    std::unordered_map<std::uint64_t, FitMemo> fits_;
    std::map<std::array<int, 7>, std::pair<double, double>> links_;
};

// One way to use a group: `nodes` whole nodes split into `count` stages of `size` GPUs.
struct GroupOpt {
    int nodes = 0, size = 0, count = 0;
};

struct TpChoice {
    int tp = 1;
    Rates r;
    int cap = 0;  // most layers one stage of this kind can hold anywhere in a pipeline
    double decay_a = 0, decay_b = 0;  // (1 - phi/mu)^count of the LP steps of a whole block
};

struct OptInfo {
    GroupOpt o;
    std::vector<TpChoice> tps;  // valid at this micro-batch size, by rate
    Rates best;                 // componentwise minimum over tps
    int cap = 0;                // max over tps of TpChoice::cap
    double decay_a = 0, decay_b = 0;
    std::vector<double> cmin;   // per layer count, the least middle F+B over tps (lazy)
    bool cmin_monotone = false;
};

// Optimistic summary of the groups not in a mask (suffix_cap).
struct SuffixInfo {
    double sa = 0, sb = 0, amin = 0, mub_min = 0, log_keep_b = 0;
    bool any = false;
};

struct MbsCtx {
    std::int64_t mbs = 0, m = 0;
    int smax = 0;
    std::unique_ptr<Costs> costs;
    std::vector<std::vector<OptInfo>> opts;  // [group]
    std::vector<double> rho_a, rho_b;        // per group: the most LP rate its options offer
    std::vector<long long> host;             // per group: the most layers its options can hold
    std::vector<int> group_order;
    double root_bound = 0;
    std::vector<double> keep_a;  // (1 - 1/m)^n
    std::unordered_map<std::uint64_t, SuffixInfo> suffix;
};

using detail::JcStage;

// A run of stages of one group option: the option's stages first .. first + count - 1, all with
// TP index tpi (-1: not chosen yet). A group option's stages start as one run; choosing TP per
// stage splits it into maximal runs of one degree each (docs/search.md, "The space"), so the
// remainder of a split may not start with the degree of the run before it (prev_tp; 0: none).
struct BlockSel {
    int g = 0, opt = 0, tpi = -1;
    int first = 0, count = 0;
    int prev_tp = 0;
};

// Which TP sequences a pass of the search visits: one degree per group option, sequences whose
// degree never rises along a group option's stages, or all of them.
enum class TpMode { per_group, non_increasing, any };

// A stage of the configuration whose layer split is searched.
struct CfgStage {
    int g = 0, size = 1, tp = 1, offset = 0, inflight = 1;
    Pos pos = kMiddle;
    Rates r;
};

// One entry of the top-K list.
struct Found {
    double time = 0;
    std::int64_t seq = 0;
    Plan plan;
};

using detail::divisors;

// Node counts a group may use: all of them, then halving down to one node.
std::vector<int> node_choices(int nodes) {
    std::vector<int> out;
    for (int n = nodes;; n = (n + 1) / 2) {
        if (out.empty() || out.back() != n) out.push_back(n);
        if (n == 1) break;
    }
    return out;
}

bool tp_valid(const Scenario& sc, int tp) {
    const auto& m = sc.model;
    if (m.num_attention_heads % tp || m.num_kv_heads % tp || m.ffn_hidden_size % tp) return false;
    if (sc.training.sequence_parallel && m.seq_length % tp) return false;
    return true;
}

class Engine {
public:
    Engine(const Scenario& sc, const SearchOptions& opt) : sc_(sc), opt_(opt), L_(sc.model.num_layers), G_(static_cast<int>(sc.cluster.groups.size())) {
        K_ = std::max(1, opt.top_k);
        exhaustive_ = opt.exhaustive;
        t0_ = Clock::now();
    }

    SearchStats& stats() { return stats_; }
    std::vector<Found>& found() { return top_; }
    bool stopped() const { return stop_; }

    // A last progress report when the search ends, so that a caller always hears at least once
    // (a small search can finish before the first periodic report, and an infeasible one never
    // finds a best). Its return value cannot cancel what is already finished.
    void final_report() {
        if (!opt_.on_progress || stats_.cancelled) return;
        const bool keep_stop = stop_;
        const bool keep_complete = stats_.complete;
        report(seconds_since(t0_));
        stop_ = keep_stop;
        stats_.complete = keep_complete;
        stats_.cancelled = false;
    }

    void run() {
        if (G_ > 64) throw InputError("scenario.cluster.groups", "the search handles at most 64 groups");
        // TP values that the model allows, per group.
        tp_ok_.assign(G_, {});
        for (int g = 0; g < G_; ++g) {
            const Group& gr = sc_.cluster.groups[g];
            for (int tp = 1; tp <= gr.gpus_per_node; ++tp) {
                if (gr.gpus_per_node % tp) continue;
                if (tp_valid(sc_, tp))
                    tp_ok_[g].push_back(tp);
                else
                    ++stats_.infeasible["tp divisibility"];
            }
        }
        // With TP per stage, the pruned search widens the space in three passes, each a superset
        // of the one before: one degree per group, then degrees that never rise along a group's
        // stages (its first stages hold the most in-flight micro-batches, so they are the ones
        // that may need a higher degree), then every sequence. Each pass skips the configurations
        // an earlier one searched and cuts with the top K found so far, so under a time limit
        // the answer is at least that of the last finished pass. The result is the same as one
        // pass over every sequence (the differential test checks it against --exhaustive).
        if (opt_.tp_per_stage && !exhaustive_) {
            for (TpMode mode : {TpMode::per_group, TpMode::non_increasing, TpMode::any}) {
                tp_mode_ = mode;
                pass();
                if (stop_) return;
                first_pass_ = false;
            }
            return;
        }
        tp_mode_ = opt_.tp_per_stage ? TpMode::any : TpMode::per_group;
        pass();
    }

    // Whether an earlier pass searched the configuration blocks_ describes.
    bool searched_before(const MbsCtx& c) const {
        if (first_pass_) return false;
        bool split = false, rises = false;
        for (const auto& b : blocks_) {
            if (b.prev_tp == 0) continue;
            split = true;
            rises = rises || c.opts[b.g][b.opt].tps[b.tpi].tp > b.prev_tp;
        }
        if (tp_mode_ == TpMode::non_increasing) return !split;
        return !rises;  // TpMode::any: the non-increasing pass had every sequence without a rise
    }

    // One search over every micro-batch size: the dive, then the full branch and bound.
    void pass() {
        std::vector<std::unique_ptr<MbsCtx>> ctxs;
        // a second pass finds the same infeasible sizes and options again: count them once
        const auto infeasible_before = stats_.infeasible;
        for (std::int64_t mbs : divisors(sc_.training.global_batch_size)) {
            const std::int64_t m = sc_.training.global_batch_size / mbs;
            if (m > max_num_micro_batches) {
                ++stats_.infeasible["micro-batches over limit"];
                continue;
            }
            auto c = build_ctx(mbs);
            if (c) ctxs.push_back(std::move(c));
            check_clock();
            if (stop_) return;
        }
        if (!first_pass_) stats_.infeasible = infeasible_before;
        // Most promising micro-batch size first; ties by size.
        std::stable_sort(ctxs.begin(), ctxs.end(), [&](const auto& a, const auto& b) {
            if (exhaustive_) return a->mbs < b->mbs;
            return a->root_bound < b->root_bound;
        });
        // Dive: a short, budgeted pass over every micro-batch size (the same best-first order,
        // abandoned after kDiveTicks nodes) seeds the top-K list with good plans of the space, so
        // that the full search below cuts from the start. Plans found again are not duplicated.
        if (!exhaustive_ && ctxs.size() > 1) {
            for (auto& c : ctxs) {
                if (cut(c->root_bound)) continue;
                blocks_.clear();
                dive_left_ = kDiveTicks;
                layout_dfs(*c, 0, 0);
                dive_left_ = -1;
                abort_ = false;
                if (stop_) return;
            }
        }
        for (auto& c : ctxs) {
            if (!exhaustive_ && cut(c->root_bound)) {
                ++stats_.pruned;
                c.reset();
                continue;
            }
            blocks_.clear();
            layout_dfs(*c, 0, 0);
            c.reset();  // frees this size's cost cache
            if (stop_) return;
        }
    }

    // Searches the layer split of one given configuration (ridge_report).
    void run_single(const Plan& plan, bool exhaustive, std::vector<std::vector<int>>* visited) {
        exhaustive_ = exhaustive;
        visited_ = visited;
        MbsCtx c;
        c.mbs = plan.micro_batch_size;
        c.m = plan.num_micro_batches;
        c.costs = std::make_unique<Costs>(sc_, c.mbs, c.m, stats_.cost_probes);
        cfg_.clear();
        std::vector<int> cursor(G_, 0);
        for (const auto& st : plan.stages) {
            if (st.replicas.size() != 1) throw InputError("plan.stages", "ridge_report needs homogeneous stages");
            const auto& r = st.replicas[0];
            CfgStage cs;
            cs.g = r.group;
            cs.tp = r.tp;
            cs.size = r.tp * r.count;
            cs.offset = cursor[r.group];
            cursor[r.group] += cs.size;
            cfg_.push_back(cs);
        }
        run_config(c);
    }

private:
    const Scenario& sc_;
    SearchOptions opt_;
    int L_, G_, K_ = 3;
    bool exhaustive_ = false;
    Clock::time_point t0_;
    double last_report_s_ = 0;
    bool stop_ = false;
    bool abort_ = false;          // ends a dive (not the search)
    std::int64_t dive_left_ = -1;  // node budget of the current dive; -1 outside dives
    static constexpr std::int64_t kDiveTicks = 4096;
    std::int64_t ticks_ = 0, seq_ = 0;
    SearchStats stats_;
    std::vector<Found> top_;
    std::optional<Estimate> best_estimate_;
    std::int64_t best_estimate_seq_ = -1;
    std::vector<std::vector<int>> tp_ok_;
    std::vector<BlockSel> blocks_;
    std::vector<std::vector<long long>> scap_;  // [stage][tp index]: layers it can hold (layout_caps)
    bool caps_known_ = false;                   // scap_ describes blocks_ (inside tp_dfs)
    TpMode tp_mode_ = TpMode::per_group;        // the TP sequences of this pass
    bool first_pass_ = true;
    std::vector<const double*> tabs_;
    mutable std::vector<std::pair<double, std::size_t>> heap_;  // scratch of the bounds in search_bounds.cpp
    std::vector<int> caps_;
    std::vector<int> cap_;
    std::vector<long long> suf_cap_;
    std::vector<double> fill_tab_;  // [k * (L + 1) + R]: cheapest sum a_j l_j over stages k.. holding R layers
    std::vector<int> by_rate_;
    bool caps_exact_ = false;
    mutable std::vector<JcStage> jc_;
    mutable std::vector<std::pair<double, int>> blk_;
    // configuration being split
    std::vector<CfgStage> cfg_;
    std::vector<const FitMemo*> memo_p_;  // per stage of cfg_: its fit memo and times table
    std::vector<Table*> table_p_;
    std::vector<double> sf_, sb_, va_, vb_, suf_opt_, suf_w_, suf_amin_, suf_inv_e_;
    std::vector<int> warm_;
    std::vector<double> sends_from_;  // sum over links j >= i of sf_j + sb_{j+1}
    double sends_ = 0;
    std::vector<int> layers_;
    std::vector<std::uint8_t> misfit_;
    std::vector<StageTimes> times_;
    std::vector<ProbeStage> probe_stages_;
    DagWorkspace ws_;
    MbsCtx* ctx_ = nullptr;
    std::vector<std::vector<int>>* visited_ = nullptr;

    // ---- bookkeeping ----

    double threshold() const { return static_cast<int>(top_.size()) < K_ ? kInf : top_.back().time; }
    bool cut(double bound) const { return bound * (1 - kBoundSlack) >= threshold(); }
    // The smallest bound that cut() accepts (infinite while the top-K list is not full).
    double cut_target() const { return threshold() / (1 - kBoundSlack); }

    void tick() {
        if ((++ticks_ & 255) == 0) check_clock();
        if (dive_left_ >= 0 && --dive_left_ < 0) abort_ = true;
    }
    bool halted() const { return stop_ || abort_; }

    void check_clock() {
        const double t = seconds_since(t0_);
        if (t > opt_.time_limit_s) {
            stop_ = true;
            stats_.complete = false;
            return;
        }
        if (opt_.on_progress && t - last_report_s_ >= 0.25) report(t);
    }

    void report(double t) {
        last_report_s_ = t;
        SearchProgress p;
        p.evaluated = stats_.evaluated;
        p.pruned = stats_.pruned;
        p.elapsed_s = t;
        if (!top_.empty()) {
            if (best_estimate_seq_ != top_.front().seq) {
                best_estimate_ = estimate(sc_, top_.front().plan, false);
                best_estimate_seq_ = top_.front().seq;
            }
            p.best = &*best_estimate_;
        }
        if (!opt_.on_progress(p)) {
            stop_ = true;
            stats_.cancelled = true;
            stats_.complete = false;
        }
    }

    void insert(double time) {
        if (static_cast<int>(top_.size()) >= K_ && !(time < top_.back().time)) return;
        // a plan of the dive found again
        for (const auto& x : top_)
            if (x.time == time && same_plan(x.plan)) return;
        Found f;
        f.time = time;
        f.seq = seq_++;
        f.plan.micro_batch_size = ctx_->mbs;
        f.plan.num_micro_batches = ctx_->m;
        f.plan.stages.resize(cfg_.size());
        for (std::size_t j = 0; j < cfg_.size(); ++j) {
            const CfgStage& s = cfg_[j];
            const int dp = s.size / s.tp;
            StagePlan& st = f.plan.stages[j];
            st.num_layers = layers_[j];
            st.homogeneous_form = true;
            st.replicas.assign(1, ReplicaSet{s.g, s.tp, dp, static_cast<int>(ctx_->mbs / dp)});
        }
        auto pos = std::upper_bound(top_.begin(), top_.end(), time, [](double t, const Found& x) { return t < x.time; });
        const bool new_best = pos == top_.begin();
        top_.insert(pos, std::move(f));
        if (static_cast<int>(top_.size()) > K_) top_.pop_back();
        if (new_best && opt_.on_progress) report(seconds_since(t0_));
    }

    bool same_plan(const Plan& p) const {
        if (p.micro_batch_size != ctx_->mbs || p.stages.size() != cfg_.size()) return false;
        for (std::size_t j = 0; j < cfg_.size(); ++j) {
            const auto& r = p.stages[j].replicas[0];
            if (p.stages[j].num_layers != layers_[j] || r.group != cfg_[j].g || r.tp != cfg_[j].tp || r.tp * r.count != cfg_[j].size) return false;
        }
        return true;
    }

    // ---- per micro-batch size ----

    std::unique_ptr<MbsCtx> build_ctx(std::int64_t mbs) {
        auto c = std::make_unique<MbsCtx>();
        c->mbs = mbs;
        c->m = sc_.training.global_batch_size / mbs;
        c->smax = static_cast<int>(std::min<std::int64_t>({L_, max_stages, max_dag_cells / c->m}));
        if (c->smax < 1) {
            ++stats_.infeasible["DAG size"];
            return nullptr;
        }
        c->costs = std::make_unique<Costs>(sc_, mbs, c->m, stats_.cost_probes);
        c->opts.assign(G_, {});
        c->rho_a.assign(G_, 0);
        c->rho_b.assign(G_, 0);
        c->host.assign(G_, 0);
        bool any = false;
        const double m = static_cast<double>(c->m);
        for (int g = 0; g < G_; ++g) {
            const Group& gr = sc_.cluster.groups[g];
            const int P = gr.gpus_per_node;
            for (int n : node_choices(gr.nodes)) {
                const std::vector<int> sizes = detail::stage_sizes(P, n);
                for (int s : sizes) {
                    const long long count = static_cast<long long>(n) * P / s;
                    if (count > c->smax) {
                        ++stats_.infeasible["stages over limit"];
                        continue;
                    }
                    OptInfo info;
                    info.o = GroupOpt{n, s, static_cast<int>(count)};
                    for (int tp : tp_ok_[g]) {
                        if (s % tp) continue;
                        const int dp = s / tp;
                        if (mbs % dp) {
                            ++stats_.infeasible["dp divisibility"];
                            continue;
                        }
                        const int cap = c->costs->cap_anywhere(g, s, tp);
                        if (cap == 0) {
                            ++stats_.infeasible["memory"];
                            continue;
                        }
                        info.tps.push_back({tp, c->costs->middle(g, s, tp).rates, cap});
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
        if (!any) return nullptr;
        if (std::accumulate(c->host.begin(), c->host.end(), 0LL) < L_) {
            ++stats_.infeasible["memory"];
            return nullptr;
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
        auto [va, vb] = suffix_cap(*c, 0, c->smax);
        c->root_bound = va > 0 ? std::max(L_ / va + dp0, L_ / vb) : kInf;
        return c;
    }

    static double lp_step(double v, double phi, double mu) {
        const double x = 1.0 - v * phi;
        return x > 0 ? v + x / mu : v;
    }
    // k steps of lp_step with the same stage: while v < 1/phi each step is the affine map
    // v -> v* - (v* - v)(1 - phi/mu) with fixed point v* = 1/phi, which it never passes.
    static double lp_steps(double v, double phi, double decay) {
        if (v * phi >= 1) return v;
        const double vs = 1 / phi;
        return vs - (vs - v) * decay;
    }

    const Rates& rates_of(const MbsCtx& c, const BlockSel& b) const {
        const OptInfo& info = c.opts[b.g][b.opt];
        return b.tpi >= 0 ? info.tps[b.tpi].r : info.best;
    }

    // Upper bound on the LP coverage rate v of a suffix made of at most `n` stages of the groups not
    // in `used` (docs/search.md, "Bounds"): v <= sum of the per-stage rates, and since each LP step
    // is v -> max(v, (1 - rho) v + 1/mu), v <= (1 - (1 - rho_min)^n) / (mu_min rho_min).
    std::pair<double, double> suffix_cap(MbsCtx& c, std::uint64_t used, int n) const {
        if (n <= 0) return {0, 0};
        auto [it, fresh] = c.suffix.try_emplace(used);
        SuffixInfo& si = it->second;
        if (fresh) {
            double rho_min = kInf;
            si.amin = si.mub_min = kInf;
            for (int g = 0; g < G_; ++g) {
                if ((used >> g) & 1) continue;
                si.sa += c.rho_a[g];
                si.sb += c.rho_b[g];
                for (const auto& o : c.opts[g]) {
                    si.any = true;
                    si.amin = std::min(si.amin, o.best.a);
                    si.mub_min = std::min(si.mub_min, o.best.mu_b);
                    for (const auto& t : o.tps) rho_min = std::min(rho_min, t.r.phi_f / t.r.mu_b);
                }
            }
            si.log_keep_b = rho_min > 0 && rho_min < 1 ? std::log1p(-rho_min) : 0;
            if (si.any && rho_min > 0 && rho_min < 1) si.mub_min *= rho_min;  // mu_min rho_min
            else si.mub_min = 0;
        }
        if (!si.any) return {0, 0};
        const double ga = (1 - c.keep_a[std::min(n, c.smax)]) / si.amin;
        const double gb = si.mub_min > 0 ? (1 - std::exp(n * si.log_keep_b)) / si.mub_min : kInf;
        return {std::min(si.sa, ga), std::min(si.sb, gb)};
    }

    // Lower bound for every plan whose pipeline starts with blocks_ and continues with at most
    // `open_stages` stages of the groups not in `used`; docs/search.md, "Bounds".
    double layout_bound(MbsCtx& c, std::uint64_t used, int open_stages) const {
        auto [va, vb] = suffix_cap(c, used, open_stages);
        double opt_lb = 0;
        for (auto it = blocks_.rbegin(); it != blocks_.rend(); ++it) {
            const Rates& r = rates_of(c, *it);
            opt_lb = std::max(opt_lb, r.opt_min);
            const OptInfo& info = c.opts[it->g][it->opt];
            if (it->count == info.o.count) {
                va = lp_steps(va, r.a, it->tpi >= 0 ? info.tps[it->tpi].decay_a : info.decay_a);
                vb = lp_steps(vb, r.phi_f, it->tpi >= 0 ? info.tps[it->tpi].decay_b : info.decay_b);
            } else {  // a run of a split option: the same decays over its own stage count
                va = lp_steps(va, r.a, c.keep_a[std::min(it->count, c.smax)]);
                vb = lp_steps(vb, r.phi_f, std::pow(1 - r.phi_f / r.mu_b, it->count));
            }
        }
        const double dp0 = rates_of(c, blocks_.front()).dp_min;
        return std::max(L_ / va + dp0 + opt_lb, L_ / vb + opt_lb);
    }

    // Family-C bound of a complete layout (TP as chosen, else the best rates; caps valid anywhere).
    double family_c_bound(const MbsCtx& c, int S) const {
        const double m = static_cast<double>(c.m);
        jc_.clear();
        blk_.clear();
        double opt_lb = 0;
        int j = 0;
        for (std::size_t bi = 0; bi < blocks_.size(); ++bi) {
            blk_.push_back({rates_of(c, blocks_[bi]).a, j});
            j += blocks_[bi].count;
        }
        // blocks in rate order; each block's stages keep their pipeline positions for e
        std::vector<std::size_t> idx(blocks_.size());
        std::iota(idx.begin(), idx.end(), 0);
        std::stable_sort(idx.begin(), idx.end(), [&](std::size_t x, std::size_t y) { return blk_[x].first < blk_[y].first; });
        for (std::size_t bi : idx) {
            const BlockSel& b = blocks_[bi];
            const OptInfo& info = c.opts[b.g][b.opt];
            const Rates& r = rates_of(c, b);
            const int cap = b.tpi >= 0 ? info.tps[b.tpi].cap : info.cap;
            opt_lb = std::max(opt_lb, r.opt_min);
            for (int q = 0; q < b.count; ++q) {
                const int jj = blk_[bi].second + q;
                const double w = static_cast<double>(std::min<std::int64_t>(S - 1 - jj, c.m));
                // in tp_dfs: the stage's exact cap at its position
                const long long cj = caps_known_ ? scap_of(jj, b.tpi) : cap;
                jc_.push_back({r.a, std::max(0.0, m - w - 1) * r.phi_f + (m - 1) * r.phi_b, cj});
            }
        }
        const double add = rates_of(c, blocks_.front()).dp_min + opt_lb;
        return joint_family_c() + add;
    }

    // Most layers the pipeline blocks_ (TP as chosen, else the best) plus, when `open`, every
    // group not in `used` could hold: fewer than the model has means no plan fits in memory.
    long long hostable(const MbsCtx& c, std::uint64_t used, bool open) const {
        long long n = 0;
        for (const auto& b : blocks_) {
            const OptInfo& info = c.opts[b.g][b.opt];
            n += static_cast<long long>(b.count) * (b.tpi >= 0 ? info.tps[b.tpi].cap : info.cap);
        }
        if (open)
            for (int g = 0; g < G_; ++g)
                if (!((used >> g) & 1)) n += c.host[g];
        return n;
    }

    // Exact memory caps of every stage of the complete layout blocks_ (S stages) for every TP
    // choice of its blocks: cached per (group, size, TP, position class, in-flight count) and
    // filled by a simultaneous binary search, one probe of the layout per TP index and round.
    // Returns false when no TP choice lets the layout hold the model.
    bool layout_caps(MbsCtx& c, int S) {
        Costs& costs = *c.costs;
        int max_t = 0;
        for (const auto& b : blocks_) max_t = std::max(max_t, static_cast<int>(c.opts[b.g][b.opt].tps.size()));
        for (int ti = 0; ti < max_t; ++ti) {
            for (;;) {
                probe_stages_.clear();
                misfit_.clear();
                bool open = false;
                int j = 0;
                for (const auto& b : blocks_) {
                    const OptInfo& info = c.opts[b.g][b.opt];
                    const int t = std::min<int>(ti, static_cast<int>(info.tps.size()) - 1);
                    const int tp = info.tps[t].tp;
                    for (int q = 0; q < info.o.count; ++q, ++j) {
                        const Pos pos = pos_of(j, S);
                        const int inflight = static_cast<int>(std::min<std::int64_t>(S - j, c.m));
                        const FitMemo& f = costs.memo(b.g, info.o.size, tp, pos, inflight);
                        int l = 1;
                        const bool mine = t == ti && f.nofit_min > f.fit_max + 1;
                        if (mine) {
                            open = true;
                            l = f.fit_max + (f.nofit_min - f.fit_max) / 2;
                        }
                        misfit_.push_back(mine);
                        probe_stages_.push_back({b.g, info.o.size, tp, l, q * info.o.size});
                    }
                }
                if (!open) break;
                const auto& ev = costs.probe(probe_stages_);
                for (int jj = 0; jj < S; ++jj)
                    if (misfit_[jj]) {
                        const Pos pos = pos_of(jj, S);
                        const int inflight = static_cast<int>(std::min<std::int64_t>(S - jj, c.m));
                        const ProbeStage& p = probe_stages_[jj];
                        costs.record_fit(p.g, p.size, p.tp, pos, inflight, p.layers, ev[jj].fits);
                    }
            }
        }
        // Per stage and TP index: the most layers it holds (0: not even one).
        scap_.resize(S);
        long long best_total = 0;
        int j = 0;
        for (const BlockSel& b : blocks_) {
            const OptInfo& info = c.opts[b.g][b.opt];
            for (int q = 0; q < b.count; ++q, ++j) {
                scap_[j].assign(info.tps.size(), 0);
                long long best = 0;
                for (std::size_t t = 0; t < info.tps.size(); ++t) {
                    const int cap = costs.cap_upper(b.g, info.o.size, info.tps[t].tp, pos_of(j, S), static_cast<int>(std::min<std::int64_t>(S - j, c.m)));
                    scap_[j][t] = std::max(0, cap);
                    best = std::max<long long>(best, scap_[j][t]);
                }
                best_total += best;
            }
        }
        return best_total >= L_;
    }

    // Most layers stage j of the complete layout holds with TP index tpi, or at its best TP (-1).
    long long scap_of(int j, int tpi) const {
        if (tpi >= 0) return scap_[j][tpi];
        long long v = 0;
        for (long long x : scap_[j]) v = std::max(v, x);
        return v;
    }

    // Layers the complete layout can hold with TP fixed for the runs 0..upto and, after them, each
    // stage at its best TP (an upper bound for any choice there); 0 when some stage cannot hold one.
    long long hostable_exact(std::size_t upto) const {
        long long n = 0;
        int j = 0;
        for (std::size_t bi = 0; bi < blocks_.size(); ++bi) {
            const BlockSel& b = blocks_[bi];
            for (int q = 0; q < b.count; ++q, ++j) {
                const long long v = scap_of(j, bi <= upto ? b.tpi : -1);
                if (v < 1) return 0;
                n += v;
            }
        }
        return n;
    }

    // Children of a layout node, best bound first: extend with a block of an unused group, or
    // stop here (opt = -1).
    struct Child {
        double bound;
        int g, opt;
    };

    void layout_dfs(MbsCtx& c, int S, std::uint64_t used) {
        if (halted()) return;
        std::vector<Child> kids;
        for (int g : c.group_order) {
            if ((used >> g) & 1) continue;
            for (int oi = 0; oi < static_cast<int>(c.opts[g].size()); ++oi) {
                tick();
                const OptInfo& info = c.opts[g][oi];
                if (S + info.o.count > c.smax) {
                    ++stats_.infeasible["stages over limit"];
                    continue;
                }
                if (hostable(c, used | (std::uint64_t{1} << g), true) + static_cast<long long>(info.o.count) * info.cap < L_) {
                    ++stats_.infeasible["memory"];
                    continue;
                }
                double b = 0;
                if (!exhaustive_) {
                    blocks_.push_back({g, oi, -1, 0, info.o.count});
                    b = layout_bound(c, used | (std::uint64_t{1} << g), c.smax - S - info.o.count);
                    blocks_.pop_back();
                    if (cut(b)) {
                        ++stats_.pruned;
                        continue;
                    }
                }
                kids.push_back({b, g, oi});
            }
        }
        if (!blocks_.empty()) {
            if (hostable(c, used, false) < L_)
                ++stats_.infeasible["memory"];
            else
            {
                double b = 0;
                if (!exhaustive_) {
                    b = layout_bound(c, used, 0);
                    if (!cut(b)) b = std::max(b, family_c_bound(c, S));
                }
                kids.push_back({b, -1, -1});
            }
        }
        if (!exhaustive_) std::stable_sort(kids.begin(), kids.end(), [](const Child& x, const Child& y) { return x.bound < y.bound; });
        for (const Child& k : kids) {
            if (halted()) return;
            if (!exhaustive_ && cut(k.bound)) {
                ++stats_.pruned;
                continue;
            }
            if (k.g < 0) {
                if (!layout_caps(c, S)) {
                    ++stats_.infeasible["memory"];
                    continue;
                }
                caps_known_ = true;
                tp_dfs(c, 0, S, used);
                caps_known_ = false;
                continue;
            }
            blocks_.push_back({k.g, k.opt, -1, 0, c.opts[k.g][k.opt].o.count});
            layout_dfs(c, S + c.opts[k.g][k.opt].o.count, used | (std::uint64_t{1} << k.g));
            blocks_.pop_back();
        }
    }

    // TP per stage, run by run: run bi takes TP index ti for its first k stages; when k is less
    // than the run, the rest becomes a new run right after it that starts with another degree
    // (every TP sequence is visited once, as its maximal runs). The whole run at one TP comes
    // first (most plans want that), then the splits.
    void tp_dfs(MbsCtx& c, std::size_t bi, int S, std::uint64_t used) {
        if (halted()) return;
        if (bi == blocks_.size()) {
            if (searched_before(c)) return;
            build_config(c, S);
            run_config(c);
            return;
        }
        const BlockSel run = blocks_[bi];
        const OptInfo& info = c.opts[run.g][run.opt];
        for (int ti = 0; ti < static_cast<int>(info.tps.size()); ++ti) {
            const int tp = info.tps[ti].tp;
            if (run.prev_tp != 0 && (tp == run.prev_tp || (tp_mode_ == TpMode::non_increasing && tp > run.prev_tp))) continue;
            // a degree left for the rest of a split
            bool other = false;
            for (const auto& t : info.tps) other = other || (tp_mode_ == TpMode::non_increasing ? t.tp < tp : t.tp != tp);
            for (int k = run.count; k >= 1; --k) {
                if (k < run.count && (!other || tp_mode_ == TpMode::per_group)) break;
                tick();
                blocks_[bi].tpi = ti;
                blocks_[bi].count = k;
                if (k < run.count) blocks_.insert(blocks_.begin() + static_cast<std::ptrdiff_t>(bi) + 1, BlockSel{run.g, run.opt, -1, run.first + k, run.count - k, tp});
                if (hostable_exact(bi) < L_)
                    ++stats_.infeasible["memory"];
                else if (!exhaustive_ && (cut(layout_bound(c, used, 0)) || cut(family_c_bound(c, S)) || cut(tp_bottleneck_bound(c, bi))))
                    ++stats_.pruned;
                else
                    tp_dfs(c, bi + 1, S, used);
                if (k < run.count) blocks_.erase(blocks_.begin() + static_cast<std::ptrdiff_t>(bi) + 1);
                blocks_[bi] = run;
                if (halted()) return;
            }
        }
    }

    // The configuration-level bottleneck bound of run_config while TP is chosen run by run: stages
    // of the runs not chosen yet take, per layer count, the least F+B over their TP degrees and
    // their largest cap, which bounds every choice still open from below.
    double tp_bottleneck_bound(MbsCtx& c, std::size_t upto) {
        Costs& costs = *c.costs;
        tabs_.clear();
        caps_.clear();
        double dp_lb = kInf, opt_lb = 0;
        int j = 0;
        for (std::size_t bi = 0; bi < blocks_.size(); ++bi) {
            const BlockSel& b = blocks_[bi];
            OptInfo& info = c.opts[b.g][b.opt];
            const double* tab = nullptr;
            const Rates* r = nullptr;
            if (bi <= upto) {
                const Table& tb = costs.middle(b.g, info.o.size, info.tps[b.tpi].tp);
                if (!tb.monotone) return 0;
                tab = tb.c.data();
                r = &tb.rates;
            } else {
                if (info.cmin.empty()) {
                    info.cmin.assign(L_ + 1, kInf);
                    for (const auto& t : info.tps) {
                        const Table& tb = costs.middle(b.g, info.o.size, t.tp);
                        for (int l = 1; l <= L_; ++l) info.cmin[l] = std::min(info.cmin[l], tb.c[l]);
                    }
                    info.cmin_monotone = true;
                    for (int l = 2; l <= L_; ++l) info.cmin_monotone = info.cmin_monotone && info.cmin[l] >= info.cmin[l - 1];
                }
                if (!info.cmin_monotone) return 0;
                tab = info.cmin.data();
                r = &info.best;
            }
            dp_lb = std::min(dp_lb, r->dp_min);
            opt_lb = std::max(opt_lb, r->opt_min);
            for (int q = 0; q < b.count; ++q, ++j) {
                const long long cap = scap_of(j, bi <= upto ? b.tpi : -1);
                tabs_.push_back(tab);
                caps_.push_back(static_cast<int>(std::min<long long>(cap, L_)));
            }
        }
        return static_cast<double>(c.m) * detail::integer_bottleneck_min(tabs_, caps_, L_, heap_) + dp_lb + opt_lb;
    }

    void build_config(const MbsCtx& c, int S) {
        cfg_.resize(S);
        int j = 0;
        for (const auto& b : blocks_) {
            const OptInfo& info = c.opts[b.g][b.opt];
            for (int q = 0; q < b.count; ++q, ++j) {
                CfgStage& cs = cfg_[j];
                cs.g = b.g;
                cs.size = info.o.size;
                cs.tp = info.tps[b.tpi].tp;
                cs.offset = (b.first + q) * info.o.size;
            }
        }
    }

    // ---- layer split of one configuration ----

    void run_config(MbsCtx& c) {
        ctx_ = &c;
        Costs& costs = *c.costs;
        const int S = static_cast<int>(cfg_.size());
        const double m = static_cast<double>(c.m);
        ++stats_.configurations;
        for (int j = 0; j < S; ++j) {
            CfgStage& cs = cfg_[j];
            cs.pos = pos_of(j, S);
            cs.inflight = static_cast<int>(std::min<std::int64_t>(S - j, c.m));
            cs.r = costs.middle(cs.g, cs.size, cs.tp).rates;
        }
        sf_.assign(S + 1, 0);
        sb_.assign(S + 1, 0);
        for (int j = 0; j + 1 < S; ++j) {
            const CfgStage& a = cfg_[j];
            const CfgStage& b = cfg_[j + 1];
            const int P = sc_.cluster.groups[a.g].gpus_per_node;
            const bool same_node = a.g == b.g && a.offset / P == (a.offset + a.size - 1) / P && b.offset / P == (b.offset + b.size - 1) / P &&
                                   a.offset / P == b.offset / P;
            auto [f, bk] = costs.link({a.g, a.size, a.tp, 1, a.offset}, {b.g, b.size, b.tp, 1, b.offset}, same_node);
            sf_[j] = f;
            sb_[j + 1] = bk;
        }
        va_.assign(S + 1, 0);
        vb_.assign(S + 1, 0);
        suf_opt_.assign(S + 1, 0);
        suf_w_.assign(S + 1, 0);
        suf_amin_.assign(S + 1, kInf);
        suf_inv_e_.assign(S + 1, 0);
        warm_.assign(S, 0);
        sends_ = 0;
        sends_from_.assign(S + 1, 0);
        for (int j = 0; j < S; ++j) {
            warm_[j] = static_cast<int>(std::min<std::int64_t>(S - 1 - j, c.m));
            sends_ += sf_[j] + sb_[j];
        }
        for (int j = S - 1; j >= 0; --j) sends_from_[j] = sends_from_[j + 1] + sf_[j] + sb_[j + 1];
        for (int j = S - 1; j >= 0; --j) {
            suf_amin_[j] = std::min(suf_amin_[j + 1], cfg_[j].r.a);
            const double e = std::max(0.0, m - warm_[j] - 1) * cfg_[j].r.phi_f + (m - 1) * cfg_[j].r.phi_b;
            suf_inv_e_[j] = e > 0 && suf_inv_e_[j + 1] < kInf ? suf_inv_e_[j + 1] + 1 / e : kInf;
            const Rates& r = cfg_[j].r;
            va_[j] = lp_step(va_[j + 1], r.a, m * r.a);
            vb_[j] = lp_step(vb_[j + 1], r.phi_f, r.mu_b);
            suf_opt_[j] = std::max(suf_opt_[j + 1], r.opt_min);
            suf_w_[j] = suf_w_[j + 1] + 1.0 / r.a;
        }
        layers_.assign(S, 0);
        times_.resize(S);
        caps_exact_ = false;
        if (!config_caps()) {
            ++stats_.infeasible["memory"];
            return;
        }
        // the split search's per-stage cache entries, looked up once
        memo_p_.resize(S);
        table_p_.resize(S);
        for (int j = 0; j < S; ++j) {
            const CfgStage& cs = cfg_[j];
            memo_p_[j] = &costs.memo(cs.g, cs.size, cs.tp, cs.pos, cs.inflight);
            table_p_[j] = &costs.table(cs.g, cs.size, cs.tp, cs.pos);
        }
        if (!exhaustive_) {
            double opt_lb = 0, dp_lb = kInf;
            for (const auto& cs : cfg_) {
                opt_lb = std::max(opt_lb, cs.r.opt_min);
                dp_lb = std::min(dp_lb, cs.r.dp_min);
            }
            if (cut(config_family_c()) || cut(m * integer_bottleneck() + dp_lb + opt_lb)) {
                ++stats_.pruned;
                return;
            }
        }
        fill_tables();
        split_dfs(0, L_, SplitState{});
    }

    // Exact layer caps of every stage of cfg_ (a simultaneous binary search, one probe of the real
    // configuration per round); false when the stages cannot hold the model.
    bool config_caps() {
        const int S = static_cast<int>(cfg_.size());
        Costs& costs = *ctx_->costs;
        for (;;) {
            bool open = false;
            probe_stages_.resize(S);
            misfit_.assign(S, 0);
            for (int j = 0; j < S; ++j) {
                const CfgStage& s = cfg_[j];
                const FitMemo& f = costs.memo(s.g, s.size, s.tp, s.pos, s.inflight);
                int l = 1;
                if (f.nofit_min > f.fit_max + 1) {
                    open = true;
                    misfit_[j] = 1;
                    l = f.fit_max + (f.nofit_min - f.fit_max) / 2;
                }
                probe_stages_[j] = {s.g, s.size, s.tp, l, s.offset};
            }
            if (!open) break;
            const auto& ev = costs.probe(probe_stages_);
            for (int j = 0; j < S; ++j)
                if (misfit_[j]) {
                    const CfgStage& s = cfg_[j];
                    costs.record_fit(s.g, s.size, s.tp, s.pos, s.inflight, probe_stages_[j].layers, ev[j].fits);
                    costs.store_times(s.g, s.size, s.tp, s.pos, probe_stages_[j].layers, ev[j].times);
                }
        }
        cap_.resize(S);
        suf_cap_.assign(S + 1, 0);
        for (int j = 0; j < S; ++j) cap_[j] = cap_upper(j);
        for (int j = S - 1; j >= 0; --j) {
            if (cap_[j] < 1) return false;
            suf_cap_[j] = suf_cap_[j + 1] + cap_[j];
        }
        caps_exact_ = true;
        return suf_cap_[0] >= L_;
    }

    // Tables for the split search's family-C bound (built only for configurations that the
    // configuration-level bounds keep).
    void fill_tables() {
        const int S = static_cast<int>(cfg_.size());
        const int W = L_ + 1;
        fill_tab_.assign(static_cast<std::size_t>(S + 1) * W, kInf);
        fill_tab_[static_cast<std::size_t>(S) * W + 0] = 0;
        by_rate_.clear();
        for (int k = S - 1; k >= 0; --k) {
            auto pos = std::upper_bound(by_rate_.begin(), by_rate_.end(), k, [&](int x, int y) { return cfg_[x].r.a < cfg_[y].r.a; });
            by_rate_.insert(pos, k);
            double* row = &fill_tab_[static_cast<std::size_t>(k) * W];
            double base = 0;
            for (int j : by_rate_) base += cfg_[j].r.a;
            int R = S - k;
            if (R <= L_) row[R] = base;
            for (int j : by_rate_)
                for (int x = 1; x < cap_[j] && R < L_; ++x) {
                    base += cfg_[j].r.a;
                    row[++R] = base;
                }
        }
    }

    // Prefix summaries of the split search (docs/search.md, "Bounds"): for the stages fixed so far,
    // pa/pb = path lengths into the next stage (families A and B), ma/mb = the best complete
    // family-A/B paths through a fixed stage, csum = sum of their F+B, q = the most a fixed stage adds
    // to family C beyond its own F+B.
    struct SplitState {
        double pa = 0, ma = 0, pb = 0, mb = 0, csum = 0, q = -kInf, qe = -kInf, dp0 = 0, optmax = 0;
    };

    // Smallest bottleneck F+B any split of cfg_ within the memory caps can have: stage j holds at
    // most max{l <= cap_j : c_j(l) <= t} layers below t, so the bottleneck is at least the L-th
    // smallest of all stages' c_j(l) merged (search_bounds.cpp).
    // Middle-position costs bound the first and last stages from below (docs/search.md).
    double integer_bottleneck() {
        const int S = static_cast<int>(cfg_.size());
        Costs& costs = *ctx_->costs;
        tabs_.resize(S);
        caps_.resize(S);
        for (int j = 0; j < S; ++j) {
            const Table& tb = costs.middle(cfg_[j].g, cfg_[j].size, cfg_[j].tp);
            if (!tb.monotone) return 0;
            tabs_[j] = tb.c.data();
            caps_[j] = std::min(cap_upper(j), L_);
        }
        return detail::integer_bottleneck_min(tabs_, caps_, L_, heap_);
    }

    // Family C over a whole configuration (docs/search.md, "Bounds"): for every split,
    // T >= sum_j a_j l_j + max_i e_i l_i + sends + tails. With t = max_i e_i l_i the split is feasible
    // for l_i <= u_i(t) = min(cap_i, t / e_i), so T >= min_t [t + fill(t)] where fill(t) is the
    // cheapest sum_j a_j l_j with 1 <= l_j <= u_j(t), sum l_j = L (convex and piecewise linear in
    // t; its exact minimum is one sweep over the breakpoints, search_bounds.cpp).
    // jc_ holds (a, e, cap) per stage, sorted by a; returns the bound without sends and tails.
    double joint_family_c() const { return detail::family_c_min(jc_, L_, heap_); }

    double config_family_c() {
        const int S = static_cast<int>(cfg_.size());
        const double m = static_cast<double>(ctx_->m);
        jc_.resize(S);
        double opt_lb = 0;
        for (int j = 0; j < S; ++j) {
            const Rates& r = cfg_[j].r;
            jc_[j] = {r.a, std::max(0.0, m - warm_[j] - 1) * r.phi_f + (m - 1) * r.phi_b, cap_upper(j)};
            opt_lb = std::max(opt_lb, r.opt_min);
        }
        std::stable_sort(jc_.begin(), jc_.end(), [](const JcStage& x, const JcStage& y) { return x.a < y.a; });
        const double add = sends_ + cfg_[0].r.dp_min + opt_lb;
        return joint_family_c() + add;
    }

    int cap_upper(int j) {
        if (caps_exact_) return cap_[j];
        const CfgStage& s = cfg_[j];
        return ctx_->costs->cap_upper(s.g, s.size, s.tp, s.pos, s.inflight);
    }

    void split_dfs(int k, int R, const SplitState& st) {
        const double PA = st.pa, PB = st.pb, dp0 = st.dp0, optmax = st.optmax;
        if (halted()) return;
        tick();
        const int S = static_cast<int>(cfg_.size());
        if (k == S) {
            leaf();
            return;
        }
        const long long suffix_cap = suf_cap_[k + 1];
        const int lo = static_cast<int>(std::max<long long>(1, R - suffix_cap));
        const int hi = std::min(R - (S - k - 1), cap_upper(k));
        if (lo > hi) {
            ++stats_.infeasible["memory"];
            return;
        }
        if (exhaustive_) {
            for (int l = lo; l <= hi && !halted(); ++l) child(k, l, R, st);
            return;
        }
        // The ridge walk: outward from the speed-proportional split, each direction stopped by
        // a bound that is monotone in l (docs/search.md, "Ridge walk").
        const CfgStage& s = cfg_[k];
        const double m = static_cast<double>(ctx_->m);
        const double share = (1.0 / s.r.a) / suf_w_[k];
        int center = static_cast<int>(std::lround(R * share));
        center = std::clamp(center, lo, hi);
        const double dp0_lb = k == 0 ? s.r.dp_min : dp0;
        const double opt_lb = std::max(optmax, suf_opt_[k]);
        // Family C with stage k or an earlier one as the bottleneck, without the suffix's share.
        const double c_base = st.csum + sends_ + dp0_lb + opt_lb;
        auto up_mono = [&](int l) {
            double b = std::max(PA + m * s.r.a * l + dp0_lb + opt_lb, PB + s.r.mu_b * l + opt_lb);
            b = std::max(b, c_base + l * ((m - warm_[k]) * s.r.phi_f + m * s.r.phi_b));
            if (st.q > -kInf) b = std::max(b, c_base + st.q + l * s.r.a);
            return b;
        };
        auto down_mono = [&](int l) {
            if (k + 1 >= S) return 0.0;
            double b = std::max(PA + (R - l) / va_[k + 1] + dp0_lb + opt_lb, PB + (R - l) / vb_[k + 1] + opt_lb);
            b = std::max(b, c_base + std::max(st.q, (R - l) / suf_inv_e_[k + 1]) + fill_tab_[(k + 1) * (L_ + 1) + (R - l)]);
            return b;
        };
        int up = center, down = center - 1;
        bool go_up = true, go_down = down >= lo;
        while ((go_up || go_down) && !halted()) {
            if (go_up) {
                if (up > hi || up > cap_upper(k)) {
                    go_up = false;
                } else if (cut(up_mono(up))) {
                    ++stats_.pruned;
                    go_up = false;
                } else {
                    child(k, up++, R, st);
                }
            }
            if (go_down && !halted()) {
                if (down < lo) {
                    go_down = false;
                } else if (cut(down_mono(down))) {
                    ++stats_.pruned;
                    go_down = false;
                } else {
                    child(k, down--, R, st);
                }
            }
        }
    }

    void child(int k, int l, int R, const SplitState& st) {
        const int S = static_cast<int>(cfg_.size());
        const CfgStage& s = cfg_[k];
        if (l >= memo_p_[k]->nofit_min) {
            ++stats_.infeasible["memory"];
            return;
        }
        const StageTimes& t = table_p_[k]->have[l] ? table_p_[k]->t[l] : ctx_->costs->times(s.g, s.size, s.tp, s.pos, l);
        const double m = static_cast<double>(ctx_->m);
        const double c = t.forward_s + t.backward_s;
        SplitState n;
        n.pa = st.pa + c + sf_[k] + sb_[k + 1];
        n.ma = std::max(st.ma, st.pa + m * c);
        n.pb = st.pb + t.forward_s + sf_[k];
        n.mb = std::max(st.mb, st.pb + m * c + t.dp_sync_s);
        n.csum = st.csum + c;
        n.q = std::max(st.q, std::max(0.0, m - warm_[k] - 1) * t.forward_s + (m - 1) * t.backward_s);
        // family E: through stage k's chain, with the stages after it visited for micro-batches 0
        // and m-1 (needs w_k <= m - 2); stored without the (unknown) sum of later stages
        n.qe = st.qe;
        if (warm_[k] <= ctx_->m - 2) n.qe = std::max(n.qe, st.pa + (m - warm_[k]) * c + 2 * sends_from_[k] - 2 * n.csum);
        n.dp0 = k == 0 ? t.dp_sync_s : st.dp0;
        n.optmax = std::max(st.optmax, t.optimizer_s);
        if (!exhaustive_) {
            const int R2 = R - l;
            const bool last = k + 1 >= S;
            const double opt_lb = std::max(n.optmax, last ? 0.0 : suf_opt_[k + 1]);
            const double bA = last ? n.ma : std::max(n.ma, n.pa + R2 / va_[k + 1]);
            const double bB = last ? n.mb : std::max(n.mb, n.pb + R2 / vb_[k + 1]);
            const double rest = last ? 0.0 : fill_tab_[(k + 1) * (L_ + 1) + R2];
            const double bC = n.csum + std::max(n.q, last ? 0.0 : R2 / suf_inv_e_[k + 1]) + rest + sends_;
            const double bE = n.qe + 2 * (n.csum + rest);
            if (cut(std::max({bA + n.dp0 + opt_lb, bB + opt_lb, bC + n.dp0 + opt_lb, bE + n.dp0 + opt_lb}))) {
                ++stats_.pruned;
                return;
            }
        }
        layers_[k] = l;
        split_dfs(k + 1, R - l, n);
    }

    void leaf() {
        const int S = static_cast<int>(cfg_.size());
        Costs& costs = *ctx_->costs;
        bool unknown = false;
        for (int j = 0; j < S; ++j) {
            const CfgStage& s = cfg_[j];
            const int f = costs.fits_known(s.g, s.size, s.tp, s.pos, s.inflight, layers_[j]);
            if (f == 0) {
                ++stats_.infeasible["memory"];
                return;
            }
            if (f < 0) unknown = true;
        }
        if (unknown) {
            // One probe of the real configuration settles every stage's fit at once.
            probe_stages_.resize(S);
            for (int j = 0; j < S; ++j) probe_stages_[j] = {cfg_[j].g, cfg_[j].size, cfg_[j].tp, layers_[j], cfg_[j].offset};
            const auto& ev = costs.probe(probe_stages_);
            bool ok = true;
            misfit_.assign(S, 0);
            for (int j = 0; j < S; ++j) {
                const CfgStage& s = cfg_[j];
                costs.record_fit(s.g, s.size, s.tp, s.pos, s.inflight, layers_[j], ev[j].fits);
                costs.store_times(s.g, s.size, s.tp, s.pos, layers_[j], ev[j].times);
                ok = ok && ev[j].fits;
                misfit_[j] = !ev[j].fits;
            }
            if (!ok) {
                // (ev is overwritten by the probes below)
                for (int j = 0; j < S; ++j)
                    if (misfit_[j]) {
                        const CfgStage& s = cfg_[j];
                        costs.exact_cap(s.g, s.size, s.tp, s.pos, s.inflight);
                    }
                ++stats_.infeasible["memory"];
                return;
            }
        }
        for (int j = 0; j < S; ++j) {
            const CfgStage& s = cfg_[j];
            times_[j] = costs.times(s.g, s.size, s.tp, s.pos, layers_[j]);
            times_[j].send_forward_s = sf_[j];
            times_[j].send_backward_s = sb_[j];
        }
        fold_blocking_sends(sc_.training.stack, times_);
        // a candidate that cannot enter the top K stops early (docs/search.md, "Early stopping")
        const double T = dag_iteration_time_below(times_, ctx_->m, threshold(), ws_);
        ++stats_.evaluated;
        if (visited_) visited_->push_back(layers_);
        insert(T);
        if (static_cast<std::int64_t>(S) * ctx_->m > 20000 || (stats_.evaluated & 15) == 0) check_clock();
    }
};

}  // namespace

SearchResult search(const Scenario& sc, const SearchOptions& options) {
    const auto t0 = Clock::now();
    SearchResult res;
    Engine engine(sc, options);
    engine.run();
    engine.final_report();
    res.stats = engine.stats();
    for (const auto& f : engine.found()) {
        res.plans.push_back(estimate(sc, f.plan, true));
        res.scores.push_back(f.time);
    }
    if (options.baselines) {
        const double left = std::max(0.5, options.time_limit_s - std::chrono::duration<double>(Clock::now() - t0).count());
        res.baselines = compute_baselines(sc, std::min(left, 5.0));
    }
    res.stats.elapsed_s = std::chrono::duration<double>(Clock::now() - t0).count();
    return res;
}

RidgeReport ridge_report(const Scenario& sc, const Plan& plan, int top_k, std::int64_t max_points) {
    RidgeReport rep;
    SearchOptions o;
    o.top_k = top_k;
    o.time_limit_s = 1e9;
    std::vector<std::vector<int>> visited;
    Engine ridge(sc, o);
    ridge.run_single(plan, false, &visited);
    rep.ridge_evaluations = ridge.stats().evaluated;
    if (!ridge.found().empty()) {
        rep.best_time_s = ridge.found().front().time;
        for (const auto& st : ridge.found().front().plan.stages) rep.best_layers.push_back(st.num_layers);
    }
    // Every split, through the same machinery without bounds (top-K of everything).
    const int S = static_cast<int>(plan.stages.size());
    double count = 1;  // C(L-1, S-1)
    for (int i = 1; i < S; ++i) count = count * (sc.model.num_layers - i) / i;
    SearchOptions all = o;
    all.top_k = 100;
    std::vector<std::vector<int>> every;
    Engine ex(sc, all);
    ex.run_single(plan, true, count <= static_cast<double>(max_points) ? &every : nullptr);
    rep.exhaustive_evaluations = ex.stats().evaluated;
    if (!ex.found().empty()) rep.exhaustive_best_time_s = ex.found().front().time;
    if (count <= static_cast<double>(max_points)) {
        std::sort(visited.begin(), visited.end());
        // Re-evaluate every composition (including the ones that do not fit) with estimate.
        std::vector<int> l(S, 1);
        std::function<void(int, int)> rec = [&](int k, int R) {
            if (k == S - 1) {
                l[k] = R;
                Plan p = plan;
                for (int j = 0; j < S; ++j) p.stages[j].num_layers = l[j];
                SplitPoint pt;
                pt.layers = l;
                Estimate e = estimate(sc, p, false);
                pt.iteration_time_s = e.memory_fits ? e.iteration_time_s : kInf;
                pt.visited = std::binary_search(visited.begin(), visited.end(), l);
                rep.points.push_back(std::move(pt));
                return;
            }
            for (int x = 1; x <= R - (S - k - 1); ++x) {
                l[k] = x;
                rec(k + 1, R - x);
            }
        };
        rec(0, sc.model.num_layers);
    }
    return rep;
}

SpaceSize search_space_size(const Scenario& sc, bool tp_per_stage) {
    SpaceSize out;
    const int L = sc.model.num_layers;
    const int G = static_cast<int>(sc.cluster.groups.size());
    if (G > 16) return out;
    // log-free binomials as doubles
    auto comp = [&](int S) {
        double c = 1;
        for (int i = 1; i < S; ++i) c = c * (L - i) / i;
        return c;
    };
    std::vector<int> tps_ok;
    for (std::int64_t mbs : divisors(sc.training.global_batch_size)) {
        const std::int64_t m = sc.training.global_batch_size / mbs;
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
            for (int n : node_choices(gr.nodes)) {
                const std::vector<int> sizes = detail::stage_sizes(P, n);
                for (int s : sizes) {
                    const long long count = static_cast<long long>(n) * P / s;
                    if (count > smax) continue;
                    int ntp = 0;
                    for (int tp = 1; tp <= P; ++tp)
                        if (P % tp == 0 && s % tp == 0 && tp_valid(sc, tp) && mbs % (s / tp) == 0) ++ntp;
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
        // f[mask][S] = (layouts, configurations) over ordered sequences of the groups in mask.
        const std::size_t masks = std::size_t{1} << G;
        std::vector<std::vector<std::pair<double, double>>> f(masks, std::vector<std::pair<double, double>>(smax + 1, {0, 0}));
        f[0][0] = {1, 1};
        for (std::size_t mask = 0; mask < masks; ++mask)
            for (int S = 0; S <= smax; ++S) {
                auto [ly, cf] = f[mask][S];
                if (ly == 0) continue;
                for (int g = 0; g < G; ++g) {
                    if (mask >> g & 1) continue;
                    for (auto [cnt, ntp] : opts[g]) {
                        if (S + cnt > smax) continue;
                        auto& t = f[mask | (std::size_t{1} << g)][S + cnt];
                        t.first += ly;
                        t.second += cf * ntp;
                    }
                }
            }
        for (std::size_t mask = 1; mask < masks; ++mask)
            for (int S = 1; S <= smax; ++S) {
                out.stage_layouts += f[mask][S].first;
                out.configurations += f[mask][S].second;
                out.plans += f[mask][S].second * comp(S);
            }
    }
    return out;
}


Json to_json(const Scenario& sc, const SearchResult& r) {
    Json plans = Json::array();
    for (std::size_t k = 0; k < r.plans.size(); ++k) plans.push_back(to_json(sc, r.plans[k], k == 0));
    Json baselines = Json::array();
    const double best = r.plans.empty() ? 0.0 : r.plans.front().iteration_time_s;
    for (const auto& b : r.baselines) {
        Json j;
        if (b.estimate) {
            j = to_json(sc, *b.estimate, false);
            j["speedup"] = best > 0 ? Json(round_output(b.estimate->iteration_time_s / best)) : Json(nullptr);
        } else {
            j = Json::object();
            j["iteration_time_s"] = nullptr;
            j["tokens_per_s"] = nullptr;
            j["speedup"] = nullptr;
            j["plan"] = nullptr;
            j["reason"] = b.reason;
        }
        j["name"] = b.name;
        j["description"] = b.description;
        baselines.push_back(std::move(j));
    }
    Json infeasible = Json::object();
    for (const auto& [k, v] : r.stats.infeasible) infeasible[k] = v;
    Json stats = {{"evaluated", r.stats.evaluated},
                  {"pruned", r.stats.pruned},
                  {"infeasible", infeasible},
                  {"elapsed_s", round_output(r.stats.elapsed_s)},
                  {"complete", r.stats.complete},
                  {"cancelled", r.stats.cancelled},
                  {"configurations", r.stats.configurations},
                  {"cost_probes", r.stats.cost_probes}};
    return {{"plans", plans}, {"baselines", baselines}, {"stats", stats}};
}

}  // namespace poseidon
