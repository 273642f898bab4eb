// Validation against published measurements (docs/validation.md). The tolerances are the targets
// of issue 5: MAPE at most 10 %, no case beyond 20 %, one parameter set per device.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <vector>

#include "validation_cases.hpp"

using namespace poseidon::validation;

namespace {
void check(const Table& t) {
    INFO(to_markdown(t));
    for (const auto& c : t.cases) {
        INFO(c.name << ": measured " << c.measured << " s, predicted " << c.predicted << " s");
        CHECK(std::isfinite(c.predicted));
        CHECK(std::abs(c.rel_error()) <= 0.20);
    }
    CHECK(t.mape() <= 0.10);
}
}  // namespace

TEST_CASE("Megatron-LM SC'21 Table 1: iteration time within tolerance", "[validation]") { check(megatron_sc21_table1()); }

TEST_CASE("Korthikanti et al. 2022 Table 4: per-layer forward/backward within tolerance", "[validation]") { check(korthikanti_table4()); }

TEST_CASE("Megatron-LM SC'21 Table 2 (PTD-P rows): iteration time within tolerance", "[validation]") { check(megatron_sc21_table2()); }

// ---- Ranking fidelity ----

TEST_CASE("average_ranks gives tied values the mean of their ranks", "[validation][ranking]") {
    CHECK(average_ranks({}).empty());
    CHECK(average_ranks({3, 1, 4, 1, 5}) == std::vector<double>{3, 1.5, 4, 1.5, 5});
    CHECK(average_ranks({2, 2, 2}) == std::vector<double>{2, 2, 2});
    CHECK(average_ranks({9, 7, 7, 7, 1}) == std::vector<double>{5, 3, 3, 3, 1});
}

TEST_CASE("spearman matches hand-computed values", "[validation][ranking]") {
    using Catch::Matchers::WithinAbs;
    const std::vector<double> x{1, 2, 3, 4, 5};
    CHECK_THAT(spearman(x, {2, 4, 6, 8, 100}), WithinAbs(1.0, 1e-12));   // monotone, not linear
    CHECK_THAT(spearman(x, {50, 40, 30, 20, 10}), WithinAbs(-1.0, 1e-12));
    // One adjacent swap of five: 1 - 6 * 2 / (5 * 24) = 0.9.
    CHECK_THAT(spearman(x, {1, 3, 2, 4, 5}), WithinAbs(0.9, 1e-12));
    // Ties: ranks (1, 2.5, 2.5, 4) vs (1, 2, 3, 4): 4.5 / sqrt(4.5 * 5) = sqrt(0.9).
    CHECK_THAT(spearman({10, 20, 20, 30}, {1, 2, 3, 4}), WithinAbs(std::sqrt(0.9), 1e-12));
    // Ties: ranks (1, 2, 3, 4) vs (1, 4, 2.5, 2.5): 1.5 / sqrt(5 * 4.5) = 1 / sqrt(10).
    CHECK_THAT(spearman({1, 2, 3, 4}, {1, 3, 2, 2}), WithinAbs(1 / std::sqrt(10.0), 1e-12));
    // Undefined: a constant series, or fewer than two values.
    CHECK(std::isnan(spearman({1, 2, 3}, {5, 5, 5})));
    CHECK(std::isnan(spearman({1}, {1})));
    CHECK_THROWS_AS(spearman({1, 2}, {1, 2, 3}), std::invalid_argument);
}

namespace {
std::size_t best_index(const std::vector<double>& ranks) { return static_cast<std::size_t>(std::min_element(ranks.begin(), ranks.end()) - ranks.begin()); }
std::size_t worst_index(const std::vector<double>& ranks) { return static_cast<std::size_t>(std::max_element(ranks.begin(), ranks.end()) - ranks.begin()); }
}  // namespace

// Measured order (fwd + bwd): SP 19.0 < none 19.6 < selective + SP 20.3 < selective 20.9 < full 27.2 ms.
// The model swaps "none" and "selective + SP" (its backward without SP is 9 % slow: the TP
// all-reduce / weight-gradient overlap is not credited), so rho = 1 - 6 * 2 / 120 = 0.9. The
// assertion is that bound: with five items, rho >= 0.9 allows at most one adjacent swap.
TEST_CASE("Korthikanti et al. 2022 Table 4: recompute/SP variants ranked as measured (rho >= 0.9)", "[validation][ranking]") {
    const Ranking r = korthikanti_table4_ranking();
    INFO(to_markdown(r));
    REQUIRE(r.items.size() == 5);
    CHECK(r.rho() >= 0.9 - 1e-9);
    // The best (sequence parallel) and the worst (full recompute) plans are the measured ones.
    const auto mr = r.measured_ranks(), pr = r.predicted_ranks();
    CHECK(best_index(pr) == best_index(mr));
    CHECK(worst_index(pr) == worst_index(mr));
}

// Per-GPU throughput falls with the GPU count at a fixed global batch (fewer micro-batches per
// pipeline, so a larger bubble share, and a wider data-parallel all-reduce); the 529.6B runs are
// measured faster per GPU than all 174.6B runs. The model reproduces every order exactly. The
// thinnest predicted margin is 529.6B on 2240 GPUs vs 174.6B on 384 GPUs (160.9 vs 160.3
// TFLOP/s, measured 159 vs 153), see docs/validation.md.
TEST_CASE("Megatron-LM SC'21 Table 2 (PTD-P rows): GPU-count sweeps ranked as measured (rho = 1)", "[validation][ranking]") {
    const std::vector<Ranking> rs = megatron_sc21_table2_rankings();
    REQUIRE(rs.size() == 3);
    CHECK(rs[0].items.size() == 3);
    CHECK(rs[1].items.size() == 3);
    CHECK(rs[2].items.size() == 6);
    for (const Ranking& r : rs) {
        INFO(to_markdown(r));
        CHECK(r.rho() == Approx(1.0).margin(1e-12));
    }
}
