// Lower bounds on every plan below a layout node or a partial TP choice (docs/search.md, "Bounds"):
// the LP bound of families A and B over the stage rates, the joint family-C bound, the memory
// that the blocks can hold, and the integer bottleneck while TP is chosen run by run. The
// closed-form minimisations they call are in search_bounds.cpp.
#include <algorithm>
#include <cmath>
#include <numeric>

#include "search_walk.hpp"

namespace poseidon::detail {

// Subsets in increasing order: every U \ {g} is done before U. Exact because each step is
// monotone in the rate after it, so the best suffix of U \ {g} is the best one to put behind g.
std::vector<double> suffix_rates(const MbsCtx& c, const std::function<double(const OptInfo&, double)>& step) {
    const int G = static_cast<int>(c.opts.size());
    if (G > kSuffixDpGroups) return {};
    std::vector<double> best(std::size_t{1} << G, 0.0);
    for (std::size_t U = 1; U < best.size(); ++U)
        for (int g = 0; g < G; ++g) {
            if (!((U >> g) & 1)) continue;
            const double after = best[U & ~(std::size_t{1} << g)];
            best[U] = std::max(best[U], after);  // g not used
            for (const OptInfo& o : c.opts[g]) best[U] = std::max(best[U], step(o, after));
        }
    return best;
}

SuffixInfo suffix_info(const MbsCtx& c, std::uint64_t used) {
    SuffixInfo si;
    double rho_min = kInf;
    si.amin = si.mub_min = kInf;
    for (int g = 0; g < static_cast<int>(c.opts.size()); ++g) {
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
    if (si.any && rho_min > 0 && rho_min < 1)
        si.mub_min *= rho_min;  // mu_min rho_min
    else
        si.mub_min = 0;
    return si;
}

// v <= sum of the per-stage rates, and since each LP step is v -> max(v, (1 - rho) v + 1/mu),
// v <= (1 - (1 - rho_min)^n) / (mu_min rho_min); with the table, v <= the exact suffix rate.
std::pair<double, double> suffix_cap(const MbsCtx& c, SuffixCache& cache, std::uint64_t used, int n, bool exact) {
    if (n <= 0) return {0, 0};
    const SuffixInfo* sip;
    if (!c.suf_info.empty()) {  // a table per set of groups (no hashing)
        sip = &c.suf_info[(c.suf_info.size() - 1) & ~used];
    } else {
        auto [it, fresh] = cache.try_emplace(used);
        if (fresh) it->second = suffix_info(c, used);
        sip = &it->second;
    }
    const SuffixInfo& si = *sip;
    if (!si.any) return {0, 0};
    const double ga = (1 - c.keep_a[std::min(n, c.smax)]) / si.amin;
    const double gb = si.mub_min > 0 ? (1 - std::exp(n * si.log_keep_b)) / si.mub_min : kInf;
    if (c.suf_a.empty() || !exact) return {std::min(si.sa, ga), std::min(si.sb, gb)};
    const std::size_t U = (c.suf_a.size() - 1) & ~used;
    return {std::min({si.sa, ga, c.suf_a[U]}), std::min({si.sb, gb, c.suf_b[U]})};
}

const Rates& Walker::rates_of(const MbsCtx& c, const BlockSel& b) const {
    const OptInfo& info = c.opts[b.g][b.opt];
    return b.tpi >= 0 ? info.tps[b.tpi].r : info.best;
}

// Lower bound for every plan whose pipeline starts with blocks_ and continues with at most
// `open_stages` stages of the groups not in `used`.
double Walker::layout_bound(const MbsCtx& c, std::uint64_t used, int open_stages, bool exact) {
    auto [va, vb] = suffix_cap(c, suffix_, used, open_stages, exact);
    double opt_lb = 0;
    prefix_steps(c, va, vb, opt_lb);
    const double dp0 = rates_of(c, blocks_.front()).dp_min;
    return std::max(L_ / va + dp0 + opt_lb, L_ / vb + opt_lb);
}

// family_c_floor (search_bounds.hpp) of the stages family_c_bound would build, in O(blocks): a
// block's stages share a, and its last stage has the fewest warm-up forwards, so the largest e.
// It cuts the long pipelines of few micro-batches before the sorted sweep.
double Walker::family_c_floor(const MbsCtx& c, int S) const {
    const double m = static_cast<double>(c.m);
    double sum_a = 0, amin = kInf, emax = 0, opt_lb = 0;
    int j = 0;
    for (const BlockSel& b : blocks_) {
        const Rates& r = rates_of(c, b);
        opt_lb = std::max(opt_lb, r.opt_min);
        sum_a += b.count * r.a;
        amin = std::min(amin, r.a);
        j += b.count;
        const double w = static_cast<double>(std::min<std::int64_t>(S - j, c.m));
        emax = std::max(emax, family_c_e(m, w, r));
    }
    return detail::family_c_floor(sum_a, amin, emax, S, L_, lmin_) + rates_of(c, blocks_.front()).dp_min + opt_lb;
}

// Family-C bound of a complete layout (TP as chosen, else the best rates; caps valid anywhere).
double Walker::family_c_bound(const MbsCtx& c, int S) {
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
    // (a stable insertion sort into a kept list: a layout has a few blocks, and stable_sort's
    // buffer and a new index vector per call cost more than the sort: 4 x 64 x 24 of the MoE
    // sweep ran 2.7 % fewer instructions)
    blk_idx_.clear();
    for (std::size_t bi = 0; bi < blocks_.size(); ++bi) {
        blk_idx_.push_back(bi);
        for (std::size_t k = blk_idx_.size() - 1; k > 0 && blk_[blk_idx_[k]].first < blk_[blk_idx_[k - 1]].first; --k) std::swap(blk_idx_[k], blk_idx_[k - 1]);
    }
    for (std::size_t bi : blk_idx_) {
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
            jc_.push_back({r.a, family_c_e(m, w, r), cj});
        }
    }
    const double add = rates_of(c, blocks_.front()).dp_min + opt_lb;
    return family_c_min(jc_, L_, heap_, lmin_) + add;
}

// Most layers the pipeline blocks_ (TP as chosen, else the best) plus, when `open`, every group
// not in `used` could hold: fewer than the model has means no plan fits in memory.
long long Walker::hostable(const MbsCtx& c, std::uint64_t used, bool open) const {
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

// The 1F1B bounds of a layout whose TP is chosen up to run `upto`: the layout's LP, family C and
// the integer bottleneck, asked only while it cuts where `gated` (tp_dfs; tp_bottleneck_cut) and
// always where not (a deferred configuration tested again, replay_cut, which must not move the
// gate's counts).
bool Walker::tp_one_cut(const MbsCtx& c, std::uint64_t used, int S, std::size_t upto, bool gated) {
    return cut(layout_bound(c, used, 0)) || cut(family_c_bound(c, S)) || (gated ? tp_bottleneck_cut(c, upto) : cut(tp_bottleneck_bound(c, upto)));
}

// The interleaved bounds of the same layout: its LP at every V and the bottleneck under the caps.
bool Walker::tp_ilv_cut(const MbsCtx& c, std::uint64_t used, int S) { return cut(ilv_layout_bound(c, used, S)) || cut(ilv_tp_bound(c, S)); }

// Whether tp_bottleneck_bound cuts, asked while it cuts one node in 64 of those the layout bounds
// and family C pass (and at every 16th otherwise): on the four-type shapes of the MoE sweep it cut
// 390 of 657,696 (4 x 1024 x 24) and 103 of 387,355 (4 x 1024 x 80) at 6 % of their time. What it
// would cut is walked instead, so the plans are the same.
bool Walker::tp_bottleneck_cut(const MbsCtx& c, std::size_t upto) {
    if (tpb_gate_.skip(64, 64)) return false;
    const bool cuts = cut(tp_bottleneck_bound(c, upto));
    tpb_gate_.record(cuts, 4096);
    return cuts;
}

// The configuration-level bottleneck bound of run_config while TP is chosen run by run: stages of
// the runs not chosen yet take, per layer count, the least F+B over their TP degrees and their
// largest cap, which bounds every choice still open from below.
double Walker::tp_bottleneck_bound(const MbsCtx& c, std::size_t upto) {
    tabs_.clear();
    caps_.clear();
    double dp_lb = kInf, opt_lb = 0;
    int j = 0;
    for (std::size_t bi = 0; bi < blocks_.size(); ++bi) {
        const BlockSel& b = blocks_[bi];
        const OptInfo& info = c.opts[b.g][b.opt];
        const double* tab = nullptr;
        const Rates* r = nullptr;
        if (bi <= upto) {
            const Table& tb = *info.tps[b.tpi].table;
            if (!tb.monotone) return 0;
            tab = tb.c.data();
            r = &tb.rates;
        } else {
            if (!info.cmin_monotone) return 0;
            tab = info.cmin->data();
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
    return static_cast<double>(c.m) * integer_bottleneck_min(tabs_, caps_, L_, heap_, lmin_) + dp_lb + opt_lb;
}

}  // namespace poseidon::detail
