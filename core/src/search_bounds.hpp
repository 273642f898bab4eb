// Closed-form minimisations behind two of the search's lower bounds (docs/search.md, "Bounds").
// Internal to core/src; separate from search.cpp so that tests can check them against brute force.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace poseidon::detail {

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

// Family R of the path bounds (docs/search.md, "Bounds"): the round trip of 1F1B stages k-1 and k,
// which repeats every two micro-batches in the steady state. `into`: the path into stage k's first
// forward (sum over l < k of f_l + sf_l); `down`: the backward path from stage k to stage 0 (sum
// over l < k of b_l + sb_{l+1}); f_prev, b_prev and f, b: the two stages' forward and backward; sf,
// sb: the sends between them; wp, wk: their warm-up forwards (min(S - 1 - j, m)). A path length of
// the DAG without stage 0's gradient sync and the optimizer step that follow it.
inline double round_trip_path(double into, double down, double f_prev, double b_prev, double f, double b, double sf, double sb, std::int64_t wp,
                              std::int64_t wk, std::int64_t m) {
    // Stage k-1 runs one micro-batch further ahead than stage k (wp = wk + 1), so the path
    // B_k(i) -> B_{k-1}(i) -> F_{k-1}(i + wp + 1) -> F_k(i + wp + 1) -> B_k(i + 2) (a data edge, the
    // stage order, a data edge, the stage order) exists while i + wp + 1 <= m - 1. It is entered by
    // micro-batch 0's forward into stage k and stage k's warm-up up to B_k(0), and left down the
    // backward sends to stage 0, whose remaining backwards lead to its sync.
    const double enter = into + static_cast<double>(wk + 1 < m ? wk + 1 : m) * f + b;
    const std::int64_t turns = wp == wk + 1 && m - 2 - wp >= 0 ? (m - 2 - wp) / 2 + 1 : 0;
    return enter + static_cast<double>(turns) * (sb + b_prev + f_prev + sf + f + b) + down;
}

}  // namespace poseidon::detail
