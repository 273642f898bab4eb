// The precision and Megatron-FSDP as choices of the search (docs/search.md, "Training
// choices"): the search with them free equals the top K of the searches with each fixed, pruned =
// exhaustive, every plan carries its choice and estimate scores it in that choice, and a search
// that frees nothing is the search of before.
#include <catch2/catch.hpp>

#include <algorithm>
#include <random>
#include <string>

#include "poseidon/api.hpp"
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

// 16 H100 + 16 A100-80GB (2 nodes of 8 each); fp8 runs on the H100s only.
Scenario hopper_and_ampere(bool ampere = true) {
    return parse_scenario_text(std::string(R"({"model": {"preset": "gpt3-1.7b"}, "training": {"global_batch_size": 64, "distributed_optimizer": true},)"
                                           R"( "cluster": {"name": "mix", "groups": [{"device": "h100-sxm5-80gb", "nodes": 2, "gpus_per_node": 8, "inter_node_bw_GBps": 50})") +
                               (ampere ? R"(, {"device": "a100-sxm4-80gb", "nodes": 2, "gpus_per_node": 8, "inter_node_bw_GBps": 25})" : "") + "]}}");
}

}  // namespace

TEST_CASE("with the precision and FSDP free the search returns the top K of the searches with each fixed, pruned = exhaustive", "[search][differential][choices]") {
    int checked = 0, fp32_best = 0, fsdp_best = 0;
    std::int64_t pruned_evals = 0, exhaustive_evals = 0;
    for (std::uint64_t seed = 12000; checked < 30; ++seed) {
        std::mt19937_64 rng(seed);
        Json j = random_scenario(rng);
        j["model"]["num_layers"] = std::min(j["model"]["num_layers"].get<int>(), 8);
        const Scenario sc = parse_scenario(j);
        if (search_space_size(sc, false).plans > 2e4) continue;
        INFO("seed " << seed << ": " << to_json(sc).dump());
        // precisions every device runs (bf16 runs as fp16 where a GPU has no bf16)
        SearchOptions pruned = quiet(3), exhaustive = quiet(3, true);
        for (SearchOptions* o : {&pruned, &exhaustive}) {
            o->precisions = {Precision::bf16, Precision::fp32};
            o->fsdp = "any";
        }
        const SearchResult free = require_pruned_equals_exhaustive(sc, pruned, exhaustive, pruned_evals, exhaustive_evals);
        // each choice fixed in the scenario, its plans tagged, merged by (key, plan)
        std::vector<search_test::FixedChoice> runs;
        for (Precision p : {Precision::bf16, Precision::fp32})
            for (bool f : {false, true}) {
                Scenario one = sc;
                one.training.precision = p;
                one.training.fsdp = f;
                runs.push_back({one, [p, f](Plan& plan) { plan.precision = p, plan.fsdp = f; }});
            }
        search_test::require_free_is_merge_of_fixed(sc, free, runs);
        for (const auto& e : free.plans) {
            REQUIRE(e.plan.precision);
            REQUIRE(e.plan.fsdp);
            REQUIRE(e.plan.virtual_stages == (*e.plan.fsdp ? 1 : e.plan.virtual_stages));
        }
        if (!free.plans.empty()) {
            fp32_best += *free.plans[0].plan.precision == Precision::fp32;
            fsdp_best += *free.plans[0].plan.fsdp;
        }
        ++checked;
    }
    // bf16 is faster wherever a GPU has it; FSDP wins where memory is short
    CHECK(fp32_best < checked);
    CHECK(pruned_evals < exhaustive_evals);
    INFO("best plans with FSDP: " << fsdp_best << " of " << checked);
    CHECK(fsdp_best >= 0);
}

TEST_CASE("precisions \"any\": bf16 and each recipe every GPU runs; fp8 is chosen on Hopper and refused by name beside an A100", "[search][choices][precision]") {
    const Scenario hopper = hopper_and_ampere(false);
    SearchOptions o = quiet(3, false, 1);
    o.any_precision = true;
    const SearchResult r = search(hopper, o);
    REQUIRE(!r.plans.empty());
    // the H100's fp8 GEMMs run 1.78x its bf16 ones: a low-precision recipe wins
    CHECK(*r.plans[0].plan.precision != Precision::bf16);
    bool noted = false;
    for (const auto& n : r.stats.notes) noted = noted || (n.find("training choices searched: ") == 0 && n.find("bf16") != std::string::npos && n.find("fp8") != std::string::npos && n.find("mxfp8") == std::string::npos);
    CHECK(noted);
    // fixed bf16 is slower than the free search's best
    const SearchResult bf16 = search(hopper, quiet(3, false, 1));
    CHECK(bf16.plans[0].iteration_time_s > r.plans[0].iteration_time_s);
    // beside A100s "any" leaves bf16 alone; naming fp8 is refused with the group and the device
    const Scenario mix = hopper_and_ampere(true);
    const SearchResult m = search(mix, o);
    REQUIRE(!m.plans.empty());
    for (const auto& e : m.plans) CHECK(*e.plan.precision == Precision::bf16);
    SearchOptions fp8 = quiet(3, false, 1);
    fp8.precisions = {Precision::bf16, Precision::fp8};
    CHECK_THROWS_WITH(search(mix, fp8), Catch::Matchers::Contains("options.precisions[1]: \"fp8\" cannot run on cluster.groups[1] (a100-sxm4-80gb)"));
}

TEST_CASE("a search that chooses the precision is not refused for the scenario's own, and its notes say where it went", "[search][choices]") {
    // the page keeps its fixed precision's select while the search chooses: fp8, then a cluster with A100s
    const std::string text = R"({"model": {"preset": "gpt3-1.7b"}, "training": {"global_batch_size": 64, "precision": "fp8"},)"
                             R"( "cluster": {"name": "mix", "groups": [{"device": "h100-sxm5-80gb", "nodes": 2, "gpus_per_node": 8, "inter_node_bw_GBps": 50},)"
                             R"( {"device": "a100-sxm4-80gb", "nodes": 2, "gpus_per_node": 8, "inter_node_bw_GBps": 25}]}})";
    CHECK_THROWS_WITH(parse_scenario_text(text), Catch::Matchers::Contains("scenario.training.precision: \"fp8\" cannot run on cluster.groups[1] (a100-sxm4-80gb)"));
    const Scenario sc = parse_scenario_text(text, true);
    SearchOptions any = quiet(3, false, 1);
    any.any_precision = true;
    const SearchResult r = search(sc, any);
    REQUIRE(!r.plans.empty());
    for (const auto& e : r.plans) CHECK(*e.plan.precision == Precision::bf16);
    const auto said = [](const SearchResult& res, const std::string& what) {
        return std::any_of(res.stats.notes.begin(), res.stats.notes.end(), [&](const std::string& n) { return n.find(what) != std::string::npos; });
    };
    CHECK(said(r, "training.precision \"fp8\" cannot run on cluster.groups[1] (a100-sxm4-80gb): the device has no fp8_tflops rate (no fp8 tensor cores); the search chooses the precision (options.precisions), so no plan trains in it"));
    // the same through the JSON entry point the page calls, and a fixed precision still refused there
    CHECK(said(r, "options.precisions \"any\" searched the precisions every group runs, not: \"fp8\" cannot run on cluster.groups[1] (a100-sxm4-80gb)"));
    // the same through the JSON entry point the page calls; the baselines train in the best
    // plan's precision there (in fp8 the A100s' GEMMs had no rate: times of nothing)
    const Json out = Json::parse(plan_json(text, R"({"top": 1, "precisions": "any"})"));
    REQUIRE(out.contains("plans"));
    CHECK(out["plans"][0]["plan"]["precision"] == "bf16");
    REQUIRE(out["baselines"].size() == 2);
    for (const auto& b : out["baselines"]) {
        INFO(b.dump());
        CHECK(b["description"].get<std::string>().find("Trained in bf16, the best plan's precision: training.precision fp8 cannot run on every group.") != std::string::npos);
        if (b["feasible"] == true) {
            CHECK(b["plan"]["precision"] == "bf16");
            CHECK(b["iteration_time_s"].get<double>() >= out["plans"][0]["iteration_time_s"].get<double>());
            // a plan that names its precision is estimated beside the scenario's refused one
            const Json again = Json::parse(estimate_json(text, b["plan"].dump()));
            CHECK(again["iteration_time_s"].get<double>() == Approx(b["iteration_time_s"].get<double>()).epsilon(1e-12));
            Json fp8 = b["plan"];
            fp8["precision"] = "fp8";
            CHECK_THROWS_WITH(estimate_json(text, fp8.dump()), Catch::Matchers::Contains("plan.precision: \"fp8\" cannot run on cluster.groups[1] (a100-sxm4-80gb)"));
        }
    }
    CHECK_THROWS_WITH(plan_json(text, R"({"top": 1})"), Catch::Matchers::Contains("scenario.training.precision"));
    // a precision every group runs but that the list leaves out is noted too
    const Scenario bf16 = parse_scenario_text(std::string(text).replace(text.find("\"fp8\""), 5, "\"fp32\""), true);
    SearchOptions list = quiet(3, false, 1);
    list.precisions = {Precision::bf16};
    CHECK(said(search(bf16, list), "training.precision fp32 is not among options.precisions, so no plan trains in it"));
    // bad options are still said after a bad scenario, as before
    CHECK_THROWS_WITH(plan_json(R"({"model": "no-such-model"})", R"({"top": 0})"), Catch::Matchers::Contains("scenario."));
}

TEST_CASE("a plan's precision and FSDP: read, written, estimated as the scenario with them, refused where the cluster cannot run them", "[plan][choices]") {
    const Scenario hopper = hopper_and_ampere(false);
    const char* text = R"({"micro_batch_size": 16, "num_micro_batches": 4, "stages": [{"group": 0, "num_layers": 24, "tp": 1, "dp": 16}], "precision": "fp8", "fsdp": true})";
    const Plan plan = parse_plan_text(text, hopper);
    REQUIRE(plan.precision == Precision::fp8);
    REQUIRE(plan.fsdp == true);
    CHECK(to_json(plan)["precision"] == "fp8");
    CHECK(to_json(plan)["fsdp"] == true);
    Scenario fixed = hopper;
    fixed.training.precision = Precision::fp8;
    fixed.training.fsdp = true;
    Plan bare = plan;
    bare.precision.reset();
    bare.fsdp.reset();
    CHECK_FALSE(to_json(bare).contains("precision"));
    search_test::check_choice_as_fixed(hopper, plan, fixed, bare);
    const Estimate a = estimate(hopper, plan);
    // fp8 alone trains faster than bf16; FSDP's per-block gathers over 2 nodes cost more than it saves
    Plan fp8_only = bare;
    fp8_only.precision = Precision::fp8;
    CHECK(estimate(hopper, fp8_only).iteration_time_s < estimate(hopper, bare).iteration_time_s);
    CHECK(a.iteration_time_s > estimate(hopper, fp8_only).iteration_time_s);
    const Scenario mix = hopper_and_ampere(true);
    CHECK_THROWS_WITH(parse_plan_text(R"({"micro_batch_size": 16, "num_micro_batches": 4, "stages": [{"group": 1, "num_layers": 24, "tp": 1, "dp": 16}], "precision": "fp8"})", mix),
                      Catch::Matchers::Contains("plan.precision: \"fp8\" cannot run on cluster.groups[1] (a100-sxm4-80gb)"));
    CHECK_THROWS_WITH(parse_plan_text(R"({"micro_batch_size": 16, "num_micro_batches": 4, "stages": [{"group": 0, "num_layers": 24, "tp": 1, "dp": 16}], "precision": "fp9"})", hopper),
                      Catch::Matchers::Contains("plan.precision"));
    CHECK_THROWS_WITH(parse_plan_text(R"({"micro_batch_size": 16, "num_micro_batches": 4, "schedule": "interleaved-1f1b", "virtual_stages": 2, "stages": [{"group": 0, "num_layers": 12, "tp": 1, "dp": 8}, {"group": 0, "num_layers": 12, "tp": 1, "dp": 8}], "fsdp": true})", hopper),
                      Catch::Matchers::Contains("\"interleaved-1f1b\" with plan.fsdp is not modelled"));
}

TEST_CASE("options.precisions and options.fsdp: read with errors naming the path, the value and what is allowed", "[search][choices][options]") {
    CHECK(parse_search_options(Json::parse(R"({"precisions": "any"})")).any_precision);
    CHECK(parse_search_options(Json::parse(R"({"precisions": ["bf16", "nvfp4"]})")).precisions == std::vector<Precision>{Precision::bf16, Precision::nvfp4});
    CHECK(parse_search_options(Json::parse(R"({"fsdp": "any"})")).fsdp == "any");
    CHECK_THROWS_WITH(parse_search_options(Json::parse(R"({"precisions": ["bf16", "fp9"]})")), Catch::Matchers::Contains("options.precisions[1]: \"fp9\" is not a precision"));
    CHECK_THROWS_WITH(parse_search_options(Json::parse(R"({"precisions": ["fp8", "fp8"]})")), Catch::Matchers::Contains("options.precisions[1]: \"fp8\" is given twice"));
    CHECK_THROWS_WITH(parse_search_options(Json::parse(R"({"precisions": []})")), Catch::Matchers::Contains("options.precisions: [] is not allowed"));
    CHECK_THROWS_WITH(parse_search_options(Json::parse(R"({"fsdp": true})")), Catch::Matchers::Contains("options.fsdp"));
}

TEST_CASE("FSDP plans are 1F1B: the search walks no interleaved plan with training.fsdp and says so", "[search][choices][fsdp]") {
    Scenario sc = hopper_and_ampere(false);
    sc.training.fsdp = true;
    const SearchResult any = search(sc, quiet(5, false, 1));
    REQUIRE(!any.plans.empty());
    for (const auto& e : any.plans) CHECK(e.plan.virtual_stages == 1);
    SearchOptions ilv = quiet(3, false, 1);
    ilv.schedule = "interleaved-1f1b";
    const SearchResult none = search(sc, ilv);
    CHECK(none.plans.empty());
    bool noted = false;
    for (const auto& n : none.stats.notes) noted = noted || n.find("training.fsdp: only 1F1B plans are searched") == 0;
    CHECK(noted);
}

TEST_CASE("free choices: the same plans for any thread count, and merged slices equal the whole search", "[search][choices][threads][shards]") {
    const Scenario sc = hopper_and_ampere(false);
    SearchOptions o = quiet(4, false, 1);
    o.precisions = {Precision::bf16, Precision::fp8};
    o.fsdp = "any";
    const SearchResult one = search(sc, o);
    o.threads = 2;
    const SearchResult two = search(sc, o);
    REQUIRE(one.plans.size() == two.plans.size());
    for (std::size_t k = 0; k < one.plans.size(); ++k) {
        CHECK(one.plans[k].plan == two.plans[k].plan);
        CHECK(one.scores[k] == two.scores[k]);
    }
    o.threads = 1;
    std::vector<ShardResult> shards;
    SearchOptions so = o;
    so.shard_count = 3;
    for (int i = 0; i < 3; ++i) {
        so.shard_index = i;
        shards.push_back(search_shard(sc, so));
    }
    // through JSON, as slices travel
    Json arr = Json::array();
    for (const auto& s : shards) arr.push_back(to_json(s));
    const SearchResult merged = merge_shards(sc, parse_shard_results(arr, sc), o);
    REQUIRE(merged.plans.size() == one.plans.size());
    for (std::size_t k = 0; k < one.plans.size(); ++k) {
        CHECK(merged.plans[k].plan == one.plans[k].plan);
        CHECK(merged.scores[k] == one.scores[k]);
    }
}
