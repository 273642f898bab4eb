// All options of a group bounded at once at a layout node (docs/search.md, "Bounds", all options
// of a group at once): the check only skips options that their own bounds would cut, and counts
// them as those would. So the search with it and without it (detail::group_cuts_enabled) must
// agree on everything it reports: the plans, their times, and every count, on one thread (where
// the threshold falls in one order). Random dense and MoE scenarios of 2-3 groups, then a preset
// cluster of three types, each with the check cutting somewhere. The same for the test of a child
// by its own LP step against the node's inverted prefix (detail::layout_pretest_enabled,
// docs/search.md, "The prefix inverted"), a sufficient test before the child's whole bound.
#include <catch2/catch.hpp>

#include <random>
#include <utility>

#include "../../core/src/search_space.hpp"
#include "poseidon/json_util.hpp"
#include "poseidon/scenario.hpp"
#include "poseidon/search.hpp"
#include "search_random.hpp"

using namespace poseidon;

namespace {

struct GroupCuts {  // restored however the test ends
    bool saved = detail::group_cuts_enabled, saved_pretest = detail::layout_pretest_enabled;
    ~GroupCuts() { detail::group_cuts_enabled = saved, detail::layout_pretest_enabled = saved_pretest; }
};

// Both searches of sc, with the check (`flag`) and without: the same plans and counts; returns
// what the first counted of the check (groups cut at once, or children the pretest cut).
std::int64_t require_same_search(const Scenario& sc, const SearchOptions& o, bool* flag = &detail::group_cuts_enabled) {
    GroupCuts restore;
    *flag = true;
    const SearchResult with = search(sc, o);
    *flag = false;
    const SearchResult without = search(sc, o);
    REQUIRE(with.stats.complete);
    REQUIRE(without.stats.complete);
    search_test::require_same_plans(with, without);
    CHECK(with.stats.evaluated == without.stats.evaluated);
    CHECK(with.stats.pruned == without.stats.pruned);
    CHECK(with.stats.infeasible == without.stats.infeasible);
    CHECK(with.stats.configurations == without.stats.configurations);
    CHECK(with.stats.cost_probes == without.stats.cost_probes);
    CHECK(with.stats.threshold_capped == without.stats.threshold_capped);
    if (flag == &detail::layout_pretest_enabled) {
        CHECK(with.stats.groups_cut == without.stats.groups_cut);
        CHECK(without.stats.pretest_cut == 0);
        return with.stats.pretest_cut;
    }
    CHECK(without.stats.groups_cut == 0);
    return with.stats.groups_cut;
}

// require_same_search on random dense or MoE scenarios from seed0 on (20 dense, 10 MoE, spaces up
// to 1e7 plans); returns how many of them the check counted something in, and the counts in all.
std::pair<int, std::int64_t> require_same_on_random(bool* flag, std::uint64_t seed0, bool moe, const SearchOptions& o, int& checked) {
    int with_cuts = 0;
    std::int64_t counted = 0;
    checked = 0;
    for (std::uint64_t seed = seed0; checked < (moe ? 10 : 20); ++seed) {
        std::mt19937_64 rng(seed);
        const Scenario sc = parse_scenario(moe ? search_test::random_moe_scenario(rng, seed) : search_test::random_scenario(rng));
        if (search_space_size(sc).plans > 1e7) continue;
        INFO("MoE " << moe << ", seed " << seed << ": " << to_json(sc).dump());
        const std::int64_t n = require_same_search(sc, o, flag);
        counted += n;
        with_cuts += n > 0;
        ++checked;
    }
    return {with_cuts, counted};
}

}  // namespace

TEST_CASE("a group's options cut at once, and a layout child cut by its own step against the inverted prefix: the same plans and counts as each option by its whole bound, on random scenarios", "[search][layout-groups]") {
    // the check: all of a group's options at once (seeds from 7100), or the pretest (from 7300)
    const bool pretest = GENERATE(false, true);
    const bool moe = GENERATE(false, true);
    // both schedules, each alone (the interleaved bound then decides alone, and 1F1B's alone)
    const char* schedule = GENERATE("any", "interleaved-1f1b", "1f1b");
    SearchOptions o = search_test::quiet(3, false, 1);
    o.schedule = schedule;
    INFO((pretest ? "pretest" : "group cuts") << ", schedule " << schedule);
    int checked = 0;
    const auto [with_cuts, counted] =
        require_same_on_random(pretest ? &detail::layout_pretest_enabled : &detail::group_cuts_enabled, pretest ? 7300 : 7100, moe, o, checked);
    INFO(with_cuts << " of " << checked << " scenarios had the check count something, " << counted << " in all");
    // (the pretest with interleaved plans only: 8 of 20 dense and 4 of 10 MoE scenarios; half or
    // more in every other set)
    CHECK(with_cuts * (pretest ? 3 : 2) >= checked);
}

TEST_CASE("a group's options cut at once on three GPU types: the same plans and counts", "[search][layout-groups]") {
    // GPT-3 7.5B on H100 + A100 + RTX 4090, one thread (610 groups cut at once)
    const Scenario sc = parse_scenario(Json::parse(R"({"model": "gpt3-7.5b", "cluster": "mixed-h100-a100-4090", "training": {"global_batch_size": 256}})"));
    CHECK(require_same_search(sc, search_test::quiet(3, false, 1)) > 100);
}

TEST_CASE("a layout child cut by its own step on three GPU types: the same plans and counts", "[search][layout-groups]") {
    const Scenario sc = parse_scenario(Json::parse(R"({"model": "gpt3-7.5b", "cluster": "mixed-h100-a100-4090", "training": {"global_batch_size": 256}})"));
    CHECK(require_same_search(sc, search_test::quiet(3, false, 1), &detail::layout_pretest_enabled) > 100);
}
