// poseidon_bench megatron-sweep (docs/performance.md, "Megatron-Core defaults sweep", issue 37):
// the 36 shapes a new user meets with Megatron-Core's usual settings and the schedule left free
// (1F1B or interleaved): 64 / 1024 / 4096 GPUs x 1-4 device types (H100, A100-80GB, A100-40GB,
// V100-32GB, GPUs split evenly, 8 per node) x 24 / 80 / 128 blocks of a Llama-2-70B-shaped model,
// global batch 1024, sequence parallelism, the distributed optimizer, one recompute setting per
// table. A benchmark prints figures; no test times anything.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <string>
#include <vector>

#include "bench_sweep.hpp"
#include "poseidon/scenario.hpp"
#include "poseidon/search.hpp"

using namespace poseidon;

Json megatron_scenario(int gpus, int types, int layers, const std::string& recompute, bool moe) {
    const char* devs[] = {"h100-sxm5-80gb", "a100-sxm4-80gb", "a100-sxm4-40gb", "v100-sxm2-32gb"};
    const double nic[] = {400, 200, 200, 100};
    const Json groups = even_groups(gpus, types, devs, nic);
    Json model = llama70b_shape(layers);
    // --moe: the Qwen3 235B-A22B preset (128 experts, top 8, every block MoE) with the shape's block
    // count; the search then also walks its expert-parallel sizes (docs/search.md)
    if (moe) model = {{"preset", "qwen3-235b-a22b"}, {"num_layers", layers}};
    Json training = {{"global_batch_size", 1024}, {"recompute", recompute}, {"sequence_parallel", true}, {"distributed_optimizer", true}};
    return {{"model", model}, {"training", training}, {"cluster", {{"name", "megatron-sweep"}, {"groups", groups}}}};
}

// One table per recompute setting: a row per shape with wall and CPU seconds of the search (top 3,
// baselines off), whether it completed, the plans costed and timed (`evaluated`), branches cut,
// the best plan's time and schedule; then how many completed within the limit, the median and the
// slowest. `only` (if not empty) restricts the recompute settings.
void megatron_sweep_bench(const SweepOptions& so, const std::string& only) {
    std::vector<std::string> settings = {"selective", "full", "none"};
    if (!only.empty()) settings = {only};
    for (const std::string& rc : settings) {
        std::printf("\n%srecompute %s, --threads %d, --schedule %s, limit %.1f s\n", so.moe ? "Qwen3 235B-A22B shape (--moe), " : "", rc.c_str(), so.threads, so.schedule.c_str(), so.limit_s);
        std::printf("| types | GPUs | layers | wall s | CPU s | complete | evaluated | pruned | best s | schedule |\n|---|---|---|---|---|---|---|---|---|---|\n");
        std::vector<double> walls, cpus;
        int complete = 0, within = 0, total = 0;
        long long evaluated = 0;
        for (int gpus : {64, 1024, 4096})
            for (int types : {1, 2, 3, 4})
                for (int layers : {24, 80, 128}) {
                    const Scenario sc = parse_scenario(megatron_scenario(gpus, types, layers, rc, so.moe));
                    const SearchOptions o = sweep_search_options(so);
                    const std::clock_t c0 = std::clock();
                    const auto w0 = std::chrono::steady_clock::now();
                    const SearchResult r = search(sc, o);
                    const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - w0).count();
                    const double cpu = static_cast<double>(std::clock() - c0) / CLOCKS_PER_SEC;
                    walls.push_back(wall);
                    cpus.push_back(cpu);
                    ++total;
                    complete += r.stats.complete;
                    within += r.stats.complete && wall <= 2.0;
                    evaluated += r.stats.evaluated;
                    std::string best = "-", sched = "-";
                    if (!r.plans.empty()) {
                        char b[32];
                        std::snprintf(b, sizeof b, "%.6f", r.plans[0].iteration_time_s);
                        best = b;
                        const Plan& p = r.plans[0].plan;
                        sched = p.schedule == "interleaved-1f1b" ? "V=" + std::to_string(p.virtual_stages) : "1f1b";
                    }
                    std::printf("| %d | %d | %d | %.3f | %.3f | %s | %lld | %lld | %s | %s |\n", types, gpus, layers, wall, cpu, r.stats.complete ? "yes" : "no",
                                static_cast<long long>(r.stats.evaluated), static_cast<long long>(r.stats.pruned), best.c_str(), sched.c_str());
                    std::fflush(stdout);
                }
        auto median = [](std::vector<double>& v) {
            std::sort(v.begin(), v.end());
            return (v[(v.size() - 1) / 2] + v[v.size() / 2]) / 2;
        };
        const double wall_median = median(walls), cpu_median = median(cpus);
        std::printf("recompute %s: %d of %d complete, %d within 2 s; wall median %.3f s, slowest %.3f s; CPU median %.3f s, slowest %.3f s; %lld evaluated in all\n",
                    rc.c_str(), complete, total, within, wall_median, walls.back(), cpu_median, cpus.back(), evaluated);
    }
}

// The order against the bounds: one shape searched to its limit, then again with the K-th key it
// found given from the start (options.prune_above_s: the threshold a perfect order would have at
// once). What the second search still takes is the bounds' share, which no order saves.
void megatron_oracle_bench(int types, int gpus, int layers, const std::string& recompute, const SweepOptions& so) {
    const Scenario sc = parse_scenario(megatron_scenario(gpus, types, layers, recompute, so.moe));
    SearchOptions o = sweep_search_options(so);
    auto run = [&](const char* label) {
        const std::clock_t c0 = std::clock();
        const SearchResult r = search(sc, o);
        const double cpu = static_cast<double>(std::clock() - c0) / CLOCKS_PER_SEC;
        std::printf("| %d x %d x %d | %s | %.3f | %s | %lld | %lld | %s |\n", types, gpus, layers, label, cpu, r.stats.complete ? "yes" : "no",
                    static_cast<long long>(r.stats.evaluated), static_cast<long long>(r.stats.pruned),
                    r.plans.empty() ? "-" : std::to_string(r.plans.back().iteration_time_s).c_str());
        std::fflush(stdout);
        return r;
    };
    std::printf("| shape | threshold | CPU s | complete | evaluated | pruned | K-th s |\n|---|---|---|---|---|---|---|\n");
    const SearchResult first = run("found");
    if (first.plans.empty()) return;
    o.prune_above_s = first.plans.back().iteration_time_s * (1 + 1e-9);
    run("given");
}
