// poseidon_bench sweep / shape (docs/performance.md, "Sweep"): every cluster shape of issue 11
// under a time limit, and one shape with the times its best plan improved.
#include "bench_sweep.hpp"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <string>
#include <vector>

#include "poseidon/scenario.hpp"
#include "poseidon/search.hpp"

using namespace poseidon;

namespace {

}  // namespace

// Top 3, no baselines, the sweep's limit, threads and space.
SearchOptions sweep_search_options(const SweepOptions& so) {
    SearchOptions o;
    o.top_k = 3;
    o.time_limit_s = so.limit_s;
    o.baselines = false;
    o.threads = so.threads;
    o.schedule = so.schedule;
    o.node_counts = so.node_counts;
    return o;
}

namespace {

struct Timed {
    SearchResult r;
    double wall_s = 0;
};

Timed timed_search(const Scenario& sc, const SweepOptions& so) {
    const SearchOptions o = sweep_search_options(so);
    Timed t;
    const auto w0 = std::chrono::steady_clock::now();
    t.r = search(sc, o);
    t.wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - w0).count();
    return t;
}

}  // namespace

// Issue 11, item 2: every cluster shape under a time limit (default 2 s, the target), one row per
// shape, wall seconds of the search (top 3, baselines off), then how many completed and the
// median and slowest times.
void sweep_bench(const SweepOptions& so) {
    const double limit = so.limit_s;
    std::printf("| types | GPUs | layers | batch | wall s | complete | best s |\n|---|---|---|---|---|---|---|\n");
    std::vector<double> walls;
    int complete = 0, total = 0;
    for (int types : {1, 2, 3, 4})
        for (int gpus : {64, 256, 1024, 4096})
            for (int layers : {24, 48, 80, 128}) {
                const int batch = gpus >= 4096 ? 2048 : 1024;
                Scenario sc = parse_scenario(scale_scenario(gpus, types, layers, batch));
                const Timed t = timed_search(sc, so);
                walls.push_back(t.wall_s);
                ++total;
                complete += t.r.stats.complete;
                std::printf("| %d | %d | %d | %d | %.2f | %s | %s |\n", types, gpus, layers, batch, t.wall_s, t.r.stats.complete ? "yes" : "no",
                            t.r.plans.empty() ? "-" : std::to_string(t.r.plans[0].iteration_time_s).c_str());
                std::fflush(stdout);
            }
    std::sort(walls.begin(), walls.end());
    std::printf("\n%d of %d complete within %.1f s; median %.2f s, slowest %.2f s (%d thread%s)\n", complete, total, limit, walls[walls.size() / 2],
                walls.back(), so.threads, so.threads == 1 ? "" : "s");
}

// One shape of the sweep, with the progress of its best plan (0.25 s reports): where the search
// spends its time, finding the optimum or proving it.
void shape_bench(int types, int gpus, int layers, const SweepOptions& so) {
    const int batch = gpus >= 4096 ? 2048 : 1024;
    Scenario sc = parse_scenario(scale_scenario(gpus, types, layers, batch));
    SearchOptions o = sweep_search_options(so);
    double last = 0;
    o.on_progress = [&](const SearchProgress& p) {
        if (p.best && p.best->iteration_time_s != last) {
            last = p.best->iteration_time_s;
            std::printf("  %.2f s: best %.6g s (%zu stages, mbs %lld), %lld evaluated, %lld pruned\n", p.elapsed_s, last, p.best->plan.stages.size(),
                        static_cast<long long>(p.best->plan.micro_batch_size), static_cast<long long>(p.evaluated), static_cast<long long>(p.pruned));
            std::fflush(stdout);
        }
        return true;
    };
    const auto w0 = std::chrono::steady_clock::now();
    SearchResult r = search(sc, o);
    const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - w0).count();
    std::printf("%d x %d x %d: %.2f s wall, complete %s, best %s s, %lld evaluated, %lld pruned, %lld configurations\n", types, gpus, layers, wall,
                r.stats.complete ? "yes" : "no", r.plans.empty() ? "-" : std::to_string(r.plans[0].iteration_time_s).c_str(),
                static_cast<long long>(r.stats.evaluated), static_cast<long long>(r.stats.pruned), static_cast<long long>(r.stats.configurations));
}

