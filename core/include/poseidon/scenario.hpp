// Parsing and validation of scenarios and plans (docs/formats.md). One validator, used by the CLI,
// the wasm module and (through it) the page.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "poseidon/error.hpp"
#include "poseidon/json_fwd.hpp"
#include "poseidon/types.hpp"

namespace poseidon {

// Documented limits (docs/formats.md, "Limits"): beyond them the planner refuses rather than
// allocating without bound.
inline constexpr std::int64_t max_total_gpus = 1'000'000;
inline constexpr std::int64_t max_num_layers = 10'000;
inline constexpr std::int64_t max_num_micro_batches = 100'000;
// A stack's host overheads, in microseconds, with the upper bound parse_stack reads each with; the
// calibration provenance of a fitted stack checks its values against the same bounds.
struct StackOverheadKey {
    const char* key;
    double max_us;
};
inline constexpr StackOverheadKey stack_overhead_keys[] = {{"host_us_per_kernel", 1e6}, {"pass_overhead_us", 1e7}, {"layer_overhead_us", 1e7}};
inline constexpr std::int64_t max_global_batch_size = 100'000'000;
inline constexpr std::int64_t max_model_dim = 1'000'000;
inline constexpr std::int64_t max_seq_length = 10'000'000;
inline constexpr std::int64_t max_groups = 64;
inline constexpr std::int64_t max_stages = 1'000;
inline constexpr std::int64_t max_replicas = 4'096;      // listed replicas of one stage
inline constexpr std::int64_t max_tp = 1'024;            // also the most GPUs per node
inline constexpr std::int64_t max_virtual_stages = 128;   // model chunks per stage (interleaved 1F1B)

Device parse_device(const Json& j, const std::string& path, Problems& problems);
ModelSpec parse_model(const Json& j, const std::string& path, Problems& problems);
Cluster parse_cluster(const Json& j, const std::string& path, Problems& problems);
// A stack preset id or an inline stack object (optionally {"base": id, ...overrides}).
Stack parse_stack(const Json& j, const std::string& path, Problems& problems);
// The scenario's "training" object into sc.training (scenario_training.cpp); its problems under
// scenario.training.
void read_training(const Json& t, Scenario& sc, Problems& problems);

// Throw InputError listing every problem found. With `precision_chosen` (a search that chooses
// the precision, options.precisions), training.precision is not checked against the cluster's
// GPUs: no plan trains in it unless it is among those searched (the search says so in its notes).
Scenario parse_scenario(const Json& j, bool precision_chosen = false);
Scenario parse_scenario_text(std::string_view text, bool precision_chosen = false);
// batch_path: where the batch the plan must train comes from, named in the error when it does not
// (a measured run may give its own).
Plan parse_plan(const Json& j, const Scenario& scenario, const std::string& path = "plan", const std::string& batch_path = "training.global_batch_size");
Plan parse_plan_text(std::string_view text, const Scenario& scenario);
// Whether a plan's JSON text names its own precision ("precision"): the scenario's is then only
// its default (parse_scenario's precision_chosen); false where the text is no JSON object.
bool plan_names_precision(std::string_view plan_text);

// Settings of a valid scenario that change nothing (docs/formats.md, "Notes"): one sentence each,
// naming the key. estimate and the search report them; they are not errors.
std::vector<std::string> scenario_notes(const Scenario& scenario);

// Consistency of a plan with a scenario; also used on plans the search builds.
void validate_plan(const Plan& plan, const Scenario& scenario, Problems& problems, const std::string& path = "plan",
                   const std::string& batch_path = "training.global_batch_size");

Json to_json(const Plan& plan);
Json to_json(const Device& device);
Json to_json(const ModelSpec& model);
Json to_json(const Stack& stack);
Json to_json(const Cluster& cluster);
Json to_json(const Scenario& scenario);  // fully inline, defaults filled in

std::string to_string(Precision p);
// "bf16", ..., "fp8-delayed", "nvfp4" (to_string's names); nullopt for any other text.
std::optional<Precision> precision_from_string(std::string_view s);
// A low precision must run on every group's GPU: a problem per group whose device lacks the rate,
// naming the group and the device (parse_scenario calls it once the cluster is read).
void check_precision_support(const Scenario& sc, Problems& problems, const std::string& path = "scenario.training.precision");
// The same for precision p in place of the scenario's (a plan's or a search option's), under `path`;
// `advise`: end each message with the precisions every group runs.
void check_precision_support(const Scenario& sc, Precision p, Problems& problems, const std::string& path, bool advise = true);
// The scenario a plan trains in: training.precision, training.fsdp and training.recompute replaced
// by the plan's own where a search chose them (Plan::precision, fsdp, recompute,
// recompute_num_layers); the low-precision parameter all-gather
// kept only where the plan's precision and sharding allow it. A precision the cluster or the
// stack cannot run is refused under `path`.precision.
Scenario scenario_for_plan(const Scenario& sc, const Plan& plan, const std::string& path = "plan");
// A stack's "low_precision_recipes" (scenario_precision.cpp).
void read_low_precision_recipes(const Json& j, const std::string& path, Problems& problems, std::vector<std::string>& out);
std::string to_string(Recompute r);
// training.recompute_modules (recompute_modules.cpp): Megatron-Core's module names, in and out.
void read_recompute_modules(const Json& j, const std::string& path, Problems& problems, RecomputeModules& out);
Json to_json(const RecomputeModules& r);

}  // namespace poseidon
