// The search's JSON surface (docs/formats.md, "Plan output"): its options in, its result out.
#include "poseidon/search.hpp"

namespace poseidon {

SearchOptions parse_search_options(const Json& j) {
    Problems problems;
    SearchOptions o;
    ObjectReader r(j, "options", problems);
    if (r.ok()) {
        r.reject_unknown({"top", "exhaustive", "time_limit_s", "baselines", "tp_per_stage", "threads", "memory_cap_gib", "schedule", "node_counts", "group_blocks", "mixed_stages"});
        if (auto v = r.integer("top", false, 1, 100)) o.top_k = static_cast<int>(*v);
        if (auto v = r.boolean("exhaustive", false)) o.exhaustive = *v;
        if (auto v = r.boolean("tp_per_stage", false)) o.tp_per_stage = *v;
        if (auto v = r.number("time_limit_s", false, 0, false, 86400)) o.time_limit_s = *v;
        if (auto v = r.boolean("baselines", false)) o.baselines = *v;
        if (auto v = r.integer("threads", false, 0, 256)) o.threads = static_cast<int>(*v);
        if (auto v = r.number("memory_cap_gib", false, 0, false, 1e6)) o.memory_cap_gib = *v;
        if (auto v = r.choice("schedule", false, {"any", "1f1b", "interleaved-1f1b"})) o.schedule = *v;
        if (auto v = r.choice("node_counts", false, {"halving", "all"})) o.node_counts = *v;
        if (auto v = r.integer("group_blocks", false, 1, 2)) o.group_blocks = static_cast<int>(*v);
        if (auto v = r.boolean("mixed_stages", false)) o.mixed_stages = *v;
    }
    problems.throw_if_any();
    return o;
}

Json to_json(const Scenario& sc, const SearchResult& r) {
    Json plans = Json::array();
    for (std::size_t k = 0; k < r.plans.size(); ++k) {
        plans.push_back(to_json(sc, r.plans[k], k == 0 && r.timeline));
        if (k < r.detailed.size() && !r.detailed[k]) plans.back().erase("breakdown");  // not computed
        // the batch the plan trains (training.global_batch_tolerance lets it differ from the scenario's)
        plans.back()["global_batch_size"] = r.plans[k].plan.micro_batch_size * r.plans[k].plan.num_micro_batches;
    }
    Json baselines = Json::array();
    const double best = r.plans.empty() ? 0.0 : r.plans.front().iteration_time_s;
    const bool exact = sc.training.global_batch_tolerance <= 0;
    for (const auto& b : r.baselines) {
        Json j;
        if (b.estimate) {
            j = to_json(sc, *b.estimate, false);
            // their time over the best plan's; with a batch tolerance, per sample (the batches differ)
            const double speedup = exact ? b.estimate->iteration_time_s / best : r.plans.front().samples_per_s / b.estimate->samples_per_s;
            j["speedup"] = best > 0 ? Json(round_output(speedup)) : Json(nullptr);
        } else {
            j = Json::object();
            j["iteration_time_s"] = nullptr;
            j["tokens_per_s"] = nullptr;
            j["speedup"] = nullptr;
            j["plan"] = nullptr;
            j["reason"] = b.reason;
        }
        j["name"] = b.name;
        j["description"] = b.description;
        baselines.push_back(std::move(j));
    }
    Json infeasible = Json::object();
    for (const auto& [k, v] : r.stats.infeasible) infeasible[k] = v;
    Json stats = {{"evaluated", r.stats.evaluated},
                  {"pruned", r.stats.pruned},
                  {"infeasible", infeasible},
                  {"elapsed_s", round_output(r.stats.elapsed_s)},
                  {"complete", r.stats.complete},
                  {"cancelled", r.stats.cancelled},
                  {"configurations", r.stats.configurations},
                  {"cost_probes", r.stats.cost_probes},
                  {"stopped_by", r.stats.stopped_by.empty() ? Json(nullptr) : Json(r.stats.stopped_by)},
                  {"notes", r.stats.notes},
                  {"threads", r.stats.threads}};
    return {{"plans", plans}, {"baselines", baselines}, {"stats", stats}};
}

}  // namespace poseidon
