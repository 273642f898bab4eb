// training.global_batch_tolerance in the search (docs/search.md, "The space", step 1): plans may
// train any global batch within the tolerance and are ranked by tokens/s.
#include <catch2/catch.hpp>

#include <random>
#include <string>

#include "poseidon/json_util.hpp"
#include "poseidon/scenario.hpp"
#include "poseidon/search.hpp"
#include "search_random.hpp"

using namespace poseidon;

using search_test::close;
using search_test::quiet;
using search_test::random_scenario;
using search_test::require_pruned_equals_exhaustive;

namespace {
std::int64_t trained(const Estimate& e) { return e.plan.micro_batch_size * e.plan.num_micro_batches; }
}  // namespace

TEST_CASE("with a batch tolerance the pruned search returns the exhaustive top-K by tokens/s on random scenarios", "[search][differential][batch]") {
    int checked = 0, feasible = 0, other_batch = 0;
    std::int64_t pruned_evals = 0, exhaustive_evals = 0;
    const SearchOptions pruned = quiet(3), exhaustive = quiet(3, true);
    for (std::uint64_t seed = 5000; checked < 150; ++seed) {
        std::mt19937_64 rng(seed);
        Json j = random_scenario(rng);
        j["training"]["global_batch_tolerance"] = std::array<double, 3>{0.1, 0.25, 0.5}[seed % 3];
        Scenario sc = parse_scenario(j);
        if (search_space_size(sc).plans > 3e5) continue;
        const auto [lo, hi] = global_batch_range(sc.training);
        INFO("seed " << seed << ": " << to_json(sc).dump());
        const SearchResult pr = require_pruned_equals_exhaustive(sc, pruned, exhaustive, pruned_evals, exhaustive_evals);
        for (std::size_t k = 0; k < pr.plans.size(); ++k) {
            REQUIRE(trained(pr.plans[k]) >= lo);
            REQUIRE(trained(pr.plans[k]) <= hi);
            if (k > 0) REQUIRE(pr.plans[k].tokens_per_s <= pr.plans[k - 1].tokens_per_s * (1 + 1e-12));
        }
        if (!pr.plans.empty()) ++feasible;
        if (!pr.plans.empty() && trained(pr.plans[0]) != sc.training.global_batch_size) ++other_batch;
        ++checked;
    }
    INFO("feasible " << feasible << ", best trains another batch " << other_batch << ", evaluations " << pruned_evals << " / " << exhaustive_evals);
    CHECK(feasible >= 100);
    CHECK(other_batch >= 20);
    CHECK(pruned_evals * 3 < exhaustive_evals);
}

TEST_CASE("a batch tolerance lets the search use non-power-of-two data parallelism (issue 11)", "[search][batch]") {
    // 80 A100 + 240 V100, global batch 1024: the exact batch forces DP to divide 1024; 2 % lets 80-way
    // DP stages train 13 micro-batches of 80 (1040 samples, as Sailor's plan does).
    const std::string base = R"({"model":"opt-350m","training":{"global_batch_size":1024)";
    const std::string rest =
        R"(},"cluster":{"name":"a100-v100","groups":[{"device":"a100-sxm4-40gb","nodes":10,"gpus_per_node":8,"inter_node_bw_GBps":25},)"
        R"({"device":"v100-sxm2-16gb","nodes":30,"gpus_per_node":8,"inter_node_bw_GBps":25}]}})";
    const Scenario exact = parse_scenario_text(base + rest), loose = parse_scenario_text(base + R"(,"global_batch_tolerance":0.02)" + rest);
    const SearchResult a = search(exact, quiet(1)), b = search(loose, quiet(1));
    REQUIRE(!a.plans.empty());
    REQUIRE(!b.plans.empty());
    for (const auto& st : a.plans[0].plan.stages) CHECK(1024 % st.dp() == 0);
    bool odd_dp = false;
    for (const auto& st : b.plans[0].plan.stages) odd_dp = odd_dp || (st.dp() & (st.dp() - 1)) != 0;
    CHECK(odd_dp);
    CHECK(trained(b.plans[0]) != 1024);
    CHECK(trained(b.plans[0]) <= 1044);
    // 1.31x: with the exact batch the stages hold powers of two of GPUs, 192 of the 320
    CHECK(b.plans[0].tokens_per_s > 1.25 * a.plans[0].tokens_per_s);
    // the JSON reports the batch each plan trains, and the plan estimates again as it is
    const Json j = to_json(loose, b);
    CHECK(j["plans"][0]["global_batch_size"].get<std::int64_t>() == trained(b.plans[0]));
    CHECK(estimate(loose, b.plans[0].plan).iteration_time_s == b.plans[0].iteration_time_s);
    CHECK_THROWS_AS(estimate(exact, b.plans[0].plan), InputError);
    // MFU counts the samples the plan trains, as tokens/s does: the same as with that batch exact
    Scenario same = loose;
    same.training.global_batch_size = trained(b.plans[0]);
    same.training.global_batch_tolerance = 0;
    const Estimate e = estimate(same, b.plans[0].plan);
    CHECK(e.mfu == Approx(b.plans[0].mfu).epsilon(1e-12));
    CHECK(e.model_tflops_per_gpu == Approx(b.plans[0].model_tflops_per_gpu).epsilon(1e-12));
    CHECK(e.tokens_per_s == Approx(b.plans[0].tokens_per_s).epsilon(1e-12));
}

TEST_CASE("global_batch_tolerance is checked and counted in the space", "[search][batch][space]") {
    const std::string head = R"({"model":"tiny-8l","cluster":"demo-mixed-16","training":{"global_batch_size":8,"global_batch_tolerance":)";
    CHECK_THROWS_WITH(parse_scenario_text(head + "0.6}}"), Catch::Contains("scenario.training.global_batch_tolerance"));
    CHECK_THROWS_AS(parse_scenario_text(head + "-0.1}}"), InputError);
    const Scenario sc = parse_scenario_text(head + "0.25}}");  // batches 6 to 10
    CHECK(global_batch_range(sc.training) == std::pair<std::int64_t, std::int64_t>{6, 10});
    // (mbs, m) with 6 <= mbs m <= 10: 5 + 3 + 2 + 1 x 7 = 17 shapes, all usable here
    CHECK(search_space_size(sc).micro_batch_sizes == 17);
    SearchOptions o = quiet(1, true);
    o.schedule = "1f1b";
    const SearchResult r = search(sc, o);
    REQUIRE(r.stats.complete);
    CHECK(static_cast<double>(r.stats.evaluated) == search_space_size(sc, false, "1f1b").plans);
    CHECK(to_json(sc)["training"]["global_batch_tolerance"].get<double>() == 0.25);
    // a tolerance that would give the search too many (mbs, m) pairs is refused, naming the key
    const Scenario huge = parse_scenario_text(R"({"model":"tiny-8l","cluster":"demo-mixed-16","training":{"global_batch_size":100000000,"global_batch_tolerance":0.5}})");
    CHECK_THROWS_WITH(search(huge, quiet(1)), Catch::Contains("global_batch_tolerance"));
    CHECK_THROWS_AS(search_space_size(huge), InputError);
}

TEST_CASE("an exact batch with few factors of two is named with the tolerance that reaches a rounder one", "[search][batch]") {
    // 16 A100 in one group: a stage's data parallelism divides the batch, so 63 samples (odd) leave
    // the plans fewer replicas than 64; the note names 0.016, whose range (62 to 64) holds 64, and
    // following it gives at least the tokens/s of the exact batch.
    const auto scenario = [](int batch, double tol) {
        Json j = Json::parse(R"({"model":"opt-350m","cluster":{"name":"a100","groups":[{"device":"a100-sxm4-80gb","nodes":2,"gpus_per_node":8,"inter_node_bw_GBps":25}]}})");
        j["training"]["global_batch_size"] = batch;
        if (tol > 0) j["training"]["global_batch_tolerance"] = tol;
        return parse_scenario(j);
    };
    const auto note = [](const SearchResult& r) {
        for (const auto& n : r.stats.notes)
            if (n.find("global_batch_tolerance") != std::string::npos) return n;
        return std::string{};
    };
    const SearchResult odd = search(scenario(63, 0), quiet(1));
    CHECK(note(odd) == "training.global_batch_size 63 is odd, where the largest group has 16 GPUs: every stage's data-parallel degree divides the batch, "
                       "so plans may run fewer replicas and more stages than at 64; training.global_batch_tolerance 0.016 lets the search train any batch "
                       "from 62 to 64, 64 among them, ranked by tokens/s");
    const SearchResult advised = search(scenario(63, 0.016), quiet(1));
    REQUIRE(!odd.plans.empty());
    REQUIRE(!advised.plans.empty());
    CHECK(advised.plans[0].tokens_per_s > odd.plans[0].tokens_per_s);
    CHECK(note(advised).empty());
    // 40 = 8 x 5: its power-of-two factor is below 16, and 48 is 20 % away, 32 too: no advice
    CHECK(note(search(scenario(40, 0), quiet(1))).empty());
    // 66 = 2 x 33 names 64, 3 % below it
    CHECK(note(search(scenario(66, 0), quiet(1))).find("has only 2 as its power-of-two factor") != std::string::npos);
    // as round as the group: nothing to say
    CHECK(note(search(scenario(64, 0), quiet(1))).empty());
    CHECK(note(search(scenario(96, 0), quiet(1))).empty());
}
