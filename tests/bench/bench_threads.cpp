// poseidon_bench threads [--max-threads N] [--reps R]: wall time (best of R) of the same searches
// with 1, 2, 4, ... threads, the speed-up and whether every thread count gives the same plans
// (docs/performance.md, "Threads").
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <string>
#include <utility>
#include <vector>

#include "poseidon/scenario.hpp"
#include "poseidon/search.hpp"
#include "bench_sweep.hpp"

using namespace poseidon;

void threads_bench(double limit, int max_threads, int reps) {
    std::vector<std::pair<std::string, Json>> cases;
    for (int g : {64, 256, 1024}) cases.push_back({"llama-70b-shape (80 l), " + std::to_string(g) + " GPUs, 4 types", scale_scenario(g, 4, 80, 1024)});
    cases.push_back({"llama-70b-shape (80 l), 1024 GPUs, 3 types", scale_scenario(1024, 3, 80, 1024)});
    cases.push_back({"llama-70b-shape (128 l), 1024 GPUs, 4 types", scale_scenario(1024, 4, 128, 1024)});
    const std::pair<const char*, const char*> per_stage[] = {
        {"opt-350m, sailor-mit-mix, 64, --tp-per-stage", R"({"model":"opt-350m","training":{"global_batch_size":64},"cluster":"sailor-mit-mix"})"},
        {"llama2-13b, mixed-a100-v100, 256, --tp-per-stage", R"({"model":"llama2-13b","training":{"global_batch_size":256},"cluster":"mixed-a100-v100"})"}};
    for (const auto& [name, text] : per_stage) cases.push_back({name, Json::parse(text)});
    std::vector<int> counts;
    for (int t = 1; t <= max_threads; t *= 2) counts.push_back(t);
    if (counts.back() != max_threads) counts.push_back(max_threads);
    std::printf("| scenario |");
    for (int t : counts) std::printf(" %d thread%s s |", t, t == 1 ? "" : "s");
    std::printf(" speed-up at %d | same plans |\n|---|", counts.back());
    for (std::size_t k = 0; k <= counts.size(); ++k) std::printf("---|");
    std::printf("---|\n");
    for (const auto& [name, j] : cases) {
        Scenario sc = parse_scenario(j);
        std::vector<double> wall;
        SearchResult first;
        bool same = true, complete = true;
        for (int t : counts) {
            SearchOptions o;
            o.time_limit_s = limit;
            o.baselines = false;
            o.threads = t;
            o.tp_per_stage = name.find("--tp-per-stage") != std::string::npos;
            SearchResult r;
            double best = 1e300;
            for (int rep = 0; rep < std::max(1, reps); ++rep) {
                const auto w0 = std::chrono::steady_clock::now();
                r = search(sc, o);
                best = std::min(best, std::chrono::duration<double>(std::chrono::steady_clock::now() - w0).count());
            }
            wall.push_back(best);
            complete = complete && r.stats.complete;
            if (t == 1) {
                first = std::move(r);
                continue;
            }
            same = same && r.plans.size() == first.plans.size();
            for (std::size_t k = 0; same && k < r.plans.size(); ++k) same = r.plans[k].plan == first.plans[k].plan && r.scores[k] == first.scores[k];
        }
        std::printf("| %s |", name.c_str());
        for (double w : wall) std::printf(" %.2f |", w);
        std::printf(" %.2fx | %s%s |\n", wall.front() / std::max(1e-9, wall.back()), same ? "yes" : "NO", complete ? "" : " (time limit)");
        std::fflush(stdout);
    }
}
