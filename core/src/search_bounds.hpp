// Closed-form minimisations behind two of the search's lower bounds, and the window paths of
// families R and W (docs/search.md, "Bounds"). Internal to core/src; apart from the walk so that
// tests can check them against brute force and the DAG.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <vector>

namespace poseidon::detail {

// One step of the LP recursion of the family A/B bounds: v -> max(v, v + (1 - v phi) / mu).
inline double lp_step(double v, double phi, double mu) {
    const double x = 1.0 - v * phi;
    return x > 0 ? v + x / mu : v;
}
// k steps of lp_step with the same stage: while v < 1/phi each step is the affine map
// v -> v* - (v* - v)(1 - phi/mu) with fixed point v* = 1/phi, which it never passes.
inline double lp_steps(double v, double phi, double decay) {
    if (v * phi >= 1) return v;
    const double vs = 1 / phi;
    return vs - (vs - v) * decay;
}
// lp_steps with the fixed point vs = 1/phi given (no division: the layout walk's hot loop).
inline double lp_steps_to(double v, double vs, double decay) { return v >= vs ? v : vs - (vs - v) * decay; }
// The LP rate of the groups not in `used`: the suffix table's entry where there is a table (`table`
// non-null: one entry per set of groups), else the sum of the groups' most rates `rho`.
inline double open_rate(const std::vector<double>* table, const std::vector<double>& rho, std::uint64_t used) {
    if (table) return (*table)[(table->size() - 1) & ~used];
    double v = 0;
    for (std::size_t g = 0; g < rho.size(); ++g)
        if (!((used >> g) & 1)) v += rho[g];
    return v;
}
// One stage of the family-C bound: `a` seconds per layer added to the path by the stage's
// warm-up/drain share, `e` the steady-state seconds per layer (the stage's contribution when it is
// the bottleneck), `cap` the most layers it can hold.
struct JcStage {
    double a, e;
    long long cap;
};

// fill(t) of the family-C bound: with t >= max_i e_i l_i, stage i may hold
// l_min <= l_i <= u_i(t) = min(cap_i, t / e_i) layers (relaxed to reals; l_min is 1, or 0 with
// options.empty_stages); the cheapest sum_i a_i l_i with sum_i l_i = L takes the cheapest stages
// first. Returns t + that sum, or infinity when no split fits (more than `slack` layers left
// over). `st` is sorted by a.
double family_c_cost(const std::vector<JcStage>& st, int L, double t, double slack = 1e-9, int l_min = 1);

// min over t of family_c_cost(st, L, t), exactly: the cost is convex and piecewise linear in t, so
// one sweep over its breakpoints from the smallest feasible t finds the first point where the
// slope turns non-negative. O(S log S). `st` is sorted by a; `scratch` is reused storage.
double family_c_min(const std::vector<JcStage>& st, int L, std::vector<std::pair<double, std::size_t>>& scratch, int l_min = 1);
// A floor of family_c_min from three sums over its S stages: sum_a (the sum of a), a_min (the
// least a), e_max (the largest e). Every stage holds l_min layers, the other L - l_min S go at
// a_min, and t is at least its smallest value e_max l_min; caps are left out (the floor is finite
// where family_c_min may not be). family_c_min accepts a fill short of L by its 1e-9-layer slack,
// and so does this. O(1): the layout walk tests it before the O(S log S) sweep.
inline double family_c_floor(double sum_a, double a_min, double e_max, int S, int L, int l_min) {
    const double lm = l_min;
    if (static_cast<double>(L) < lm * S) return std::numeric_limits<double>::infinity();
    return lm * sum_a + (L - lm * S - 1e-9) * a_min + lm * e_max;
}

// Smallest t such that stages with sorted per-stage cost tables c_j[1..cap_j] (c_j[l]: the
// stage's cost when it holds l layers; nondecreasing in l) can hold L layers with every c_j(l_j)
// <= t and l_j >= l_min (1, or 0 with options.empty_stages): the larger of max_j c_j[l_min] and
// the L-th smallest entry of all tables merged from index 1. Infinity when the tables hold fewer
// than L entries. `tables[j]` points at c_j (index 0 read only when l_min is 0).
double integer_bottleneck_min(const std::vector<const double*>& tables, const std::vector<int>& caps, int L,
                              std::vector<std::pair<double, std::size_t>>& heap, int l_min = 1);

// integer_bottleneck_min of every suffix of the stages and every layer count at once:
// out[k * (L + 1) + R] for the stages k..S-1 holding R layers (0 <= R <= L; 0 for k = S, R = 0;
// infinity where they cannot hold R). One merge per stage, the merged list kept to its L
// smallest entries: O(S L). The tables must be nondecreasing; `merged` and `scratch` are reused.
void integer_bottleneck_suffixes(const std::vector<const double*>& tables, const std::vector<int>& caps, int L, std::vector<double>& out,
                                 std::vector<double>& merged, std::vector<double>& scratch, int l_min = 1);

// Family A over every suffix of a pipeline, least over the suffix's splits taken jointly (an
// interleaved split in whole chunks, docs/search.md, "The suffix's family A in whole chunks,
// jointly"): out[k * (U + 1) + R] = the least, over u_k..u_{S-1} with 1 <= u_j <= caps[j] and
// sum R, of max over i >= k of sum_{k <= j < i} (tables[j][u_j] + sends[j]) + chain *
// tables[i][u_i]; infinite where no split exists (out[S * (U + 1)] = 0). O(S U max cap).
void joint_family_a_suffixes(const std::vector<const double*>& tables, const std::vector<int>& caps, const std::vector<double>& sends,
                             double chain, int U, std::vector<double>& out);

// The cheapest sum of F+B over every suffix of the stages and every layer count: out[k * (L + 1) + R]
// is at most sum_{j >= k} c_j(l_j) for every split of R layers over the stages k..S-1 with
// l_min <= l_j <= caps[j] (0 for k = S, R = 0; infinity where they cannot hold R). Each table is
// replaced by its greatest convex minorant on [l_min, cap] (no higher than the table, and no
// lower than the line a l through the origin, a = min c(l) / l), whose increments grow, so the
// cheapest split takes the smallest increments of all stages: every stage at l_min, then the
// R - l_min (S - k) smallest increments merged, the list kept to its L smallest (O(S L)). Exact
// for convex tables; a stage's fixed cost per pass (c(l) = alpha + beta l) counts in full, where
// the rate a = alpha / cap + beta leaves most of it out. `merged`, `scratch`, `inc`: reused.
void fill_suffixes(const std::vector<const double*>& tables, const std::vector<int>& caps, int L, int l_min, std::vector<double>& out,
                   std::vector<double>& merged, std::vector<double>& scratch, std::vector<double>& inc);

// Row 0 of fill_suffixes alone (all S stages holding each R), bit for bit: the same increments
// added in the same sorted order, by a merge of the runs of adjacent stages with one table and cap
// (a block's stages) rather than one merge per stage, O(S + G L log G) for G runs rather than
// O(S L). out has L + 1 entries. The configuration-level cuts need only this row.
void fill_row0(const std::vector<const double*>& tables, const std::vector<int>& caps, int L, int l_min, std::vector<double>& out);

// Family W of the path bounds (docs/search.md, "Bounds"): the window cycle of 1F1B stages a..k
// (n = k - a + 1 of them). Micro-batch j's forward runs down the window while the backwards of a
// micro-batch n later run up it: B_k(q) -> B_{k-1}(q) -> ... -> B_a(q) -> F_a(j) -> ... -> F_k(j)
// -> B_k(q + n) with j = w_a + q + 1 (data edges and stage orders), a turn of weight
// W = sum over the window of f + b, plus sf_l for l < k and sb_l for l > a. It exists while
// j <= m - 1. The path is entered by micro-batch 0's forward into stage k (`into`: sum over l < k
// of f_l + sf_l) and stage k's warm-up up to B_k(0); after the last turn it runs stage k's
// remaining nodes in order and the backward path `down` to stage 0 (sum over l < k of
// b_l + sb_{l+1}); w_a, w_k are the warm-up forwards min(S - 1 - j, m). A path length of the DAG
// without stage 0's gradient sync and the optimizer step that follow it. For a run of equal
// stages the turn's mean W/n approaches f + b + sf + sb, a rate no single stage shows.
// `fill`, if given, is another path to B_k(0): micro-batch 0's forward through every stage and its
// backward back to stage k.
inline std::int64_t window_turns(std::int64_t wa, std::int64_t n, std::int64_t m) { return m - 2 - wa >= 0 ? (m - 2 - wa) / n + 1 : 0; }

// The turns and what follows them: from B_k(0) to stage k's last node.
inline double window_turns_path(double f, double b, double W, std::int64_t turns, std::int64_t n, std::int64_t wk, std::int64_t m) {
    const std::int64_t q = n * turns;  // B_k(q) ends the last turn
    const double rest = static_cast<double>(m - 1 - q) * b + static_cast<double>(std::max<std::int64_t>(0, m - 1 - wk - q)) * f;
    return static_cast<double>(turns) * W + rest;
}

// Micro-batch 0's way into B_k(0): its forward to stage k and stage k's warm-up, or `fill`.
inline double window_enter(double into, double f, double b, std::int64_t wk, std::int64_t m, double fill) {
    return std::max(fill, into + static_cast<double>(wk + 1 < m ? wk + 1 : m) * f + b);
}

inline double window_path(double into, double down, double f, double b, double W, std::int64_t wa, std::int64_t wk, std::int64_t n,
                          std::int64_t m, double fill = 0) {
    return window_enter(into, f, b, wk, m, fill) + window_turns_path(f, b, W, window_turns(wa, n, m), n, wk, m) + down;
}

// Family D's turns (docs/search.md, "Bounds"): between micro-batch 0's round trip through every
// stage and the last micro-batch's, stage 0's D = m - 2 - w_0 steady-state micro-batches are
// covered by turns around the window of stages 0..k (weight w1, n = k + 1 micro-batches a turn),
// turns around the window 0..k-1 (w2, n - 1; used when n >= 2) and stage 0's own F, B pairs (c0,
// one micro-batch each). Returns the longest of: D / n turns of 0..k and the rest in pairs; a
// turns of 0..k and b of 0..k-1 with a n + b (n - 1) = D exactly; D pairs.
inline double window_turns_d(std::int64_t D, std::int64_t n, double w1, double w2, double c0) {
    double best = static_cast<double>(D) * c0;
    const std::int64_t a = D / n;
    best = std::max(best, static_cast<double>(a) * w1 + static_cast<double>(D - a * n) * c0);
    if (n >= 2) {
        const std::int64_t q = (D + n - 1) / n, bn = q * n - D, an = q - bn;
        if (an >= 0) best = std::max(best, static_cast<double>(an) * w1 + static_cast<double>(bn) * w2);
    }
    return best;
}

// Family R: the window of stages k-1 and k (f_prev, b_prev and f, b; sf, sb the sends between
// them, wp, wk their warm-ups), the round trip that repeats every two micro-batches in the steady
// state. Stage k-1 runs one micro-batch further ahead than stage k, so each turn pays both
// stages' work and both sends, where families A, C and E pay a send once.
inline double round_trip_path(double into, double down, double f_prev, double b_prev, double f, double b, double sf, double sb, std::int64_t wp,
                              std::int64_t wk, std::int64_t m) {
    return window_path(into, down, f, b, f_prev + b_prev + f + b + sf + sb, wp, wk, 2, m);
}

// Family C of the interleaved 1F1B DAG (docs/search.md, "Bounds of interleaved plans"), for S
// stages of V chunks and m micro-batches (a multiple of S, as Megatron requires): f[v], b[v] the
// times of virtual stage v = c S + s (chunk c of stage s), sf[s] and sb[s] the sends from stage s
// to s + 1 and to s - 1 (across the wrap-around link from stage S-1 to stage 0 they count 0).
// The longest over s of: micro-batch 0's forward through every virtual stage and its backward
// back to chunk V-1 of stage s, s's first backward in Megatron's order; s's passes from there,
// every backward and the forwards after its warm-up and one more; s's last pass, chunk 0's
// backward of micro-batch m-1, and that backward on down chunk 0 of the stages before s. Without
// the syncs and the optimizer. `back`: scratch.
double interleaved_family_c(const std::vector<double>& f, const std::vector<double>& b, const std::vector<double>& sf, const std::vector<double>& sb,
                            int S, int V, std::int64_t m, std::vector<double>& back);

}  // namespace poseidon::detail
