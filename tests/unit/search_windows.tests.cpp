// The window cycles' regime (docs/search.md, "Bounds", family W, and "Early stopping in the
// DAG"): long pipelines of near-equal stages and more micro-batches than stages, where family W,
// the window bound and the drain bound do the cutting; and family G's: gradient syncs as heavy as
// the stages' work, few micro-batches. Pruning must still return the exhaustive top K there.
#include <array>
#include <utility>

#include "search_random.hpp"
#include "poseidon/json_util.hpp"

using namespace search_test;

namespace {

// Pipelines of one-GPU nodes in one or two groups, links drawn from [bw_lo, bw_hi] GB/s.
struct PipelineShape {
    const char* name;
    int layers_lo, layers_hi, hidden_small, hidden_large, heads, nodes_max;
    double bw_lo, bw_hi;
    std::array<int, 3> batches;
    bool maybe_distributed_optimizer;
};

// The regime of the window cycles: up to 12 one-GPU stages, 8-12 layers, a batch of 32-128
// (micro-batches outnumber the stages), links from slow to fast.
constexpr PipelineShape kLongPipeline{"long pipeline", 8, 12, 512, 1024, 8, 12, 0.5, 50, {32, 64, 128}, false};
// The regime of family G: a stage of two or more GPUs synchronises its gradients across nodes
// (5-50 GB/s) and that sync weighs as much as its work; a batch of 4-16 (often fewer micro-batches
// than stages), so a stage's own sync after its last backward, which waits for the round trip
// through the stages after it, bounds the iteration (docs/search.md, "Bounds"). On its 60
// scenarios the one-thread pruned search took 3,308 evaluations before family G, 2,770 with G
// alone and 2,643 with R and W ending in the drain.
constexpr PipelineShape kSyncBound{"sync-bound pipeline", 8, 16, 1024, 2048, 16, 16, 5, 50, {4, 8, 16}, true};

Json pipeline_scenario(const PipelineShape& p, std::mt19937_64& rng) {
    auto pick = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
    auto uni = [&](double lo, double hi) { return std::uniform_real_distribution<double>(lo, hi)(rng); };
    const char* const devices[] = {"a100-sxm4-80gb", "v100-sxm2-32gb", "a10-24gb"};
    Json model = {{"name", p.name},
                  {"num_layers", pick(p.layers_lo, p.layers_hi)},
                  {"hidden_size", pick(0, 1) ? p.hidden_small : p.hidden_large},
                  {"num_attention_heads", p.heads},
                  {"vocab_size", 8000},
                  {"seq_length", 512}};
    Json groups = Json::array();
    const int ngroups = pick(1, 2);
    for (int g = 0; g < ngroups; ++g)
        groups.push_back({{"device", devices[pick(0, 2)]}, {"nodes", pick(4, p.nodes_max / ngroups)}, {"gpus_per_node", 1}, {"inter_node_bw_GBps", uni(p.bw_lo, p.bw_hi)}});
    Json training = {{"global_batch_size", p.batches[pick(0, 2)]}};
    if (p.maybe_distributed_optimizer && pick(0, 1)) training["distributed_optimizer"] = true;
    return {{"model", model}, {"training", training}, {"cluster", {{"name", p.name}, {"groups", groups}}}};
}

// Pruned (on `threads`) against exhaustive on 60 scenarios of the shape; returns {pruned, exhaustive} evaluations.
std::pair<std::int64_t, std::int64_t> differential(const PipelineShape& shape, int threads) {
    int checked = 0;
    std::int64_t pruned_evals = 0, exhaustive_evals = 0;
    const SearchOptions pruned = quiet(3, false, threads), exhaustive = quiet(3, true);
    for (std::uint64_t seed = 1; checked < 60; ++seed) {
        std::mt19937_64 rng(seed);
        const Scenario sc = parse_scenario(pipeline_scenario(shape, rng));
        if (search_space_size(sc, false).plans > 1e5) continue;
        INFO("seed " << seed << ": " << to_json(sc).dump());
        require_pruned_equals_exhaustive(sc, pruned, exhaustive, pruned_evals, exhaustive_evals);
        ++checked;
    }
    return {pruned_evals, exhaustive_evals};
}

}  // namespace

TEST_CASE("long pipelines of near-equal stages with many micro-batches: the pruned search returns the exhaustive top K on 60 random scenarios",
          "[search][differential][windows]") {
    const auto [pruned, exhaustive] = differential(kLongPipeline, 0);
    CHECK(pruned * 10 < exhaustive);
}

TEST_CASE("pipelines whose gradient syncs weigh as much as their stages' work, with few micro-batches: the pruned search returns the exhaustive top K on 60 random scenarios",
          "[search][differential][windows][sync]") {
    const auto [pruned, exhaustive] = differential(kSyncBound, 1);
    CHECK(pruned * 100 < exhaustive);
}
