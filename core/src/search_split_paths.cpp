// The window cycles of a split's prefix (docs/search.md, "Bounds", families R, W and D): the paths
// of the 1F1B DAG that turn through a window of neighbouring stages, every stage's work and the
// sends inside the window paid once per turn. The split walk adds them to its prefix bounds.
#include <algorithm>

#include "search_walk.hpp"

namespace poseidon::detail {

// Family R (round_trip_path, search_bounds.hpp) for stages k-1 and k, stage k's forward f and
// backward b: each turn of their 1F1B round trip pays both stages' work and both sends, where
// families A, C and E pay a send once. Up to the end of stage k's last backward: the caller adds
// what follows it (the drain of family G, at least the way down to stage 0 and its sync).
double Walker::family_r(int k, const SplitState& st, double f, double b) const {
    return round_trip_path(st.pb, 0.0, st.f, st.b, f, b, sf_[k - 1], sb_[k], warm_[k - 1], warm_[k], ctx_->m);
}

// Family W (window_path, search_bounds.hpp) for the windows of two or more stages ending at
// stage k, whose forward and backward are f and b; `later` is at most the F+B of the stages after
// k (their cheapest fill of the layers left). Up to the end of stage k's last backward, as
// family R.
double Walker::family_w(int k, const SplitState& st, double f, double b, double later) {
    const std::int64_t m = ctx_->m;
    // micro-batch 0 forward to the last stage and back to stage k (sends_from_ holds the sends)
    const double fill = st.pb + f + sends_from_[k] + later + b;
    // pa_at_[a] = sum over l < a of c_l + sf_l + sb_{l+1}, so the window a..k weighs W = upto_k - pa_at_[a]
    const double upto_k = st.pa + f + b;
    std::int64_t* turns = wturns_.data() + static_cast<std::size_t>(k) * kMaxWindow;  // by n - 1
    if (!wturns_row_[k]) {
        for (int n = 1; n <= kMaxWindow && n <= k + 1; ++n) turns[n - 1] = window_turns(warm_[k - n + 1], n, m);
        wturns_row_[k] = 1;
    }
    double best = 0;
    for (int a = std::max(0, k + 1 - kMaxWindow); a < k; ++a) {
        const int n = k - a + 1;
        best = std::max(best, window_turns_path(f, b, upto_k - pa_at_[a], turns[n - 1], n, warm_[k], m));
    }
    return window_enter(st.pb, f, b, warm_[k], m, fill) + best;
}

// Family D (docs/search.md, "Bounds"): micro-batch 0's round trip through every stage to B_0(0);
// then turns around windows 0..k: F_0(y) up to F_k(y), which stage k follows with B_k(y - w_k),
// down to B_0(y - w_k), which stage 0 follows with F_0(y - w_k + w_0 + 1), n = w_0 + 1 - w_k = k + 1
// micro-batches further, and stage 0's own F, B pairs (window_turns_d), up to B_0(m - 2 - w_0),
// which stage 0 follows with F_0(m - 1); then the last micro-batch's round trip through every
// stage. Both round trips weigh the F+B of every stage and every send, so
// T >= 2 (sum c + sends) + turns + dp_0 + opt. Returns the turns' part (-kInf: no steady state).
double Walker::family_d_turns(int k, const SplitState& st, double f, double b) const {
    const std::int64_t m = ctx_->m;
    const int S = static_cast<int>(cfg_.size());
    // every warm-up below m (w_j = S - 1 - j), and F_0(m - 1) after a steady-state B_0
    if (warm_[0] != S - 1 || warm_[0] + 2 > m) return -kInf;
    const double w1 = st.pa + f + b;  // window 0..k (pa_at_[0] = 0)
    const double w2 = k >= 1 ? pa_at_[k] - sf_[k - 1] - sb_[k] : 0;  // window 0..k-1
    const double c0 = k == 0 ? f + b : pa_at_[1] - sf_[0] - sb_[1];
    return window_turns_d(m - 2 - warm_[0], k + 1, w1, w2, c0);
}

// Family D from a later stage a (docs/search.md, "Bounds", D_a): the same path with the turns
// around windows a..k. Micro-batch 0 goes through every stage and back only to B_a(0), and the
// last one starts at F_a(m - 1), so the stages before a and the sends up to a are paid once:
// T >= 2 (sum c + sends) + turns_a - pa_at_[a] + the exit + opt, the exit at least dp_0 (the
// caller's x_d: the last backward may end at any stage's sync). Only the device order of stages
// a..k is used, so the stages before a may be in any warm-up; a needs w_a = S - 1 - a <= m - 2
// (then so do the stages after it). Returns the longest turns_a - pa_at_[a] over the windows of up
// to kMaxWindow stages ending at k (a >= 1; family_d_turns has a = 0), or -kInf.
double Walker::family_d_later_turns(int k, const SplitState& st, double f, double b) {
    const std::int64_t m = ctx_->m;
    const int S = static_cast<int>(cfg_.size());
    const double upto_k = st.pa + f + b;                                   // pa_at_[k] + c_k
    const double upto_km1 = k >= 1 ? pa_at_[k] - sf_[k - 1] - sb_[k] : 0;  // pa_at_[k-1] + c_{k-1}
    // w_a = S - 1 - a needs S - 1 - a <= m - 2 (which also keeps it below m)
    const int a0 = std::max({1, k + 1 - kMaxWindow, static_cast<int>(std::max<std::int64_t>(0, S + 1 - m))});
    // window_turns_d's divisions, once per configuration and window (this runs for most children)
    DTurns* row = dturns_tab_.data() + static_cast<std::size_t>(k) * kMaxWindow;  // by n - 1
    if (!dturns_row_[k]) {
        for (int a = a0; a <= k; ++a) {
            const std::int64_t n = k - a + 1, D = m - 2 - warm_[a];
            DTurns& d = row[n - 1];
            d.D = D;
            d.t1 = D / n;
            d.r1 = D - d.t1 * n;
            const std::int64_t q = (D + n - 1) / n;
            d.bn = q * n - D;
            d.an = n >= 2 ? q - d.bn : -1;
        }
        dturns_row_[k] = 1;
    }
    double best = -kInf;
    for (int a = a0; a <= k; ++a) {
        const DTurns& d = row[k - a];
        const double w1 = upto_k - pa_at_[a];                       // window a..k
        const double c0 = a == k ? f + b : pa_at_[a + 1] - pa_at_[a] - sf_[a] - sb_[a + 1];
        // window_turns_d(D, n, w1, w2, c0) with the counts above
        double t = std::max(static_cast<double>(d.D) * c0, static_cast<double>(d.t1) * w1 + static_cast<double>(d.r1) * c0);
        if (d.an >= 0) t = std::max(t, static_cast<double>(d.an) * w1 + static_cast<double>(d.bn) * (upto_km1 - pa_at_[a]));  // w2: window a..k-1
        best = std::max(best, t - pa_at_[a]);
    }
    return best;
}

}  // namespace poseidon::detail
