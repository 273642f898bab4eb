// poseidon_bench blocks: options.group_blocks 1 (the default) against 2 and 3 (a group also split
// in blocks of nodes, docs/search.md, "The space", step 2) on the presets and issue 11's clusters:
// the best time each finds, the gain over one block, CPU seconds, and whether each completed.
#include <cstdio>
#include <ctime>
#include <string>
#include <utility>
#include <vector>

#include "poseidon/scenario.hpp"
#include "poseidon/search.hpp"
#include "bench_sweep.hpp"

using namespace poseidon;

Json two_types(const char* model, const char* a, int a_nodes, int a_gpn, const char* b, int b_nodes, int b_gpn, double bw, int batch) {
    Json groups = Json::array({{{"device", a}, {"nodes", a_nodes}, {"gpus_per_node", a_gpn}, {"inter_node_bw_GBps", bw}},
                               {{"device", b}, {"nodes", b_nodes}, {"gpus_per_node", b_gpn}, {"inter_node_bw_GBps", bw}}});
    return {{"model", model}, {"training", {{"global_batch_size", batch}}}, {"cluster", {{"name", std::string(a) + " + " + b}, {"groups", groups}}}};
}

void group_blocks_bench(double limit, int threads) {
    std::vector<std::pair<std::string, Json>> scenarios;
    struct C {
        const char *model, *cluster;
        int batch;
    };
    const C cs[] = {{"gpt3-1.7b", "demo-mixed-16", 64}, {"gpt3-1.7b", "metis-t4-a100", 64}, {"opt-350m", "sailor-mit-mix", 64},
                    {"llama2-13b", "mixed-a100-v100", 256}, {"gpt3-7.5b", "mixed-a100-a10-t4", 128}};
    for (const auto& c : cs)
        scenarios.push_back({std::string(c.model) + " | " + c.cluster + " | " + std::to_string(c.batch),
                             {{"model", c.model}, {"training", {{"global_batch_size", c.batch}}}, {"cluster", c.cluster}}});
    // issue 11's mixed clusters (100 Gbit/s between nodes)
    scenarios.push_back({"opt-350m | 16 A100-80GB (2 x 8) + 16 T4 (4 x 4) | 256",
                         two_types("opt-350m", "a100-sxm4-80gb", 2, 8, "t4-16gb", 4, 4, 12.5, 256)});
    scenarios.push_back({"opt-350m | 16 A100-40GB (2 x 8) + 16 V100-16GB (2 x 8) | 256",
                         two_types("opt-350m", "a100-sxm4-40gb", 2, 8, "v100-sxm2-16gb", 2, 8, 12.5, 256)});
    std::printf("| model | cluster | batch | best, 1 block s | 2 blocks s | 3 blocks s | gain 2, 3 | CPU s, 1 block | 2 blocks | 3 blocks | splits 2, 3 |\n");
    std::printf("|---|---|---|---|---|---|---|---|---|---|---|\n");
    for (const auto& [name, j] : scenarios) {
        const Scenario sc = parse_scenario(j);
        SearchOptions o;
        o.top_k = 3;
        o.time_limit_s = limit;
        o.baselines = false;
        o.threads = threads;
        double best[3] = {0, 0, 0}, cpu_s[3] = {0, 0, 0};
        std::string limited[3], splits[3];
        bool any = true;
        for (int blocks = 1; blocks <= 3; ++blocks) {
            o.group_blocks = blocks;
            const std::clock_t c0 = std::clock();
            const SearchResult r = search(sc, o);
            cpu_s[blocks - 1] = static_cast<double>(std::clock() - c0) / CLOCKS_PER_SEC;
            if (r.plans.empty()) {
                any = false;
                break;
            }
            best[blocks - 1] = r.plans[0].iteration_time_s;
            limited[blocks - 1] = r.stats.complete ? "" : " (limit)";
            std::string note = r.stats.notes.empty() || blocks == 1 ? "-" : r.stats.notes.back();
            const auto at = note.find(": ");
            if (at != std::string::npos) note = note.substr(at + 2, note.find(" splits") - at - 2);
            splits[blocks - 1] = note;
        }
        if (!any) continue;
        std::printf("| %s | %.6g | %.6g | %.6g | %.2f%%, %.2f%% | %.2f%s | %.2f%s | %.2f%s | %s, %s |\n", name.c_str(), best[0], best[1], best[2],
                    (best[0] / best[1] - 1) * 100, (best[0] / best[2] - 1) * 100, cpu_s[0], limited[0].c_str(), cpu_s[1], limited[1].c_str(), cpu_s[2],
                    limited[2].c_str(), splits[1].c_str(), splits[2].c_str());
        std::fflush(stdout);
    }
}
