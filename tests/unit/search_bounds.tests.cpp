// The closed-form bound minimisations of the search against brute force on seeded random
// instances: a bound that came out too high would let the search prune the optimum. The path
// families R, W and D against the DAG are in search_window_bounds.tests.cpp.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <limits>
#include <random>

#include "../../core/src/search_bounds.hpp"
#include "poseidon/dag.hpp"

using poseidon::detail::family_c_cost;
using poseidon::detail::family_c_floor;
using poseidon::detail::family_c_min;
using poseidon::detail::integer_bottleneck_min;
using poseidon::detail::JcStage;

namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

// family_c_cost with a 1e-13-layer tolerance instead of 1e-9: a brute force on the loose one could
// dip below the exact minimum at the feasibility boundary by up to 1e-9 e_i.
double strict_cost(const std::vector<JcStage>& st, int L, double t) { return family_c_cost(st, L, t, 1e-13); }

// Minimum of a convex piecewise-linear function on [lo, hi]: golden-section search to the last
// bit, then the smallest value at the candidate breakpoints near it.
double brute_family_c(const std::vector<JcStage>& st, int L) {
    double lo = 0, hi = 0;
    for (const auto& x : st)
        if (x.e > 0) {
            lo = std::max(lo, x.e);
            hi = std::max(hi, x.e * static_cast<double>(x.cap));
        }
    hi = std::max(hi, lo);
    // dense scan: feasible region is [T0, inf); the function is convex there
    double best = kInf;
    const int N = 20000;
    for (int i = 0; i <= N; ++i) best = std::min(best, strict_cost(st, L, lo + (hi - lo) * i / N));
    for (const auto& x : st)
        if (x.e > 0) best = std::min(best, strict_cost(st, L, x.e * static_cast<double>(x.cap)));
    // refine with golden section on the feasible part
    double a = lo, b = hi;
    if (!std::isfinite(strict_cost(st, L, a))) {
        if (!std::isfinite(strict_cost(st, L, b))) return kInf;
        for (int it = 0; it < 200; ++it) {
            const double mid = 0.5 * (a + b);
            (std::isfinite(strict_cost(st, L, mid)) ? b : a) = mid;
        }
        a = b;
        best = std::min(best, strict_cost(st, L, a));
        b = hi;
    }
    for (int it = 0; it < 300; ++it) {
        const double x1 = a + (b - a) * 0.381966, x2 = a + (b - a) * 0.618034;
        const double f1 = strict_cost(st, L, x1), f2 = strict_cost(st, L, x2);
        best = std::min({best, f1, f2});
        if (f1 <= f2) b = x2;
        else a = x1;
    }
    return std::min({best, strict_cost(st, L, a), strict_cost(st, L, b)});
}

}  // namespace

TEST_CASE("family-C bound: the breakpoint sweep finds the exact minimum of t + fill(t)", "[search][bounds]") {
    std::mt19937_64 rng(20261130);
    std::vector<std::pair<double, std::size_t>> scratch;
    int feasible = 0;
    for (int n = 0; n < 3000; ++n) {
        const int S = 1 + static_cast<int>(rng() % (n % 5 == 0 ? 40 : 12));
        int L = S + static_cast<int>(rng() % 40);
        std::vector<JcStage> st(S);
        std::uniform_real_distribution<double> ua(0.1, 3.0), ue(0.5, 20.0);
        long long total = 0;
        for (auto& x : st) {
            x.a = rng() % 4 == 0 ? 1.0 : ua(rng);  // ties in a
            x.e = rng() % 10 == 0 ? 0.0 : rng() % 3 == 0 ? static_cast<double>(1 + rng() % 3) : ue(rng);  // e = 0: m = 1; equal e
            x.cap = 1 + static_cast<long long>(rng() % 20);
            total += x.cap;
        }
        if (n % 7 == 0) L = static_cast<int>(total);  // the caps hold exactly the model
        std::stable_sort(st.begin(), st.end(), [](const JcStage& x, const JcStage& y) { return x.a < y.a; });
        const double exact = family_c_min(st, L, scratch);
        const double brute = brute_family_c(st, L);
        INFO("instance " << n << ", S " << S << ", L " << L);
        if (!std::isfinite(brute)) {
            CHECK(!std::isfinite(exact));
            continue;
        }
        ++feasible;
        // never above the minimum (that would make the bound unsafe), and attained
        CHECK(exact <= brute * (1 + 1e-12));
        CHECK(exact >= brute * (1 - 1e-9));
    }
    CHECK(feasible > 1000);
}

TEST_CASE("family-C floor: never above the exact minimum, and equal to it where no stage takes more than its least", "[search][bounds]") {
    std::mt19937_64 rng(20261207);
    std::vector<std::pair<double, std::size_t>> scratch;
    int compared = 0, tight = 0;
    for (int n = 0; n < 3000; ++n) {
        const int S = 1 + static_cast<int>(rng() % (n % 5 == 0 ? 40 : 12));
        const int l_min = n % 4 == 0 ? 0 : 1;
        int L = static_cast<int>(l_min * S + rng() % 40);
        if (n % 9 == 0) L = l_min * S;  // every stage at its least: the floor is the minimum
        std::vector<JcStage> st(S);
        std::uniform_real_distribution<double> ua(0.1, 3.0), ue(0.5, 20.0);
        double sum_a = 0, a_min = kInf, e_max = 0;
        for (auto& x : st) {
            x.a = rng() % 4 == 0 ? 1.0 : ua(rng);
            x.e = rng() % 10 == 0 ? 0.0 : ue(rng);
            x.cap = 1 + static_cast<long long>(rng() % 20);
            sum_a += x.a;
            a_min = std::min(a_min, x.a);
            e_max = std::max(e_max, x.e);
        }
        std::stable_sort(st.begin(), st.end(), [](const JcStage& x, const JcStage& y) { return x.a < y.a; });
        const double exact = family_c_min(st, L, scratch, l_min);
        const double floor = family_c_floor(sum_a, a_min, e_max, S, L, l_min);
        INFO("instance " << n << ", S " << S << ", L " << L << ", l_min " << l_min);
        REQUIRE(std::isfinite(floor));  // the caps are left out: finite even where no split fits
        if (!std::isfinite(exact)) continue;
        ++compared;
        CHECK(floor <= exact);
        if (L == l_min * S && l_min == 1) {
            CHECK(floor == Approx(exact).epsilon(1e-9));
            ++tight;
        }
    }
    CHECK(compared > 1000);
    CHECK(tight > 100);
    // by hand: stages (a, e, cap) = (1, 1, 10), (3, 2, 10), L = 6, l_min 1: the floor is
    // 1 + 3 + 4 x 1 + 2 = 10; family C is 13 (t = 5: 5 layers on stage 0, 1 on stage 1; the floor
    // takes t = 2, where stage 0 could hold only 2)
    CHECK(family_c_floor(4, 1, 2, 2, 6, 1) == Approx(10 - 1e-9));
    CHECK(family_c_min({{1, 1, 10}, {3, 2, 10}}, 6, scratch) == Approx(13).epsilon(1e-12));
    CHECK(!std::isfinite(family_c_floor(4, 1, 2, 2, 1, 1)));  // fewer layers than stages
}

TEST_CASE("family-C bound: hand-computed two-stage case", "[search][bounds]") {
    // stage 0: a 1, e 1, cap 10; stage 1: a 3, e 1, cap 10; L = 6, so 4 layers beyond one each.
    // Feasible from t = 3 (capacity (t - 1) + (t - 1) >= 4). For t in [3, 5] the cheap stage takes
    // t - 1 extra layers and stage 1 the other 5 - t: cost = t + t + 3 (6 - t) = 18 - t. From t = 5
    // on stage 0 holds all 4 extra: cost = t + 5 + 3. Minimum 13 at t = 5 (split 5 / 1).
    std::vector<JcStage> st = {{1, 1, 10}, {3, 1, 10}};
    std::vector<std::pair<double, std::size_t>> scratch;
    CHECK(family_c_min(st, 6, scratch) == Approx(13).epsilon(1e-12));
    // no extra layers: t = max e = 1, cost 1 + 1 + 3
    CHECK(family_c_min(st, 2, scratch) == Approx(5).epsilon(1e-12));
    // a flat piece: with e_0 = 2 the slope is 1 + (1 - 3) / 2 = 0 on [4, 10], cost 18 throughout
    std::vector<JcStage> flat = {{1, 2, 10}, {3, 1, 10}};
    CHECK(family_c_min(flat, 6, scratch) == Approx(18).epsilon(1e-12));
    // more layers than the caps hold
    CHECK(!std::isfinite(family_c_min(st, 21, scratch)));
}

namespace {

// S nondecreasing cost tables c_j[1..cap_j] (index 0 unused), caps 1..max_cap; one step in
// `equal_one_in` repeats the entry before it (equal entries too).
struct RandomTables {
    std::vector<std::vector<double>> tabs;
    std::vector<const double*> ptrs;
    std::vector<int> caps;
    RandomTables(std::mt19937_64& rng, int S, int max_cap, int equal_one_in) : tabs(S), ptrs(S), caps(S) {
        for (int j = 0; j < S; ++j) {
            caps[j] = 1 + static_cast<int>(rng() % max_cap);
            tabs[j].assign(static_cast<std::size_t>(caps[j]) + 1, 0);
            double v = std::uniform_real_distribution<double>(0.1, 5)(rng);
            for (int l = 1; l <= caps[j]; ++l) {
                tabs[j][l] = v;
                v += rng() % equal_one_in == 0 ? 0 : std::uniform_real_distribution<double>(0.01, 2)(rng);
            }
            ptrs[j] = tabs[j].data();
        }
    }
};

}  // namespace

TEST_CASE("integer bottleneck: the merged L-th smallest equals the bisection over t", "[search][bounds]") {
    std::mt19937_64 rng(7);
    std::vector<std::pair<double, std::size_t>> heap;
    for (int n = 0; n < 2000; ++n) {
        const int S = 1 + static_cast<int>(rng() % 10);
        const int L = S + static_cast<int>(rng() % 60);
        const RandomTables rt(rng, S, 25, 5);
        const auto& tabs = rt.tabs;
        const auto& ptrs = rt.ptrs;
        const auto& caps = rt.caps;
        // brute force: the smallest candidate value t (some table entry) with every stage >= 1
        // layer at or below t and at least L layers in total
        double brute = kInf;
        for (int j = 0; j < S; ++j)
            for (int l = 1; l <= caps[j]; ++l) {
                const double t = tabs[j][l];
                long long cnt = 0;
                bool ok = true;
                for (int i = 0; i < S; ++i) {
                    const long long c = std::upper_bound(tabs[i].begin() + 1, tabs[i].end(), t) - (tabs[i].begin() + 1);
                    ok = ok && c >= 1;
                    cnt += c;
                }
                if (ok && cnt >= L) brute = std::min(brute, t);
            }
        INFO("instance " << n);
        CHECK(integer_bottleneck_min(ptrs, caps, L, heap) == brute);
    }
}

TEST_CASE("integer bottleneck: a block's stages that share one table merge as the same stages with copies of it", "[search][bounds]") {
    // integer_bottleneck_min merges adjacent stages with one table as one run, whatever their
    // caps (a block's stages hold fewer layers the deeper their warm-up); the result must be
    // that of the same stages each with its own copy of the table
    std::mt19937_64 rng(8);
    std::vector<std::pair<double, std::size_t>> heap;
    int unequal = 0;
    for (int n = 0; n < 2000; ++n) {
        const bool own_caps = n % 2 == 1;
        const int blocks = 1 + static_cast<int>(rng() % 5);
        const RandomTables rt(rng, blocks, 20, 5);
        std::vector<const double*> shared;
        std::vector<int> caps;
        std::vector<std::vector<double>> copies;
        for (int b = 0; b < blocks; ++b)
            for (int r = 1 + static_cast<int>(rng() % 6); r > 0; --r) {
                shared.push_back(rt.ptrs[b]);
                const int cap = own_caps ? 1 + static_cast<int>(rng() % rt.caps[b]) : rt.caps[b];
                unequal += cap != rt.caps[b];
                caps.push_back(cap);
                copies.push_back(rt.tabs[b]);
            }
        std::vector<const double*> own;
        for (const auto& c : copies) own.push_back(c.data());
        const int L = static_cast<int>(shared.size()) + static_cast<int>(rng() % 60);
        INFO("instance " << n);
        CHECK(integer_bottleneck_min(shared, caps, L, heap) == integer_bottleneck_min(own, caps, L, heap));
    }
    CHECK(unequal > 1000);
}

TEST_CASE("integer bottleneck of every suffix: one merge per stage equals the merge of each suffix", "[search][bounds]") {
    std::mt19937_64 rng(11);
    std::vector<std::pair<double, std::size_t>> heap;
    std::vector<double> out, merged, scratch;
    for (int n = 0; n < 500; ++n) {
        const int S = 1 + static_cast<int>(rng() % 12);
        const int L = S + static_cast<int>(rng() % 40);
        const RandomTables rt(rng, S, 20, 4);
        const auto& ptrs = rt.ptrs;
        const auto& caps = rt.caps;
        poseidon::detail::integer_bottleneck_suffixes(ptrs, caps, L, out, merged, scratch);
        INFO("instance " << n);
        CHECK(out[static_cast<std::size_t>(S) * (L + 1)] == 0);
        for (int k = 0; k < S; ++k) {
            const std::vector<const double*> p(ptrs.begin() + k, ptrs.end());
            const std::vector<int> c(caps.begin() + k, caps.end());
            long long room = 0;
            for (int x : c) room += x;
            for (int R = 0; R <= L; ++R) {
                const double got = out[static_cast<std::size_t>(k) * (L + 1) + R];
                // fewer layers than stages, or more than they hold: no split
                const double want = R < S - k || R > room ? kInf : integer_bottleneck_min(p, c, R, heap);
                INFO("suffix " << k << ", " << R << " layers");
                CHECK(got == want);
            }
        }
    }
}

namespace {

// Family A through any stage of the suffix k.. of one split, as the split walk adds it up.
double family_a_of_split(const std::vector<std::vector<double>>& t, const std::vector<double>& sends, double chain, int k,
                         const std::vector<int>& u) {
    double way = 0, worst = 0;
    for (std::size_t i = static_cast<std::size_t>(k); i < t.size(); ++i) {
        worst = std::max(worst, way + chain * t[i][static_cast<std::size_t>(u[i])]);
        way += t[i][static_cast<std::size_t>(u[i])] + sends[i];
    }
    return worst;
}

// The least of family_a_of_split over every split of R chunks over stages k.., each 1..cap.
double brute_joint(const std::vector<std::vector<double>>& t, const std::vector<int>& caps, const std::vector<double>& sends, double chain,
                   int k, int R) {
    const int S = static_cast<int>(t.size());
    std::vector<int> u(t.size(), 0);
    double best = kInf;
    auto rec = [&](auto&& self, int j, int left) -> void {
        if (j == S) {
            if (left == 0) best = std::min(best, family_a_of_split(t, sends, chain, k, u));
            return;
        }
        for (int x = 1; x <= std::min(caps[static_cast<std::size_t>(j)], left); ++x) {
            u[static_cast<std::size_t>(j)] = x;
            self(self, j + 1, left - x);
        }
    };
    rec(rec, k, R);
    return k == S && R == 0 ? 0 : best;
}

}  // namespace

TEST_CASE("joint family A of every suffix: the recursion equals the least over every split, tables of any shape", "[search][bounds]") {
    std::mt19937_64 rng(23);
    std::vector<double> out;
    int compared = 0;
    for (int n = 0; n < 400; ++n) {
        const int S = 1 + static_cast<int>(rng() % 5);
        const int U = S + static_cast<int>(rng() % 9);
        std::vector<std::vector<double>> t(static_cast<std::size_t>(S));
        std::vector<const double*> ptrs(static_cast<std::size_t>(S));
        std::vector<int> caps(static_cast<std::size_t>(S));
        std::vector<double> sends(static_cast<std::size_t>(S));
        for (int j = 0; j < S; ++j) {
            const auto sj = static_cast<std::size_t>(j);
            caps[sj] = 1 + static_cast<int>(rng() % 5);
            // a chunk's time grows with its layers, except where a table is not monotone (tiles)
            t[sj].assign(static_cast<std::size_t>(caps[sj]) + 1, 0);
            double v = std::uniform_real_distribution<double>(0.1, 3)(rng);
            for (int l = 1; l <= caps[sj]; ++l) {
                t[sj][static_cast<std::size_t>(l)] = rng() % 5 == 0 ? std::uniform_real_distribution<double>(0.05, 6)(rng) : v;
                v += std::uniform_real_distribution<double>(0, 2)(rng);
            }
            ptrs[sj] = t[sj].data();
            sends[sj] = rng() % 3 == 0 ? 0.0 : std::uniform_real_distribution<double>(0, 0.5)(rng);
        }
        const double chain = static_cast<double>(1 + rng() % 64);
        poseidon::detail::joint_family_a_suffixes(ptrs, caps, sends, chain, U, out);
        INFO("instance " << n);
        for (int k = 0; k <= S; ++k)
            for (int R = 0; R <= U; ++R) {
                INFO("suffix " << k << ", " << R << " chunks");
                const double want = brute_joint(t, caps, sends, chain, k, R);
                const double got = out[static_cast<std::size_t>(k) * (U + 1) + R];
                if (std::isinf(want)) CHECK(std::isinf(got));
                else CHECK(got == Approx(want).epsilon(1e-12));
                ++compared;
            }
    }
    CHECK(compared > 10000);
}
