// The layout walk's suffix rates per set of groups (suffix_rates, MbsCtx::suf_a): the most LP
// coverage rate a suffix of blocks of the unused groups can reach. A rate that came out too low
// would let the layout bound prune the optimum; one too high only costs cuts.
#include <catch2/catch.hpp>

#include <algorithm>
#include <functional>
#include <numeric>
#include <random>
#include <vector>

#include "../../core/src/search_walk.hpp"

using poseidon::detail::lp_steps;
using poseidon::detail::MbsCtx;
using poseidon::detail::OptInfo;
using poseidon::detail::suffix_rates;

namespace {

// The most rate over every sequence of distinct groups of U (pipeline order), one option each,
// the LP recursion taken from the last block to the first.
double brute_suffix(const MbsCtx& c, std::size_t U, const std::function<double(const OptInfo&, double)>& step) {
    std::vector<int> gs;
    for (int g = 0; g < static_cast<int>(c.opts.size()); ++g)
        if ((U >> g) & 1) gs.push_back(g);
    double best = 0;
    for (std::size_t sub = 0; sub < (std::size_t{1} << gs.size()); ++sub) {
        std::vector<int> seq;
        for (std::size_t i = 0; i < gs.size(); ++i)
            if ((sub >> i) & 1) seq.push_back(gs[i]);
        std::sort(seq.begin(), seq.end());
        do {
            // every choice of one option per group of the sequence
            std::vector<std::size_t> pick(seq.size(), 0);
            for (;;) {
                double v = 0;
                bool empty = false;
                for (std::size_t i = seq.size(); i-- > 0;) {
                    const auto& os = c.opts[seq[i]];
                    if (os.empty()) {
                        empty = true;
                        break;
                    }
                    v = step(os[pick[i]], v);
                }
                if (!empty) best = std::max(best, v);
                std::size_t i = 0;
                while (i < seq.size() && ++pick[i] >= std::max<std::size_t>(1, c.opts[seq[i]].size())) pick[i++] = 0;
                if (i == seq.size()) break;
            }
        } while (std::next_permutation(seq.begin(), seq.end()));
    }
    return best;
}

}  // namespace

TEST_CASE("the suffix rates per set of groups are the best ordered suffix of one option per group", "[search][bounds][suffix]") {
    std::mt19937_64 rng(2612);
    std::uniform_real_distribution<double> a_of(0.2, 3.0), keep_of(0.3, 0.99);
    std::uniform_int_distribution<int> groups(1, 4), options(0, 3);
    const auto step = [](const OptInfo& o, double v) { return lp_steps(v, o.best.a, o.decay_a); };
    for (int trial = 0; trial < 300; ++trial) {
        MbsCtx c;
        c.opts.resize(groups(rng));
        for (auto& os : c.opts) {
            os.resize(options(rng));  // a group may have no option at this size
            for (auto& o : os) {
                o.best.a = a_of(rng);
                o.decay_a = keep_of(rng);
            }
        }
        const std::vector<double> dp = suffix_rates(c, step);
        REQUIRE(dp.size() == std::size_t{1} << c.opts.size());
        CHECK(dp[0] == 0);
        for (std::size_t U = 1; U < dp.size(); ++U) {
            INFO("trial " << trial << ", groups " << U);
            CHECK(dp[U] == Approx(brute_suffix(c, U, step)).epsilon(1e-12));
        }
    }
    // by hand, m = 2 (keep 1/2 a stage): options a = 1 over 2 stages and a = 0.5 over 1 stage.
    // One group: (1 - 1/4) / 1 = 0.75 or (1 - 1/2) / 0.5 = 1. Two such groups: after a suffix at
    // 1, the a = 0.5 option gives 2 - (2 - 1) / 2 = 1.5; the a = 1 option leaves 1 (its fixed point).
    MbsCtx c;
    c.opts.resize(2);
    for (auto& os : c.opts) {
        os.resize(2);
        os[0].best.a = 1;
        os[0].decay_a = 0.25;
        os[1].best.a = 0.5;
        os[1].decay_a = 0.5;
    }
    const std::vector<double> dp = suffix_rates(c, step);
    CHECK(dp[1] == Approx(1.0));
    CHECK(dp[2] == Approx(1.0));
    CHECK(dp[3] == Approx(1.5));
    // more groups than kSuffixDpGroups: no table (the per-group summaries alone)
    MbsCtx wide;
    wide.opts.resize(poseidon::detail::kSuffixDpGroups + 1);
    CHECK(suffix_rates(wide, step).empty());
}
