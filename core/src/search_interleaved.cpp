// The schedule dimension of the search (docs/search.md, "The space", step 6, and "Bounds",
// "Interleaved 1F1B"): which virtual-stage counts V a micro-batch size allows, the bound of
// interleaved plans below a layout node, and the layer split of one configuration in chunks of V
// layers, each complete plan scored exactly as `estimate` scores it.
//
// The bounds are family A of the interleaved DAG (dag_interleaved.cpp): micro-batch 0's chunk-0
// forward through stages 0..i-1, stage i's whole order (m passes of each of its V chunks), then
// chunk 0's backward of micro-batch m-1 back to stage 0 and the optimizer:
//   T >= sum_{j<i} (f_j,0 + b_j,0) + m sum_c (f_i,c + b_i,c) + max_t opt_t.
// A chunk of l_j / V layers costs at least a_j l_j / V (the middle-stage rate, assumption A1 for
// the first and last chunks), so T >= sum_{j<i} a_j l_j / V + m a_i l_i + opt: the LP of family A
// with phi = a / V (gradient syncs are left out; the sends of the prefix are added in the split).
// A complete split is also cut by family C of the interleaved DAG (interleaved_family_c) before
// it is costed.
#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

#include "poseidon/cost_model.hpp"
#include "search_bounds.hpp"
#include "search_walk.hpp"

namespace poseidon::detail {

bool interleave_ok(int S, std::int64_t m, int V, int num_layers) {
    return S >= 2 && m % S == 0 && num_layers % V == 0 && static_cast<long long>(S) * V <= num_layers;
}

void set_schedules(MbsCtx& c, const Scenario& sc, const std::string& schedule) {
    const int L = sc.model.num_layers;
    c.sched_1f1b = schedule != "interleaved-1f1b";
    c.vs.clear();
    c.keep_v.clear();
    c.ilv_least_stages.clear();
    c.ilv_vi_open.clear();
    // Megatron-FSDP's per-block gathers are costed for 1F1B stages only (validate_plan)
    if (schedule == "1f1b" || sc.training.fsdp) {
        if (!c.sched_1f1b) c.root_bound = kInf;
        return;
    }
    for (int V = 2; V <= std::min(search_max_virtual_stages, L / 2); ++V)
        if (L % V == 0) c.vs.push_back(V);
    if (c.vs.empty()) {
        if (!c.sched_1f1b) c.root_bound = kInf;
        return;
    }
    c.keep_v.assign(c.vs.size(), std::vector<double>(c.smax + 1));
    for (std::size_t i = 0; i < c.vs.size(); ++i) {
        const double keep = 1 - 1 / (static_cast<double>(c.m) * c.vs[i]);
        for (int n = 0; n <= c.smax; ++n) c.keep_v[i][n] = std::pow(keep, n);
    }
    c.suf_ilv.clear();
    for (std::size_t i = 0; i < c.vs.size(); ++i) {
        std::vector<double> r = suffix_rates(c, [&](const OptInfo& o, double v) { return lp_steps(v, o.best.a / c.vs[i], c.keep_pow(i, o.o.count)); });
        if (r.empty()) break;
        c.add_bytes(static_cast<std::int64_t>(r.size() * sizeof(double)));
        c.suf_ilv.push_back(std::move(r));
    }
    set_chunk_rates(c, L);
    c.ilv_least_stages.assign(c.smax + 1, 0);
    for (int S = c.smax, next = 0; S >= 0; --S) {
        if (S >= 2 && c.m % S == 0) next = S;
        c.ilv_least_stages[S] = next;
    }
    // a partial layout of S stages ends with at least d = ilv_least_stages[S] (an interleaved plan
    // has a multiple of its stage count as micro-batch count): its bound takes the largest V with
    // V d <= L
    c.ilv_vi_open.assign(c.smax + 1, -1);
    for (int S = 0; S <= c.smax; ++S)
        for (std::size_t i = 0; i < c.vs.size(); ++i)
            if (c.ilv_least_stages[S] > 0 && static_cast<long long>(c.ilv_least_stages[S]) * c.vs[i] <= L) c.ilv_vi_open[S] = static_cast<int>(i);
    // Root: every group at its most throughput, no bubble (the LP with phi = 0).
    const double v = std::accumulate(c.rho_a.begin(), c.rho_a.end(), 0.0);
    const double b = v > 0 ? L / v : kInf;
    c.root_bound = c.sched_1f1b ? std::min(c.root_bound, b) : b;
    if (!c.sched_1f1b) c.root_order = c.root_bound;
}

// The LP of the interleaved family A over the blocks placed (phi = a / V, mu = m a) and, for the
// groups not placed, the no-bubble rate count / (m a) of their best option (phi = 0). V is the
// largest count the stages allow: V d <= L with d the least stage count a completion can have
// (a divisor of m, at least the stages placed; a complete layout: S_all itself, which must
// divide m); none: no interleaved plan below.
double Walker::ilv_layout_bound(const MbsCtx& c, std::uint64_t used, int S_all, bool exact) {
    int S = 0;
    for (const auto& b : blocks_) S += b.count;
    int vmax = 0;
    std::size_t vi = 0;
    if (S_all == 0) {
        const int i = S <= c.smax ? c.ilv_vi_open[S] : -1;
        if (i < 0) return kInf;
        vmax = c.vs[vi = static_cast<std::size_t>(i)];
    } else {
        for (std::size_t i = 0; i < c.vs.size(); ++i)
            if (interleave_ok(S_all, c.m, c.vs[i], L_)) vmax = c.vs[vi = i];
        if (vmax == 0) return kInf;
    }
    double v = 0;
    // (a complete layout has no stages after its blocks; the table is never above the sum: a group
    // adds at most its no-bubble rate)
    if (S_all == 0) v = open_rate(exact && !c.suf_ilv.empty() ? &c.suf_ilv[vi] : nullptr, c.rho_a, used);
    double opt_lb = 0;
    v = ilv_prefix_steps(c, v, vi, opt_lb);
    const double b0 = v > 0 ? L_ / v + ilv_dp0_block(c) + opt_lb : kInf;
    // The bound above takes the largest V at the per-layer rate, as if passes had no fixed cost;
    // per V at the chunk rates it is tighter (set_chunk_rates: never below it, since a_V >= a
    // and V <= vmax), and the least over the V a completion may have bounds them all. Only for
    // the cut (`exact`) and only where the cheap one does not cut already.
    if (!exact || c.rho_a_v.size() != c.vs.size() || cut(b0)) return b0;
    double best = kInf;
    for (std::size_t i = 0; i < c.vs.size(); ++i) {
        if (S_all == 0 ? i > vi : !interleave_ok(S_all, c.m, c.vs[i], L_)) continue;
        best = std::min(best, ilv_layout_bound_v(c, used, S_all > 0, i));
    }
    return std::max(b0, best);
}

// Every family-A path ends at stage 0's last pass, which its gradient sync follows (ilv_sync): at
// least the least sync of the first block's stages at their chosen TP (else the least over TP),
// none before a block is placed or with overlap_grad_reduce. (The tied-embedding all-reduce is
// left out here: it is known only with the last stage.)
double Walker::ilv_dp0_block(const MbsCtx& c) const {
    if (blocks_.empty() || sc_.training.overlap_grad_reduce) return 0;
    return rates_of(c, blocks_.front()).dp_min;
}

// Interleaved plans of the configuration cfg_ (its exact caps known: an interleaved stage holds
// more activations than the same 1F1B stage, so the 1F1B caps bound it; docs/search.md).
void Walker::ilv_run(MbsCtx& c) {
    const int S = static_cast<int>(cfg_.size());
    const double m = static_cast<double>(c.m);
    iopt_ = 0;
    bool mono = true;
    itab_.resize(S);
    for (int j = 0; j < S; ++j) {
        iopt_ = std::max(iopt_, cfg_[j].r.opt_min);
        itab_[j] = &cfg_[j].table->of_stage(j);
        mono = mono && itab_[j]->monotone;
    }
    // every family-A path ends at stage 0's last pass, which its gradient sync follows
    const double dp0 = ilv_dp0_least(), tail0 = dp0 + iopt_;
    // vsched_ labels the plans inserted; back to 1F1B on every way out (a dive may stop here)
    struct Reset {
        int& v;
        ~Reset() { v = 1; }
    } reset{vsched_};
    for (int V : c.vs) {
        if (halted()) return;
        if (!interleave_ok(S, c.m, V, L_)) continue;
        vsched_ = V;
        const int U = L_ / V;
        ucap_.assign(S, U);
        umem_.assign(S, U);
        usuf_.assign(S + 1, 0);
        umsuf_.assign(S + 1, 0);
        iva_.assign(S + 1, 0);
        if (!exhaustive_) ilv_caps(V, U, tail0);
        ilv_cap_sums(V);
        if (usuf_[0] < U) {
            ++(umsuf_[0] < U ? stats.infeasible["memory"] : stats.pruned);
            continue;
        }
        inofit_.assign(S, std::numeric_limits<int>::max());
        ilv_dead_ = S;
        inodes_ = 0;
        // family A with no prefix at the bottleneck: T >= m V min_split max_j c_j(l_j / V) + opt
        // (every chunk of a stage costs at least a middle chunk of as many layers, A1)
        double t = 0;
        if (mono && !exhaustive_ && !cut(L_ / iva_[0] + tail0)) {
            tabs_.resize(S);
            caps_.resize(S);
            for (int j = 0; j < S; ++j) {
                tabs_[j] = itab_[j]->c.data();
                caps_[j] = ucap_[j];
            }
            t = integer_bottleneck_min(tabs_, caps_, U, heap_);
        }
        if (cut(std::max(L_ / iva_[0], m * V * t) + tail0)) {
            ++stats.pruned;
            continue;
        }
        iplan_ = current_plan();
        // GPUs, spans and sends follow from the stages' replicas alone, not their layers: once per
        // configuration, at its first split that gets timed (most configurations are cut before)
        iplace_.clear();
        ilinks_.clear();
        // the suffix tables once the walk grows: most configurations' walks are cut within a few
        // nodes, and the tables cost O(S U) merges each
        isuf_ready_ = false;
        isuf_children_ = 0;
        ++icfg_epoch_;
        ilv_dfs(0, U, IlvPrefix{0, 0, dp0, iopt_});
    }
}

// From the caps ucap_ and umem_: their suffix sums, and each suffix's LP rate at its stages' chunk
// rates over the chunks they can hold (set_chunk_rates).
void Walker::ilv_cap_sums(int V) {
    const double m = static_cast<double>(ctx_->m);
    for (int j = static_cast<int>(cfg_.size()) - 1; j >= 0; --j) {
        usuf_[j] = usuf_[j + 1] + ucap_[j];
        umsuf_[j] = umsuf_[j + 1] + umem_[j];
        double a = kInf;
        for (int u = 1; u <= ucap_[j]; ++u) a = std::min(a, itab_[j]->c[u] / u);
        iva_[j] = a < kInf ? lp_step(iva_[j + 1], a / V, m * a) : iva_[j + 1];
    }
}

// The least of ilv_sync(0, l) over the layers stage 0 may hold: its middle table's least sync
// (the first stage syncs the embedding's gradients too, A1), or the embedding all-reduce alone.
double Walker::ilv_dp0_least() const {
    return (sc_.training.overlap_grad_reduce ? 0.0 : cfg_[0].r.dp_min) + emb_sync_;
}

// Stage k takes u chunks of V layers (R chunks left): the ridge walk of search_split.cpp with
// the interleaved family A, upward stopped by max(ma, pa + m a_k l) (nondecreasing in l),
// downward by pa + (R - u) V / v_{k+1} (nonincreasing in l); each plus the prefix's tail.
void Walker::ilv_dfs(int k, int R, const IlvPrefix& pre) {
    if (halted()) return;
    tick();
    const int S = static_cast<int>(cfg_.size());
    if (++inodes_ == sh_.opt.ilv_memory_after_nodes && !exhaustive_) {
        ilv_memory_caps(k);
        if (ilv_dead_ < k) {
            ++stats.infeasible["memory"];
            return;
        }
    }
    if (k == S) {
        ilv_leaf(pre.dp0, pre.omax);
        return;
    }
    const int V = vsched_;
    // (the first chunk of the first stage holds the model's leading dense blocks: lmin_at)
    const int lo = static_cast<int>(std::max<long long>(ilv_least(k), R - usuf_[k + 1]));
    const int hi = std::min(R - (S - k - 1), ucap_[k]);
    if (lo > hi) {
        // memory, or the caps from the threshold
        const bool memory = std::max<long long>(1, R - umsuf_[k + 1]) > std::min(R - (S - k - 1), umem_[k]);
        ++(memory ? stats.infeasible["memory"] : stats.pruned);
        return;
    }
    if (exhaustive_) {
        for (int u = lo; u <= hi && !halted(); ++u) ilv_child(k, u, R, pre);
        return;
    }
    const Rates& r = cfg_[k].r;
    const double m = static_cast<double>(ctx_->m);
    int center = static_cast<int>(std::lround(R * (1.0 / r.a) / suf_w_[k]));
    center = std::clamp(center, lo, hi);
    const Table& tb = *itab_[k];
    const double pa = pre.pa, ma = pre.ma, tail = pre.tail();
    auto up_mono = [&](int u) { return std::max(ma, pa + m * (tb.monotone ? V * tb.c[u] : r.a * u * V)) + tail; };
    // downward also the whole-chunk bounds of ilv_child through a later stage, with stage k at
    // its least passes (ipa_, ipf_): the suffix's bottleneck grows with the chunks it holds
    auto down_mono = [&](int u) {
        if (k + 1 >= S) return 0.0;
        if (!isuf_ready_) return std::max(ma, pa + static_cast<double>(R - u) * V / iva_[k + 1]) + tail;
        const std::size_t at = (k + 1) * iw_ + (R - u);
        const double a = std::max({ma, pa + static_cast<double>(R - u) * V / iva_[k + 1], pa - ipa_[k] + ia_suf_[at]}) + tail;
        return std::max(a, pre.pf - ipf_[k] + ig_suf_[at] + pre.omax);
    };
    walk_outward(
        center, lo, hi, [&] { return halted(); }, [&](int u) { return cut(up_mono(u)); }, [&](int u) { return cut(down_mono(u)); },
        [&](int u) { ilv_child(k, u, R, pre); }, stats.pruned);
}

void Walker::ilv_child(int k, int u, int R, const IlvPrefix& pre) {
    const int S = static_cast<int>(cfg_.size());
    const int V = vsched_;
    layers_[k] = u * V;
    if (exhaustive_) {
        ilv_dfs(k + 1, R - u, pre);
        return;
    }
    icerts_.changed(k);
    // A stage's memory under the interleaved schedule depends on its own layers alone (its chunks,
    // its position, V and m: cost_interleaved.cpp) and grows with them: once a costed split found
    // stage j not to fit with l layers (ilv_leaf), no split with at least l on stage j fits. A
    // fixed stage above that holds them (ilv_dead_ < k) ends every sibling at once; this stage's
    // own count is checked against what is known of it.
    if (ilv_dead_ < k || layers_[k] >= inofit_[k]) {
        ++stats.infeasible["memory"];
        return;
    }
    ilv_dead_ = S;  // the stages from k on are assigned anew below
    // chunk 0 of stage k, and its V chunks, cost at least as many middle chunks of u layers (A1),
    // except the first chunk of stage 0 and the last of stage S-1, whose times (embedding, LM
    // head) the cache holds exactly: a chunk's times depend on its position class only
    const CfgStage& cs = cfg_[k];
    const double cu = itab_[k]->c[u];
    double c0 = cu, chain = V * cu;
    double f0 = itab_[k]->t[u].forward_s, b0 = itab_[k]->t[u].backward_s;  // chunk 0's passes
    if (k == 0) {
        const StageTimes& t = costs_->times(cs.g, cs.size, cs.tp, kFirst, u);
        c0 = t.forward_s + t.backward_s;
        chain = c0 + (V - 1) * cu;
        f0 = t.forward_s, b0 = t.backward_s;
    } else if (k == S - 1) {
        const StageTimes& t = costs_->times(cs.g, cs.size, cs.tp, kLast, u);
        chain = t.forward_s + t.backward_s + (V - 1) * cu;
    }
    // the path enters stage k + 1 after chunk 0's forward and its send, and leaves it by the
    // backward send of chunk 0 of stage k + 1 (the links of the 1F1B plan)
    IlvPrefix next;
    next.pa = pre.pa + c0 + sf_[k] + sb_[k + 1];
    next.ma = std::max(pre.ma, pre.pa + static_cast<double>(ctx_->m) * chain);
    // stage 0 fixed: its exact sync; a fixed stage's optimizer step joins the slowest (the last
    // stage's is the leaf's to read)
    next.dp0 = k == 0 ? ilv_sync(0, u * V) : pre.dp0;
    next.omax = k + 1 < S ? std::max(pre.omax, ilv_stage_times(k, u * V).optimizer_s) : pre.omax;
    // Family G: stage k's passes, all m V of them after chunk 0's first forward reaches it, end
    // with chunk 0's backward of the last micro-batch (interleaved_order), which the same
    // backward on chunk 0 of every stage before it follows; each stage's gradient sync follows
    // its own last pass (the drain of search_split.cpp, on chunk 0's backwards)
    const double sync = ilv_sync(k, u * V);
    next.drain = k == 0 ? sync : std::max(sync, sb_[k] + pre.bprev + pre.drain);
    next.mg = std::max(pre.mg, pre.pf + static_cast<double>(ctx_->m) * chain + next.drain);
    next.pf = pre.pf + f0 + sf_[k];
    next.bprev = b0;
    const double rest = k + 1 < S ? static_cast<double>(R - u) * V / iva_[k + 1] : 0.0;
    const double b = k + 1 < S ? std::max(next.ma, next.pa + rest) : next.ma;
    // Through a later stage i (docs/search.md, "Bounds of interleaved plans", "Whole chunks in
    // the suffix", "The suffix's family A in whole chunks, jointly"): family A at the larger of
    // the suffix's integer bottleneck and its least over the suffix's splits (a_int); family G,
    // whose drain passes the way down to stage k and then stage k's drain, G_i >= pa_i + m
    // chain_i + (pf_k - pa_k) + drain_k (g_later), or ends with stage i's own sync (g_own).
    // Without them the syncs of a pipeline's middle stages reach the walk only where such a
    // stage is fixed.
    double g_later = 0, a_int = 0, g_own = 0;
    if (!isuf_ready_ && ++isuf_children_ == kIlvSuffixAfter) {
        ilv_suffix_tables(V, static_cast<int>(L_ / V));
        isuf_ready_ = true;
    }
    if (isuf_ready_ && k + 1 < S) {
        const std::size_t at = (k + 1) * iw_ + (R - u);
        a_int = std::max(ia_suf_[at] - ipa_[k + 1], ij_suf_[at]);
        g_later = next.pa + std::max(rest, a_int) + (pre.pf - pre.pa) + next.drain;
        g_own = next.pf + ig_suf_[at] - ipf_[k + 1];
    }
    const double bound = std::max(std::max(b, next.pa + a_int) + next.tail(), std::max({next.mg, g_later, g_own}) + next.omax);
    if (cut(bound) || tie_cut(k, bound)) {
        ++stats.pruned;
        return;
    }
    // the paths that cut splits before, through the stages not fixed yet (once the walk has grown)
    if (isuf_ready_ && k + 1 < S && ilv_cert_suffix_cut(k, R - u, next.dp0, next.omax)) {
        ++stats.pruned;
        return;
    }
    ilv_dfs(k + 1, R - u, next);
}

}  // namespace poseidon::detail
