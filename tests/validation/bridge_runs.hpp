// NVIDIA's published Megatron-Bridge pre-training runs (docs/validation.md, "Megatron-Bridge"):
// the dense Llama 3 rows with a precision, on DGX H100 / B200 / B300 and GB200 / GB300 NVL72,
// each turned into a scenario and a plan with the published settings and the default presets.
#pragma once

#include <string>
#include <vector>

#include "poseidon/types.hpp"
#include "validation_cases.hpp"

namespace poseidon::validation {

struct BridgeRun {
    std::string name;          // e.g. "26.02 GB300 Llama 3 70B NVFP4, TP1 PP4 VP5 (64 GPUs)"
    Scenario scenario;
    Plan plan;
    double measured_tokens_per_s_per_gpu = 0;
    std::string excluded;      // why the row is not estimated (a setting the model lacks), or ""
};

// Every dense row of tests/validation/data/megatron_bridge_perf.json whose precision is published.
std::vector<BridgeRun> bridge_dense_runs();

// Tokens/s per GPU, measured and predicted, of the rows not excluded; `fits` of each in `fit`.
Table bridge_dense_table(const std::vector<BridgeRun>& runs, std::vector<bool>* fit = nullptr);
// The excluded rows and the reason, as a markdown list.
std::string bridge_excluded_markdown(const std::vector<BridgeRun>& runs);

}  // namespace poseidon::validation
