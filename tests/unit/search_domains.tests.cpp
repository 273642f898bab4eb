// The search's cost tables probe each stage at its group's first GPU. With NVLink domains larger
// than a node (an NVL72 rack of 4-GPU trays), a stage elsewhere may straddle two domains, so its
// gradient ring and its sends cost what its own placement costs: the leaf scores it as placed,
// and the sends are cached by placement (docs/search.md, "Scoring: one model").
#include <catch2/catch.hpp>

#include <random>
#include <string>

#include "poseidon/estimate.hpp"
#include "poseidon/scenario.hpp"
#include "../../core/src/search_topk.hpp"
#include "poseidon/search.hpp"
#include "search_random.hpp"

using namespace poseidon;

using search_test::quiet;
using search_test::random_scenario;
using search_test::require_pruned_equals_exhaustive;

TEST_CASE("stages that straddle NVLink domains are ranked by the time estimate gives them", "[search][domains]") {
    // DeepSeek-V3 on 256 GB200 (three NVL72 racks and 40 GPUs of a fourth): eight stages of 32
    // GPUs put stage 2 on GPUs 64-95, across the first rack's edge. The search ranked it by the
    // sends of two stages inside one rack (6.1936 s) where estimate gives 6.2331 s, listed first
    // above a plan of 6.1901 s.
    const Scenario sc = parse_scenario_text(
        R"({"model":"deepseek-v3","training":{"global_batch_size":1024,"recompute":"selective","sequence_parallel":true,"distributed_optimizer":true},"cluster":"gb200-nvl72-256"})");
    SearchOptions o = quiet(3);
    const SearchResult r = search(sc, o);
    REQUIRE(r.stats.complete);
    REQUIRE(r.plans.size() == 3);
    for (std::size_t k = 0; k < r.plans.size(); ++k) {
        CHECK(r.scores[k] == r.plans[k].iteration_time_s);
        if (k > 0) CHECK(r.plans[k - 1].iteration_time_s <= poseidon::detail::tie_last(r.plans[k].iteration_time_s));
    }
    CHECK(r.plans[0].iteration_time_s == Approx(6.44892).epsilon(1e-5));  // (6.19006 before each GEMM's result was timed apart)
}

TEST_CASE("a stage's gradient ring costs at least at its group's first GPU what it costs anywhere in the group", "[search][domains][bounds]") {
    // The premise of the bounds: the tables' placement (the group's first GPU) is the cheapest, so
    // their times stay lower bounds of a stage placed across domains. Every stage size and first
    // GPU a layout can give (whole trays) on domains of 72 and of 12 GPUs, the last one partial.
    for (const int domain : {72, 12}) {
        const std::string cluster = R"({"name":"c","groups":[{"device":"gb200-186gb","nodes":)" + std::string(domain == 72 ? "64" : "10") +
                                    R"(,"gpus_per_node":4,"nvlink_domain_gpus":)" + std::to_string(domain) + R"(,"inter_node_bw_GBps":200}]})";
        const Scenario sc = parse_scenario_text(R"({"model":"llama3-8b","training":{"global_batch_size":512,"distributed_optimizer":true},"cluster":)" + cluster + "}");
        const int gpus = sc.cluster.num_gpus();
        int checked = 0, dearer = 0;
        for (int size = 8; size <= gpus / 2; size *= 2) {
            const auto sync_at = [&](int first) {
                // two stages, the one measured at `first`, the other filling the GPUs before it
                Plan p;
                p.micro_batch_size = size;
                p.num_micro_batches = 512 / size;
                StagePlan st;
                st.num_layers = 16;
                st.replicas = {ReplicaSet{0, 1, size, 1}};
                p.stages = {st, st};
                std::vector<StagePlacement> place(2);
                for (int r = 0; r < size; ++r) {
                    place[0].replicas.push_back({0, (first + size + r) % gpus, 1});
                    place[1].replicas.push_back({0, first + r, 1});
                }
                return evaluate_stages(sc, p, place)[1].times.dp_sync_s;
            };
            const double at0 = sync_at(0);
            for (int first = 4; first + size <= gpus; first += 4) {
                const double here = sync_at(first);
                INFO("domain " << domain << ", " << size << " GPUs from GPU " << first);
                CHECK(here >= at0 * (1 - 1e-12));
                dearer += here > at0 * (1 + 1e-9);
                ++checked;
            }
        }
        // (a ring that leaves a rack of 72 takes its 18 trays' NICs, as fast as NVLink here; one
        // that leaves a domain of 3 trays is slower)
        CHECK(checked == (domain == 72 ? 258 : 14));
        CHECK(dearer == (domain == 72 ? 0 : 4));
    }
}

TEST_CASE("with NVLink domains larger than a node the pruned search returns the exhaustive top-K, scored as placed", "[search][differential][domains]") {
    // random scenarios of search_random.hpp whose groups are 4-GPU trays in domains of 8 or 12
    // GPUs, with a partial last domain: stages of 4 or 8 GPUs straddle domains
    int checked = 0;
    std::int64_t pruned_evals = 0, exhaustive_evals = 0;
    const SearchOptions pruned = quiet(3), exhaustive = quiet(3, true);
    for (std::uint64_t seed = 31000; checked < 30; ++seed) {
        std::mt19937_64 rng(seed);
        Json j = random_scenario(rng);
        for (Json& g : j["cluster"]["groups"]) {
            g["gpus_per_node"] = 4;
            g["nodes"] = 2 + static_cast<int>(seed % 4);
            g["nvlink_domain_gpus"] = seed % 2 ? 12 : 8;
        }
        const Scenario sc = parse_scenario(j);
        if (sc.cluster.num_gpus() > 40 || search_space_size(sc, false).plans > 3e4) continue;
        INFO("seed " << seed << ": " << to_json(sc).dump());
        require_pruned_equals_exhaustive(sc, pruned, exhaustive, pruned_evals, exhaustive_evals);
        ++checked;
    }
    CHECK(pruned_evals < exhaustive_evals);
}
