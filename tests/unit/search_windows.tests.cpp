// The window cycles' regime (docs/search.md, "Bounds", family W, and "Early stopping in the
// DAG"): long pipelines of near-equal stages and more micro-batches than stages, where family W,
// the window bound and the drain bound do the cutting. Pruning must still return the exhaustive
// top K there.
#include "search_random.hpp"
#include "poseidon/json_util.hpp"

using namespace search_test;

namespace {

// One or two groups of one-GPU nodes (so up to 12 one-GPU stages), 8-12 layers, a batch of 32-128
// (micro-batches outnumber the stages), links from slow to fast.
Json long_pipeline_scenario(std::mt19937_64& rng) {
    auto pick = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
    auto uni = [&](double lo, double hi) { return std::uniform_real_distribution<double>(lo, hi)(rng); };
    const char* const devices[] = {"a100-sxm4-80gb", "v100-sxm2-32gb", "a10-24gb"};
    Json model = {{"name", "long"},
                  {"num_layers", pick(8, 12)},
                  {"hidden_size", pick(0, 1) ? 512 : 1024},
                  {"num_attention_heads", 8},
                  {"vocab_size", 8000},
                  {"seq_length", 512}};
    Json groups = Json::array();
    const int ngroups = pick(1, 2);
    for (int g = 0; g < ngroups; ++g)
        groups.push_back({{"device", devices[pick(0, 2)]}, {"nodes", pick(4, 12 / ngroups)}, {"gpus_per_node", 1}, {"inter_node_bw_GBps", uni(0.5, 50)}});
    Json training = {{"global_batch_size", std::array<int, 3>{32, 64, 128}[pick(0, 2)]}};
    return {{"model", model}, {"training", training}, {"cluster", {{"name", "long pipeline"}, {"groups", groups}}}};
}

}  // namespace

TEST_CASE("long pipelines of near-equal stages with many micro-batches: the pruned search returns the exhaustive top K on 60 random scenarios",
          "[search][differential][windows]") {
    int checked = 0;
    std::int64_t pruned_evals = 0, exhaustive_evals = 0;
    const SearchOptions pruned = quiet(3), exhaustive = quiet(3, true);
    for (std::uint64_t seed = 1; checked < 60; ++seed) {
        std::mt19937_64 rng(seed);
        const Scenario sc = parse_scenario(long_pipeline_scenario(rng));
        if (search_space_size(sc, false).plans > 1e5) continue;
        INFO("seed " << seed << ": " << to_json(sc).dump());
        require_pruned_equals_exhaustive(sc, pruned, exhaustive, pruned_evals, exhaustive_evals);
        ++checked;
    }
    CHECK(pruned_evals * 10 < exhaustive_evals);
}

namespace {

// One-GPU nodes, so a stage of two or more GPUs synchronises its gradients across nodes (5-50
// GB/s) and that sync weighs as much as its work; a batch of 4-16 (often fewer micro-batches
// than stages): the regime of family G, where a stage's own sync after its last backward, which
// waits for the round trip through the stages after it, bounds the iteration (docs/search.md,
// "Bounds"). On these 60 scenarios the one-thread pruned search took 3,308
// evaluations before family G, 2,770 with G alone and 2,643 with R and W ending in the drain.
Json sync_bound_scenario(std::mt19937_64& rng) {
    auto pick = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
    auto uni = [&](double lo, double hi) { return std::uniform_real_distribution<double>(lo, hi)(rng); };
    const char* const devices[] = {"a100-sxm4-80gb", "v100-sxm2-32gb", "a10-24gb"};
    Json model = {{"name", "sync"},
                  {"num_layers", pick(8, 16)},
                  {"hidden_size", pick(0, 1) ? 1024 : 2048},
                  {"num_attention_heads", 16},
                  {"vocab_size", 8000},
                  {"seq_length", 512}};
    Json groups = Json::array();
    const int ngroups = pick(1, 2);
    for (int g = 0; g < ngroups; ++g)
        groups.push_back({{"device", devices[pick(0, 2)]}, {"nodes", pick(4, 16 / ngroups)}, {"gpus_per_node", 1}, {"inter_node_bw_GBps", uni(5, 50)}});
    Json training = {{"global_batch_size", std::array<int, 3>{4, 8, 16}[pick(0, 2)]}};
    if (pick(0, 1)) training["distributed_optimizer"] = true;
    return {{"model", model}, {"training", training}, {"cluster", {{"name", "sync-bound pipeline"}, {"groups", groups}}}};
}

}  // namespace

TEST_CASE("pipelines whose gradient syncs weigh as much as their stages' work, with few micro-batches: the pruned search returns the exhaustive top K on 60 random scenarios",
          "[search][differential][windows][sync]") {
    int checked = 0;
    std::int64_t pruned_evals = 0, exhaustive_evals = 0;
    const SearchOptions pruned = quiet(3, false, 1), exhaustive = quiet(3, true);
    for (std::uint64_t seed = 1; checked < 60; ++seed) {
        std::mt19937_64 rng(seed);
        const Scenario sc = parse_scenario(sync_bound_scenario(rng));
        if (search_space_size(sc, false).plans > 1e5) continue;
        INFO("seed " << seed << ": " << to_json(sc).dump());
        require_pruned_equals_exhaustive(sc, pruned, exhaustive, pruned_evals, exhaustive_evals);
        ++checked;
    }
    CHECK(pruned_evals * 100 < exhaustive_evals);
}
