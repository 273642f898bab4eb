// The split walk's suffix fill (fill_suffixes): the cheapest F+B that the stages after a prefix
// can have when they hold the layers left. A fill that came out too high would let the families
// C, D, E and W prune the optimum; one too low only costs cuts.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <random>

#include "../../core/src/search_bounds.hpp"
#include "../../core/src/search_space.hpp"
#include "poseidon/json_util.hpp"
#include "poseidon/scenario.hpp"
#include "poseidon/search.hpp"
#include "search_random.hpp"

using poseidon::detail::fill_row0;
using poseidon::detail::fill_suffixes;

namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

// min over splits of R layers on stages k.. (l_min <= l_j <= caps[j]) of sum_j cost(j, l_j)
template <class Cost>
std::vector<double> brute_suffixes(int S, int L, int l_min, const std::vector<int>& caps, Cost cost) {
    const int W = L + 1;
    std::vector<double> best(static_cast<std::size_t>(S + 1) * W, kInf);
    best[static_cast<std::size_t>(S) * W] = 0;
    for (int k = S - 1; k >= 0; --k)
        for (int R = 0; R <= L; ++R)
            for (int l = l_min; l <= std::min(caps[k], R); ++l) {
                const double rest = best[static_cast<std::size_t>(k + 1) * W + (R - l)];
                if (rest < kInf) best[static_cast<std::size_t>(k) * W + R] = std::min(best[static_cast<std::size_t>(k) * W + R], cost(k, l) + rest);
            }
    return best;
}

}  // namespace

TEST_CASE("suffix fill: at most every split's F+B, exact on convex tables, never below the per-layer rates' fill", "[search][bounds]") {
    std::mt19937_64 rng(23);
    auto uni = [&](double lo, double hi) { return std::uniform_real_distribution<double>(lo, hi)(rng); };
    std::vector<double> out, merged, scratch, inc;
    int convex_cases = 0;
    for (int n = 0; n < 2000; ++n) {
        const int S = 1 + static_cast<int>(rng() % 6);
        const int l_min = static_cast<int>(rng() % 2);
        const int kind = n % 3;  // 0: a fixed cost per pass plus a rate, 1: convex, 2: any nondecreasing
        std::vector<std::vector<double>> tabs(S);
        std::vector<const double*> ptrs(S);
        std::vector<int> caps(S);
        int room = 0;
        for (int j = 0; j < S; ++j) {
            caps[j] = l_min + static_cast<int>(rng() % 8);
            room += caps[j];
            tabs[j].assign(static_cast<std::size_t>(caps[j]) + 1, 0);
            const double alpha = uni(0, 0.5), beta = uni(0.1, 2);
            double step = uni(0.05, 1), v = alpha;
            tabs[j][0] = alpha;
            for (int l = 1; l <= caps[j]; ++l) {
                if (kind == 0) v = alpha + beta * l;
                else if (kind == 1) v += step, step += uni(0, 0.5);
                else v += rng() % 4 == 0 ? 0 : uni(0, 2);
                tabs[j][l] = v;
            }
            ptrs[j] = tabs[j].data();
        }
        const int L = static_cast<int>(rng() % (room + 3));
        fill_suffixes(ptrs, caps, L, l_min, out, merged, scratch, inc);
        const auto exact = brute_suffixes(S, L, l_min, caps, [&](int j, int l) { return tabs[j][l]; });
        // the fill before: every stage at its per-layer rate a = min_l c(l) / l
        std::vector<double> a(S, kInf);
        for (int j = 0; j < S; ++j)
            for (int l = 1; l <= caps[j]; ++l) a[j] = std::min(a[j], tabs[j][l] / l);
        const auto linear = brute_suffixes(S, L, l_min, caps, [&](int j, int l) { return l == 0 ? 0.0 : a[j] * l; });
        const bool convex = kind != 2;
        convex_cases += convex;
        INFO("instance " << n << ", S " << S << ", L " << L << ", l_min " << l_min);
        for (std::size_t i = 0; i < exact.size(); ++i) {
            INFO("entry " << i);
            if (exact[i] == kInf) {
                REQUIRE(out[i] == kInf);
                continue;
            }
            REQUIRE(out[i] <= exact[i] * (1 + 1e-12) + 1e-12);
            REQUIRE(out[i] >= linear[i] * (1 - 1e-12) - 1e-12);
            if (convex) REQUIRE(out[i] == Approx(exact[i]).epsilon(1e-12).margin(1e-12));
        }
    }
    CHECK(convex_cases > 1000);
}

TEST_CASE("suffix fill: row 0 alone equals fill_suffixes' row 0 bit for bit, blocks of shared tables included", "[search][bounds]") {
    // the configuration's cut reads fill_row0 and its split walk fill_suffixes: a configuration
    // they judged differently would change the search's counts, and a lower row 0 its cuts
    std::mt19937_64 rng(29);
    auto uni = [&](double lo, double hi) { return std::uniform_real_distribution<double>(lo, hi)(rng); };
    std::vector<double> out, row0, merged, scratch, inc;
    int shared = 0, finite = 0;
    for (int n = 0; n < 3000; ++n) {
        const int S = 1 + static_cast<int>(rng() % 12);
        const int l_min = static_cast<int>(rng() % 2);
        const int maxcap = 1 + static_cast<int>(rng() % 24);
        // a few distinct tables; stages take them in blocks (a block's stages share one table and
        // cap) and sometimes alone
        const int kinds = 1 + static_cast<int>(rng() % 4);
        std::vector<std::vector<double>> tabs(kinds);
        for (auto& t : tabs) {
            t.assign(static_cast<std::size_t>(maxcap) + 1, 0);
            double v = uni(0, 0.5), step = uni(0.05, 1);
            t[0] = v;
            for (int l = 1; l <= maxcap; ++l) {
                if (rng() % 3 == 0) v += rng() % 4 == 0 ? 0 : uni(0, 2);  // not convex
                else v += step, step += uni(-0.1, 0.5);
                t[l] = v;
            }
        }
        std::vector<const double*> ptrs(S);
        std::vector<int> caps(S);
        int room = 0;
        for (int j = 0; j < S;) {
            const int k = static_cast<int>(rng() % kinds), cap = l_min + static_cast<int>(rng() % (maxcap + 1 - l_min));
            const int run = 1 + static_cast<int>(rng() % 4);
            shared += run > 1;
            for (int r = 0; r < run && j < S; ++r, ++j) ptrs[j] = tabs[k].data(), caps[j] = cap, room += cap;
        }
        const int L = static_cast<int>(rng() % (room + 3));
        fill_suffixes(ptrs, caps, L, l_min, out, merged, scratch, inc);
        fill_row0(ptrs, caps, L, l_min, row0);
        INFO("instance " << n << ", S " << S << ", L " << L << ", l_min " << l_min);
        REQUIRE(row0.size() == static_cast<std::size_t>(L) + 1);
        for (int R = 0; R <= L; ++R) {
            INFO("R " << R);
            REQUIRE(std::memcmp(&row0[R], &out[R], sizeof(double)) == 0);
            finite += row0[R] < kInf;
        }
    }
    CHECK(shared > 1000);
    CHECK(finite > 10000);
}

TEST_CASE("suffix fill: a fixed cost per pass counts once per stage, where the per-layer rate drops most of it", "[search][bounds]") {
    // three stages of c(l) = 0.1 + l, at most 4 layers each: any split of R layers costs 0.3 + R;
    // the per-layer rate min_l c(l) / l = 1.025 (at l = 4) gives 1.025 R
    std::vector<double> tab = {0.1, 1.1, 2.1, 3.1, 4.1};
    const std::vector<const double*> ptrs(3, tab.data());
    const std::vector<int> caps(3, 4);
    std::vector<double> out, merged, scratch, inc;
    fill_suffixes(ptrs, caps, 12, 1, out, merged, scratch, inc);
    const int W = 13;
    CHECK(out[0 * W + 6] == Approx(6.3));
    CHECK(out[0 * W + 12] == Approx(12.3));
    CHECK(out[0 * W + 2] == kInf);   // three stages hold at least three layers
    CHECK(out[1 * W + 8] == Approx(8.2));
    CHECK(out[2 * W + 5] == kInf);   // one stage holds at most four
    CHECK(out[3 * W + 0] == 0);
    CHECK(1.025 * 6 < out[0 * W + 6]);
}

TEST_CASE("without the whole-layer suffix tables the pruned search still returns the exhaustive top-K", "[search][differential][fill]") {
    // A configuration over suffix_table_entries_max (976 stages x 10,000 layers, say) reads one
    // row of zeros at stride 0 in place of each table; with the limit at 0 every configuration does.
    using namespace poseidon;
    struct Limit {  // restored however the test ends
        std::int64_t saved = detail::suffix_table_entries_max;
        ~Limit() { detail::suffix_table_entries_max = saved; }
    } restore;
    detail::suffix_table_entries_max = 0;
    int checked = 0, feasible = 0;
    std::int64_t pruned_evals = 0, exhaustive_evals = 0;
    const SearchOptions pruned = search_test::quiet(3), exhaustive = search_test::quiet(3, true);
    for (std::uint64_t seed = 4100; checked < 80; ++seed) {
        std::mt19937_64 rng(seed);
        const Scenario sc = parse_scenario(search_test::random_scenario(rng));
        if (search_space_size(sc).plans > 3e5) continue;
        INFO("seed " << seed << ": " << to_json(sc).dump());
        feasible += !search_test::require_pruned_equals_exhaustive(sc, pruned, exhaustive, pruned_evals, exhaustive_evals).plans.empty();
        ++checked;
    }
    INFO("feasible " << feasible << ", evaluations " << pruned_evals << " / " << exhaustive_evals);
    CHECK(feasible >= 50);
    CHECK(pruned_evals * 2 < exhaustive_evals);
}
