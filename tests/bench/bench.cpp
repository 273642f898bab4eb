// poseidon_bench: figures for docs/performance.md ("Search (native)") and docs/search.md.
//   poseidon_bench compare [--limit S]   pruned vs exhaustive on scenarios where exhaustive finishes
//   poseidon_bench scale   [--limit S]   time to the complete answer, 8..4096 GPUs, 1..4 types, 24..128 layers
//   poseidon_bench ridge                 the layer-split landscape of one configuration (ASCII figure)
//   poseidon_bench space                 size of the search space for the preset clusters (--tp-per-stage in brackets)
//   poseidon_bench stage-tp              one TP per group (default) vs --tp-per-stage: best time, search time
//   poseidon_bench threads [--max-threads N] [--reps R]  wall time (best of R) with 1, 2, 4, ... threads,
//                                        speed-up, same plans (bench_threads.cpp)
//   poseidon_bench sweep [--limit S]     issue 11's sweep: 1-4 types x 64..4096 GPUs x 24..128 layers
//   poseidon_bench shape TYPES GPUS LAYERS [--limit S]  one sweep shape: when the best plan improved
//   poseidon_bench megatron-sweep [--limit S] [--recompute R] [--moe]  issue 37's 36 shapes with Megatron-Core's
//                                        usual settings, per recompute setting (bench_megatron_sweep.cpp)
//   poseidon_bench megatron-oracle TYPES GPUS LAYERS [--limit S] [--recompute R] [--moe]  one shape, then with its K-th key given
//   poseidon_bench blocks [--limit S]    one block per group (default) vs --group-blocks 2 and 3 (bench_blocks.cpp)
//   poseidon_bench challenge [--limit S] a local search over the whole plan format against the search's
//                                        best on issue 11's clusters (bench_challenge.cpp)
//   poseidon_bench all
// --threads N (default 1) sets the search's threads for every table but `threads`. Times are CPU
// seconds of this process (std::clock: with one thread, the search's) and wall seconds.
// tests/bench/limits.sh runs the CLI under time limits and the memory cap (docs/performance.md).
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <ctime>
#include <limits>
#include <string>
#include <thread>
#include <vector>

#include "poseidon/presets.hpp"
#include "poseidon/scenario.hpp"
#include "poseidon/search.hpp"
#include "bench_sweep.hpp"

using namespace poseidon;

void group_blocks_bench(double limit, int threads);  // bench_blocks.cpp
void challenge_bench(double seconds, int threads);   // bench_challenge.cpp
void threads_bench(double limit, int max_threads, int reps);  // bench_threads.cpp

// (declared in bench_sweep.hpp)
Json even_groups(int gpus, int types, const char* const devices[], const double nic_GBps[]) {
    Json groups = Json::array();
    const int per = gpus / types;
    const int gpn = std::min(8, per);
    for (int t = 0; t < types; ++t) groups.push_back({{"device", devices[t]}, {"nodes", per / gpn}, {"gpus_per_node", gpn}, {"inter_node_bw_GBps", nic_GBps[t]}});
    return groups;
}

Json llama70b_shape(int layers) {
    return {{"name", "llama-70b-shape"}, {"num_layers", layers}, {"hidden_size", 8192}, {"num_attention_heads", 64}, {"num_kv_heads", 8},
            {"ffn_hidden_size", 28672},   {"vocab_size", 32000},  {"seq_length", 4096},       {"gated_mlp", true},
            {"bias", false},              {"position_embedding", "rope"}};
}

Json scale_scenario(int gpus, int types, int layers, int batch) {
    const char* devs[] = {"h100-sxm5-80gb", "a100-sxm4-80gb", "l40s-48gb", "v100-sxm2-32gb"};
    const double nic[] = {400, 200, 50, 100};
    const Json groups = even_groups(gpus, types, devs, nic);
    const Json model = llama70b_shape(layers);
    Json training = {{"global_batch_size", batch}, {"recompute", "full"}, {"sequence_parallel", true}, {"distributed_optimizer", true}};
    return {{"model", model}, {"training", training}, {"cluster", {{"name", "scale"}, {"groups", groups}}}};
}


namespace {

int g_threads = 1;  // --threads
std::string g_schedule = "any";  // --schedule (compare, scale, sweep)
std::string g_node_counts = "halving";  // --node-counts (compare, scale, sweep)

struct Timed {
    SearchResult r;
    double cpu_s = 0, wall_s = 0;
};

Timed run(const Scenario& sc, bool exhaustive, double limit, int top = 3, bool baselines = false) {
    SearchOptions o;
    o.top_k = top;
    o.exhaustive = exhaustive;
    o.time_limit_s = limit;
    o.baselines = baselines;
    o.threads = g_threads;
    o.schedule = g_schedule;
    o.node_counts = g_node_counts;
    Timed t;
    const std::clock_t c0 = std::clock();
    const auto w0 = std::chrono::steady_clock::now();
    t.r = search(sc, o);
    t.cpu_s = static_cast<double>(std::clock() - c0) / CLOCKS_PER_SEC;
    t.wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - w0).count();
    return t;
}

std::string fmt_count(double x) {
    char b[64];
    if (x < 1e6)
        std::snprintf(b, sizeof b, "%.0f", x);
    else
        std::snprintf(b, sizeof b, "%.2e", x);
    return b;
}

void compare(double limit) {
    struct Case {
        const char* name;
        const char* json;
    };
    const Case cases[] = {
        {"tiny-8l, demo-mixed-16 (8 A100 + 8 V100), batch 32", R"({"model":"tiny-8l","training":{"global_batch_size":32},"cluster":"demo-mixed-16"})"},
        {"tiny-8l, mixed-a100-a10-t4 (3 types, 24 GPUs), batch 32", R"({"model":"tiny-8l","training":{"global_batch_size":32},"cluster":"mixed-a100-a10-t4"})"},
        {"llama3.2-1b (16 l), metis-t4-a100 (4 T4 + 12 A100), batch 16",
         R"({"model":"llama3.2-1b","training":{"global_batch_size":16},"cluster":"metis-t4-a100"})"},
        {"llama3.2-1b (16 l), demo-mixed-16, batch 64", R"({"model":"llama3.2-1b","training":{"global_batch_size":64},"cluster":"demo-mixed-16"})"},
        {"llama3.2-1b (16 l), mixed-a100-v100 (32 GPUs), batch 32",
         R"({"model":"llama3.2-1b","training":{"global_batch_size":32},"cluster":"mixed-a100-v100"})"},
        {"llama3.2-1b (16 l), sailor-mit-mix (3 types, 24 GPUs), batch 8",
         R"({"model":"llama3.2-1b","training":{"global_batch_size":8},"cluster":"sailor-mit-mix"})"},
        {"opt-350m (24 l), demo-mixed-16, batch 16", R"({"model":"opt-350m","training":{"global_batch_size":16},"cluster":"demo-mixed-16"})"},
    };
    std::printf("| scenario | plans in space | exhaustive: evaluations, CPU s | pruned: evaluations, CPU s | evaluations ratio | time ratio | same top-3 |\n");
    std::printf("|---|---|---|---|---|---|---|\n");
    for (const auto& c : cases) {
        Scenario sc = parse_scenario_text(c.json);
        const SpaceSize sz = search_space_size(sc);
        Timed ex = run(sc, true, limit);
        Timed pr = run(sc, false, limit);
        bool same = ex.r.stats.complete && pr.r.plans.size() == ex.r.plans.size();
        for (std::size_t k = 0; same && k < pr.r.plans.size(); ++k)
            same = std::abs(pr.r.plans[k].iteration_time_s - ex.r.plans[k].iteration_time_s) <= 1e-9 * ex.r.plans[k].iteration_time_s;
        std::printf("| %s | %s | %s, %.2f%s | %s, %.3f | %.0fx | %.0fx | %s |\n", c.name, fmt_count(sz.plans).c_str(), fmt_count(static_cast<double>(ex.r.stats.evaluated)).c_str(),
                    ex.cpu_s, ex.r.stats.complete ? "" : " (time limit)", fmt_count(static_cast<double>(pr.r.stats.evaluated)).c_str(), pr.cpu_s,
                    static_cast<double>(ex.r.stats.evaluated) / std::max<std::int64_t>(1, pr.r.stats.evaluated), ex.cpu_s / std::max(1e-6, pr.cpu_s),
                    ex.r.stats.complete ? (same ? "yes" : "NO") : "n/a");
        std::fflush(stdout);
    }
}

void scale(double limit) {
    struct Point {
        int gpus, types, layers, batch;
    };
    std::vector<Point> pts;
    for (int g : {8, 64, 256, 1024, 4096}) pts.push_back({g, 4, 80, g >= 4096 ? 2048 : 1024});
    for (int t : {1, 2, 3}) pts.push_back({1024, t, 80, 1024});
    for (int l : {24, 48, 128}) pts.push_back({1024, 4, l, 1024});
    std::printf("| GPUs | types | layers | batch | plans in space | CPU s (search) | CPU s (with baselines) | evaluations | configurations | complete | best s | vs Metis-style |\n");
    std::printf("|---|---|---|---|---|---|---|---|---|---|---|---|\n");
    for (const auto& p : pts) {
        Scenario sc = parse_scenario(scale_scenario(p.gpus, p.types, p.layers, p.batch));
        const SpaceSize sz = search_space_size(sc);
        Timed t = run(sc, false, limit, 3, false);
        Timed tb = run(sc, false, limit, 3, true);
        std::string best = "-", gain = "-";
        if (!tb.r.plans.empty()) {
            char b[32];
            std::snprintf(b, sizeof b, "%.3f", tb.r.plans[0].iteration_time_s);
            best = b;
            for (const auto& bl : tb.r.baselines)
                if (bl.name == "metis-heuristic" && bl.estimate) {
                    std::snprintf(b, sizeof b, "%.2fx", bl.estimate->iteration_time_s / tb.r.plans[0].iteration_time_s);
                    gain = b;
                }
        }
        std::printf("| %d | %d | %d | %d | %s | %.2f | %.2f | %lld | %lld | %s | %s | %s |\n", p.gpus, p.types, p.layers, p.batch, fmt_count(sz.plans).c_str(), t.cpu_s, tb.cpu_s,
                    static_cast<long long>(t.r.stats.evaluated), static_cast<long long>(t.r.stats.configurations), t.r.stats.complete ? "yes" : "no", best.c_str(),
                    gain.c_str());
        std::fflush(stdout);
    }
}

void ridge() {
    Scenario sc = parse_scenario_text(R"({"model":"gpt3-1.7b","training":{"global_batch_size":256,"recompute":"full"},"cluster":"mixed-a100-a10-t4"})");
    Plan p = parse_plan(Json::parse(R"({"micro_batch_size": 8, "num_micro_batches": 32, "stages": [
        {"group": 0, "num_layers": 8, "tp": 1, "dp": 8}, {"group": 1, "num_layers": 8, "tp": 1, "dp": 8},
        {"group": 2, "num_layers": 8, "tp": 1, "dp": 8}]})"),
                        sc);
    RidgeReport rep = ridge_report(sc, p, 1);
    const int L = sc.model.num_layers;
    std::printf("gpt3-1.7b (24 layers, full recompute) on mixed-a100-a10-t4, micro-batch 8 x 32; stages: 8 A100-40GB | 8 A10 | 8 T4 (tp 1, dp 8)\n");
    std::printf("rows: layers on the A100 stage; columns: layers on the A10 stage; the T4 stage takes the rest.\n");
    std::printf("cell: iteration time in percent above the best split (99: 99 %% or more),\n");
    std::printf("      '*' best split, '#' does not fit in memory, '[..]' evaluated by the ridge walk\n\n");
    std::vector<std::vector<const SplitPoint*>> grid(L + 1, std::vector<const SplitPoint*>(L + 1, nullptr));
    for (const auto& pt : rep.points) grid[pt.layers[0]][pt.layers[1]] = &pt;
    std::printf("A100\\A10");
    for (int b = 1; b <= L - 2; ++b) std::printf("%4d", b);
    std::printf("\n");
    for (int a = 1; a <= L - 2; ++a) {
        std::printf("%8d ", a);
        for (int b = 1; b <= L - 2; ++b) {
            const SplitPoint* pt = grid[a][b];
            char cell[16] = "    ";
            if (pt) {
                if (!std::isfinite(pt->iteration_time_s))
                    std::snprintf(cell, sizeof cell, "  # ");
                else if (pt->layers == rep.best_layers)
                    std::snprintf(cell, sizeof cell, pt->visited ? "[ *]" : "  * ");
                else {
                    const double rel = (pt->iteration_time_s / rep.exhaustive_best_time_s - 1) * 100;
                    const int v = static_cast<int>(std::min(99.0, std::floor(rel)));
                    std::snprintf(cell, sizeof cell, pt->visited ? "[%2d]" : " %2d ", v);
                }
            }
            std::printf("%s", cell);
        }
        std::printf("\n");
    }
    std::printf("\nbest split %d/%d/%d: %.4f s (exhaustive best %.4f s); ridge walk: %lld DAG evaluations, all splits: %lld feasible of %zu\n", rep.best_layers[0],
                rep.best_layers[1], rep.best_layers[2], rep.best_time_s, rep.exhaustive_best_time_s, static_cast<long long>(rep.ridge_evaluations),
                static_cast<long long>(rep.exhaustive_evaluations), rep.points.size());
}

void space() {
    std::printf("| model | cluster | batch | micro-batch sizes | stage layouts | configurations (x TP) | with schedules | plans (x layer splits) | of which interleaved | layouts, plans with every node count |\n|---|---|---|---|---|---|---|---|---|---|\n");
    struct C {
        const char *model, *cluster;
        int batch;
    };
    const C cs[] = {{"gpt3-1.7b", "demo-mixed-16", 64},          {"gpt3-1.7b", "metis-t4-a100", 64},  {"gpt3-7.5b", "mixed-a100-a10-t4", 128},
                    {"llama2-13b", "mixed-a100-v100", 256},      {"opt-350m", "sailor-mit-mix", 64},  {"llama2-70b", "mixed-h100-a100-4090", 512},
                    {"gpt3-175b", "dgx-a100-superpod-slice", 1536}};
    for (const auto& c : cs) {
        Json j = {{"model", c.model}, {"training", {{"global_batch_size", c.batch}}}, {"cluster", c.cluster}};
        Scenario sc = parse_scenario(j);
        SpaceSize s = search_space_size(sc), w = search_space_size(sc, true), one = search_space_size(sc, false, "interleaved-1f1b"),
                        all = search_space_size(sc, false, "any", "all");
        std::printf("| %s | %s | %d | %.0f | %s | %s (%s) | %s | %s (%s) | %s | %s, %s |\n", c.model, c.cluster, c.batch, s.micro_batch_sizes, fmt_count(s.stage_layouts).c_str(),
                    fmt_count(s.configurations).c_str(), fmt_count(w.configurations).c_str(), fmt_count(s.schedules).c_str(), fmt_count(s.plans).c_str(),
                    fmt_count(w.plans).c_str(), fmt_count(one.plans).c_str(), fmt_count(all.stage_layouts).c_str(), fmt_count(all.plans).c_str());
    }
}

// One TP per group (the default) against TP chosen per stage (--tp-per-stage): the best
// time each finds, and what the wider space costs the search.
void stage_tp() {
    struct C {
        const char *model, *cluster;
        int batch;
    };
    const C cs[] = {{"gpt3-1.7b", "metis-t4-a100", 64},         {"gpt3-7.5b", "mixed-a100-a10-t4", 128},     {"llama2-13b", "mixed-a100-v100", 256},
                    {"opt-350m", "sailor-mit-mix", 64},         {"gpt3-1.7b", "demo-mixed-16", 64},          {"gpt3-7.5b", "mixed-h100-a100-4090", 512},
                    {"llama2-13b", "mixed-h100-a100-4090", 256}, {"llama2-70b", "mixed-h100-a100-4090", 512}, {"gpt3-175b", "dgx-a100-superpod-slice", 1536}};
    std::vector<std::pair<std::string, Json>> scenarios;
    for (const auto& c : cs)
        scenarios.push_back({std::string(c.model) + " | " + c.cluster + " | " + std::to_string(c.batch),
                             {{"model", c.model}, {"training", {{"global_batch_size", c.batch}}}, {"cluster", c.cluster}}});
    for (int g : {64, 256, 1024}) scenarios.push_back({"llama-70b-shape (80 l) | scale: " + std::to_string(g) + " GPUs, 4 types | 1024", scale_scenario(g, 4, 80, 1024)});
    std::printf("| model | cluster | batch | best, TP per group s | best, TP per stage s | gain | CPU s per group | CPU s per stage | configurations per group | per stage |\n");
    std::printf("|---|---|---|---|---|---|---|---|---|---|\n");
    for (const auto& [name, j] : scenarios) {
        Scenario sc = parse_scenario(j);
        SearchOptions o;
        o.top_k = 3;
        o.time_limit_s = 60;
        o.baselines = false;
        o.threads = g_threads;
        auto timed = [&](bool per_group) {
            o.tp_per_stage = !per_group;
            const std::clock_t c0 = std::clock();
            SearchResult r = search(sc, o);
            return std::pair<SearchResult, double>{std::move(r), static_cast<double>(std::clock() - c0) / CLOCKS_PER_SEC};
        };
        auto [g, g_s] = timed(true);
        auto [p, p_s] = timed(false);
        if (g.plans.empty() || p.plans.empty()) continue;
        const double tg = g.plans[0].iteration_time_s, tp = p.plans[0].iteration_time_s;
        std::printf("| %s | %.6g | %.6g | %.3f%% | %.2f%s | %.2f%s | %lld | %lld |\n", name.c_str(), tg, tp, (tg / tp - 1) * 100, g_s, g.stats.complete ? "" : " (limit)", p_s,
                    p.stats.complete ? "" : " (limit)", static_cast<long long>(g.stats.configurations), static_cast<long long>(p.stats.configurations));
        std::fflush(stdout);
    }
}

// The schedule dimension (docs/search.md, step 6): the same presets searched with 1F1B only (the
// space before it) and with every schedule (the default): best time, its schedule, CPU s.
void schedule() {
    struct C {
        const char *model, *cluster;
        int batch;
    };
    const C cs[] = {{"gpt3-1.7b", "demo-mixed-16", 64},          {"gpt3-1.7b", "metis-t4-a100", 64},          {"gpt3-7.5b", "mixed-a100-a10-t4", 128},
                    {"llama2-13b", "mixed-a100-v100", 256},      {"opt-350m", "sailor-mit-mix", 64},          {"gpt3-7.5b", "mixed-h100-a100-4090", 512},
                    {"llama2-13b", "mixed-h100-a100-4090", 256}, {"llama2-70b", "mixed-h100-a100-4090", 512}, {"gpt3-175b", "dgx-a100-superpod-slice", 1536}};
    std::printf("| model | cluster | batch | best, 1F1B only s | best, any schedule s | its schedule | gain | CPU s 1F1B only | CPU s any | ratio |\n");
    std::printf("|---|---|---|---|---|---|---|---|---|---|\n");
    double sum1 = 0, sum2 = 0;
    for (const auto& c : cs) {
        Scenario sc = parse_scenario(Json{{"model", c.model}, {"training", {{"global_batch_size", c.batch}}}, {"cluster", c.cluster}});
        SearchOptions o;
        o.top_k = 3;
        o.time_limit_s = 60;
        o.baselines = false;
        o.threads = g_threads;
        auto timed = [&](const char* sched) {
            o.schedule = sched;
            const std::clock_t c0 = std::clock();
            SearchResult r = search(sc, o);
            return std::pair<SearchResult, double>{std::move(r), static_cast<double>(std::clock() - c0) / CLOCKS_PER_SEC};
        };
        auto [a, a_s] = timed("1f1b");
        auto [b, b_s] = timed("any");
        if (a.plans.empty() || b.plans.empty()) continue;
        const double ta = a.plans[0].iteration_time_s, tb = b.plans[0].iteration_time_s;
        const int V = b.plans[0].plan.virtual_stages;
        sum1 += a_s;
        sum2 += b_s;
        std::printf("| %s | %s | %d | %.6g | %.6g | %s | %.2f%% | %.2f%s | %.2f%s | %.2fx |\n", c.model, c.cluster, c.batch, ta, tb,
                    V > 1 ? ("interleaved, V = " + std::to_string(V)).c_str() : "1F1B", (ta / tb - 1) * 100, a_s, a.stats.complete ? "" : " (limit)", b_s,
                    b.stats.complete ? "" : " (limit)", b_s / std::max(1e-6, a_s));
        std::fflush(stdout);
    }
    std::printf("| total | | | | | | | %.2f | %.2f | %.2fx |\n", sum1, sum2, sum2 / std::max(1e-6, sum1));
}

// The parallel search (docs/search.md, "Threads"): wall seconds of complete searches (top 3,
// baselines off) with 1, 2, 4, ... threads, the speed-up over one, and whether every thread count
// returned the same plans with the same scores.
}  // namespace

int main(int argc, char** argv) {
    std::string what = argc > 1 ? argv[1] : "all";
    double limit = 120;
    bool limit_given = false;
    int max_threads = std::max(1, static_cast<int>(std::thread::hardware_concurrency())), reps = 1;
    std::string recompute;  // --recompute (megatron-sweep): one setting only
    bool moe = false;       // --moe (megatron-sweep): an MoE model in place of the dense one
    for (int i = 2; i < argc; ++i)
        if (std::string(argv[i]) == "--moe") moe = true;
    for (int i = 2; i + 1 < argc; ++i) {
        if (std::string(argv[i]) == "--limit") limit = std::stod(argv[i + 1]), limit_given = true;
        if (std::string(argv[i]) == "--threads") g_threads = std::stoi(argv[i + 1]);
        if (std::string(argv[i]) == "--schedule") g_schedule = argv[i + 1];
        if (std::string(argv[i]) == "--node-counts") g_node_counts = argv[i + 1];
        if (std::string(argv[i]) == "--max-threads") max_threads = std::stoi(argv[i + 1]);
        if (std::string(argv[i]) == "--reps") reps = std::stoi(argv[i + 1]);
        if (std::string(argv[i]) == "--recompute") recompute = argv[i + 1];
    }
    try {
        if (what == "space" || what == "all") space();
        if (what == "ridge" || what == "all") ridge();
        if (what == "compare" || what == "all") compare(limit);
        if (what == "scale" || what == "all") scale(limit);
        if (what == "stage-tp" || what == "all") stage_tp();
        if (what == "threads" || what == "all") threads_bench(limit, max_threads, reps);
        const SweepOptions so{limit_given ? limit : 2, g_threads, g_schedule, g_node_counts, moe};
        if (what == "sweep") sweep_bench(so);
        if (what == "shape" && argc > 4) shape_bench(std::stoi(argv[2]), std::stoi(argv[3]), std::stoi(argv[4]), so);
        if (what == "megatron-sweep") megatron_sweep_bench(so, recompute);
        if (what == "megatron-oracle" && argc > 4) megatron_oracle_bench(std::stoi(argv[2]), std::stoi(argv[3]), std::stoi(argv[4]), recompute.empty() ? "selective" : recompute, so);
        // the scenario of one shape, for `poseidon plan`: megatron-scenario TYPES GPUS LAYERS [--recompute R]
        if (what == "megatron-scenario" && argc > 4)
            std::printf("%s\n", megatron_scenario(std::stoi(argv[3]), std::stoi(argv[2]), std::stoi(argv[4]), recompute.empty() ? "selective" : recompute, moe).dump(1).c_str());
        if (what == "schedule") schedule();
        if (what == "blocks") group_blocks_bench(limit_given ? limit : 60, g_threads);
        if (what == "challenge") challenge_bench(limit_given ? limit : 60, g_threads);
    } catch (const InputError& e) {
        for (const auto& p : e.problems()) std::fprintf(stderr, "%s\n", p.line().c_str());
        return 2;
    }
    return 0;
}
