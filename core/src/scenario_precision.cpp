// The training precisions by name, and the check that every group's GPU runs the scenario's
// (docs/formats.md, "training"; docs/model.md, "Low precision").
#include <algorithm>

#include "poseidon/cost_model.hpp"
#include "poseidon/json_util.hpp"
#include "poseidon/scenario.hpp"

namespace poseidon {

namespace {
constexpr std::pair<Precision, const char*> precision_names[] = {
    {Precision::bf16, "bf16"}, {Precision::fp16, "fp16"},  {Precision::fp32, "fp32"},     {Precision::fp8, "fp8"},
    {Precision::fp8_delayed, "fp8-delayed"}, {Precision::fp8_blockwise, "fp8-blockwise"}, {Precision::mxfp8, "mxfp8"}, {Precision::nvfp4, "nvfp4"}};
}  // namespace

void read_low_precision_recipes(const Json& j, const std::string& path, Problems& problems, std::vector<std::string>& out) {
    const char* allowed = "an array of \"fp8\", \"fp8-delayed\", \"fp8-blockwise\", \"mxfp8\", \"nvfp4\" (the recipes the stack runs; [] for none)";
    if (!j.is_array() || j.size() > 5) {
        problems.add(path, show(j) + " is not allowed; expected " + allowed);
        return;
    }
    out.clear();
    for (std::size_t i = 0; i < j.size(); ++i) {
        const auto p = j[i].is_string() ? precision_from_string(j[i].get<std::string>()) : std::nullopt;
        if (!p || !is_low_precision(*p)) {
            problems.add(path + "[" + std::to_string(i) + "]", show(j[i]) + " is not a low-precision recipe; expected " + allowed);
            continue;
        }
        out.push_back(j[i].get<std::string>());
    }
}

void check_precision_support(const Scenario& sc, Problems& problems, const std::string& path) {
    check_precision_support(sc, sc.training.precision, problems, path);
}

void check_precision_support(const Scenario& sc, Precision p, Problems& problems, const std::string& path, bool advise) {
    if (!is_low_precision(p)) return;
    const auto& recipes = sc.training.stack.low_precision_recipes;
    if (std::find(recipes.begin(), recipes.end(), to_string(p)) == recipes.end()) {
        std::string list;
        for (const auto& r : recipes) list += (list.empty() ? "" : ", ") + r;
        problems.add(path, show(Json(to_string(p))) + " is not a recipe of the stack " + (sc.training.stack.id.empty() ? sc.training.stack.name : sc.training.stack.id) +
                                                        " (its low_precision_recipes: " + (list.empty() ? "none" : list) + "); choose a recipe it runs, bf16, or a stack with Transformer Engine's recipes (megatron-core)");
        return;
    }
    // the precisions every group's GPU and the stack run, for the message: bf16 and the low ones
    const auto runs_everywhere = [&](Precision q) {
        if (std::find(recipes.begin(), recipes.end(), to_string(q)) == recipes.end()) return false;
        for (const Group& g : sc.cluster.groups)
            if (!g.device.name.empty() && low_precision_tflops(g.device, q) <= 0) return false;
        return true;
    };
    std::string common;
    for (std::size_t i = 0; i < sc.cluster.groups.size(); ++i) {
        const Device& d = sc.cluster.groups[i].device;
        if (d.name.empty() || low_precision_tflops(d, p) > 0) continue;
        if (common.empty()) {
            common = "bf16";
            for (Precision q : {Precision::fp8, Precision::fp8_delayed, Precision::fp8_blockwise, Precision::mxfp8, Precision::nvfp4})
                if (runs_everywhere(q)) common += ", " + to_string(q);
        }
        const char* needs = p == Precision::mxfp8 ? "mxfp8_tflops" : p == Precision::nvfp4 ? "nvfp4_tflops" : "fp8_tflops";
        problems.add(path, show(Json(to_string(p))) + " cannot run on cluster.groups[" + std::to_string(i) + "] (" + device_key(d) +
                               "): the device has no " + needs + " rate (no " + to_string(p) + " tensor cores)" +
                               (advise ? "; every group trains in the one precision, so choose one all its GPUs run (here: " + common + ")" : ""));
    }
}

Scenario scenario_for_plan(const Scenario& sc, const Plan& plan, const std::string& path) {
    if (!plan.has_training_choice()) return sc;
    Scenario out = sc;
    Training& t = out.training;
    if (plan.precision) t.precision = *plan.precision;
    if (plan.fsdp) t.fsdp = *plan.fsdp;
    if (plan.recompute) {
        // the scenario's named modules go with its selective recomputation; a choice of selective
        // over another recomputes what --recompute-activations does (the attention core)
        if (*plan.recompute == Recompute::selective && t.recompute != Recompute::selective) t.recompute_modules = RecomputeModules{};
        t.recompute = *plan.recompute;
        t.recompute_num_layers = t.recompute == Recompute::full ? plan.recompute_num_layers.value_or(0) : 0;
    }
    // the user asked for the low-precision gather where it exists; a bf16 candidate, or one
    // without sharded states, trains without it (the rule parse_scenario enforces)
    t.fp8_param_gather = sc.training.fp8_param_gather_asked && is_low_precision(t.precision) && (t.distributed_optimizer || t.fsdp);
    if (plan.precision) {
        Problems problems;
        check_precision_support(sc, *plan.precision, problems, path + ".precision");
        problems.throw_if_any();
    }
    return out;
}

std::string to_string(Precision p) {
    for (const auto& [v, name] : precision_names)
        if (v == p) return name;
    return "bf16";
}

std::optional<Precision> precision_from_string(std::string_view s) {
    for (const auto& [v, name] : precision_names)
        if (s == name) return v;
    return std::nullopt;
}

}  // namespace poseidon
