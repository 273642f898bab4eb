// Shared by the search tests: the random scenarios of the differential test and helpers.
#pragma once

#include <catch2/catch.hpp>

#include <array>
#include <algorithm>
#include <cmath>
#include <functional>
#include <random>
#include <string>

#include "poseidon/estimate.hpp"
#include "poseidon/json_util.hpp"
#include "poseidon/scenario.hpp"
#include "../../core/src/search_topk.hpp"
#include "poseidon/search.hpp"

namespace search_test {

using namespace poseidon;

// Issue 11's 16 A100-80GB (2 nodes of 8) + 16 T4 (4 nodes of 4), a slower network between the
// types: the cluster of the group-block tests.
inline Scenario two_types() {
    return parse_scenario_text(
        R"({"model": "opt-350m", "training": {"global_batch_size": 256}, "cluster": {"name": "16 A100 + 16 T4", "inter_group_bw_GBps": 3, "groups": [)"
        R"({"device": "a100-sxm4-80gb", "nodes": 2, "gpus_per_node": 8, "inter_node_bw_GBps": 12.5},)"
        R"({"device": "t4-16gb", "nodes": 4, "gpus_per_node": 4, "inter_node_bw_GBps": 6.25}]}})");
}

// 8 A100-80GB (2 nodes of 4) + 2 V100-32GB, tiny-8l, batch 4: a space the exhaustive search
// walks in well under a second (the exact-count tests of the space options).
inline Scenario small_two_types() {
    return parse_scenario_text(
        R"({"model":"tiny-8l","training":{"global_batch_size":4},"cluster":{"name":"small","groups":[)"
        R"({"device":"a100-sxm4-80gb","nodes":2,"gpus_per_node":4,"inter_node_bw_GBps":25},{"device":"v100-sxm2-32gb","nodes":1,"gpus_per_node":2,"inter_node_bw_GBps":25}]}})");
}

inline const char* const kDevices[] = {"a100-sxm4-80gb", "a100-sxm4-40gb", "v100-sxm2-16gb", "v100-sxm2-32gb", "t4-16gb", "rtx2080-8gb", "a10-24gb", "h100-sxm5-80gb"};

// A small random scenario: 2-3 groups (presets or an inline device), at most 32 GPUs, at most 16
// layers, a model small enough that some plans fit and big enough that some do not.
inline Json random_scenario(std::mt19937_64& rng) {
    auto pick = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
    auto uni = [&](double lo, double hi) { return std::uniform_real_distribution<double>(lo, hi)(rng); };
    const int heads = std::array<int, 3>{4, 8, 12}[pick(0, 2)];
    const int hidden = heads * std::array<int, 3>{64, 128, 256}[pick(0, 2)];
    Json model = {{"name", "random"},
                  {"num_layers", pick(2, 16)},
                  {"hidden_size", hidden},
                  {"num_attention_heads", heads},
                  {"num_kv_heads", pick(0, 1) ? heads : heads / 4},
                  {"vocab_size", pick(1000, 64000)},
                  {"seq_length", std::array<int, 3>{256, 1024, 2048}[pick(0, 2)]}};
    Json groups = Json::array();
    const int ngroups = pick(2, 3);
    int total = 0;
    for (int g = 0; g < ngroups; ++g) {
        const int gpn = std::array<int, 4>{1, 2, 4, 8}[pick(0, 3)];
        int nodes = pick(1, 4);
        while (total + nodes * gpn > 32) --nodes;
        if (nodes < 1) break;
        total += nodes * gpn;
        Json dev;
        if (pick(0, 3) == 0)
            dev = {{"name", "tiny-" + std::to_string(g)},
                   {"peak_tflops", uni(10, 200)},
                   {"memory_GiB", uni(3, 12)},
                   {"memory_bw_GBps", uni(200, 2000)},
                   {"intra_node_bw_GBps", uni(10, 300)}};
        else
            dev = kDevices[pick(0, 7)];
        groups.push_back({{"device", dev}, {"nodes", nodes}, {"gpus_per_node", gpn}, {"inter_node_bw_GBps", uni(1, 50)}});
    }
    Json training = {{"global_batch_size", std::array<int, 6>{1, 2, 4, 8, 16, 32}[pick(0, 5)]}};
    if (pick(0, 3) == 0) training["recompute"] = "full";
    if (pick(0, 3) == 0) training["distributed_optimizer"] = true;
    return {{"model", model}, {"training", training}, {"cluster", {{"name", "random"}, {"groups", groups}}}};
}

// threads: 0 = all cores (the default), so that most tests also run the parallel search.
inline SearchOptions quiet(int k = 3, bool exhaustive = false, int threads = 0) {
    SearchOptions o;
    o.top_k = k;
    o.exhaustive = exhaustive;
    o.time_limit_s = 600;
    o.baselines = false;
    o.threads = threads;
    return o;
}

inline bool close(double a, double b) { return std::abs(a - b) <= 1e-9 * std::max(std::abs(a), std::abs(b)); }

// The differential check of every search dimension: the pruned and the exhaustive search of `sc`
// both complete with as many plans, rank by rank of the same score (iteration time; tokens/s when
// the batch may vary), each plan's score is its estimate bit for bit and it fits in memory. Adds
// the evaluations to the counters; returns the pruned result for the caller's own checks.
// random_scenario made MoE: 4, 8 or 16 experts by seed, top 1 or 2, experts as wide as the hidden
// size (`wide`: every fourth seed four times that), a dense FFN of 4 h.
inline Json random_moe_scenario(std::mt19937_64& rng, std::uint64_t seed, bool wide = false) {
    Json j = random_scenario(rng);
    j["model"]["num_experts"] = std::array<int, 3>{4, 8, 16}[seed % 3];
    j["model"]["moe_top_k"] = 1 + static_cast<int>(seed % 2);
    j["model"]["moe_ffn_hidden_size"] = j["model"]["hidden_size"].get<int>() * (wide && seed % 4 == 0 ? 4 : 1);
    j["model"]["ffn_hidden_size"] = 4 * j["model"]["hidden_size"].get<int>();
    return j;
}

inline SearchResult require_pruned_equals_exhaustive(const Scenario& sc, const SearchOptions& pruned, const SearchOptions& exhaustive,
                                                     std::int64_t& pruned_evals, std::int64_t& exhaustive_evals) {
    SearchResult pr = search(sc, pruned);
    const SearchResult ex = search(sc, exhaustive);
    REQUIRE(pr.stats.complete);
    REQUIRE(ex.stats.complete);
    REQUIRE(pr.plans.size() == ex.plans.size());
    const bool by_tokens = sc.training.global_batch_tolerance > 0;
    for (std::size_t k = 0; k < pr.plans.size(); ++k) {
        INFO("rank " << k << ": pruned " << pr.plans[k].iteration_time_s << " s, " << pr.plans[k].tokens_per_s << " tokens/s; exhaustive "
                      << ex.plans[k].iteration_time_s << " s, " << ex.plans[k].tokens_per_s << " tokens/s");
        if (by_tokens)
            REQUIRE(close(pr.plans[k].tokens_per_s, ex.plans[k].tokens_per_s));
        else
            REQUIRE(close(pr.plans[k].iteration_time_s, ex.plans[k].iteration_time_s));
        REQUIRE(pr.scores[k] == pr.plans[k].iteration_time_s);
        REQUIRE(ex.scores[k] == ex.plans[k].iteration_time_s);
        REQUIRE(pr.plans[k].memory_fits);
    }
    pruned_evals += pr.stats.evaluated;
    exhaustive_evals += ex.stats.evaluated;
    return pr;
}

// Both searches' plans, rank by rank: the same plan and the same time to the bit.
inline void require_same_plans(const SearchResult& a, const SearchResult& b) {
    REQUIRE(a.plans.size() == b.plans.size());
    for (std::size_t k = 0; k < a.plans.size(); ++k) {
        INFO("rank " << k << ": " << a.plans[k].iteration_time_s << " s against " << b.plans[k].iteration_time_s << " s");
        REQUIRE(a.plans[k].iteration_time_s == b.plans[k].iteration_time_s);
        REQUIRE(to_json(a.plans[k].plan).dump() == to_json(b.plans[k].plan).dump());
    }
}

// Searches sc again with `other`, options that change the walk and not the plans (budgets,
// probes, rounds): the same plans as `pr`, bit for bit; true when its counts differ (the walk
// changed).
inline bool same_plans_other_walk(const Scenario& sc, const SearchResult& pr, const SearchOptions& other) {
    const SearchResult r = search(sc, other);
    REQUIRE(r.stats.complete);
    require_same_plans(pr, r);
    return pr.stats.pruned + pr.stats.evaluated != r.stats.pruned + r.stats.evaluated;
}

// A shape of the MoE sweep (`poseidon_bench megatron-sweep --moe`, tests/bench/
// bench_megatron_sweep.cpp): the Qwen3 235B-A22B preset at `layers` blocks, batch 1,024, SP and
// the distributed optimizer, `nodes` nodes of 8 GPUs of each of the sweep's first `types` device
// types (H100, A100-80GB, A100-40GB, V100).
inline Scenario sweep_moe_scenario(int types, int nodes, int layers, const std::string& recompute) {
    const char* devices[] = {"h100-sxm5-80gb", "a100-sxm4-80gb", "a100-sxm4-40gb", "v100-sxm2-32gb"};
    const double nic_GBps[] = {400, 200, 200, 100};
    Json groups = Json::array();
    for (int t = 0; t < types; ++t)
        groups.push_back({{"device", devices[t]}, {"nodes", nodes}, {"gpus_per_node", 8}, {"inter_node_bw_GBps", nic_GBps[t]}});
    return parse_scenario(Json{{"model", {{"preset", "qwen3-235b-a22b"}, {"num_layers", layers}}},
                               {"training", {{"global_batch_size", 1024}, {"recompute", recompute}, {"sequence_parallel", true}, {"distributed_optimizer", true}}},
                               {"cluster", {{"name", "megatron-sweep"}, {"groups", groups}}}});
}

// The differential check of an interleaved-only search of scenario j made deep (16, 24, 32 or 48
// layers, drawn from rng): false when its space is over 2e5 plans (too dear for the exhaustive
// reference); else both searches complete with the same plans, rank by rank, in pr and ex.
inline bool deep_interleaved_matches(Json j, std::mt19937_64& rng, const SearchOptions& pruned, const SearchOptions& exhaustive, SearchResult& pr,
                                     SearchResult& ex) {
    j["model"]["num_layers"] = std::array<int, 4>{16, 24, 32, 48}[rng() % 4];
    const Scenario sc = parse_scenario(j);
    if (search_space_size(sc, false, "interleaved-1f1b").plans > 2e5) return false;
    INFO(j.dump());
    pr = search(sc, pruned);
    ex = search(sc, exhaustive);
    REQUIRE(pr.stats.complete);
    REQUIRE(ex.stats.complete);
    require_same_plans(pr, ex);
    return true;
}

// deep_interleaved_matches on consecutive seeds from `seed` until `count` scenarios were checked,
// each drawn by make(rng); each pruned result goes to each(pr). Returns the evaluations of the
// pruned and of the exhaustive searches, summed.
template <class Make, class Each>
inline std::pair<std::int64_t, std::int64_t> deep_interleaved_runs(std::uint64_t seed, int count, const SearchOptions& pruned,
                                                                   const SearchOptions& exhaustive, Make make, Each each) {
    std::pair<std::int64_t, std::int64_t> evals{0, 0};
    for (int checked = 0; checked < count; ++seed) {
        std::mt19937_64 rng(seed);
        INFO("seed " << seed);
        SearchResult pr, ex;
        if (!deep_interleaved_matches(make(rng), rng, pruned, exhaustive, pr, ex)) continue;
        each(pr);
        evals.first += pr.stats.evaluated;
        evals.second += ex.stats.evaluated;
        ++checked;
    }
    return evals;
}

// A wider space's search result against a narrower search of the same scenario: never slower;
// true when faster, or when the narrower search finds no plan.
inline bool wider_is_better(const Scenario& sc, const SearchResult& wide, const SearchOptions& narrow) {
    if (wide.plans.empty()) return false;
    const SearchResult n = search(sc, narrow);
    // (ranked by tie bucket: a tie within it may come first, docs/search.md, "Results")
    if (!n.plans.empty()) REQUIRE(wide.plans[0].iteration_time_s <= poseidon::detail::tie_last(n.plans[0].iteration_time_s));
    return n.plans.empty() || wide.plans[0].iteration_time_s < n.plans[0].iteration_time_s;
}

// One training choice fixed in the scenario, and how a plan of its search is tagged with it.
struct FixedChoice {
    Scenario sc;
    std::function<void(Plan&)> tag;
};

// The top K of a search with training choices free (`free`) is the merge by (key, plan) of the
// exhaustive searches with each choice fixed in the scenario, rank by rank the same plan and
// score; each listed plan is the plan `estimate` scores in its own choice.
inline void require_free_is_merge_of_fixed(const Scenario& sc, const SearchResult& free, const std::vector<FixedChoice>& fixed, std::size_t k = 3) {
    std::vector<RankedPlan> all;
    for (const FixedChoice& f : fixed) {
        const SearchResult r = search(f.sc, quiet(static_cast<int>(k), true));
        REQUIRE(r.stats.complete);
        for (std::size_t i = 0; i < r.plans.size(); ++i) {
            const Estimate& e = r.plans[i];
            // the ranking key: seconds per global_batch_size samples
            const double key = e.iteration_time_s * static_cast<double>(f.sc.training.global_batch_size) / static_cast<double>(e.plan.micro_batch_size * e.plan.num_micro_batches);
            RankedPlan rp{key, r.scores[i], e.plan};
            f.tag(rp.plan);
            all.push_back(rp);
        }
    }
    std::sort(all.begin(), all.end(), ranked_before);
    REQUIRE(free.plans.size() == std::min(k, all.size()));
    for (std::size_t i = 0; i < free.plans.size(); ++i) {
        REQUIRE(free.plans[i].plan == all[i].plan);
        REQUIRE(free.scores[i] == all[i].iteration_time_s);
        REQUIRE(estimate(sc, free.plans[i].plan).iteration_time_s == free.plans[i].iteration_time_s);
    }
}

// A plan that carries a training choice (plan.precision, fsdp, recompute) is written back as read,
// and estimated as the plan without it (`bare`) in the scenario with it fixed (`fixed`): the same
// iteration time and first stage's memory.
inline void check_choice_as_fixed(const Scenario& sc, const Plan& plan, const Scenario& fixed, const Plan& bare) {
    CHECK(parse_plan(to_json(plan), sc) == plan);
    const Estimate a = estimate(sc, plan), b = estimate(fixed, bare);
    CHECK(a.iteration_time_s == b.iteration_time_s);
    CHECK(a.stages[0].memory.total_GiB() == b.stages[0].memory.total_GiB());
}

}  // namespace search_test
