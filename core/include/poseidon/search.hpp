// The plan search (docs/search.md): enumerate -> evaluate with the DAG model -> keep top-K,
// with stage-level pruning and the layer-split ridge walk.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "poseidon/estimate.hpp"

namespace poseidon {

struct SearchProgress {
    std::int64_t evaluated = 0;
    std::int64_t pruned = 0;
    double elapsed_s = 0;
    const Estimate* best = nullptr;  // null until a feasible plan is found
};

struct SearchOptions {
    int top_k = 3;
    bool exhaustive = false;
    double time_limit_s = 10;
    // Called now and then (and whenever the best plan improves); return false to cancel.
    std::function<bool(const SearchProgress&)> on_progress;
    // Compute the baselines (Megatron-uniform, Metis-style). Tests and benchmarks that only compare
    // the search itself switch them off.
    bool baselines = true;
    // Each stage chooses its own TP degree instead of one degree per group: a much wider space
    // (n^k TP sequences for a group of k stages and n degrees, not n), see docs/search.md.
    bool tp_per_stage = false;
};

struct SearchStats {
    std::int64_t evaluated = 0;  // full DAG evaluations
    std::int64_t pruned = 0;     // branches cut by the lower bound
    std::map<std::string, std::int64_t> infeasible;  // reason -> count
    double elapsed_s = 0;
    bool complete = true;
    bool cancelled = false;
    // Diagnostics (docs/search.md, "Statistics"): stage configurations whose layer split was
    // searched, and evaluate_stages calls made to fill the per-stage cost cache.
    std::int64_t configurations = 0;
    std::int64_t cost_probes = 0;
};

struct Baseline {
    std::string name;
    std::string description;
    std::optional<Estimate> estimate;  // empty when the baseline finds no feasible plan
    std::string reason;                // why it has none
};

struct SearchResult {
    std::vector<Estimate> plans;  // best first
    std::vector<Baseline> baselines;
    SearchStats stats;
    // The search's own DAG time of each plan (same order); equal to plans[k].iteration_time_s,
    // which `estimate` recomputed from scratch.
    std::vector<double> scores;
};

SearchOptions parse_search_options(const Json& j);
SearchResult search(const Scenario& sc, const SearchOptions& options);
Json to_json(const Scenario& sc, const SearchResult& r);

// The two simpler planners of docs/search.md ("Baselines"), each scored with `estimate`.
// `time_budget_s` bounds their run time (they stop early with the best found so far).
std::vector<Baseline> compute_baselines(const Scenario& sc, double time_budget_s = 5);

// ---- Introspection for docs, tests and benchmarks ----

// Size of the search space of docs/search.md for a scenario, counted without evaluating anything
// (layer splits counted as compositions, memory not checked).
struct SpaceSize {
    double micro_batch_sizes = 0;    // usable micro-batch sizes
    double stage_layouts = 0;        // (micro-batch size, group order, GPUs per group, stage size) choices
    double configurations = 0;       // ... x TP per block
    double plans = 0;                // ... x layer splits
};
SpaceSize search_space_size(const Scenario& sc, bool tp_per_stage = false);

// The layer-split landscape of one stage configuration: the stages of `plan` (groups, TP, DP,
// micro-batches) with their layer counts free. Every split (when there are at most `max_points`)
// with its DAG time, and the splits the pruned ridge walk evaluated (finding the best `top_k`).
struct SplitPoint {
    std::vector<int> layers;
    double iteration_time_s = 0;  // infinity when a stage does not fit in memory
    bool visited = false;         // evaluated by the ridge walk
};
struct RidgeReport {
    std::vector<SplitPoint> points;     // every split (empty if there are more than max_points)
    std::vector<int> best_layers;       // best split found by the ridge walk
    double best_time_s = 0;
    double exhaustive_best_time_s = 0;  // best over all splits (same as best_time_s unless a bug)
    std::int64_t ridge_evaluations = 0;
    std::int64_t exhaustive_evaluations = 0;
};
RidgeReport ridge_report(const Scenario& sc, const Plan& plan, int top_k = 1, std::int64_t max_points = 200000);

}  // namespace poseidon
