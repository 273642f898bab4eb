// A soak of pruned = exhaustive over many more random scenarios than CI runs, each drawing its
// own mix of the search's dimensions (dense or MoE, schedule, TP per stage, recomputation and
// precision free, small deferral and grid budgets, early memory probes of interleaved walks, one
// or two threads). Hidden from CI: run it with
//   POSEIDON_SOAK_SEED=100000 POSEIDON_SOAK_COUNT=2000 build/tests/poseidon_tests "[soak]"
// (docs/search.md, "Pruned vs exhaustive"). A failure prints the seed and the scenario.
#include <catch2/catch.hpp>

#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>

#include "poseidon/scenario.hpp"
#include "poseidon/search.hpp"
#include "search_random.hpp"

using namespace poseidon;

namespace {

std::uint64_t env_or(const char* name, std::uint64_t fallback) {
    const char* v = std::getenv(name);
    return v && *v ? std::strtoull(v, nullptr, 10) : fallback;
}

}  // namespace

TEST_CASE("soak: pruned = exhaustive on random scenarios with every dimension drawn", "[.soak][search][differential]") {
    const std::uint64_t first = env_or("POSEIDON_SOAK_SEED", 100000);
    const std::uint64_t count = env_or("POSEIDON_SOAK_COUNT", 200);
    std::int64_t pruned_evals = 0, exhaustive_evals = 0, checked = 0, feasible = 0, skipped = 0;
    for (std::uint64_t seed = first; seed < first + count; ++seed) {
        std::mt19937_64 rng(seed);
        auto pick = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
        const bool moe = pick(0, 1) == 1;
        Json j = moe ? search_test::random_moe_scenario(rng, seed, true) : search_test::random_scenario(rng);
        if (pick(0, 2) == 0) j["model"]["num_layers"] = std::array<int, 3>{16, 24, 32}[pick(0, 2)];
        if (pick(0, 1)) j["training"]["sequence_parallel"] = true;
        if (pick(0, 2) == 0) j["training"]["recompute"] = "selective";
        SearchOptions pruned = search_test::quiet(3, false, pick(1, 2)), exhaustive = search_test::quiet(3, true, 1);
        pruned.schedule = exhaustive.schedule = std::array<const char*, 3>{"any", "1f1b", "interleaved-1f1b"}[pick(0, 2)];
        const bool per_stage = pick(0, 3) == 0;
        pruned.tp_per_stage = exhaustive.tp_per_stage = per_stage;
        if (pick(0, 3) == 0) pruned.recomputes = exhaustive.recomputes = {Recompute::none, Recompute::selective, Recompute::full};
        if (pick(0, 3) == 0) pruned.any_precision = exhaustive.any_precision = true;
        if (pick(0, 2) == 0) pruned.config_first_nodes = 8;
        if (moe && pick(0, 2) == 0) pruned.grid_first_round_nodes = 256;
        if (pick(0, 2) == 0) pruned.ilv_memory_after_nodes = 1;
        const Scenario sc = parse_scenario(j);
        // the exhaustive reference must stay affordable
        if (search_space_size(sc, per_stage, pruned.schedule).plans > 2e5) {
            ++skipped;
            continue;
        }
        INFO("seed " << seed << ", schedule " << pruned.schedule << ", TP per stage " << per_stage << ", threads " << pruned.threads
                     << ", recomputes " << pruned.recomputes.size() << ", any precision " << pruned.any_precision << ", config budget "
                     << pruned.config_first_nodes << ", grid budget " << pruned.grid_first_round_nodes << ", memory probe after " << pruned.ilv_memory_after_nodes << ": " << to_json(sc).dump());
        const SearchResult pr = search_test::require_pruned_equals_exhaustive(sc, pruned, exhaustive, pruned_evals, exhaustive_evals);
        feasible += !pr.plans.empty();
        ++checked;
    }
    std::printf("soak: seeds %llu..%llu, %lld checked (%lld with a plan), %lld skipped (space over 2e5); DAG evaluations %lld pruned, %lld exhaustive\n",
                static_cast<unsigned long long>(first), static_cast<unsigned long long>(first + count - 1), static_cast<long long>(checked),
                static_cast<long long>(feasible), static_cast<long long>(skipped), static_cast<long long>(pruned_evals),
                static_cast<long long>(exhaustive_evals));
    CHECK(checked > 0);
}
