// Advice for a scenario with no feasible plan (docs/web.md, "Advice"): which changes
// would make a plan fit. Each variant of the scenario (activation recompute, distributed optimizer,
// sequence parallelism, all of them, more nodes per group) is searched with a short time limit;
// the report says which ones yield a feasible plan and its throughput.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "poseidon/json_util.hpp"
#include "poseidon/search.hpp"
#include "poseidon/types.hpp"

namespace poseidon {

struct AdviceOptions {
    double time_limit_s = 1;         // per variant search
    double total_time_limit_s = 10;  // all searches together; variants beyond it are "skipped"
    bool tp_per_stage = false;       // as the search option of the same name
};

struct AdviceVariant {
    std::string id;       // recompute_selective, recompute_modules, recompute_full, distributed_optimizer, sequence_parallel,
                          // memory_savers, more_nodes_group_<g>, more_nodes_all, memory_savers_more_nodes,
                          // smaller_micro_batch
    std::string label;    // what changes, in words
    Json changes = Json::object();  // scenario path -> new value ("training.recompute": "full")
    std::string status;   // "feasible", "infeasible", "not_applicable", "skipped"
    std::string reason;   // for infeasible / not_applicable / skipped
    Json best;            // the best plan found (estimate JSON without timeline), null if none
    bool complete = true; // the variant's search finished within its time limit
    std::map<std::string, std::int64_t> infeasible;  // the variant search's rejections by reason
};

struct Advice {
    bool feasible_now = false;  // the scenario as given has a feasible plan (no variants are then tried)
    std::map<std::string, std::int64_t> infeasible;  // why the scenario's own search found none
    std::vector<AdviceVariant> variants;
    double elapsed_s = 0;
};

AdviceOptions parse_advice_options(const Json& j);
Advice advise(const Scenario& sc, const AdviceOptions& options);
Json to_json(const Advice& a);

}  // namespace poseidon
