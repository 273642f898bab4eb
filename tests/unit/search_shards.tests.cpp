// Slices of the search (docs/search.md, "Shards"): the slices of every count, with or without an
// external threshold, merged, give exactly the whole search's plans, order and scores; the
// options and the JSON that carry them.
#include <catch2/catch.hpp>

#include <algorithm>
#include <array>
#include <limits>
#include <random>

#include "poseidon/json_util.hpp"
#include "poseidon/scenario.hpp"
#include "poseidon/search.hpp"
#include "search_random.hpp"

using namespace poseidon;
using search_test::quiet;
using search_test::random_scenario;

namespace {

Json without_stats(Json j) {
    j.erase("stats");
    return j;
}

// The slices of `count` (their JSON read back, as the page hands them over), merged.
SearchResult merged(const Scenario& sc, SearchOptions o, int count, double prune_above_s, std::int64_t* evaluated = nullptr) {
    std::vector<ShardResult> shards;
    Json all = Json::array();
    o.shard_count = count;
    o.prune_above_s = prune_above_s;
    for (int i = 0; i < count; ++i) {
        o.shard_index = i;
        const ShardResult s = search_shard(sc, o);
        REQUIRE(s.stats.complete);
        REQUIRE(s.index == i);
        for (std::size_t k = 1; k < s.found.size(); ++k) REQUIRE(ranked_before(s.found[k - 1], s.found[k]));
        for (const auto& f : s.found) REQUIRE(f.key <= prune_above_s * (1 + 1e-12));
        if (evaluated) *evaluated += s.stats.evaluated;
        all.push_back(to_json(s));
    }
    // the slices in reverse order: the merge does not depend on it
    std::reverse(all.begin(), all.end());
    o.shard_count = 0;
    return merge_shards(sc, parse_shard_results(Json::parse(all.dump()), sc), o);
}

// Merged slices of 1 .. 5, without and with the whole search's K-th key as the external
// threshold, equal the whole search: the same JSON (plans, order, scores, timelines, baselines).
void require_shards_equal_search(const Scenario& sc, const SearchOptions& o) {
    const SearchResult whole = search(sc, o);
    REQUIRE(whole.stats.complete);
    const Json expected = without_stats(to_json(sc, whole));
    SearchOptions one = o;
    one.shard_count = 1;
    const ShardResult single = search_shard(sc, one);
    REQUIRE(single.found.size() == whole.plans.size());
    for (std::size_t k = 0; k < whole.plans.size(); ++k) {
        REQUIRE(single.found[k].plan == whole.plans[k].plan);
        REQUIRE(single.found[k].iteration_time_s == whole.scores[k]);
    }
    const double space_configurations = search_space_size(sc, o.tp_per_stage).configurations;
    const double kth = static_cast<int>(single.found.size()) == o.top_k ? single.found.back().key : std::numeric_limits<double>::infinity();
    for (int count = 1; count <= 5; ++count)
        for (double thr : {std::numeric_limits<double>::infinity(), kth}) {
            INFO(count << " slices, prune_above_s " << thr);
            const SearchResult m = merged(sc, o, count, thr);
            CHECK(m.stats.complete);
            REQUIRE(m.plans.size() == whole.plans.size());
            for (std::size_t k = 0; k < m.plans.size(); ++k) {
                INFO("rank " << k);
                CHECK(m.plans[k].plan == whole.plans[k].plan);
                CHECK(m.scores[k] == whole.scores[k]);
            }
            CHECK(without_stats(to_json(sc, m)) == expected);
            // every configuration lies below one unit of one slice and is counted there; what
            // every slice finds alike (refused TP degrees, a context's refused options) is
            // counted by slice 0 alone
            if (o.exhaustive) {
                CHECK(m.stats.configurations == whole.stats.configurations);
                CHECK(m.stats.evaluated == whole.stats.evaluated);
                for (const auto& [why, n] : whole.stats.infeasible) {
                    INFO(why);
                    CHECK(m.stats.infeasible.count(why));
                    if (m.stats.infeasible.count(why)) CHECK(m.stats.infeasible.at(why) == n);
                }
                CHECK(m.stats.infeasible.size() == whole.stats.infeasible.size());
            } else {
                CHECK(m.stats.configurations <= space_configurations);
            }
        }
}

}  // namespace

TEST_CASE("merged slices equal the whole search on random scenarios", "[search][shards]") {
    int checked = 0;
    for (std::uint64_t seed = 1; checked < 60; ++seed) {
        std::mt19937_64 rng(seed);
        Json j = random_scenario(rng);
        const bool per_stage = seed % 3 == 0;
        if (seed % 4 == 1) j["training"]["global_batch_tolerance"] = 0.25;  // keys scaled per sample
        Scenario sc = parse_scenario(j);
        const bool empty = seed % 5 == 2;  // the slices of the layout tree do not depend on the split
        if (search_space_size(sc, per_stage, "any", "halving", 1, false, empty).plans > 3e5) continue;
        INFO("seed " << seed << ", TP per stage " << per_stage << ", empty stages " << empty << ": " << to_json(sc).dump());
        SearchOptions o = quiet(3, false, 1);
        o.tp_per_stage = per_stage;
        o.empty_stages = empty;
        require_shards_equal_search(sc, o);
        if (checked % 10 == 0) {  // the exhaustive walk and several threads slice the same way
            SearchOptions ex = quiet(3, true, 2);
            ex.tp_per_stage = per_stage;
            ex.empty_stages = o.empty_stages;
            require_shards_equal_search(sc, ex);
        }
        ++checked;
    }
}

TEST_CASE("merged slices of an MoE model's search equal the whole search: each slice walks every expert grid", "[search][shards][moe][ep]") {
    // the page searches in slices: before the slices walked the expert grids too, every page plan
    // of an MoE model held all experts on every GPU (ep 1)
    int checked = 0, with_ep = 0;
    for (std::uint64_t seed = 7000; checked < 20; ++seed) {
        std::mt19937_64 rng(seed);
        Json j = search_test::random_moe_scenario(rng, seed);
        const Scenario sc = parse_scenario(j);
        if (search_space_size(sc, false).plans > 1e5) continue;
        INFO("seed " << seed << ": " << to_json(sc).dump());
        require_shards_equal_search(sc, quiet(3, false, 1));
        if (checked % 10 == 0) require_shards_equal_search(sc, quiet(3, true, 2));
        SearchOptions one = quiet(3, false, 1);
        one.shard_count = 1;
        for (const auto& f : search_shard(sc, one).found) with_ep += f.plan.stages[0].ep > 1;
        ++checked;
    }
    CHECK(with_ep > 0);
}

TEST_CASE("merged slices of a search with fixed grid sizes equal the whole search", "[search][shards][moe][ep][fixed]") {
    // the page's Search box fixes ep (options.ep_sizes) and the page searches in slices
    int checked = 0;
    for (std::uint64_t seed = 7000; checked < 8; ++seed) {
        std::mt19937_64 rng(seed);
        const Scenario sc = parse_scenario(search_test::random_moe_scenario(rng, seed));
        if (search_space_size(sc, false).plans > 1e5) continue;
        INFO("seed " << seed << ": " << to_json(sc).dump());
        SearchOptions o = quiet(3, false, 1);
        o.ep_sizes = {2};
        require_shards_equal_search(sc, o);
        for (const auto& p : search(sc, o).plans)
            for (const auto& st : p.plan.stages) REQUIRE(st.ep == 2);
        ++checked;
    }
}

TEST_CASE("merged slices equal the whole search on preset scenarios", "[search][shards]") {
    const char* cases[] = {R"({"model":"gpt3-1.7b","training":{"global_batch_size":64},"cluster":"demo-mixed-16"})",
                           R"({"model":"gpt3-7.5b","training":{"global_batch_size":128},"cluster":"mixed-a100-a10-t4"})",
                           R"({"model":"opt-350m","training":{"global_batch_size":64},"cluster":"sailor-mit-mix"})",
                           R"({"model":"gpt3-7.5b","training":{"global_batch_size":512},"cluster":"mixed-h100-a100-4090"})",
                           R"({"model":"gpt3-1.7b","training":{"global_batch_size":100,"global_batch_tolerance":0.1},"cluster":"demo-mixed-16"})"};
    for (const char* text : cases)
        for (bool per_stage : {false, true}) {
            Scenario sc = parse_scenario_text(text);
            if (per_stage && text != cases[0]) continue;  // the others take a second or more each
            INFO(text << (per_stage ? " --tp-per-stage" : ""));
            SearchOptions o = quiet(8, false, 1);
            o.tp_per_stage = per_stage;
            o.baselines = !per_stage;  // the merge computes them as search() does
            require_shards_equal_search(sc, o);
        }
}

TEST_CASE("a whole run the time limit stopped, merged with complete slices, equals the whole search", "[search][shards]") {
    // the page's first run of 0.5 s: its plans overlap the slices' and count once
    const char* cases[] = {R"({"model":"gpt3-7.5b","training":{"global_batch_size":512},"cluster":"mixed-h100-a100-4090"})",
                           R"({"model":"gpt3-1.7b","training":{"global_batch_size":100,"global_batch_tolerance":0.1},"cluster":"demo-mixed-16"})"};
    for (const char* text : cases) {
        INFO(text);
        Scenario sc = parse_scenario_text(text);
        SearchOptions o = quiet(5, false, 1);
        const SearchResult whole = search(sc, o);
        SearchOptions probe = o;
        probe.shard_count = 1;
        probe.time_limit_s = 0.002;  // stops after the first plans (on any machine: the merge holds either way)
        const ShardResult stopped = search_shard(sc, probe);
        std::vector<ShardResult> shards{stopped};
        o.shard_count = 3;
        for (int i = 0; i < 3; ++i) {
            o.shard_index = i;
            if (static_cast<int>(stopped.found.size()) == o.top_k) o.prune_above_s = stopped.found.back().key;
            shards.push_back(search_shard(sc, o));
        }
        o.shard_count = 0;
        const SearchResult m = merge_shards(sc, shards, o);
        CHECK(m.stats.complete);
        CHECK(m.stats.stopped_by.empty());
        CHECK(without_stats(to_json(sc, m)) == without_stats(to_json(sc, whole)));
        // without the last slice: incomplete, yet the stopped run's plans are listed
        shards.pop_back();
        const SearchResult part = merge_shards(sc, shards, o);
        CHECK(part.stats.complete == stopped.stats.complete);
        CHECK(part.plans.size() >= stopped.found.size());
    }
}

TEST_CASE("an external threshold cuts a slice's work", "[search][shards]") {
    Scenario sc = parse_scenario_text(R"({"model":"gpt3-7.5b","training":{"global_batch_size":512},"cluster":"mixed-h100-a100-4090"})");
    SearchOptions o = quiet(3, false, 1);
    o.shard_count = 1;
    const ShardResult all = search_shard(sc, o);
    REQUIRE(all.found.size() == 3);
    std::int64_t open = 0, cut = 0;
    merged(sc, quiet(3, false, 1), 4, std::numeric_limits<double>::infinity(), &open);
    merged(sc, quiet(3, false, 1), 4, all.found.back().key, &cut);
    CHECK(cut < open);
    // a threshold below the best plan: nothing enters
    o.prune_above_s = all.found.front().key * 0.5;
    CHECK(search_shard(sc, o).found.empty());
}

TEST_CASE("slice options and merge input are checked", "[search][shards]") {
    auto problem = [](const char* text) {
        try {
            parse_search_options(Json::parse(text));
        } catch (const InputError& e) {
            return e.problems().front().path + ": " + e.problems().front().message;
        }
        return std::string("accepted");
    };
    const SearchOptions o = parse_search_options(Json::parse(R"({"shard_index": 2, "shard_count": 3, "prune_above_s": 1.5})"));
    CHECK(o.shard_index == 2);
    CHECK(o.shard_count == 3);
    CHECK(o.prune_above_s == 1.5);
    CHECK(parse_search_options(Json::object()).shard_count == 0);
    CHECK_THAT(problem(R"({"shard_index": 3, "shard_count": 3})"), Catch::StartsWith("options.shard_index: 3 is out of range"));
    CHECK_THAT(problem(R"({"shard_index": 1})"), Catch::StartsWith("options.shard_index: is given without options.shard_count"));
    CHECK_THAT(problem(R"({"shard_count": 0})"), Catch::StartsWith("options.shard_count"));
    CHECK_THAT(problem(R"({"prune_above_s": 0})"), Catch::StartsWith("options.prune_above_s"));
    CHECK_THAT(problem(R"({"prune_above_s": "fast"})"), Catch::StartsWith("options.prune_above_s"));

    Scenario sc = parse_scenario_text(R"({"model":"gpt3-1.7b","training":{"global_batch_size":64},"cluster":"demo-mixed-16"})");
    SearchOptions s = quiet(3, false, 1);
    s.shard_count = 2;
    const Json first = to_json(search_shard(sc, s));
    // a missing slice: the merge is incomplete and says so
    const SearchResult half = merge_shards(sc, parse_shard_results(Json::array({first}), sc), quiet(3, false, 1));
    CHECK_FALSE(half.stats.complete);
    CHECK(std::count(half.stats.notes.begin(), half.stats.notes.end(), "1 of 2 slices of the search missing") == 1);
    // twice the same slice, bad JSON: errors naming the path
    CHECK_THROWS_WITH(merge_shards(sc, parse_shard_results(Json::array({first, first}), sc), quiet()), Catch::Contains("given twice"));
    Json other = first;
    other["shard"]["count"] = 3;  // a slice of another count: accepted, still incomplete
    const SearchResult mixed = merge_shards(sc, parse_shard_results(Json::array({first, other}), sc), quiet(3, false, 1));
    CHECK_FALSE(mixed.stats.complete);
    CHECK(std::count(mixed.stats.notes.begin(), mixed.stats.notes.end(), "2 of 3 slices of the search missing") == 1);
    Json bad = first;
    bad["found"][0]["key"] = "x";
    try {
        parse_shard_results(Json::array({bad}), sc);
        FAIL("accepted");
    } catch (const InputError& e) {
        CHECK(e.problems().front().path == "shards[0].found[0].key");
    }
    CHECK_THROWS_AS(parse_shard_results(Json::array(), sc), InputError);
    CHECK_THROWS_AS(search(sc, s), InputError);  // a slice is run by search_shard
}
