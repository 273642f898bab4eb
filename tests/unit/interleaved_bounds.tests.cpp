// Family C of the interleaved DAG (search_bounds.hpp, interleaved_family_c; docs/search.md,
// "Bounds of interleaved plans"): a path of the interleaved 1F1B DAG, so never above its longest
// path, and on equal stages with free communication exactly Narayanan et al.'s closed form. A bound
// above the DAG would let the search prune an interleaved optimum.
#include <catch2/catch.hpp>

#include <algorithm>
#include <random>
#include <vector>

#include "../../core/src/search_bounds.hpp"
#include "poseidon/dag.hpp"

using namespace poseidon;
using poseidon::detail::interleaved_family_c;

namespace {

struct Pipeline {
    int p = 2, V = 2;
    std::int64_t m = 2;
    std::vector<StageTimes> chunks, stages;
    std::vector<double> f, b, sf, sb;  // the bound's inputs
};

// Random chunk times; the sends between neighbouring stages are one value per link, as the
// search's plans have them; across the wrap-around link from stage p-1 to stage 0 any value.
Pipeline random_interleaved(std::mt19937_64& rng) {
    auto uni = [&](double lo, double hi) { return std::uniform_real_distribution<double>(lo, hi)(rng); };
    Pipeline x;
    x.p = 2 + static_cast<int>(rng() % 6);
    x.V = 2 + static_cast<int>(rng() % 3);
    x.m = x.p * (1 + static_cast<std::int64_t>(rng() % 5));
    const int PV = x.p * x.V;
    x.sf.assign(x.p, 0);
    x.sb.assign(x.p, 0);
    for (int s = 0; s + 1 < x.p; ++s) x.sf[s] = rng() % 3 ? uni(0, 0.5) : 0;
    for (int s = 1; s < x.p; ++s) x.sb[s] = rng() % 3 ? uni(0, 0.5) : 0;
    x.chunks.resize(PV);
    x.f.resize(PV);
    x.b.resize(PV);
    for (int v = 0; v < PV; ++v) {
        const int s = v % x.p;
        StageTimes& t = x.chunks[v];
        t.forward_s = x.f[v] = uni(0.05, 2);
        t.backward_s = x.b[v] = uni(0.05, 4);
        t.send_forward_s = v + 1 < PV ? (s + 1 < x.p ? x.sf[s] : uni(0, 0.5)) : 0;
        t.send_backward_s = v > 0 ? (s > 0 ? x.sb[s] : uni(0, 0.5)) : 0;
    }
    x.stages.resize(x.p);
    for (auto& t : x.stages) {
        t.dp_sync_s = uni(0, 1);
        t.optimizer_s = uni(0, 0.5);
    }
    return x;
}

}  // namespace

TEST_CASE("interleaved family C never exceeds the interleaved DAG's time, on 3000 random pipelines", "[interleaved][search][bounds]") {
    std::mt19937_64 rng(20261202);
    std::vector<double> scratch;
    int within_5pct = 0;
    for (int n = 0; n < 3000; ++n) {
        const Pipeline x = random_interleaved(rng);
        double opt = 0;
        for (const auto& t : x.stages) opt = std::max(opt, t.optimizer_s);
        const double T = interleaved_iteration_time(x.chunks, x.stages, x.V, x.m);
        const double c = interleaved_family_c(x.f, x.b, x.sf, x.sb, x.p, x.V, x.m, scratch) + opt;
        INFO("instance " << n << ": p " << x.p << ", V " << x.V << ", m " << x.m);
        REQUIRE(c <= T * (1 + 1e-12));
        // every path of family C ends at stage 0's last pass, which its gradient sync follows
        // before the barrier of the optimizer step (the search adds it: Walker::ilv_sync)
        REQUIRE(c + x.stages[0].dp_sync_s <= T * (1 + 1e-12));
        within_5pct += c >= 0.95 * T;
    }
    // not a vacuous one: on these far-from-equal random stages it is within 5 % of the DAG on 126
    CHECK(within_5pct > 100);
}

TEST_CASE("interleaved family C on equal stages with free communication is (m + (p-1)/V)(f+b)", "[interleaved][search][bounds]") {
    std::vector<double> scratch;
    for (int p : {2, 4, 8})
        for (int V : {2, 3, 4})
            for (std::int64_t k : {2, 3, 5}) {
                const std::int64_t m = k * p;
                const double f = 1.0, b = 2.0;  // per stage and micro-batch; a chunk takes 1/V
                const std::vector<double> fs(static_cast<std::size_t>(p) * V, f / V), bs(static_cast<std::size_t>(p) * V, b / V), zero(p, 0.0);
                INFO("p " << p << ", V " << V << ", m " << m);
                CHECK(interleaved_family_c(fs, bs, zero, zero, p, V, m, scratch) == Approx((static_cast<double>(m) + (p - 1.0) / V) * (f + b)).epsilon(1e-12));
            }
}
