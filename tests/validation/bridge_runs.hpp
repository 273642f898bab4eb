// NVIDIA's published Megatron-Bridge pre-training runs (docs/validation.md, "Megatron-Bridge"):
// the dense Llama 3 rows with a precision, on DGX H100 / B200 / B300 and GB200 / GB300 NVL72,
// each turned into a scenario and a plan with the published settings and the default presets.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "poseidon/json_util.hpp"
#include "poseidon/types.hpp"
#include "validation_cases.hpp"

namespace poseidon::validation {

struct BridgeRun {
    std::string name;          // e.g. "26.02 GB300 Llama 3 70B NVFP4, TP1 PP4 VP5 (64 GPUs)"
    Scenario scenario;
    Plan plan;
    double measured_tokens_per_s_per_gpu = 0;
    std::string excluded;      // why the row is not estimated (a setting the model lacks), or ""
    std::string config;        // what the harness chose that the row does not publish, or ""
};
// A run that does not fit without recomputation must have recomputed (or offloaded), which the
// published table does not say: the fewest blocks of full recomputation per stage that fit
// (Megatron-Core's block method), named in run.config; nothing where it fits as published.
void recompute_to_fit(BridgeRun& run);

// The data file, its published systems as clusters of the default presets, its precision names.
Json read_bridge_data();
struct System {
    const char* device;
    int gpus_per_node;
    int nvlink_domain_gpus;  // 0: the node
    double nic_GBps_per_node;
    const char* label;
};
extern const std::map<std::string, System> bridge_systems;
std::string bridge_precision(const std::string& published);
int bridge_int_or(const Json& j, const char* key, int fallback);
// The row's micro-batch (mbs x dp), micro-batch count, schedule and VP into `plan`; returns dp.
int bridge_schedule(const Json& row, Plan& plan);
// The row's system as a one-group cluster of the default presets.
Json bridge_cluster(const Json& row);

// Every dense row of tests/validation/data/megatron_bridge_perf.json whose precision is published.
std::vector<BridgeRun> bridge_dense_runs();

// Tokens/s per GPU, measured and predicted, of the rows not excluded; `fits` of each in `fit`.
Table bridge_dense_table(const std::vector<BridgeRun>& runs, std::vector<bool>* fit = nullptr);
// Every MoE row (DeepSeek-V3, Qwen3 30B-A3B and 235B-A22B, GPT-OSS 120B) whose precision is
// published (bridge_moe_runs.cpp).
std::vector<BridgeRun> bridge_moe_runs();
Table bridge_table(const std::vector<BridgeRun>& runs, std::vector<bool>* fit, const std::string& title);
// The excluded rows and the reason, as a markdown list.
std::string bridge_excluded_markdown(const std::vector<BridgeRun>& runs);

}  // namespace poseidon::validation
