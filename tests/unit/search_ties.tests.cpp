// Ties (docs/search.md, "Results", ties): keys within one tie bucket (the same bits but the last
// kTieBits of the mantissa) rank by plan_less, more layers on the first stage that differs first;
// the tie cut (search_tie.cpp) skips the ties that rank after the K-th plan without costing them.
#include <catch2/catch.hpp>

#include <cmath>
#include <random>
#include <string>

#include "../../core/src/search_topk.hpp"
#include "poseidon/json_util.hpp"
#include "poseidon/scenario.hpp"
#include "poseidon/search.hpp"
#include "search_random.hpp"

using namespace poseidon;
using detail::tie_first;
using detail::tie_last;

namespace {

Plan split(std::vector<int> layers) {
    Plan p;
    p.micro_batch_size = 1;
    p.num_micro_batches = 8;
    for (int l : layers) {
        StagePlan s;
        s.num_layers = l;
        s.replicas.assign(1, ReplicaSet{0, 1, 1, 1});
        p.stages.push_back(s);
    }
    return p;
}

}  // namespace

TEST_CASE("a tie bucket holds the keys that agree to 1.5e-8 to 3e-8, relative, and nothing else", "[search][ties]") {
    for (double t : {1e-3, 0.0643712546, 1.0, 2.0, 8.632658767892542, 1234.5}) {
        INFO(t);
        CHECK(tie_first(t) <= t);
        CHECK(t <= tie_last(t));
        const double width = (tie_last(t) - tie_first(t)) / t;
        CHECK(width > 1.4e-8);
        CHECK(width < 3.0e-8);
        // the next key past either end is in another bucket
        CHECK(detail::tie_bucket(std::nextafter(tie_last(t), 1e300)) == detail::tie_bucket(t) + 1);
        CHECK(detail::tie_bucket(std::nextafter(tie_first(t), 0.0)) + 1 == detail::tie_bucket(t));
    }
    CHECK(tie_last(std::numeric_limits<double>::infinity()) == std::numeric_limits<double>::infinity());
}

TEST_CASE("the top-K list ranks ties by the plan, more layers first, and its threshold ends the K-th plan's bucket", "[search][ties]") {
    const double t = 8.632658767892542;
    detail::TopK top(2);
    // an exact tie and a tie a few ulps later in the same bucket: the plan decides, not the ulps
    top.insert(t, split({2, 3, 3}));
    top.insert(std::nextafter(t, 1e300), split({3, 2, 3}));
    top.insert(t, split({2, 2, 4}));  // ranks after both
    const auto list = top.list();
    REQUIRE(list.size() == 2);
    CHECK(list[0].plan.stages[0].num_layers == 3);  // {3, 2, 3}, though a few ulps slower
    CHECK(list[1].plan.stages[1].num_layers == 3);  // {2, 3, 3}
    CHECK(top.threshold() == tie_last(t));
    // a key in a lower bucket ranks first whatever its plan
    top.insert(std::nextafter(tie_first(t), 0.0), split({1, 1, 6}));
    CHECK(top.list()[0].plan.stages[0].num_layers == 1);
}

TEST_CASE("with identical groups (exact ties everywhere) the pruned search returns the exhaustive top-K on random scenarios", "[search][differential][ties]") {
    // random_scenario with its first group twice: swapping their stages gives plans of exactly
    // the same time, so the tie cut has plateaus to cut
    SearchOptions pruned = search_test::quiet(4), exhaustive = search_test::quiet(4, true);
    std::int64_t pruned_evals = 0, exhaustive_evals = 0;
    int checked = 0, tied = 0;
    for (std::uint64_t seed = 700; checked < 60; ++seed) {
        std::mt19937_64 rng(seed);
        Json j = search_test::random_scenario(rng);
        Json g = j["cluster"]["groups"][0];
        j["cluster"]["groups"] = Json::array({g, g});
        const Scenario sc = parse_scenario(j);
        if (search_space_size(sc, false).plans > 2e5) continue;
        INFO("seed " << seed << ": " << to_json(sc).dump());
        const SearchResult pr = search_test::require_pruned_equals_exhaustive(sc, pruned, exhaustive, pruned_evals, exhaustive_evals);
        for (std::size_t k = 1; k < pr.plans.size(); ++k) tied += pr.scores[k] == pr.scores[k - 1];
        ++checked;
    }
    INFO("exact ties listed next to each other: " << tied);
    CHECK(tied >= 20);
}

TEST_CASE("a plateau of 116,000 exact ties is cut without costing them", "[search][ties][moe]") {
    // 3 x 1024 x 128 of the MoE sweep without recomputation (docs/performance.md, "Memory caps of a long interleaved walk, the broad dive's order, ties"), its
    // expert grid ep 8 under the bound the grids before it give (11.2426 s): a 63-stage
    // configuration's best split, 8.6327 s, has some 116,000 exact ties (its last 21 stages
    // trade 2 and 3 layers without changing the time); each was costed before the tie cut
    // (118,000 DAG evaluations, 26 s); one thread, exact counts.
    const Scenario sc = search_test::sweep_moe_scenario(3, 42, 128, "none");
    SearchOptions o = search_test::quiet(3, false, 1);
    o.ep_sizes = {8};
    o.prune_above_s = 11.2426;
    o.time_limit_s = 60;
    const SearchResult r = search(sc, o);
    REQUIRE(r.stats.complete);
    REQUIRE(r.plans.size() == 3);
    CHECK(r.plans[0].iteration_time_s == Approx(8.393529).epsilon(1e-6));
    CHECK(r.stats.evaluated < 10'000);
}
