// Recomputation as a choice of the search (docs/search.md, "Training choices"): with
// options.recompute and options.recompute_num_layers free the search equals the top K of the
// searches with each fixed, pruned = exhaustive, every plan carries its choice and estimate scores
// it in that choice; a plan's recompute keys are read, written and refused by name.
#include <catch2/catch.hpp>

#include <algorithm>
#include <random>
#include <string>

#include "poseidon/error.hpp"
#include "poseidon/estimate.hpp"
#include "poseidon/scenario.hpp"
#include "poseidon/search.hpp"
#include "search_random.hpp"

using namespace poseidon;

using search_test::quiet;
using search_test::random_scenario;
using search_test::require_pruned_equals_exhaustive;

namespace {

// H100s in nodes of 8; the model's activations decide which recomputation fits.
Scenario h100s(const std::string& training = "", const std::string& model = "gpt3-1.7b", int nodes = 2, int batch = 64, const std::string& model_keys = "") {
    return parse_scenario_text(R"({"model": {"preset": ")" + model + R"(")" + model_keys + R"(}, "training": {"global_batch_size": )" + std::to_string(batch) +
                               R"(, "distributed_optimizer": true)" + training + R"(}, "cluster": {"name": "h100", "groups": [{"device": "h100-sxm5-80gb", "nodes": )" +
                               std::to_string(nodes) + R"(, "gpus_per_node": 8, "inter_node_bw_GBps": 50}]}})");
}

struct Fixed {
    Recompute recompute;
    int num_layers;
};

}  // namespace

TEST_CASE("with the recomputation free the search returns the top K of the searches with each fixed, pruned = exhaustive", "[search][differential][choices][recompute]") {
    int checked = 0, block_best = 0, none_best = 0;
    std::int64_t pruned_evals = 0, exhaustive_evals = 0;
    const std::vector<Fixed> fixed = {{Recompute::none, 0}, {Recompute::selective, 0}, {Recompute::full, 0}, {Recompute::full, 1}, {Recompute::full, 2}};
    for (std::uint64_t seed = 31000; checked < 30; ++seed) {
        std::mt19937_64 rng(seed);
        Json j = random_scenario(rng);
        j["model"]["num_layers"] = std::min(j["model"]["num_layers"].get<int>(), 8);
        const Scenario sc = parse_scenario(j);
        if (search_space_size(sc, false).plans > 2e4) continue;
        INFO("seed " << seed << ": " << to_json(sc).dump());
        SearchOptions pruned = quiet(3), exhaustive = quiet(3, true);
        for (SearchOptions* o : {&pruned, &exhaustive}) {
            o->recomputes = {Recompute::none, Recompute::selective, Recompute::full};
            o->recompute_num_layers = {1, 2};
        }
        const SearchResult free = require_pruned_equals_exhaustive(sc, pruned, exhaustive, pruned_evals, exhaustive_evals);
        // each choice fixed in the scenario, its plans tagged, merged by (key, plan)
        std::vector<search_test::FixedChoice> runs;
        for (const Fixed& f : fixed) {
            Scenario one = sc;
            one.training.recompute = f.recompute;
            one.training.recompute_num_layers = f.num_layers;
            runs.push_back({one, [f](Plan& p) {
                                p.recompute = f.recompute;
                                if (f.num_layers > 0) p.recompute_num_layers = f.num_layers;
                            }});
        }
        search_test::require_free_is_merge_of_fixed(sc, free, runs);
        for (const auto& e : free.plans) {
            REQUIRE(e.plan.recompute);
            REQUIRE(e.plan.recompute_num_layers.has_value() == (*e.plan.recompute == Recompute::full && e.plan.recompute_num_layers.value_or(0) > 0));
        }
        if (!free.plans.empty()) {
            block_best += free.plans[0].plan.recompute_num_layers.has_value();
            none_best += *free.plans[0].plan.recompute == Recompute::none;
        }
        ++checked;
    }
    CHECK(pruned_evals < exhaustive_evals);
    // no recomputation wins where it fits; the block method where only some blocks' activations do
    INFO("best plans without recomputation: " << none_best << ", with some blocks recomputed: " << block_best << " of " << checked);
    CHECK(none_best > 0);
}

TEST_CASE("recompute \"any\" with block counts: each choice's best is no faster than the free search's, and a block count wins where none does not fit", "[search][choices][recompute]") {
    // Llama 3 8B at 8,448 tokens on 8 H100s: one stage without recomputation does not fit (at
    // 8,192 it just does, and wins), with every block recomputed the backward repeats 32 forwards;
    // one stage that recomputes one block fits and is the best (13.39 s)
    const Scenario sc = h100s(R"(, "sequence_parallel": true, "recompute": "full")", "llama3-8b", 1, 128, R"(, "seq_length": 8448)");
    SearchOptions o = quiet(3, false, 1);
    o.recomputes = {Recompute::none, Recompute::selective, Recompute::full};
    o.recompute_num_layers = {1, 2, 4, 8, 16};
    const SearchResult r = search(sc, o);
    REQUIRE(!r.plans.empty());
    CHECK(*r.plans[0].plan.recompute == Recompute::full);
    CHECK(r.plans[0].plan.recompute_num_layers == 1);
    bool noted = false;
    for (const auto& n : r.stats.notes) noted = noted || n.find("training choices searched: recompute none, recompute selective, recompute full of 1 block, recompute full of 2 blocks") == 0;
    CHECK(noted);
    for (const Fixed f : std::vector<Fixed>{{Recompute::none, 0}, {Recompute::selective, 0}, {Recompute::full, 0}, {Recompute::full, 1}, {Recompute::full, 4}}) {
        Scenario one = sc;
        one.training.recompute = f.recompute;
        one.training.recompute_num_layers = f.num_layers;
        const SearchResult best = search(one, quiet(1, false, 1));
        INFO("recompute " << to_string(f.recompute) << " of " << f.num_layers);
        REQUIRE(!best.plans.empty());
        CHECK(best.plans[0].iteration_time_s >= r.plans[0].iteration_time_s);
        if (f.num_layers != 1) CHECK(best.plans[0].iteration_time_s > r.plans[0].iteration_time_s);
        if (f.num_layers == 1) CHECK(best.plans[0].iteration_time_s == r.plans[0].iteration_time_s);
    }
}

TEST_CASE("a plan's recompute and recompute_num_layers: read, written, estimated as the scenario with them, refused by name", "[plan][choices][recompute]") {
    const Scenario sc = h100s(R"(, "recompute": "selective")");
    const char* text = R"({"micro_batch_size": 8, "num_micro_batches": 8, "stages": [{"group": 0, "num_layers": 12, "tp": 1, "dp": 8}, {"group": 0, "num_layers": 12, "tp": 1, "dp": 8}], "recompute": "full", "recompute_num_layers": 3})";
    const Plan plan = parse_plan_text(text, sc);
    REQUIRE(plan.recompute == Recompute::full);
    REQUIRE(plan.recompute_num_layers == 3);
    CHECK(to_json(plan)["recompute"] == "full");
    CHECK(to_json(plan)["recompute_num_layers"] == 3);
    Scenario fixed = sc;
    fixed.training.recompute = Recompute::full;
    fixed.training.recompute_num_layers = 3;
    Plan bare = plan;
    bare.recompute.reset();
    bare.recompute_num_layers.reset();
    CHECK_FALSE(to_json(bare).contains("recompute"));
    search_test::check_choice_as_fixed(sc, plan, fixed, bare);
    const Estimate a = estimate(sc, plan);
    // 3 of 12 blocks recomputed: slower than the scenario's selective, faster than every block
    Plan all_blocks = bare;
    all_blocks.recompute = Recompute::full;
    CHECK(estimate(sc, bare).iteration_time_s < a.iteration_time_s);
    CHECK(a.iteration_time_s < estimate(sc, all_blocks).iteration_time_s);
    // the text names the choice and the scenario's setting beside it
    CHECK_THAT(to_text(sc, a), Catch::Matchers::Contains("recompute full of 3 blocks per stage (training.recompute selective)"));
    // a selective choice over a scenario without it recomputes the attention core, as --recompute-activations
    Plan sel = bare;
    sel.recompute = Recompute::selective;
    Scenario none = sc;
    none.training.recompute = Recompute::none;
    CHECK(estimate(none, sel).iteration_time_s == estimate(sc, bare).iteration_time_s);
    CHECK_THROWS_WITH(parse_plan_text(R"({"micro_batch_size": 8, "num_micro_batches": 8, "stages": [{"group": 0, "num_layers": 24, "tp": 1, "dp": 16}], "recompute_num_layers": 3})", sc),
                      Catch::Matchers::Contains("plan.recompute_num_layers: 3 needs \"recompute\": \"full\" in the plan") && Catch::Matchers::Contains("not given"));
    CHECK_THROWS_WITH(parse_plan_text(R"({"micro_batch_size": 8, "num_micro_batches": 8, "stages": [{"group": 0, "num_layers": 24, "tp": 1, "dp": 16}], "recompute": "selective", "recompute_num_layers": 3})", sc),
                      Catch::Matchers::Contains("the plan's recompute is \"selective\""));
    CHECK_THROWS_WITH(parse_plan_text(R"({"micro_batch_size": 8, "num_micro_batches": 8, "stages": [{"group": 0, "num_layers": 24, "tp": 1, "dp": 16}], "recompute": "some"})", sc),
                      Catch::Matchers::Contains("plan.recompute"));
    // more blocks than the model's 24 would recompute no more than all: refused, not clamped (a
    // count above a stage's own blocks but within the model's recomputes that stage whole)
    CHECK_THROWS_WITH(parse_plan_text(R"({"micro_batch_size": 8, "num_micro_batches": 8, "stages": [{"group": 0, "num_layers": 24, "tp": 1, "dp": 16}], "recompute": "full", "recompute_num_layers": 100})", sc),
                      Catch::Matchers::Contains("plan.recompute_num_layers: 100 is out of range; expected an integer in [1, 24]"));
    CHECK_THROWS_WITH(h100s(R"(, "recompute": "full", "recompute_num_layers": 25)"), Catch::Matchers::Contains("training.recompute_num_layers: 25 is out of range; expected an integer in [1, 24]"));
    // a search option of as many blocks as the model's or more is full recomputation, searched once
    // as such with a note (the page's fixed 1/2/4/8 meets models of fewer blocks)
    SearchOptions o = quiet(3, false, 1);
    o.recompute_num_layers = {2, 24, 30};
    const SearchResult r = search(sc, o);
    CHECK_THAT(r.stats.notes, Catch::Matchers::VectorContains(std::string("training choices searched: recompute selective, recompute full of 2 blocks, recompute full; each plan carries its own (plan.precision, plan.fsdp, plan.recompute)")));
    CHECK_THAT(r.stats.notes, Catch::Matchers::VectorContains(std::string("options.recompute_num_layers[2] 30 is at least the model's 24 blocks: every block of every stage, searched as full recomputation")));
    for (const auto& e : r.plans) CHECK(e.plan.recompute_num_layers.value_or(0) < 24);
}

TEST_CASE("options.recompute and options.recompute_num_layers: read with errors naming the path, the value and what is allowed", "[search][choices][options][recompute]") {
    CHECK(parse_search_options(Json::parse(R"({"recompute": "any"})")).recomputes == std::vector<Recompute>{Recompute::none, Recompute::selective, Recompute::full});
    CHECK(parse_search_options(Json::parse(R"({"recompute": "fixed"})")).recomputes.empty());
    CHECK(parse_search_options(Json::parse(R"({"recompute": ["full", "none"]})")).recomputes == std::vector<Recompute>{Recompute::full, Recompute::none});
    CHECK(parse_search_options(Json::parse(R"({"recompute_num_layers": [4, 2]})")).recompute_num_layers == std::vector<int>{4, 2});
    CHECK_THROWS_WITH(parse_search_options(Json::parse(R"({"recompute": ["full", "some"]})")), Catch::Matchers::Contains("options.recompute[1]: \"some\" is not a recomputation"));
    CHECK_THROWS_WITH(parse_search_options(Json::parse(R"({"recompute": ["full", "full"]})")), Catch::Matchers::Contains("options.recompute[1]: \"full\" is given twice"));
    CHECK_THROWS_WITH(parse_search_options(Json::parse(R"({"recompute": true})")), Catch::Matchers::Contains("options.recompute: true is not allowed"));
    CHECK_THROWS_WITH(parse_search_options(Json::parse(R"({"recompute_num_layers": [0]})")), Catch::Matchers::Contains("options.recompute_num_layers[0]: 0 is not allowed"));
    CHECK_THROWS_WITH(parse_search_options(Json::parse(R"({"recompute_num_layers": [2.5]})")), Catch::Matchers::Contains("options.recompute_num_layers[0]: 2.5 is not allowed"));
    CHECK_THROWS_WITH(parse_search_options(Json::parse(R"({"recompute_num_layers": 4})")), Catch::Matchers::Contains("options.recompute_num_layers: 4 is not allowed"));
}

TEST_CASE("block counts alone are searched beside the scenario's own recomputation; a search that frees nothing is the search of before", "[search][choices][recompute]") {
    const Scenario sc = h100s(R"(, "recompute": "selective")");
    SearchOptions o = quiet(3, false, 1);
    o.recompute_num_layers = {2};
    const SearchResult r = search(sc, o);
    REQUIRE(!r.plans.empty());
    for (const auto& e : r.plans) {
        REQUIRE(e.plan.recompute);
        CHECK((*e.plan.recompute == Recompute::selective || e.plan.recompute_num_layers == 2));
    }
    const SearchResult plain = search(sc, quiet(3, false, 1));
    for (const auto& e : plain.plans) CHECK_FALSE(e.plan.recompute);
    for (const auto& n : plain.stats.notes) CHECK(n.find("training choices searched") == std::string::npos);
}
