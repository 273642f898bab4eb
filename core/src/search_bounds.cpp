#include "search_bounds.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

#include "poseidon/dag.hpp"

#include "search_costs.hpp"  // kInf

namespace poseidon::detail {

double family_c_cost(const std::vector<JcStage>& st, int L, double t, double slack, int l_min) {
    const double lm = l_min;
    double f = 0, left = static_cast<double>(L) - lm * static_cast<double>(st.size());
    if (left < 0) return kInf;
    for (const auto& x : st) {
        double u = static_cast<double>(x.cap);
        if (x.e > 0) u = std::min(u, t / x.e);
        if (u < lm) return kInf;
        const double take = std::min(left, u - lm);
        f += x.a * (lm + take);
        left -= take;
    }
    return left > slack ? kInf : t + f;
}

// The sweep. Write u_i(t) = min(cap_i, t / e_i); stage i is "free" while t < b_i = e_i cap_i (its
// capacity still grows, at 1/e_i per second). Greedy filling puts R = L - l_min S extra layers on
// the cheapest stages: stages before the marginal stage k are full, k is partly full, the rest
// hold l_min layers (one; none with options.empty_stages). Raising t moves layers from k onto the
// free stages before it, so on a piece where k and the free set are fixed the slope of
// t + fill(t) is
//     D = 1 + sum_{i < k, i free} (a_i - a_k) / e_i = 1 + Q - a_k P,
// with P = sum 1/e_i and Q = sum a_i/e_i over those stages. D only grows with t (free stages get
// capped; k moves to cheaper stages), which is the convexity; the minimum is at the first
// breakpoint from which D >= 0. Breakpoints: a stage before k reaching its cap (at b_i), and k
// moving down when the stages before k alone hold R (their capacity grows at P per second).
double family_c_min(const std::vector<JcStage>& st, int L, std::vector<std::pair<double, std::size_t>>& caps_at, int l_min) {
    const std::size_t S = st.size();
    const double lm = l_min;
    if (S == 0 || static_cast<double>(L) < lm * static_cast<double>(S)) return kInf;
    const double R = static_cast<double>(L) - lm * static_cast<double>(S);
    double t1 = 0, t_hi = 0;
    for (const auto& x : st) {
        if (x.cap < l_min) return kInf;
        if (x.e > 0) {
            t1 = std::max(t1, x.e * lm);
            t_hi = std::max(t_hi, x.e * static_cast<double>(x.cap));
        }
    }
    t_hi = std::max(t_hi, t1);
    auto free_at = [&](std::size_t i, double t) { return st[i].e > 0 && t < st[i].e * static_cast<double>(st[i].cap); };
    auto u_at = [&](std::size_t i, double t) {
        double u = static_cast<double>(st[i].cap);
        if (st[i].e > 0) u = std::min(u, t / st[i].e);
        return u;
    };
    // Capping times of the stages free at t1, in increasing order.
    caps_at.clear();
    for (std::size_t i = 0; i < S; ++i)
        if (free_at(i, t1)) caps_at.push_back({st[i].e * static_cast<double>(st[i].cap), i});
    std::sort(caps_at.begin(), caps_at.end());

    // Smallest feasible t: t >= t1 (l_min layers each) and total extra capacity C(t) >= R.
    double t = t1, C = 0, slope = 0;
    for (std::size_t i = 0; i < S; ++i) {
        C += u_at(i, t) - lm;
        if (free_at(i, t)) slope += 1 / st[i].e;
    }
    std::size_t ci = 0;
    // Same tolerance as family_c_cost: C reaches R exactly at a capping time when the caps hold
    // exactly L layers, and the running sum may land a few ulps under it.
    while (C < R - 1e-9) {
        if (ci == caps_at.size()) return kInf;  // every stage capped: the model does not fit
        const double nb = caps_at[ci].first;
        const double reach = C + slope * (nb - t);
        if (reach >= R - 1e-9) {
            t = std::min(nb, t + (R - C) / slope);
            break;
        }
        C = reach;
        t = nb;
        slope -= 1 / st[caps_at[ci].second].e;
        ++ci;
    }
    t = std::min(std::max(t, t1), t_hi);

    // Marginal stage k at t: the first whose prefix capacity reaches R (the last one at the
    // feasibility boundary, where rounding may leave the total a hair under R).
    std::size_t k = S - 1;
    double pc = 0, before_k = 0;
    for (std::size_t i = 0; i < S; ++i) {
        const double c = u_at(i, t) - lm;
        if (pc + c >= R) {
            k = i;
            break;
        }
        pc += c;
    }
    before_k = 0;
    double P = 0, Q = 0;
    for (std::size_t i = 0; i < k; ++i) {
        before_k += u_at(i, t) - lm;
        if (free_at(i, t)) {
            P += 1 / st[i].e;
            Q += st[i].a / st[i].e;
        }
    }
    // Capping events still ahead; those of stages at or after k never matter again (k only moves
    // down), so they are skipped as they come.
    ci = 0;
    while (ci < caps_at.size() && caps_at[ci].first <= t) ++ci;
    for (int guard = 0; guard < static_cast<int>(4 * S + 4) && t < t_hi; ++guard) {
        if (1 + Q - st[k].a * P >= 0) break;
        while (ci < caps_at.size() && caps_at[ci].second >= k) ++ci;
        const double t_cap = ci < caps_at.size() ? caps_at[ci].first : kInf;
        const double t_k = P > 0 ? t + std::max(0.0, R - before_k) / P : kInf;
        const double tn = std::min(t_cap, t_k);
        if (!std::isfinite(tn)) break;
        before_k += P * (tn - t);
        t = tn;
        if (t_k <= t_cap) {
            if (k == 0) break;
            --k;
            before_k -= u_at(k, t) - lm;
            if (free_at(k, t)) {
                P -= 1 / st[k].e;
                Q -= st[k].a / st[k].e;
            }
        } else {
            const std::size_t i = caps_at[ci].second;
            P -= 1 / st[i].e;
            Q -= st[i].a / st[i].e;
            ++ci;
        }
    }
    // Rounding in the sweep may leave t a hair inside the infeasible side; step out of it.
    double v = family_c_cost(st, L, t, 1e-9, l_min);
    for (int i = 0; i < 4 && !std::isfinite(v); ++i) {
        t = std::nextafter(t + 1e-12 * t, kInf);
        v = family_c_cost(st, L, t, 1e-9, l_min);
    }
    return v;
}

double integer_bottleneck_min(const std::vector<const double*>& tables, const std::vector<int>& caps, int L,
                              std::vector<std::pair<double, std::size_t>>& heap, int l_min) {
    const std::size_t S = tables.size();
    double lo = 0;
    long long total = 0;
    std::size_t width = 1;
    for (std::size_t j = 0; j < S; ++j) {
        if (caps[j] < l_min) return kInf;
        lo = std::max(lo, tables[j][l_min]);
        total += std::min(caps[j], L);
        width = std::max(width, static_cast<std::size_t>(caps[j]) + 1);
    }
    if (total < L) return kInf;
    if (L == 0) return lo;
    // Adjacent stages with one table (the stages of a block, whose caps differ with their
    // warm-up) merge as one run, entry l counting once per stage that holds l layers (mult[l]):
    // the same multiset of entries, a heap of blocks rather than stages.
    struct Run {
        const double* table;
        int cap;
        std::size_t at;  // mults[at + l - 1]: stages counted at entry l (first, stages of cap l)
    };
    thread_local std::vector<Run> runs;
    thread_local std::vector<int> mults;
    runs.clear();
    mults.clear();
    for (std::size_t j = 0; j < S; ++j) {
        if (caps[j] < 1) continue;
        if (runs.empty() || runs.back().table != tables[j]) runs.push_back({tables[j], 0, mults.size()});
        Run& r = runs.back();
        if (caps[j] > r.cap) mults.resize(r.at + static_cast<std::size_t>(caps[j]), 0), r.cap = caps[j];
        ++mults[r.at + static_cast<std::size_t>(caps[j]) - 1];
    }
    for (const Run& r : runs)  // stages of cap l or more
        for (int l = r.cap - 1; l >= 1; --l) mults[r.at + l - 1] += mults[r.at + l];
    // When L entries are at most lo (every stage's cost at its least count is), the answer is lo:
    // the common case of the interleaved bounds' few chunks per stage, found without the merge.
    long long at_lo = 0;
    for (const Run& r : runs) {
        for (int l = 1; l <= r.cap && r.table[l] <= lo; ++l) at_lo += mults[r.at + l - 1];
        if (at_lo >= L) return lo;
    }
    // k-way merge of the sorted tables; an entry is (value, run * width + l), smallest on top
    heap.clear();
    auto greater = [](const std::pair<double, std::size_t>& x, const std::pair<double, std::size_t>& y) { return x > y; };
    for (std::size_t r = 0; r < runs.size(); ++r) heap.push_back({runs[r].table[1], r * width + 1});
    std::make_heap(heap.begin(), heap.end(), greater);
    double x = 0;
    for (long long n = 0; n < L;) {
        std::pop_heap(heap.begin(), heap.end(), greater);
        const auto [v, key] = heap.back();
        heap.pop_back();
        x = v;
        const std::size_t r = key / width, l = key % width;
        n += mults[runs[r].at + l - 1];
        if (static_cast<int>(l) < runs[r].cap) {
            heap.push_back({runs[r].table[l + 1], key + 1});
            std::push_heap(heap.begin(), heap.end(), greater);
        }
    }
    return std::max(lo, x);
}

void integer_bottleneck_suffixes(const std::vector<const double*>& tables, const std::vector<int>& caps, int L, std::vector<double>& out,
                                 std::vector<double>& merged, std::vector<double>& scratch, int l_min) {
    const std::size_t S = tables.size(), W = static_cast<std::size_t>(L) + 1;
    out.assign((S + 1) * W, kInf);
    out[S * W] = 0;
    merged.clear();
    double lo = 0;
    for (std::size_t k = S; k-- > 0;) {
        const int n = std::min(caps[k], L);
        if (n < l_min) return;  // this stage cannot hold its least: no suffix through it can be split
        lo = std::max(lo, tables[k][l_min]);
        scratch.resize(merged.size() + static_cast<std::size_t>(n));
        std::merge(merged.begin(), merged.end(), tables[k] + 1, tables[k] + 1 + n, scratch.begin());
        scratch.resize(std::min(scratch.size(), W - 1));
        merged.swap(scratch);
        double* row = &out[k * W];
        const std::size_t least = static_cast<std::size_t>(l_min) * (S - k);  // every stage holds l_min layers
        if (least == 0) row[0] = lo;
        for (std::size_t R = std::max<std::size_t>(least, 1); R <= merged.size(); ++R) row[R] = std::max(lo, merged[R - 1]);
    }
}

// Increments of the greatest convex minorant of c on [lo, hi]: the lower hull of the points
// (l, c[l]) (a monotone chain), each hull edge's slope once per layer it spans.
static void convex_increments(const double* c, int lo, int hi, std::vector<int>& hull, std::vector<double>& inc) {
    hull.clear();
    for (int x = lo; x <= hi; ++x) {
        // drop the last point while it lies on or above the chord from the one before it to x
        while (hull.size() >= 2) {
            const int a = hull[hull.size() - 2], b = hull.back();
            if ((c[b] - c[a]) * (x - a) < (c[x] - c[a]) * (b - a)) break;
            hull.pop_back();
        }
        hull.push_back(x);
    }
    inc.clear();
    for (std::size_t i = 1; i < hull.size(); ++i) {
        const int p = hull[i - 1], q = hull[i];
        const double slope = (c[q] - c[p]) / (q - p);
        for (int x = p; x < q; ++x) inc.push_back(slope);
    }
}

// convex_increments, sorted: the hull's slopes grow up to rounding; sorted, a merge of them stays a
// lower bound either way
static void sorted_increments(const double* c, int lo, int hi, std::vector<int>& hull, std::vector<double>& inc) {
    convex_increments(c, lo, hi, hull, inc);
    if (!std::is_sorted(inc.begin(), inc.end())) std::sort(inc.begin(), inc.end());
}

void fill_suffixes(const std::vector<const double*>& tables, const std::vector<int>& caps, int L, int l_min, std::vector<double>& out,
                   std::vector<double>& merged, std::vector<double>& scratch, std::vector<double>& inc) {
    const std::size_t S = tables.size(), W = static_cast<std::size_t>(L) + 1;
    out.assign((S + 1) * W, kInf);
    out[S * W] = 0;
    merged.clear();
    thread_local std::vector<int> hull;
    double base = 0;  // every stage of the suffix at l_min
    const double* inc_of = nullptr;  // the table and cap `inc` holds (a block's stages share both)
    int inc_cap = -1;
    for (std::size_t k = S; k-- > 0;) {
        const int n = std::min(caps[k], L);
        if (n < l_min) return;  // this stage cannot hold its least: no suffix through it can be split
        base += tables[k][l_min];
        if (tables[k] != inc_of || n != inc_cap) {
            sorted_increments(tables[k], l_min, n, hull, inc);
            inc_of = tables[k], inc_cap = n;
        }
        scratch.resize(merged.size() + inc.size());
        std::merge(merged.begin(), merged.end(), inc.begin(), inc.end(), scratch.begin());
        scratch.resize(std::min(scratch.size(), W - 1));
        merged.swap(scratch);
        const std::size_t least = static_cast<std::size_t>(l_min) * (S - k);
        if (least > static_cast<std::size_t>(L)) continue;
        double* row = &out[k * W];
        double v = base;
        row[least] = v;
        for (std::size_t i = 0; i < merged.size() && least + i + 1 < W; ++i) row[least + i + 1] = v += merged[i];
    }
}

void fill_row0(const std::vector<const double*>& tables, const std::vector<int>& caps, int L, int l_min, std::vector<double>& out) {
    const std::size_t S = tables.size(), W = static_cast<std::size_t>(L) + 1;
    out.assign(W, kInf);
    struct Run {
        const double* table;
        int cap, count;
        std::size_t begin, end;  // its increments in incs
    };
    thread_local std::vector<Run> runs;
    thread_local std::vector<double> incs, inc;
    thread_local std::vector<int> hull;
    runs.clear();
    incs.clear();
    double base = 0;  // summed from the last stage, as fill_suffixes does
    for (std::size_t k = S; k-- > 0;) {
        const int n = std::min(caps[k], L);
        if (n < l_min) return;
        base += tables[k][l_min];
        if (!runs.empty() && runs.back().table == tables[k] && runs.back().cap == n) {
            ++runs.back().count;
            continue;
        }
        sorted_increments(tables[k], l_min, n, hull, inc);
        runs.push_back({tables[k], n, 1, incs.size(), incs.size() + inc.size()});
        incs.insert(incs.end(), inc.begin(), inc.end());
    }
    const std::size_t least = static_cast<std::size_t>(l_min) * S;
    if (least > static_cast<std::size_t>(L)) return;
    double v = base;
    out[least] = v;
    // the smallest head first (a heap of runs); equal values are equal summands, so the order
    // among runs is moot
    thread_local std::vector<std::pair<double, std::size_t>> heap;
    heap.clear();
    for (std::size_t r = 0; r < runs.size(); ++r)
        if (runs[r].begin < runs[r].end) heap.push_back({incs[runs[r].begin], r});
    auto greater = [](const std::pair<double, std::size_t>& x, const std::pair<double, std::size_t>& y) { return x.first > y.first; };
    std::make_heap(heap.begin(), heap.end(), greater);
    for (std::size_t at = least + 1; at < W && !heap.empty();) {
        std::pop_heap(heap.begin(), heap.end(), greater);
        const auto [x, r] = heap.back();
        Run& run = runs[r];
        for (int c = 0; c < run.count && at < W; ++c) out[at++] = v += x;
        if (++run.begin < run.end) {
            heap.back().first = incs[run.begin];
            std::push_heap(heap.begin(), heap.end(), greater);
        } else {
            heap.pop_back();
        }
    }
}

void joint_family_a_suffixes(const std::vector<const double*>& tables, const std::vector<int>& caps, const std::vector<double>& sends,
                             double chain, int U, std::vector<double>& out) {
    const int S = static_cast<int>(tables.size());
    const std::size_t W = static_cast<std::size_t>(U) + 1;
    out.assign(static_cast<std::size_t>(S + 1) * W, kInf);
    out[static_cast<std::size_t>(S) * W] = 0;
    for (int k = S - 1; k >= 0; --k) {
        const double* t = tables[static_cast<std::size_t>(k)];
        const double* next = &out[static_cast<std::size_t>(k + 1) * W];
        double* row = &out[static_cast<std::size_t>(k) * W];
        const double send = k + 1 < S ? sends[static_cast<std::size_t>(k)] : 0.0;
        for (int R = 1; R <= U; ++R) {
            double best = kInf;
            // stage k holds u; the way to every later stage passes it (and its send)
            for (int u = 1; u <= std::min(caps[static_cast<std::size_t>(k)], R); ++u)
                if (next[R - u] < kInf) best = std::min(best, std::max(chain * t[u], t[u] + send + next[R - u]));
            row[R] = best;
        }
    }
}

double interleaved_family_c(const std::vector<double>& f, const std::vector<double>& b, const std::vector<double>& sf, const std::vector<double>& sb,
                            int S, int V, std::int64_t m, std::vector<double>& back) {
    const std::int64_t PV = static_cast<std::int64_t>(S) * V, total = m * V;
    double fill = 0;  // micro-batch 0's forward through every virtual stage
    for (std::int64_t v = 0; v < PV; ++v) fill += f[v] + (v % S < S - 1 ? sf[v % S] : 0.0);
    back.assign(PV, 0);  // back[v]: from the start of B(PV-1, 0) to the start of B(v, 0)
    for (std::int64_t v = PV - 2; v >= 0; --v) back[v] = back[v + 1] + b[v + 1] + ((v + 1) % S != 0 ? sb[(v + 1) % S] : 0.0);
    double best = 0, down = 0;  // down: chunk 0's backward from stage s to stage 0
    for (int s = 0; s < S; ++s) {
        if (s > 0) down += b[s - 1] + sb[s];
        // the forwards after s's first backward: all but its warm-up and the one before that
        // backward, i.e. all but its passes in flight (interleaved_in_flight: the warm-up and one,
        // or every pass when m = S)
        const std::int64_t later = total - interleaved_in_flight(s, S, V, m);
        double bsum = 0, fmin = std::numeric_limits<double>::infinity();
        for (int c = 0; c < V; ++c) {
            bsum += b[static_cast<std::size_t>(c) * S + s];
            fmin = std::min(fmin, f[static_cast<std::size_t>(c) * S + s]);
        }
        const double own = static_cast<double>(m) * bsum + static_cast<double>(later) * fmin;
        best = std::max(best, fill + back[static_cast<std::size_t>(V - 1) * S + s] + own + down);
    }
    return best;
}

}  // namespace poseidon::detail
