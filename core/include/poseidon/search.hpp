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
};

struct SearchStats {
    std::int64_t evaluated = 0;  // full DAG evaluations
    std::int64_t pruned = 0;     // branches cut by the lower bound
    std::map<std::string, std::int64_t> infeasible;  // reason -> count
    double elapsed_s = 0;
    bool complete = true;
    bool cancelled = false;
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
};

SearchOptions parse_search_options(const Json& j);
SearchResult search(const Scenario& sc, const SearchOptions& options);
Json to_json(const Scenario& sc, const SearchResult& r);

}  // namespace poseidon
