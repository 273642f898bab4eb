// Closed-form minimisations behind two of the search's lower bounds (docs/search.md, "Bounds").
// Internal to core/src; separate from search.cpp so that tests can check them against brute force.
#pragma once

#include <cstddef>
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

}  // namespace poseidon::detail
