// Advice for a scenario without a feasible plan (advice.hpp): search variants of the scenario,
// each with a short time limit, and report which ones yield a plan.
#include "poseidon/advice.hpp"

#include <algorithm>
#include <chrono>
#include <functional>

#include "poseidon/error.hpp"
#include "poseidon/estimate.hpp"
#include "poseidon/scenario.hpp"

namespace poseidon {

AdviceOptions parse_advice_options(const Json& j) {
    Problems problems;
    AdviceOptions o;
    ObjectReader r(j, "options", problems);
    if (r.ok()) {
        r.reject_unknown({"time_limit_s", "total_time_limit_s", "tp_per_stage"});
        if (auto v = r.number("time_limit_s", false, 0, false, 600)) o.time_limit_s = *v;
        if (auto v = r.number("total_time_limit_s", false, 0, false, 3600)) o.total_time_limit_s = *v;
        if (auto v = r.boolean("tp_per_stage", false)) o.tp_per_stage = *v;
    }
    problems.throw_if_any();
    return o;
}

namespace {

using Clock = std::chrono::steady_clock;

std::string device_label(const Device& d) { return d.name.empty() ? (d.id.empty() ? std::string("inline device") : d.id) : d.name; }

class Adviser {
public:
    Adviser(const Scenario& sc, const AdviceOptions& o) : sc_(sc), opt_(o), t0_(Clock::now()) {}

    double remaining() const { return opt_.total_time_limit_s - std::chrono::duration<double>(Clock::now() - t0_).count(); }
    double elapsed() const { return std::chrono::duration<double>(Clock::now() - t0_).count(); }

    // Searches `variant` (the scenario after `edit`) unless the time is spent; true when feasible.
    bool run(AdviceVariant& v, const std::function<void(Scenario&)>& edit) {
        const double left = remaining();
        if (left <= 0.01) {
            v.status = "skipped";
            v.reason = "the time for advice ran out before this variant was searched";
            return false;
        }
        Scenario s = sc_;
        edit(s);
        SearchOptions so;
        so.top_k = 1;
        so.baselines = false;
        so.tp_per_stage = opt_.tp_per_stage;
        so.time_limit_s = std::min(opt_.time_limit_s, left);
        try {
            SearchResult r = search(s, so);
            v.complete = r.stats.complete;
            v.infeasible = r.stats.infeasible;
            if (!r.plans.empty()) {
                v.status = "feasible";
                v.best = to_json(s, r.plans.front(), false);
                return true;
            }
            v.status = "infeasible";
            v.reason = r.stats.complete ? "the search found no plan that fits" : "no plan that fits found within the time limit";
        } catch (const InputError& e) {
            // a variant the core refuses (a limit exceeded): say so rather than fail the advice
            v.status = "not_applicable";
            v.reason = e.problems().empty() ? std::string("the core refuses this variant") : e.problems().front().message;
        }
        return false;
    }

    const Scenario& sc_;
    AdviceOptions opt_;
    Clock::time_point t0_;
};

}  // namespace

Advice advise(const Scenario& sc, const AdviceOptions& options) {
    Advice a;
    Adviser ad(sc, options);
    {
        SearchOptions so;
        so.top_k = 1;
        so.baselines = false;
        so.tp_per_stage = options.tp_per_stage;
        so.time_limit_s = std::min(options.time_limit_s, std::max(0.01, ad.remaining()));
        SearchResult r = search(sc, so);
        a.infeasible = r.stats.infeasible;
        if (!r.plans.empty()) {
            a.feasible_now = true;
            a.elapsed_s = ad.elapsed();
            return a;
        }
    }
    const Training& t = sc.training;
    auto add = [&](std::string id, std::string label, Json changes, const std::function<void(Scenario&)>& edit) -> bool {
        AdviceVariant v;
        v.id = std::move(id);
        v.label = std::move(label);
        v.changes = std::move(changes);
        const bool ok = ad.run(v, edit);
        a.variants.push_back(std::move(v));
        return ok;
    };

    // memory savers, one at a time
    if (t.recompute == Recompute::none)
        add("recompute_selective", "selective activation recompute (attention only)", {{"training.recompute", "selective"}},
            [](Scenario& s) { s.training.recompute = Recompute::selective; });
    // MLA and MoE models: the modules Megatron-Core recomputes for them (docs/model.md,
    // "Recomputing named modules"), far cheaper than the whole block
    if (t.recompute != Recompute::full && (sc.model.mla || sc.model.is_moe())) {
        RecomputeModules r;
        // with flash attention it saves nothing, unless a GPU cannot run it (device flash_attention)
        r.core_attn = !t.flash_attention || std::any_of(sc.cluster.groups.begin(), sc.cluster.groups.end(), [](const auto& g) { return !g.device.flash_attention; });
        r.mla_up_proj = sc.model.mla;
        r.moe_act = sc.model.is_moe();
        r.layernorm = !is_low_precision(t.precision);
        if (t.recompute != Recompute::selective || !(t.recompute_modules == r)) {
            const Json names = to_json(r);
            std::string list;
            for (const auto& n : names) list += (list.empty() ? "" : ", ") + n.get<std::string>();
            add("recompute_modules", "selective recompute of named modules (" + list + ": Megatron-Core --recompute-modules)",
                {{"training.recompute", "selective"}, {"training.recompute_modules", names}}, [r](Scenario& s) {
                    s.training.recompute = Recompute::selective;
                    s.training.recompute_modules = r;
                });
        }
    }
    // named modules belong to selective recompute only: a variant that leaves it drops them (null)
    const bool named = t.recompute == Recompute::selective && !t.recompute_modules.only_core_attn();
    Json full = {{"training.recompute", "full"}};
    if (named) full["training.recompute_modules"] = nullptr;
    if (t.recompute != Recompute::full)
        add("recompute_full", "full activation recompute (every layer's activations recomputed in the backward pass)", full,
            [](Scenario& s) { s.training.recompute = Recompute::full; });
    if (!t.distributed_optimizer)
        add("distributed_optimizer", "distributed optimizer (optimizer state sharded over data-parallel ranks)",
            {{"training.distributed_optimizer", true}}, [](Scenario& s) { s.training.distributed_optimizer = true; });
    // Megatron-FSDP shards the parameters and gradients too (docs/model.md, "FSDP"): the larger saving
    if (!t.fsdp)
        add("fsdp", "Megatron-FSDP (parameters, gradients and optimizer states sharded over the data-parallel ranks)", {{"training.fsdp", true}},
            [](Scenario& s) { s.training.fsdp = true; });
    if (!t.sequence_parallel)
        add("sequence_parallel", "sequence parallelism (activations sharded over tensor-parallel ranks)",
            {{"training.sequence_parallel", true}}, [](Scenario& s) { s.training.sequence_parallel = true; });
    // all of them together
    Json savers = Json::object();
    if (t.recompute != Recompute::full) savers["training.recompute"] = "full";
    if (named) savers["training.recompute_modules"] = nullptr;
    if (!t.distributed_optimizer) savers["training.distributed_optimizer"] = true;
    if (!t.sequence_parallel) savers["training.sequence_parallel"] = true;
    auto apply_savers = [](Scenario& s) {
        s.training.recompute = Recompute::full;
        s.training.distributed_optimizer = true;
        s.training.sequence_parallel = true;
    };
    if (savers.size() >= 2)
        add("memory_savers", "full recompute, distributed optimizer and sequence parallelism together", savers, apply_savers);

    // A global batch so large that every micro-batch size small enough to fit needs more than
    // max_num_micro_batches of them: a smaller batch (a tenth, a hundredth, a thousandth: the
    // largest that yields a plan).
    if (const auto it = a.infeasible.find("micro-batches over limit"); it != a.infeasible.end() && it->second > 0) {
        for (const std::int64_t divisor : {10, 100, 1000}) {
            const std::int64_t smaller = t.global_batch_size / divisor;
            if (smaller < 1) break;
            if (add("smaller_global_batch",
                    "a global batch of " + std::to_string(smaller) + " samples instead of " + std::to_string(t.global_batch_size) +
                        " (a pipeline runs at most " + std::to_string(max_num_micro_batches) +
                        " micro-batches per iteration, so this batch needs micro-batches too large to fit)",
                    {{"training.global_batch_size", smaller}}, [smaller](Scenario& s) { s.training.global_batch_size = smaller; }))
                break;
        }
    }

    // more GPUs: each group with twice its nodes, then every group x2, x4, x8 (the smallest that fits)
    const auto& groups = sc.cluster.groups;
    const std::int64_t total = sc.cluster.num_gpus();
    if (groups.size() > 1) {
        for (std::size_t g = 0; g < groups.size(); ++g) {
            const int nodes = groups[g].nodes;
            if (total + static_cast<std::int64_t>(groups[g].num_gpus()) > max_total_gpus) continue;
            add("more_nodes_group_" + std::to_string(g),
                "group " + std::to_string(g) + " (" + device_label(groups[g].device) + "): " + std::to_string(nodes) + " -> " +
                    std::to_string(2 * nodes) + " nodes",
                {{"cluster.groups[" + std::to_string(g) + "].nodes", 2 * nodes}},
                [g](Scenario& s) { s.cluster.groups[g].nodes *= 2; });
        }
    }
    auto scale_all = [&](int factor, bool with_savers, const std::string& id_prefix) {
        Json changes = with_savers ? savers : Json::object();
        std::string what;
        for (std::size_t g = 0; g < groups.size(); ++g) {
            changes["cluster.groups[" + std::to_string(g) + "].nodes"] = groups[g].nodes * factor;
            what += (g ? ", " : "") + std::to_string(groups[g].nodes) + " -> " + std::to_string(groups[g].nodes * factor);
        }
        const std::string label = std::string(groups.size() > 1 ? "every group with " : "") + std::to_string(factor) + "x the nodes (" + what + ")" +
                                  (with_savers ? ", with full recompute, distributed optimizer and sequence parallelism" : "");
        return add(id_prefix, label, changes, [factor, with_savers, &apply_savers](Scenario& s) {
            for (auto& g : s.cluster.groups) g.nodes *= factor;
            if (with_savers) apply_savers(s);
        });
    };
    bool any_more = false;
    for (int factor : {2, 4, 8}) {
        if (total * factor > max_total_gpus) break;
        if (scale_all(factor, false, "more_nodes_all")) { any_more = true; break; }
    }
    if (!any_more && savers.size() >= 1) {
        for (int factor : {2, 4, 8}) {
            if (total * factor > max_total_gpus) break;
            if (scale_all(factor, true, "memory_savers_more_nodes")) break;
        }
    }

    // a smaller micro-batch: the search already tries them all
    AdviceVariant mb;
    mb.id = "smaller_micro_batch";
    mb.label = "a smaller micro-batch";
    mb.status = "not_applicable";
    mb.reason = "the search already tries every micro-batch size that divides the global batch of " + std::to_string(t.global_batch_size) +
                " samples, down to 1 sample per data-parallel replica, so a smaller micro-batch cannot make a plan fit";
    a.variants.push_back(std::move(mb));
    a.elapsed_s = ad.elapsed();
    return a;
}

Json to_json(const Advice& a) {
    Json variants = Json::array();
    for (const auto& v : a.variants) {
        Json inf = Json::object();
        for (const auto& [k, n] : v.infeasible) inf[k] = n;
        Json j = {{"id", v.id},     {"label", v.label},     {"changes", v.changes}, {"status", v.status},
                  {"reason", v.reason}, {"complete", v.complete}, {"infeasible", inf}, {"best", v.best}};
        variants.push_back(std::move(j));
    }
    Json inf = Json::object();
    for (const auto& [k, n] : a.infeasible) inf[k] = n;
    return {{"feasible_now", a.feasible_now}, {"infeasible", inf}, {"variants", variants}, {"elapsed_s", round_output(a.elapsed_s)}};
}

}  // namespace poseidon
