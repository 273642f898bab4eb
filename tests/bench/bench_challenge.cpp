// poseidon_bench challenge [--limit S]: does a plan outside the search's space beat what it returns?
// On issue 11's mixed clusters, the search (every option that widens the space: three blocks per
// group, half-node blocks, empty stages, every node count, mixed stages; time limit 120 s) gives
// its best plans; then a randomized local search over the whole plan format that `estimate`
// accepts (layers moved between stages, stages swapped, split or merged, TP changed, the
// micro-batch size changed, samples moved between the replicas of a mixed stage, a stage with no
// block) starts from them for S seconds and keeps the fastest plan by time per sample. A gain
// means the space misses a better plan (by the project's own model).
#include <chrono>
#include <cmath>
#include <ctime>
#include <cstdio>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "poseidon/estimate.hpp"
#include "poseidon/scenario.hpp"
#include "poseidon/search.hpp"
#include "bench_sweep.hpp"

using namespace poseidon;

namespace {

// The time per global batch of a plan (what the search ranks by), or infinity when the plan is
// invalid or does not fit.
double key_of(const Scenario& sc, const Plan& p) {
    try {
        Problems problems;
        validate_plan(p, sc, problems);
        problems.throw_if_any();
        const Estimate e = estimate(sc, p, false);
        if (!e.memory_fits || !e.feasible) return INFINITY;
        return e.iteration_time_s * static_cast<double>(sc.training.global_batch_size) / static_cast<double>(p.micro_batch_size * p.num_micro_batches);
    } catch (const InputError&) {
        return INFINITY;
    }
}

// Samples per replica of a homogeneous stage: the micro-batch over its replicas (0: not whole).
int even_samples(std::int64_t mbs, int count) { return mbs % count == 0 ? static_cast<int>(mbs / count) : 0; }

// One random change of the plan; false when the drawn change does not apply.
bool mutate(Plan& p, std::mt19937_64& rng) {
    auto pick = [&](int n) { return static_cast<int>(std::uniform_int_distribution<int>(0, n - 1)(rng)); };
    const int S = static_cast<int>(p.stages.size());
    switch (pick(7)) {
        case 0: {  // move layers between two stages (a stage may end with none)
            const int i = pick(S), j = pick(S), k = 1 + pick(2);
            if (i == j || p.stages[i].num_layers < k) return false;
            p.stages[i].num_layers -= k;
            p.stages[j].num_layers += k;
            return true;
        }
        case 1: {  // swap two stages
            const int i = pick(S), j = pick(S);
            if (i == j) return false;
            std::swap(p.stages[i], p.stages[j]);
            return true;
        }
        case 2: {  // TP doubled or halved, GPUs kept
            ReplicaSet& r = p.stages[pick(S)].replicas[0];
            const bool up = pick(2) == 0;
            if (up ? r.count % 2 != 0 : r.tp % 2 != 0) return false;
            r.tp = up ? r.tp * 2 : r.tp / 2;
            r.count = up ? r.count / 2 : r.count * 2;
            // the replicas halve or double, so each takes twice or half the samples
            if (!up && r.samples % 2 != 0) return false;
            r.samples = up ? r.samples * 2 : r.samples / 2;
            return true;
        }
        case 3: {  // split a homogeneous stage into two of half its replicas
            const int i = pick(S);
            StagePlan& st = p.stages[i];
            if (st.replicas.size() != 1 || st.replicas[0].count % 2 != 0 || st.num_layers < 2) return false;
            StagePlan half = st;
            half.replicas[0].count /= 2;
            half.replicas[0].samples = even_samples(p.micro_batch_size, half.replicas[0].count);
            if (half.replicas[0].samples == 0) return false;
            StagePlan second = half;
            half.num_layers = st.num_layers / 2;
            second.num_layers = st.num_layers - half.num_layers;
            p.stages[i] = half;
            p.stages.insert(p.stages.begin() + i + 1, second);
            return true;
        }
        case 4: {  // merge two neighbouring homogeneous stages of one group and TP
            if (S < 2) return false;
            const int i = pick(S - 1);
            StagePlan &a = p.stages[i], &b = p.stages[i + 1];
            if (a.replicas.size() != 1 || b.replicas.size() != 1 || a.replicas[0].group != b.replicas[0].group || a.replicas[0].tp != b.replicas[0].tp)
                return false;
            a.replicas[0].count += b.replicas[0].count;
            a.replicas[0].samples = even_samples(p.micro_batch_size, a.replicas[0].count);
            if (a.replicas[0].samples == 0) return false;
            a.num_layers += b.num_layers;
            p.stages.erase(p.stages.begin() + i + 1);
            return true;
        }
        case 5: {  // micro-batch size doubled or halved, the batch kept
            const bool up = pick(2) == 0;
            if (up ? p.num_micro_batches % 2 != 0 : p.micro_batch_size % 2 != 0) return false;
            p.micro_batch_size = up ? p.micro_batch_size * 2 : p.micro_batch_size / 2;
            p.num_micro_batches = up ? p.num_micro_batches / 2 : p.num_micro_batches * 2;
            for (auto& st : p.stages)
                for (auto& r : st.replicas) {
                    if (!up && r.samples % 2 != 0) return false;
                    r.samples = up ? r.samples * 2 : r.samples / 2;
                }
            return true;
        }
        default: {  // samples moved between two replica sets of equal count in one stage
            StagePlan& st = p.stages[pick(S)];
            if (st.replicas.size() < 2) return false;
            const int a = pick(static_cast<int>(st.replicas.size())), b = pick(static_cast<int>(st.replicas.size()));
            if (a == b || st.replicas[a].count != st.replicas[b].count || st.replicas[b].samples < 2) return false;
            ++st.replicas[a].samples;
            --st.replicas[b].samples;
            return true;
        }
    }
}

}  // namespace

void challenge_bench(double seconds, int threads) {
    std::vector<std::pair<std::string, Json>> cases = {
        {"opt-350m | 16 A100-80GB (2 x 8) + 16 T4 (4 x 4), 12.5 GB/s | 256", two_types("opt-350m", "a100-sxm4-80gb", 2, 8, "t4-16gb", 4, 4, 12.5, 256)},
        {"opt-350m | 16 A100-40GB (2 x 8) + 16 V100-16GB (2 x 8), 12.5 GB/s | 256",
         two_types("opt-350m", "a100-sxm4-40gb", 2, 8, "v100-sxm2-16gb", 2, 8, 12.5, 256)},
        {"opt-350m | 16 A100-40GB (2 x 8) + 16 V100-16GB (2 x 8), 200 GB/s | 256",
         two_types("opt-350m", "a100-sxm4-40gb", 2, 8, "v100-sxm2-16gb", 2, 8, 200, 256)},
        {"gpt3-1.7b | metis-t4-a100 | 64", {{"model", "gpt3-1.7b"}, {"training", {{"global_batch_size", 64}}}, {"cluster", "metis-t4-a100"}}},
    };
    std::printf("| model | cluster | batch | search best s | search CPU s | challenger best s | gain | tried, valid, improved |\n");
    std::printf("|---|---|---|---|---|---|---|---|\n");
    for (const auto& [name, j] : cases) {
        const Scenario sc = parse_scenario(j);
        SearchOptions o;
        o.top_k = 3;
        o.time_limit_s = 120;
        o.baselines = false;
        o.threads = threads;
        o.group_blocks = 3;
        o.split_nodes = true;
        o.empty_stages = true;
        o.node_counts = "all";
        o.mixed_stages = true;
        const auto c0 = std::clock();
        const SearchResult r = search(sc, o);
        const double search_s = static_cast<double>(std::clock() - c0) / CLOCKS_PER_SEC;
        if (r.plans.empty()) continue;
        const double searched = key_of(sc, r.plans[0].plan);
        std::mt19937_64 rng(20261201);
        Plan best = r.plans[0].plan;
        double best_key = searched;
        std::int64_t tried = 0, valid = 0, improved = 0;
        const auto t0 = std::chrono::steady_clock::now();
        std::size_t start = 0;
        while (std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() < seconds) {
            // a walk of up to 200 steps from one of the search's plans or the best found, taking
            // every change that is no slower (plateaus are crossed) and up to 3 changes at once
            Plan cur = start % 4 == 3 ? best : r.plans[start % r.plans.size()].plan;
            double cur_key = key_of(sc, cur);
            ++start;
            for (int step = 0; step < 200; ++step) {
                Plan next = cur;
                bool ok = true;
                const int changes = 1 + static_cast<int>(rng() % 3);
                for (int c = 0; c < changes && ok; ++c) ok = mutate(next, rng);
                ++tried;
                if (!ok) continue;
                const double k = key_of(sc, next);
                if (k == INFINITY) continue;
                ++valid;
                if (k <= cur_key) {
                    cur = std::move(next);
                    cur_key = k;
                    if (k < best_key * (1 - 1e-12)) {
                        best_key = k;
                        best = cur;
                        ++improved;
                    }
                }
            }
        }
        std::printf("| %s | %.6g | %.2f | %.6g | %.2f%% | %lld, %lld, %lld |\n", name.c_str(), searched, search_s, best_key, (searched / best_key - 1) * 100,
                    static_cast<long long>(tried), static_cast<long long>(valid), static_cast<long long>(improved));
        if (best_key < searched) std::printf("|   | challenger's plan: %s |\n", to_json(best).dump().c_str());
        std::fflush(stdout);
    }
}
