// A layout child cut by its own LP step (docs/search.md, "The prefix inverted"): every child of a
// layout node shares the node's blocks, whose LP steps (prefix_steps, ilv_prefix_steps) are
// nondecreasing maps of the rate after the child's step. Inverted once per node at the threshold,
// they give the largest such rate whose bound the threshold cuts; a child whose own step stays at
// or below it is cut without the blocks' steps. A sufficient test: where it does not cut, the
// bound is taken in full as before, so the same children are cut (the four-type shapes of the MoE
// sweep cut millions of children per expert grid, each by the whole prefix).
#include <cmath>

#include "search_bounds.hpp"
#include "search_walk.hpp"

namespace poseidon::detail {

namespace {

// sup { v : f(v) <= y } for f(v) = v >= vs ? v : vs - (vs - v) d (lp_steps_to, and lp_steps with
// vs = 1 / phi): f is continuous and nondecreasing, so f(v) <= y exactly when v <= this.
double step_inverse(double y, double vs, double d) {
    if (y >= vs) return y;
    if (d > 0) return vs - (vs - y) / d;
    return -kInf;
}

// Margins that keep the test sufficient under the rounding of the forward steps (a relative error
// of a few ulps each), far below kBoundSlack.
constexpr double kPretestMargin = 1e-10;

// The most rate v after the blocks whose bound L / v + add the threshold cuts, less the margin.
double target_rate(double L, double cut_at, double add) {
    const double room = cut_at - add;
    return room > 0 ? L / room * (1 - kPretestMargin) : kInf;
}
double less_margin(double y) { return y == kInf ? kInf : y * (1 - kPretestMargin); }

}  // namespace

// The node's inverses at the threshold (blocks_ is the node's prefix, non-empty).
void Walker::prefix_inverse(const MbsCtx& c) {
    PrefixInverse& p = pinv_;
    p.valid = false;
    if (exhaustive_ || no_cut || !layout_pretest_enabled || blocks_.empty() || !(cut_at_ < kInf)) return;
    p.valid = true;
    p.ilv_done.assign(c.vs.size(), 0);
    p.ilv_max.assign(c.vs.size(), -kInf);
    p.v_done.assign(c.vs.size(), 0);
    p.v_max.assign(c.vs.size(), -kInf);
    p.opt = 0;
    for (const BlockSel& b : blocks_) p.opt = std::max(p.opt, rates_of(c, b).opt_min);
    p.dp0 = rates_of(c, blocks_.front()).dp_min;
    // family A: L / PA(va) + dp0 + opt >= cut_at_ where PA(va) <= L / (cut_at_ - dp0 - opt)
    double ya = target_rate(L_, cut_at_, p.dp0 + p.opt), yb = target_rate(L_, cut_at_, p.opt);
    // prefix_steps applies the last block first, so its inverse takes the first block first
    for (const BlockSel& b : blocks_) {
        const Rates& r = rates_of(c, b);
        const OptInfo& info = c.opts[b.g][b.opt];
        if (b.tpi < 0 && b.count == info.o.count) {
            ya = step_inverse(ya, info.vs_a, info.decay_a);
            yb = step_inverse(yb, info.vs_b, info.decay_b);
        } else if (b.count == info.o.count) {
            ya = step_inverse(ya, 1 / r.a, b.tpi >= 0 ? info.tps[b.tpi].decay_a : info.decay_a);
            yb = step_inverse(yb, 1 / r.phi_f, b.tpi >= 0 ? info.tps[b.tpi].decay_b : info.decay_b);
        } else {
            ya = step_inverse(ya, 1 / r.a, c.keep_a[std::min(b.count, c.smax)]);
            yb = step_inverse(yb, 1 / r.phi_f, std::pow(1 - r.phi_f / r.mu_b, b.count));
        }
    }
    p.a_max = less_margin(ya);
    p.b_max = less_margin(yb);
}

// The interleaved LP's inverse at V index vi, once per node: at the per-layer rates
// (ilv_layout_bound's first bound) or, with `chunk`, at the chunk rates (ilv_layout_bound_v).
double Walker::prefix_inverse_at(const MbsCtx& c, std::size_t vi, bool chunk) {
    PrefixInverse& p = pinv_;
    std::vector<char>& done = chunk ? p.v_done : p.ilv_done;
    std::vector<double>& at = chunk ? p.v_max : p.ilv_max;
    if (done[vi]) return at[vi];
    done[vi] = 1;
    double y = target_rate(L_, cut_at_, (sc_.training.overlap_grad_reduce ? 0 : p.dp0) + p.opt);
    const double V = c.vs[vi];
    for (const BlockSel& b : blocks_) {
        const OptInfo& info = c.opts[b.g][b.opt];
        double vs = 0;
        if (chunk) {
            const double a = b.tpi < 0 ? info.a_v[vi] : info.tps[b.tpi].a_v[vi];
            if (!(a < kInf)) continue;  // (ilv_layout_bound_v takes no step there)
            vs = V / a;
        } else {
            vs = b.tpi < 0 ? V * info.vs_a : V / rates_of(c, b).a;
        }
        y = step_inverse(y, vs, c.keep_pow(vi, b.count));
    }
    return at[vi] = less_margin(y);
}

// Whether the child (group option `info` appended to blocks_, groups `with`, `open` stages
// after it, S_child stages with it) is cut by the bounds kids would take, from its own steps.
bool Walker::child_pre_cut(const MbsCtx& c, const OptInfo& info, std::uint64_t with, int open, int S_child) {
    if (!pinv_.valid) return false;
    if (c.sched_1f1b) {
        const auto [va, vb] = suffix_cap(c, suffix_, with, open, true);
        if (lp_steps_to(va, info.vs_a, info.decay_a) > pinv_.a_max && lp_steps_to(vb, info.vs_b, info.decay_b) > pinv_.b_max) return false;
    }
    if (c.vs.empty()) return c.sched_1f1b;
    const int i = S_child <= c.smax ? c.ilv_vi_open[S_child] : -1;
    if (i < 0) return true;  // no interleaved plan below: ilv_layout_bound is infinite
    const std::size_t vi = static_cast<std::size_t>(i);
    double v = open_rate(c.suf_ilv.empty() ? nullptr : &c.suf_ilv[vi], c.rho_a, with);
    v = lp_steps_to(v, c.vs[vi] * info.vs_a, c.keep_pow(vi, info.o.count));
    if (v <= prefix_inverse_at(c, vi, false)) return true;
    // where that bound does not cut, ilv_layout_bound takes the least over V <= vs[vi] of the LP
    // at the chunk rates (ilv_layout_bound_v): cut when each of those is
    if (c.rho_a_v.size() != c.vs.size()) return false;
    for (std::size_t i = 0; i <= vi; ++i) {
        double w = open_rate(c.suf_ilv_v.empty() ? nullptr : &c.suf_ilv_v[i], c.rho_a_v[i], with);
        if (info.a_v[i] < kInf) w = lp_steps_to(w, c.vs[i] / info.a_v[i], c.keep_pow(i, info.o.count));
        if (w > prefix_inverse_at(c, i, true)) return false;
    }
    return true;
}

}  // namespace poseidon::detail
