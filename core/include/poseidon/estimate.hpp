// estimate: a scenario and a plan in, the iteration time, throughput, memory and timeline out.
#pragma once

#include <string>
#include <vector>

#include "poseidon/cost_model.hpp"
#include "poseidon/dag.hpp"
#include "poseidon/error.hpp"
#include "poseidon/json_fwd.hpp"
#include "poseidon/types.hpp"

namespace poseidon {

// Stages x micro-batches beyond which a plan is refused: the DAG has about 4 S m nodes.
inline constexpr std::int64_t max_dag_cells = 1'000'000;

struct Estimate {
    Plan plan;
    double iteration_time_s = 0;
    double closed_form_time_s = 0;
    double tokens_per_s = 0;
    double samples_per_s = 0;
    double mfu = 0;
    double model_tflops_per_gpu = 0;
    int num_gpus = 0;
    bool memory_fits = true;
    bool feasible = true;                 // fits, and the stack can build the plan (problems[] says why not)
    std::vector<StageEval> stages;
    std::vector<StagePlacement> placement;
    std::vector<std::string> problems;  // why it does not fit
    std::vector<std::string> notes;     // settings of the scenario that change nothing (scenario_notes)
    DagResult dag;                       // timeline and breakdown when detailed
};

// Throws InputError for an invalid or unplaceable plan. `detailed` records the timeline and the
// critical-path breakdown.
Estimate estimate(const Scenario& sc, const Plan& plan, bool detailed = true);

// The JSON object of docs/formats.md ("Estimate output"). The timeline is included when
// `with_timeline` (the search omits it for all but the plans it prints).
Json to_json(const Scenario& sc, const Estimate& e, bool with_timeline = true);

// Rounds to 12 significant digits, as every number in the JSON output is, so that the output is
// identical across compilers and the native and wasm builds (last-bit libm differences). Equal to
// strtod(printf("%.12g", x)) (ties to even), computed with integer and double arithmetic only
// (no long double, which is software floating point in wasm); idempotent.
double round_output(double x);

// Human-readable report for the CLI.
std::string to_text(const Scenario& sc, const Estimate& e);
// A stage's TP degrees for text: "2", or "2/1" for replicas of different degrees (first-seen order).
std::string tp_degrees_text(const StagePlan& stage);

}  // namespace poseidon
