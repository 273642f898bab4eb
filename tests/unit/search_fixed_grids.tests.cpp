// Grids fixed by the user (docs/search.md, "Fixed grids"): options.cp_sizes, ep_sizes and
// etp_sizes search those sizes instead of the search's own, with the same pruning guarantee; the
// free search's best plan is the fixed search's best when the sizes are its own; a size the
// scenario cannot run is refused naming the option's element.
#include <catch2/catch.hpp>

#include <random>
#include <string>

#include "poseidon/estimate.hpp"
#include "poseidon/scenario.hpp"
#include "poseidon/search.hpp"
#include "search_random.hpp"

using namespace poseidon;

using search_test::quiet;
using search_test::require_pruned_equals_exhaustive;

namespace {

std::string problems_of(const Scenario& sc, const Json& options) {
    try {
        (void)search(sc, parse_search_options(options));
    } catch (const InputError& e) {
        return e.what();
    }
    return "";
}

SearchOptions fixed(SearchOptions o, std::vector<int> cp, std::vector<int> ep, std::vector<int> etp = {}) {
    o.cp_sizes = std::move(cp), o.ep_sizes = std::move(ep), o.etp_sizes = std::move(etp);
    return o;
}

}  // namespace

TEST_CASE("with fixed expert-parallel sizes the pruned search returns the exhaustive top-K of those sizes", "[search][differential][moe][ep][fixed]") {
    int checked = 0, feasible = 0;
    std::int64_t pruned_evals = 0, exhaustive_evals = 0;
    for (std::uint64_t seed = 7300; checked < 30; ++seed) {
        std::mt19937_64 rng(seed);
        const Json j = search_test::random_moe_scenario(rng, seed, true);
        const Scenario sc = parse_scenario(j);
        if (search_space_size(sc, false).plans > 1e5) continue;
        // one size, or two: 2 (every expert count here is divisible by it), and the experts' own
        const int experts = sc.model.num_experts;
        std::vector<int> eps = seed % 2 ? std::vector<int>{2} : std::vector<int>{2, experts};
        if (experts > sc.cluster.num_gpus()) eps = {2};
        INFO("seed " << seed << ": " << to_json(sc).dump());
        const SearchResult pr = require_pruned_equals_exhaustive(sc, fixed(quiet(3), {}, eps), fixed(quiet(3, true), {}, eps), pruned_evals, exhaustive_evals);
        for (const auto& e : pr.plans) {
            for (const auto& st : e.plan.stages) {
                REQUIRE(std::find(eps.begin(), eps.end(), st.ep) != eps.end());
                REQUIRE(st.etp == 1);
                REQUIRE(st.ep == e.plan.stages[0].ep);
            }
            REQUIRE(estimate(sc, e.plan).iteration_time_s == e.iteration_time_s);
        }
        feasible += !pr.plans.empty();
        ++checked;
    }
    CHECK(feasible >= 15);
    CHECK(pruned_evals < exhaustive_evals);
}

TEST_CASE("the free search's best plan is the best of the search fixed to its own sizes", "[search][moe][cp][fixed]") {
    // MoE scenarios at 8,192 or 16,384 tokens: the free search runs every cp x (ep, etp); fixed
    // to the sizes of its best plan, the search returns that plan, bit for bit
    int checked = 0, with_cp = 0, with_ep = 0;
    for (std::uint64_t seed = 7500; checked < 16; ++seed) {
        std::mt19937_64 rng(seed);
        Json j = search_test::random_moe_scenario(rng, seed);
        j["model"]["seq_length"] = seed % 2 ? 8192 : 16384;
        j["model"]["num_layers"] = std::min(j["model"]["num_layers"].get<int>(), 6);
        j["training"]["flash_attention"] = true;
        const Scenario sc = parse_scenario(j);
        if (search_space_size(sc, false).plans > 3e4) continue;
        INFO("seed " << seed << ": " << to_json(sc).dump());
        const SearchResult free = search(sc, quiet(3, false, 1));
        REQUIRE(free.stats.complete);
        if (free.plans.empty()) continue;
        const StagePlan& st = free.plans[0].plan.stages[0];
        const SearchResult one = search(sc, fixed(quiet(3, false, 1), {st.cp}, {st.ep}, {st.etp}));
        REQUIRE(one.stats.complete);
        REQUIRE(!one.plans.empty());
        REQUIRE(one.plans[0].iteration_time_s == free.plans[0].iteration_time_s);
        REQUIRE(to_json(one.plans[0].plan).dump() == to_json(free.plans[0].plan).dump());
        // and it searched less: one grid instead of all
        CHECK(one.stats.evaluated + one.stats.pruned <= free.stats.evaluated + free.stats.pruned);
        with_cp += st.cp > 1;
        with_ep += st.ep > 1;
        ++checked;
    }
    CHECK(with_cp > 0);
    CHECK(with_ep > 0);
}

TEST_CASE("a context-parallel size fixed below 8,192 tokens is searched", "[search][cp][fixed]") {
    // the search's own sizes start at 8,192 tokens; a user may run cp 2 at 4,096 (dgx-h100-16: 128 GPUs)
    const Scenario sc = parse_scenario_text(R"({"model": {"preset": "tiny-8l", "seq_length": 4096}, "cluster": "dgx-h100-16",
        "training": {"global_batch_size": 32, "flash_attention": true}})");
    const SearchResult own = search(sc, quiet(3, false, 1));
    REQUIRE(!own.plans.empty());
    for (const auto& p : own.plans) CHECK(p.plan.stages[0].cp == 1);
    const SearchResult r = search(sc, fixed(quiet(3, false, 1), {2}, {}));
    REQUIRE(!r.plans.empty());
    for (const auto& p : r.plans) {
        for (const auto& st : p.plan.stages) CHECK(st.cp == 2);
        CHECK(estimate(sc, p.plan).iteration_time_s == p.iteration_time_s);
    }
    bool noted = false;
    for (const auto& n : r.stats.notes) noted = noted || n == "context parallelism: cp 2 searched (as options.cp_sizes fixes them), every stage of a plan with the same cp";
    CHECK(noted);
    // and the same as exhaustive
    const SearchResult x = search(sc, fixed(quiet(3, true, 1), {2}, {}));
    search_test::require_same_plans(r, x);
}

TEST_CASE("fixed expert grids are named in a note, largest first", "[search][moe][ep][fixed]") {
    const Scenario sc = parse_scenario_text(R"({"model": "mixtral-8x7b", "cluster": "dgx-h100-16",
        "training": {"global_batch_size": 64, "sequence_parallel": true, "distributed_optimizer": true, "recompute": "full"}})");
    const SearchResult r = search(sc, fixed(quiet(3, false, 1), {}, {4, 8}, {1, 2}));
    REQUIRE(!r.plans.empty());
    bool noted = false;
    for (const auto& n : r.stats.notes)
        noted = noted || n == "expert parallelism: 4 expert grids searched (ep x etp: 8x2, 8x1, 4x2, 4x1, as options.ep_sizes and options.etp_sizes fix them), every stage of a plan on the same one";
    CHECK(noted);
    // a context-parallel size fixed below the search's own per-rank minimum gets a note
    const Scenario llama = parse_scenario_text(R"({"model": "llama3-8b", "cluster": "dgx-h100-16", "training": {"global_batch_size": 64}})");
    const SearchResult cp32 = search(llama, fixed(quiet(1, false, 1), {32}, {}));
    CHECK(std::find(cp32.stats.notes.begin(), cp32.stats.notes.end(),
                    "options.cp_sizes: cp 32 leaves 256 tokens of each sequence per rank, fewer than the 4096 the search keeps by itself (a rank's attention that "
                    "short hides little of the exchange)") != cp32.stats.notes.end());
    // one kind fixed: the note names it alone
    const SearchResult etp = search(sc, fixed(quiet(1, false, 1), {}, {}, {2}));
    CHECK(std::any_of(etp.stats.notes.begin(), etp.stats.notes.end(), [](const std::string& n) { return n.find(", as options.etp_sizes fixes them)") != std::string::npos; }));
    for (const auto& p : r.plans)
        for (const auto& st : p.plan.stages) {
            CHECK((st.ep == 4 || st.ep == 8));
            CHECK((st.etp == 1 || st.etp == 2));
        }
}

TEST_CASE("fixed sizes the scenario cannot run are refused naming the option's element", "[search][fixed][errors]") {
    const Scenario dense = parse_scenario_text(R"({"model": {"preset": "tiny-8l", "seq_length": 4096}, "cluster": "dgx-h100-16", "training": {"global_batch_size": 32}})");
    CHECK(problems_of(dense, {{"ep_sizes", {1, 2}}}).find("options.ep_sizes[1]: 2 needs a mixture-of-experts model (num_experts > 0); the model is dense: expected 1") != std::string::npos);
    CHECK(problems_of(dense, {{"etp_sizes", {4}}}).find("options.etp_sizes[0]: 4 needs a mixture-of-experts model") != std::string::npos);
    CHECK(problems_of(dense, {{"cp_sizes", {3}}}).find("options.cp_sizes[0]: 3 does not split seq_length 4096 into 2 x cp equal chunks") != std::string::npos);
    CHECK(problems_of(dense, {{"cp_sizes", {256}}}).find("options.cp_sizes[0]: 256 is more than the cluster's 128 GPUs") != std::string::npos);
    CHECK(problems_of(dense, {{"ep_sizes", {1}}, {"cp_sizes", {1}}}).empty());
    const Scenario moe = parse_scenario_text(R"({"model": "mixtral-8x7b", "cluster": "dgx-h100-16", "training": {"global_batch_size": 64, "recompute": "full"}})");
    CHECK(problems_of(moe, {{"ep_sizes", {3}}}).find("options.ep_sizes[0]: 3 does not divide num_experts 8") != std::string::npos);
    CHECK(problems_of(moe, {{"etp_sizes", {3}}}).find("options.etp_sizes[0]: 3 does not divide moe_ffn_hidden_size 14336") != std::string::npos);
    CHECK(problems_of(moe, {{"ep_sizes", {8}}, {"etp_sizes", {32}}}).find("options.etp_sizes: no expert grid ep x etp fits the cluster's 128 GPUs") != std::string::npos);
    const Scenario window = parse_scenario_text(R"({"model": {"preset": "gpt-oss-20b", "seq_length": 8192}, "cluster": "dgx-h100-16", "training": {"global_batch_size": 32}})");
    CHECK(problems_of(window, {{"cp_sizes", {2}}}).find("options.cp_sizes[0]: 2 with the model's sliding-window attention needs training.cp_comm_type") != std::string::npos);
    // Ulysses splits the heads: a cp no TP degree leaves a share of them is refused, not "no plan"
    const Scenario a2a = parse_scenario_text(R"({"model": {"preset": "tiny-8l", "seq_length": 4096}, "cluster": "dgx-h100-16", "training": {"global_batch_size": 32, "cp_comm_type": "a2a"}})");
    CHECK(problems_of(a2a, {{"cp_sizes", {64}}}).find("options.cp_sizes[0]: 64 does not divide the model's") != std::string::npos);
    CHECK(problems_of(a2a, {{"cp_sizes", {2}}}).empty());
    // the options' own shape
    const auto parse_error = [](const Json& o) {
        try {
            (void)parse_search_options(o);
        } catch (const InputError& e) {
            return std::string(e.what());
        }
        return std::string();
    };
    CHECK(parse_error({{"cp_sizes", {0}}}).find("options.cp_sizes[0]: 0 is not allowed; expected an array of 1 to 16 distinct context-parallel sizes, each 1 to 1024") != std::string::npos);
    CHECK(parse_error({{"ep_sizes", {8, 8}}}).find("options.ep_sizes[1]: 8 is given twice") != std::string::npos);
    CHECK(parse_error({{"etp_sizes", 2}}).find("options.etp_sizes: 2 is not allowed; expected an array of 1 to 16 distinct expert tensor-parallel sizes") != std::string::npos);
    CHECK(parse_error({{"ep_sizes", Json::array()}}).find("options.ep_sizes: [] is not allowed") != std::string::npos);
}
