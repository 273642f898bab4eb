// The search's JSON surface (docs/formats.md, "Plan output"): its options in, its result out.
#include <algorithm>
#include <cmath>
#include <optional>

#include "poseidon/json_util.hpp"
#include "poseidon/search.hpp"

#include "poseidon/scenario.hpp"

namespace poseidon {

// options.precisions: "any" or a list of distinct precision names
void read_search_precisions(const Json& j, const std::string& path, Problems& problems, SearchOptions& o);
// options.recompute: "fixed", "any" or a list of distinct recompute names; options.recompute_num_layers
void read_search_recomputes(const Json& j, const std::string& path, Problems& problems, SearchOptions& o);
void read_search_recompute_num_layers(const Json& j, const std::string& path, Problems& problems, SearchOptions& o);
// options.cp_sizes, ep_sizes, etp_sizes: 1 to 16 distinct sizes each
void read_search_sizes(const Json& j, const std::string& path, Problems& problems, const char* what, std::int64_t most, std::vector<int>& out);

SearchOptions parse_search_options(const Json& j) {
    Problems problems;
    SearchOptions o;
    ObjectReader r(j, "options", problems);
    if (r.ok()) {
        r.reject_unknown({"top", "exhaustive", "time_limit_s", "baselines", "tp_per_stage", "threads", "memory_cap_GiB", "memory_cap_gib", "schedule", "node_counts",
                          "group_blocks", "split_nodes", "empty_stages", "mixed_stages", "shard_index", "shard_count", "prune_above_s", "precisions", "fsdp",
                          "recompute", "recompute_num_layers", "cp_sizes", "ep_sizes", "etp_sizes"});
        if (auto v = r.integer("top", false, 1, 100)) o.top_k = static_cast<int>(*v);
        if (auto v = r.boolean("exhaustive", false)) o.exhaustive = *v;
        if (auto v = r.boolean("tp_per_stage", false)) o.tp_per_stage = *v;
        if (auto v = r.number("time_limit_s", false, 0, false, 86400)) o.time_limit_s = *v;
        if (auto v = r.boolean("baselines", false)) o.baselines = *v;
        if (auto v = r.integer("threads", false, 0, 256)) o.threads = static_cast<int>(*v);
        // memory_cap_GiB, with the unit as every other key spells it; memory_cap_gib is its first spelling, still read
        if (r.has("memory_cap_GiB") && r.has("memory_cap_gib"))
            problems.add(r.path_of("memory_cap_gib"), "is given with options.memory_cap_GiB, its other spelling; give one");
        else if (auto v = r.number(r.has("memory_cap_gib") ? "memory_cap_gib" : "memory_cap_GiB", false, 0, false, 1e6))
            o.memory_cap_gib = *v;
        if (auto v = r.choice("schedule", false, {"any", "1f1b", "interleaved-1f1b"})) o.schedule = *v;
        if (auto v = r.choice("node_counts", false, {"halving", "all"})) o.node_counts = *v;
        if (auto v = r.integer("group_blocks", false, 1, 4)) o.group_blocks = static_cast<int>(*v);
        if (auto v = r.boolean("split_nodes", false)) o.split_nodes = *v;
        if (auto v = r.boolean("empty_stages", false)) o.empty_stages = *v;
        if (auto v = r.boolean("mixed_stages", false)) o.mixed_stages = *v;
        // a slice of the search (docs/search.md, "Shards")
        if (auto v = r.integer("shard_count", false, 1, 4096)) o.shard_count = static_cast<int>(*v);
        if (auto v = r.integer("shard_index", false, 0, 4095)) {
            if (o.shard_count == 0)
                problems.add(r.path_of("shard_index"), "is given without options.shard_count; give both (shard_index 0 .. shard_count - 1)");
            else if (*v >= o.shard_count)
                problems.add(r.path_of("shard_index"), std::to_string(*v) + " is out of range; expected 0 .. shard_count - 1 = " +
                                                           std::to_string(o.shard_count - 1));
            else
                o.shard_index = static_cast<int>(*v);
        }
        if (auto v = r.number("prune_above_s", false, 0, false, 1e300)) o.prune_above_s = *v;
        if (const Json* p = r.get("precisions")) read_search_precisions(*p, r.path_of("precisions"), problems, o);
        if (auto v = r.choice("fsdp", false, {"fixed", "any"})) o.fsdp = *v;
        if (const Json* v = r.get("recompute")) read_search_recomputes(*v, r.path_of("recompute"), problems, o);
        if (const Json* v = r.get("recompute_num_layers")) read_search_recompute_num_layers(*v, r.path_of("recompute_num_layers"), problems, o);
        if (const Json* v = r.get("cp_sizes")) read_search_sizes(*v, r.path_of("cp_sizes"), problems, "context-parallel sizes", max_tp, o.cp_sizes);
        if (const Json* v = r.get("ep_sizes")) read_search_sizes(*v, r.path_of("ep_sizes"), problems, "expert-parallel sizes", max_total_gpus, o.ep_sizes);
        if (const Json* v = r.get("etp_sizes")) read_search_sizes(*v, r.path_of("etp_sizes"), problems, "expert tensor-parallel sizes", max_tp, o.etp_sizes);
    }
    problems.throw_if_any();
    return o;
}

namespace {

// A list option of 1 to `most` distinct values: each element read by `one` (nullopt: not such a
// value, `not_one` says what it is not), a repeat refused; the problems name the element's path.
template <typename T, typename F>
void read_distinct_list(const Json& j, const std::string& path, Problems& problems, std::size_t most, const std::string& allowed, const char* not_one, F one,
                        std::vector<T>& out) {
    out.clear();
    if (!j.is_array() || j.empty() || j.size() > most) {
        problems.add(path, show(j) + " is not allowed; expected " + allowed);
        return;
    }
    for (std::size_t i = 0; i < j.size(); ++i) {
        const std::optional<T> v = one(j[i]);
        const std::string at = path + "[" + std::to_string(i) + "]";
        if (!v)
            problems.add(at, show(j[i]) + " " + not_one + "; expected " + allowed);
        else if (std::find(out.begin(), out.end(), *v) != out.end())
            problems.add(at, show(j[i]) + " is given twice; expected " + allowed);
        else
            out.push_back(*v);
    }
}

}  // namespace

void read_search_precisions(const Json& j, const std::string& path, Problems& problems, SearchOptions& o) {
    const char* allowed = "\"any\" or an array of 1 to 8 distinct precisions: \"bf16\", \"fp16\", \"fp32\", \"fp8\", \"fp8-delayed\", \"fp8-blockwise\", \"mxfp8\", \"nvfp4\"";
    if (j.is_string() && j.get<std::string>() == "any") {
        o.any_precision = true;
        return;
    }
    read_distinct_list(j, path, problems, 8, allowed, "is not a precision",
                       [](const Json& v) { return v.is_string() ? precision_from_string(v.get<std::string>()) : std::nullopt; }, o.precisions);
}

void read_search_recomputes(const Json& j, const std::string& path, Problems& problems, SearchOptions& o) {
    const char* allowed = "\"fixed\" (training.recompute), \"any\" (none, selective and full) or an array of 1 to 3 distinct of \"none\", \"selective\", \"full\"";
    o.recomputes.clear();
    if (j.is_string() && (j.get<std::string>() == "fixed" || j.get<std::string>() == "any")) {
        if (j.get<std::string>() == "any") o.recomputes = {Recompute::none, Recompute::selective, Recompute::full};
        return;
    }
    read_distinct_list(j, path, problems, 3, allowed, "is not a recomputation", [](const Json& v) -> std::optional<Recompute> {
        const std::string s = v.is_string() ? v.get<std::string>() : std::string();
        if (s == "none") return Recompute::none;
        if (s == "selective") return Recompute::selective;
        if (s == "full") return Recompute::full;
        return std::nullopt;
    }, o.recomputes);
}

void read_search_recompute_num_layers(const Json& j, const std::string& path, Problems& problems, SearchOptions& o) {
    const std::string allowed = "an array of 1 to 8 distinct block counts, each 1 to " + std::to_string(max_num_layers) +
                                " (full recomputation of the first N blocks of each stage, one search per N)";
    read_distinct_list(j, path, problems, 8, allowed, "is not allowed", [](const Json& v) -> std::optional<int> {
        const bool whole = v.is_number_integer() || (v.is_number_float() && v.get<double>() == std::floor(v.get<double>()));
        const double x = v.is_number() ? v.get<double>() : 0;
        if (!whole || x < 1 || x > max_num_layers) return std::nullopt;
        return static_cast<int>(x);
    }, o.recompute_num_layers);
}

void read_search_sizes(const Json& j, const std::string& path, Problems& problems, const char* what, std::int64_t most, std::vector<int>& out) {
    const std::string allowed = std::string("an array of 1 to 16 distinct ") + what + ", each 1 to " + std::to_string(most) + " (the search's own when absent)";
    read_distinct_list(j, path, problems, 16, allowed, "is not allowed", [most](const Json& v) -> std::optional<int> {
        const bool whole = v.is_number_integer() || (v.is_number_float() && v.get<double>() == std::floor(v.get<double>()));
        const double x = v.is_number() ? v.get<double>() : 0;
        if (!whole || x < 1 || x > static_cast<double>(most)) return std::nullopt;
        return static_cast<int>(x);
    }, out);
}

namespace {
Json stats_json(const SearchStats& s) {
    Json infeasible = Json::object();
    for (const auto& [k, v] : s.infeasible) infeasible[k] = v;
    return {{"evaluated", s.evaluated},
            {"pruned", s.pruned},
            {"infeasible", infeasible},
            {"elapsed_s", round_output(s.elapsed_s)},
            {"complete", s.complete},
            {"cancelled", s.cancelled},
            {"configurations", s.configurations},
            {"cost_probes", s.cost_probes},
            {"threshold_capped", s.threshold_capped},
            {"groups_cut", s.groups_cut},
            {"pretest_cut", s.pretest_cut},
            {"stopped_by", s.stopped_by.empty() ? Json(nullptr) : Json(s.stopped_by)},
            {"notes", s.notes},
            {"threads", s.threads}};
}
}  // namespace

std::optional<double> baseline_speedup(const Scenario& sc, const SearchResult& r, const Baseline& b) {
    if (r.plans.empty() || !b.estimate) return std::nullopt;
    const Estimate& best = r.plans.front();
    if (sc.training.global_batch_tolerance <= 0) return b.estimate->iteration_time_s / best.iteration_time_s;
    return best.samples_per_s / b.estimate->samples_per_s;
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
    for (const auto& b : r.baselines) {
        Json j;
        if (b.estimate) {
            j = to_json(sc, *b.estimate, false);
            j.erase("breakdown");  // scored without it (estimate gives it), as a plan not detailed
            j["global_batch_size"] = b.estimate->plan.micro_batch_size * b.estimate->plan.num_micro_batches;
            const auto speedup = baseline_speedup(sc, r, b);
            j["speedup"] = speedup ? Json(round_output(*speedup)) : Json(nullptr);
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
    return {{"plans", plans}, {"baselines", baselines}, {"stats", stats_json(r.stats)}};
}

// {"shard": {"index", "count"}, "found": [{"key", "iteration_time_s", "plan"}], "stats"}: the keys
// and times unrounded, so that a merge ranks exactly as the slice did.
Json to_json(const ShardResult& r) {
    Json found = Json::array();
    for (const auto& f : r.found) found.push_back({{"key", f.key}, {"iteration_time_s", f.iteration_time_s}, {"plan", to_json(f.plan)}});
    return {{"shard", {{"index", r.index}, {"count", r.count}}}, {"found", found}, {"stats", stats_json(r.stats)}};
}

std::vector<ShardResult> parse_shard_results(const Json& shards, const Scenario& sc) {
    Problems problems;
    std::vector<ShardResult> out;
    if (!shards.is_array() || shards.empty()) {
        problems.add("shards", describe(shards) + "; expected a nonempty array of search slices (plan results with options.shard_count)");
        problems.throw_if_any();
    }
    for (std::size_t i = 0; i < shards.size(); ++i) {
        const std::string path = "shards[" + std::to_string(i) + "]";
        ShardResult s;
        ObjectReader r(shards[i], path, problems);
        if (!r.ok()) continue;
        r.reject_unknown({"shard", "found", "stats"});
        const Json* head = r.get("shard");
        if (!head) {
            problems.add(path + ".shard", "is missing; expected {\"index\", \"count\"} (a plan result with options.shard_count)");
            continue;
        }
        ObjectReader h(*head, path + ".shard", problems);
        h.reject_unknown({"index", "count"});
        if (auto v = h.integer("count", true, 1, 4096)) s.count = static_cast<int>(*v);
        if (auto v = h.integer("index", true, 0, 4095)) s.index = static_cast<int>(*v);
        const Json* found = r.get("found");
        if (!found || !found->is_array()) {
            problems.add(path + ".found", (found ? describe(*found) : std::string("is missing")) + "; expected an array of {key, iteration_time_s, plan}");
        } else {
            for (std::size_t k = 0; k < found->size(); ++k) {
                const std::string fp = path + ".found[" + std::to_string(k) + "]";
                ObjectReader f((*found)[k], fp, problems);
                if (!f.ok()) continue;
                f.reject_unknown({"key", "iteration_time_s", "plan"});
                RankedPlan p;
                if (auto v = f.number("key", true, 0, false, 1e300)) p.key = *v;
                if (auto v = f.number("iteration_time_s", true, 0, false, 1e300)) p.iteration_time_s = *v;
                if (const Json* plan = f.get("plan")) {
                    try {
                        p.plan = parse_plan(*plan, sc, fp + ".plan");
                    } catch (const InputError& e) {
                        for (const auto& q : e.problems()) problems.add(q.path, q.message);
                    }
                } else {
                    problems.add(fp + ".plan", "is missing; expected a plan");
                }
                s.found.push_back(std::move(p));
            }
        }
        if (const Json* st = r.get("stats")) {
            ObjectReader t(*st, path + ".stats", problems);
            const std::int64_t big = std::int64_t{1} << 53;
            if (auto v = t.integer("evaluated", false, 0, big)) s.stats.evaluated = *v;
            if (auto v = t.integer("pruned", false, 0, big)) s.stats.pruned = *v;
            if (auto v = t.integer("configurations", false, 0, big)) s.stats.configurations = *v;
            if (auto v = t.integer("cost_probes", false, 0, big)) s.stats.cost_probes = *v;
            if (auto v = t.integer("threshold_capped", false, 0, big)) s.stats.threshold_capped = *v;
            if (auto v = t.integer("groups_cut", false, 0, big)) s.stats.groups_cut = *v;
            if (auto v = t.integer("pretest_cut", false, 0, big)) s.stats.pretest_cut = *v;
            if (auto v = t.integer("threads", false, 1, 256)) s.stats.threads = static_cast<int>(*v);
            if (auto v = t.number("elapsed_s", false, 0, true, 1e9)) s.stats.elapsed_s = *v;
            if (auto v = t.boolean("complete", false)) s.stats.complete = *v;
            if (auto v = t.boolean("cancelled", false)) s.stats.cancelled = *v;
            const Json* by = t.get("stopped_by");
            if (by && by->is_string()) s.stats.stopped_by = by->get<std::string>();
            const Json* notes = t.get("notes");
            if (notes && notes->is_array())
                for (const auto& n : *notes)
                    if (n.is_string()) s.stats.notes.push_back(n.get<std::string>());
            const Json* inf = t.get("infeasible");
            if (inf && inf->is_object())
                for (const auto& [k, v] : inf->items())
                    if (v.is_number_integer()) s.stats.infeasible[k] = v.get<std::int64_t>();
        } else {
            problems.add(path + ".stats", "is missing; expected the slice's statistics");
        }
        out.push_back(std::move(s));
    }
    problems.throw_if_any();
    return out;
}

}  // namespace poseidon
