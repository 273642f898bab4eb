// All options of one group at a layout node bounded at once (docs/search.md, "All options of a
// group at once"): on the four-type shapes most of a node's groups have every option cut, and
// bounding them one by one was most of the layout walk. Also the LP steps of the blocks placed,
// which the bounds of one option (layout_bound, ilv_layout_bound) and of all of them share.
#include <algorithm>
#include <climits>
#include <cmath>

#include "search_bounds.hpp"
#include "search_walk.hpp"

namespace poseidon::detail {

void Walker::prefix_steps(const MbsCtx& c, double& va, double& vb, double& opt_lb) const {
    for (auto it = blocks_.rbegin(); it != blocks_.rend(); ++it) {
        const Rates& r = rates_of(c, *it);
        opt_lb = std::max(opt_lb, r.opt_min);
        const OptInfo& info = c.opts[it->g][it->opt];
        if (it->tpi < 0 && it->count == info.o.count) {  // TP open: the option's best rates
            va = lp_steps_to(va, info.vs_a, info.decay_a);
            vb = lp_steps_to(vb, info.vs_b, info.decay_b);
        } else if (it->count == info.o.count) {
            va = lp_steps(va, r.a, it->tpi >= 0 ? info.tps[it->tpi].decay_a : info.decay_a);
            vb = lp_steps(vb, r.phi_f, it->tpi >= 0 ? info.tps[it->tpi].decay_b : info.decay_b);
        } else {  // a run of a split option: the same decays over its own stage count
            va = lp_steps(va, r.a, c.keep_a[std::min(it->count, c.smax)]);
            vb = lp_steps(vb, r.phi_f, std::pow(1 - r.phi_f / r.mu_b, it->count));
        }
    }
}

double Walker::ilv_prefix_steps(const MbsCtx& c, double v, std::size_t vi, double& opt_lb) const {
    const int vmax = c.vs[vi];
    for (auto it = blocks_.rbegin(); it != blocks_.rend(); ++it) {
        const Rates& r = rates_of(c, *it);
        opt_lb = std::max(opt_lb, r.opt_min);
        const double vs = it->tpi < 0 ? vmax * c.opts[it->g][it->opt].vs_a : vmax / r.a;
        v = lp_steps_to(v, vs, c.keep_pow(vi, it->count));
    }
    return v;
}

// Whether kids would cut every option of group g below the node blocks_ (S stages, groups `used`;
// `others`: what the other groups can hold). Each option's bound there is the suffix's rate, the
// option's own LP step, the blocks' steps, then the time: every step is monotone in the rate
// before it, so the suffix with the most open stages any option leaves and the largest rate any
// option's step reaches, then the same blocks' steps, the least optimizer step and stage-0 sync
// of the options, give at most each option's bound; under the interleaved LP once per V the
// options' stage counts lead to (its family A alone: each option's bound is at least that). The
// options that kids refuses before any bound (stage limit, memory) are left out here too.
bool Walker::group_cut(const MbsCtx& c, int S, std::uint64_t used, int g, long long others) {
    // (kids' two refusals, over the stage limit and short of memory, which come before any bound)
    const auto refused = [&](const OptInfo& o) { return S + o.o.count > c.smax || others + static_cast<long long>(o.o.count) * o.cap < L_; };
    int kmin = INT_MAX;
    double opt_min = kInf, dp_min = kInf;
    std::uint64_t vis = 0;  // the V indices of the options' interleaved bounds (bit per index; none: infinite)
    for (const OptInfo& o : c.opts[g]) {
        if (refused(o)) continue;
        kmin = std::min(kmin, o.o.count);
        opt_min = std::min(opt_min, o.best.opt_min);
        dp_min = std::min(dp_min, o.best.dp_min);
        if (!c.vs.empty()) {
            const int i = c.ilv_vi_open[S + o.o.count];
            if (i >= 0) vis |= std::uint64_t{1} << i;
        }
    }
    if (kmin == INT_MAX) return true;
    const std::uint64_t with = used | (std::uint64_t{1} << g);
    const double dp0 = blocks_.empty() ? dp_min : rates_of(c, blocks_.front()).dp_min;
    if (c.sched_1f1b) {
        const auto [va, vb] = suffix_cap(c, suffix_, with, c.smax - S - kmin);
        double ma = va, mb = vb;
        for (const OptInfo& o : c.opts[g]) {
            if (refused(o)) continue;
            ma = std::max(ma, lp_steps_to(va, o.vs_a, o.decay_a));
            mb = std::max(mb, lp_steps_to(vb, o.vs_b, o.decay_b));
        }
        // (the node's inverse first: kids has taken it at this threshold)
        if (!pinv_.valid || (ma > pinv_.a_max && mb > pinv_.b_max)) {
            double opt_lb = opt_min;
            prefix_steps(c, ma, mb, opt_lb);
            if (!cut(std::max(L_ / ma + dp0 + opt_lb, L_ / mb + opt_lb))) return false;
        }
    }
    if (c.vs.empty() || vis == 0) return true;
    const double dp0_ilv = sc_.training.overlap_grad_reduce ? 0 : dp0;
    for (std::size_t vi = 0; vi < c.vs.size(); ++vi) {
        if (!((vis >> vi) & 1)) continue;
        const double v0 = open_rate(c.suf_ilv.empty() ? nullptr : &c.suf_ilv[vi], c.rho_a, with);
        const int V = c.vs[vi];
        double v = v0;
        for (const OptInfo& o : c.opts[g]) {
            if (refused(o) || c.ilv_vi_open[S + o.o.count] != static_cast<int>(vi)) continue;
            v = std::max(v, lp_steps_to(v0, V * o.vs_a, c.keep_pow(vi, o.o.count)));
        }
        if (pinv_.valid && v <= prefix_inverse_at(c, vi, false)) continue;
        double opt_lb = opt_min;
        v = ilv_prefix_steps(c, v, vi, opt_lb);
        if (!cut(v > 0 ? L_ / v + dp0_ilv + opt_lb : kInf)) return false;
    }
    return true;
}

}  // namespace poseidon::detail
