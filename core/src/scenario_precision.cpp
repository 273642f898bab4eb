// The training precisions by name, and the check that every group's GPU runs the scenario's
// (docs/formats.md, "training"; docs/model.md, "Low precision").
#include "poseidon/cost_model.hpp"
#include "poseidon/json_util.hpp"
#include "poseidon/scenario.hpp"

namespace poseidon {

namespace {
constexpr std::pair<Precision, const char*> precision_names[] = {
    {Precision::bf16, "bf16"}, {Precision::fp16, "fp16"},  {Precision::fp32, "fp32"},     {Precision::fp8, "fp8"},
    {Precision::fp8_delayed, "fp8-delayed"}, {Precision::fp8_blockwise, "fp8-blockwise"}, {Precision::mxfp8, "mxfp8"}, {Precision::nvfp4, "nvfp4"}};
}  // namespace

void check_precision_support(const Scenario& sc, Problems& problems) {
    const Precision p = sc.training.precision;
    if (!is_low_precision(p)) return;
    for (std::size_t i = 0; i < sc.cluster.groups.size(); ++i) {
        const Device& d = sc.cluster.groups[i].device;
        if (d.name.empty() || low_precision_tflops(d, p) > 0) continue;
        const char* needs = p == Precision::mxfp8 ? "mxfp8_tflops" : p == Precision::nvfp4 ? "nvfp4_tflops" : "fp8_tflops";
        problems.add("scenario.training.precision", show(Json(to_string(p))) + " cannot run on cluster.groups[" + std::to_string(i) + "] (" +
                                                        (d.id.empty() ? d.name : d.id) + "): the device has no " + needs +
                                                        "; every group trains in the one precision, so choose one all its GPUs run (bf16 runs everywhere)");
    }
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
