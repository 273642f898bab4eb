// The search under its limits (docs/search.md, "Time limit", "Memory", "Results"): the best plans
// found so far under a tiny time limit, the time limit on very large inputs, the memory cap
// (refusal, skipped sizes, one size at a time), the output caps, and statistics that count each
// configuration once. Timing bounds are generous: the machines that run the tests are shared.
#include <catch2/catch.hpp>

#include <chrono>
#include <string>

#include "../../core/src/search_driver.hpp"
#include "poseidon/estimate.hpp"
#include "poseidon/json_util.hpp"
#include "poseidon/scenario.hpp"
#include "poseidon/search.hpp"
#include "search_random.hpp"

using namespace poseidon;
using search_test::quiet;

namespace {

const char* const kDemo = R"({"model":"gpt3-1.7b","training":{"global_batch_size":64},"cluster":"demo-mixed-16"})";

double timed(const Scenario& sc, const SearchOptions& o, SearchResult& r) {
    const auto t0 = std::chrono::steady_clock::now();
    r = search(sc, o);
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

bool has_note(const SearchResult& r, const std::string& part) {
    for (const auto& n : r.stats.notes)
        if (n.find(part) != std::string::npos) return true;
    return false;
}

// 64 groups of 15,000 one-GPU nodes and a 10,000-layer model (issue 11's large input).
Scenario huge() {
    const char* devs[] = {"a100-sxm4-80gb", "a100-sxm4-40gb", "v100-sxm2-16gb", "v100-sxm2-32gb", "t4-16gb", "a10-24gb", "h100-sxm5-80gb", "rtx2080-8gb"};
    Json groups = Json::array();
    for (int g = 0; g < 64; ++g) groups.push_back({{"device", devs[g % 8]}, {"nodes", 15000}, {"gpus_per_node", 1}, {"inter_node_bw_GBps", 25}});
    return parse_scenario(Json{{"model", {{"name", "big"}, {"num_layers", 10000}, {"hidden_size", 1024}, {"num_attention_heads", 8}, {"vocab_size", 32000}, {"seq_length", 1024}}},
                               {"training", {{"global_batch_size", 1024}}},
                               {"cluster", {{"name", "huge"}, {"groups", groups}}}});
}

}  // namespace

TEST_CASE("a tiny time limit returns the best plans found so far and not no feasible plan", "[search][time]") {
    // Without a plan the walk runs on to 0.95 x the limit + 30 ms (docs/search.md, "Time limit"):
    // enough for the demo's first plans on an idle core, not always beside other tests. So a
    // search that found none must say so honestly, and one of a few tries must return plans.
    Scenario sc = parse_scenario_text(kDemo);
    for (int threads : {1, 4}) {
        bool returned_plans = false;
        for (int attempt = 0; attempt < 5 && !returned_plans; ++attempt) {
            SearchOptions o = quiet(3, false, threads);
            o.time_limit_s = 0.001;
            o.baselines = true;
            SearchResult r;
            const double took = timed(sc, o, r);
            INFO(threads << " threads, attempt " << attempt << ", " << took << " s");
            CHECK(took < 0.5);
            CHECK_FALSE(r.stats.complete);
            CHECK(r.stats.stopped_by == "time limit");
            const Json j = to_json(sc, r);
            CHECK(j["stats"]["complete"] == false);
            CHECK(j["stats"]["stopped_by"] == "time limit");
            if (r.plans.empty()) continue;
            returned_plans = true;
            CHECK(r.scores[0] == r.plans[0].iteration_time_s);
            for (const auto& b : r.baselines)  // no time was left for them, and they say so
                if (!b.estimate) CHECK(b.reason.find("time limit") != std::string::npos);
        }
        INFO(threads << " threads");
        CHECK(returned_plans);
    }
}

TEST_CASE("a complete search without plans says that none exists", "[search][time]") {
    Scenario sc = parse_scenario_text(R"({"model": "gpt3-175b", "training": {"global_batch_size": 8},
      "cluster": {"name": "c", "groups": [{"device": "t4-16gb", "nodes": 1, "gpus_per_node": 2, "inter_node_bw_GBps": 4}]}})");
    const SearchResult r = search(sc, quiet(3));
    CHECK(r.plans.empty());
    CHECK(r.stats.complete);
    CHECK(r.stats.stopped_by.empty());
    CHECK(to_json(sc, r)["stats"]["stopped_by"].is_null());
}

TEST_CASE("a stopped search lists a baseline that beats its plans, at its rank, and a complete one never; notes name the final ranks", "[search][time][baselines]") {
    const Scenario sc = parse_scenario_text(kDemo);
    SearchOptions o = quiet(3);
    o.baselines = true;
    const SearchResult full = search(sc, o);
    REQUIRE(full.plans.size() == 3);
    REQUIRE(full.stats.complete);
    // A result as a stopped search leaves it: its plans are the complete search's 2nd and 3rd,
    // and a baseline is the complete search's best plan.
    SearchResult r;
    r.stats.complete = false;
    r.stats.stopped_by = "time limit";
    for (std::size_t k : {1, 2}) {
        r.plans.push_back(full.plans[k]);
        r.detailed.push_back(true);
        r.scores.push_back(full.scores[k]);
    }
    Baseline b;
    b.name = "megatron-uniform";
    b.estimate = estimate(sc, full.plans[0].plan, false);
    r.baselines = {b, Baseline{"metis-heuristic", "", std::nullopt, "no feasible plan"}};
    SearchResult complete = r;
    complete.stats.complete = true;
    detail::adopt_baselines(sc, o, detail::Clock::now(), complete);
    CHECK(complete.plans.size() == 2);  // a complete search has proven its plans: nothing adopted
    detail::adopt_baselines(sc, o, detail::Clock::now(), r);
    REQUIRE(r.plans.size() == 3);
    CHECK(r.plans[0].plan == full.plans[0].plan);
    CHECK(r.plans[1].plan == full.plans[1].plan);
    CHECK(r.scores == full.scores);
    CHECK(r.detailed[0]);
    CHECK(r.timeline);
    CHECK(r.plans[0].dag.timeline.size() == full.plans[0].dag.timeline.size());  // re-estimated in detail, as the best plan is listed
    REQUIRE(r.stats.notes.size() == 1);
    CHECK(r.stats.notes[0] == "plan 1 is the megatron-uniform baseline: the search stopped (time limit) before it reached a plan as fast");
    detail::adopt_baselines(sc, o, detail::Clock::now(), r);  // listed once
    CHECK(r.plans.size() == 3);
    // the top K stays K: a baseline slower than the K-th is not listed, one faster pushes the last out
    SearchResult two = r;
    two.plans.resize(2), two.detailed.resize(2), two.scores.resize(2), two.stats.notes.clear();
    SearchOptions k2 = o;
    k2.top_k = 2;
    two.baselines = {Baseline{"slow", "", full.plans[2], ""}};
    detail::adopt_baselines(sc, k2, detail::Clock::now(), two);
    CHECK(two.plans.size() == 2);
    CHECK(two.stats.notes.empty());
    // a search restricted to another schedule does not adopt the baseline
    SearchResult none;
    none.stats.complete = false;
    none.baselines = {b};
    SearchOptions other = o;
    other.schedule = b.estimate->plan.schedule == "1f1b" ? "interleaved-1f1b" : "1f1b";
    detail::adopt_baselines(sc, other, detail::Clock::now(), none);
    CHECK(none.plans.empty());
    detail::adopt_baselines(sc, o, detail::Clock::now(), none);  // with no plan found, the baseline is the plan
    CHECK(none.plans.size() == 1);
    // Each note names the rank its plan ends at, written after every baseline is placed. A stopped
    // search that found nothing, and two baselines: the slower one is placed first, then
    // the faster one in front of it (or in its place, with room for one plan).
    for (const int k : {1, 2}) {
        SearchResult r;
        r.stats.complete = false;
        r.stats.stopped_by = "time limit";
        r.baselines = {Baseline{"slow", "", full.plans[2], ""}, Baseline{"fast", "", full.plans[0], ""}};
        SearchOptions ok = o;
        ok.top_k = k;
        detail::adopt_baselines(sc, ok, detail::Clock::now(), r);
        REQUIRE(r.plans.size() == static_cast<std::size_t>(k));
        CHECK(r.plans[0].plan == full.plans[0].plan);
        std::vector<std::string> expected = {"plan 1 is the fast baseline: the search stopped (time limit) before it reached a plan as fast"};
        if (k == 2) {
            CHECK(r.plans[1].plan == full.plans[2].plan);
            expected.push_back("plan 2 is the slow baseline: the search stopped (time limit) before it reached a plan as fast");
        }
        CHECK(r.stats.notes == expected);  // before, "plan 1 is the slow baseline" too, though it had moved or gone
    }
}

TEST_CASE("a search restricted to interleaving that finds nothing says why", "[search][schedule]") {
    const Scenario sc = parse_scenario_text(R"({"model":"tiny-8l","training":{"global_batch_size":1},"cluster":"dgx-a100-1"})");
    SearchOptions o = quiet(3);
    o.schedule = "interleaved-1f1b";
    const SearchResult r = search(sc, o);
    CHECK(r.plans.empty());
    CHECK(r.stats.complete);
    REQUIRE_FALSE(r.stats.notes.empty());
    CHECK(r.stats.notes.back().find("needs at least 2 stages, a micro-batch count that is a multiple of the stage count") != std::string::npos);
    o.schedule = "any";
    CHECK_FALSE(search(sc, o).plans.empty());
}

TEST_CASE("a very large input stays within its time limit and memory cap", "[search][time][memory]") {
    const Scenario sc = huge();
    SearchOptions o = quiet(3, false, 2);
    o.time_limit_s = 0.5;
    o.baselines = true;
    SearchResult r;
    const double took = timed(sc, o, r);
    INFO(took << " s; notes: " << to_json(sc, r)["stats"]["notes"].dump());
    CHECK(took < 0.5 * 1.1 + 0.05 + 1.0);  // the documented bound, and a second for a busy machine
    CHECK_FALSE(r.stats.complete);
    // the cost tables of all micro-batch sizes exceed the default cap together
    CHECK(has_note(r, "one size at a time"));
    if (r.plans.empty()) CHECK(r.stats.stopped_by == "time limit");  // none found yet (a slow machine)
    // its plans are far over the output caps: listed without breakdown and timeline
    if (!r.plans.empty()) {
        CHECK_FALSE(r.timeline);
        CHECK_FALSE(to_json(sc, r)["plans"][0].contains("timeline"));
        CHECK_FALSE(to_json(sc, r)["plans"][0].contains("breakdown"));
    }
    // under a 1 ms limit nothing is found, and the result says the search stopped
    o.time_limit_s = 0.001;
    const double took2 = timed(sc, o, r);
    CHECK(took2 < 1.0);
    CHECK(r.plans.empty());
    CHECK(r.stats.stopped_by == "time limit");
    CHECK_FALSE(r.stats.complete);
}

TEST_CASE("the exhaustive search under a time limit stays bounded in time and output size", "[search][time]") {
    Scenario sc = parse_scenario_text(R"({"model":"gpt3-175b","training":{"global_batch_size":1536},"cluster":"dgx-a100-superpod-slice"})");
    SearchOptions o = quiet(3, true);
    o.time_limit_s = 0.5;
    SearchResult r;
    const double took = timed(sc, o, r);
    const std::string out = to_json(sc, r).dump(2);
    INFO(took << " s, " << out.size() << " bytes");
    CHECK(took < 0.5 * 1.1 + 0.05 + 1.0);
    CHECK(out.size() < 10'000'000);  // the best plan's timeline alone was 68 MB
    REQUIRE_FALSE(r.plans.empty());
    CHECK_FALSE(r.stats.complete);
}

TEST_CASE("the memory cap refuses a search it cannot hold, before allocating", "[search][memory]") {
    Scenario sc = parse_scenario_text(kDemo);
    SearchOptions o = quiet(3, false, 1);
    o.memory_cap_gib = 1e-9;
    try {
        (void)search(sc, o);
        FAIL("no refusal");
    } catch (const InputError& e) {
        REQUIRE_FALSE(e.problems().empty());
        CHECK(e.problems().front().path == "options.memory_cap_GiB");
        CHECK(e.problems().front().message.find("memory cap") != std::string::npos);
    }
    CHECK(parse_search_options(Json::parse(R"({"memory_cap_gib": 0.5})")).memory_cap_gib == 0.5);
    CHECK_THROWS_AS(parse_search_options(Json::parse(R"({"memory_cap_gib": 0})")), InputError);
    // the unit spelled as in every other key; the first spelling is still read, not both at once
    CHECK(parse_search_options(Json::parse(R"({"memory_cap_GiB": 0.25})")).memory_cap_gib == 0.25);
    try {
        parse_search_options(Json::parse(R"({"memory_cap_GiB": 1, "memory_cap_gib": 1})"));
        FAIL("both spellings accepted");
    } catch (const InputError& e) {
        CHECK(e.problems().front().path == "options.memory_cap_gib");
        CHECK(e.problems().front().message.find("memory_cap_GiB") != std::string::npos);
    }
}

TEST_CASE("under the memory cap sizes are skipped or built one at a time with the same plans", "[search][memory]") {
    Scenario sc = parse_scenario_text(kDemo);
    const SearchResult full = search(sc, quiet(3, false, 1));
    REQUIRE(full.stats.complete);
    // raise the cap from far too small, doubling: first some sizes fit (the others skipped),
    // then all fit but not together (one at a time), then all together
    bool skipped = false, streamed = false;
    for (double cap = 1.0 / (1 << 24); cap < 1; cap *= 2) {
        SearchOptions o = quiet(3, false, 1);
        o.memory_cap_gib = cap;
        SearchResult r;
        try {
            r = search(sc, o);
        } catch (const InputError&) {
            continue;  // no size fits
        }
        INFO("cap " << cap << " GiB: " << to_json(sc, r)["stats"]["notes"].dump());
        if (has_note(r, "not searched")) {
            skipped = true;
            CHECK_FALSE(r.stats.complete);
            continue;
        }
        if (r.stats.stopped_by == "memory cap") {  // the caches grew past it while searching
            CHECK_FALSE(r.stats.complete);
            continue;
        }
        CHECK(r.stats.complete);
        REQUIRE(r.plans.size() == full.plans.size());
        for (std::size_t k = 0; k < r.plans.size(); ++k) CHECK(r.plans[k].plan == full.plans[k].plan);
        if (has_note(r, "one size at a time"))
            streamed = true;
        else
            break;  // all together: as without a cap
    }
    CHECK(skipped);
    CHECK(streamed);
}

TEST_CASE("configurations counts each configuration once", "[search][stats]") {
    // 100 plans wanted: the threshold stays open long, so the dive searches many configurations
    // that the full walk searches again; they are counted once (at most the space's count).
    Scenario sc = parse_scenario_text(R"({"model":"tiny-8l","training":{"global_batch_size":8},"cluster":"demo-mixed-16"})");
    const double space = search_space_size(sc).configurations;
    for (int threads : {1, 4}) {
        const SearchResult r = search(sc, quiet(100, false, threads));
        INFO(threads << " threads: " << r.stats.configurations << " of " << space);
        CHECK(r.stats.configurations > 0);
        CHECK(static_cast<double>(r.stats.configurations) <= space);
    }
    const SearchResult ex = search(sc, quiet(1, true, 4));
    CHECK(static_cast<double>(ex.stats.configurations) == space);
}
