// Calibration from measured runs (docs/calibration.md): fits a few physical device parameters (and
// the software stack's fixed overheads) so that `estimate` reproduces the iteration times and peak
// memory a user measured on their cluster.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "poseidon/error.hpp"
#include "poseidon/json_fwd.hpp"
#include "poseidon/types.hpp"

namespace poseidon {

// Limits of RUNS.json (docs/formats.md, "Measured runs"): every run is estimated a few times per
// parameter per iteration, so the work is bounded like one large plan's.
inline constexpr std::size_t max_calibration_runs = 100;
inline constexpr std::int64_t max_calibration_dag_cells = 1'000'000;  // stages x micro-batches, all runs

// Physical bounds of a fitted efficiency: below 2 % of a rate the device is not doing the work the
// model describes, and above 100 % is impossible.
inline constexpr double min_fitted_efficiency = 0.02;
inline constexpr double max_fitted_efficiency = 1.0;

// The selection rule (docs/calibration.md, "Which parameters are fitted"), on elasticities
// d ln(time) / d ln(parameter) over the runs:
// not exercised: no run's time moves by 0.1 % of a change of the parameter;
inline constexpr double min_elasticity = 1e-3;
// determined: the part of its elasticity column that the parameters chosen before it cannot
// imitate has a norm of at least this (a 1 % error in one run moves it by at most ~20 %).
inline constexpr double min_independent_sensitivity = 0.05;

// One measured training run. Runs share the scenario's cluster, precision and stack; a run may
// have trained another model or global batch (the device parameters are the same).
struct MeasuredRun {
    std::string name;
    Plan plan;
    double iteration_time_s = 0;
    std::optional<double> peak_memory_GiB;          // the largest peak over the run's GPUs
    std::optional<ModelSpec> model;                 // when not the scenario's model
    std::optional<std::int64_t> global_batch_size;  // when not the scenario's
};

// The scenario a run is estimated in: `sc` with the run's model and global batch. A measured
// profile describes one model, so a run with its own model is estimated without it.
Scenario run_scenario(const Scenario& sc, const MeasuredRun& run);

enum class FitStatus { fitted, not_exercised, not_determined, no_data };

struct FittedParameter {
    std::string name;            // the device key, e.g. "matmul_efficiency"
    double from = 0;             // value in the input scenario
    double to = 0;               // value in the calibrated scenario (= from unless fitted)
    FitStatus status = FitStatus::not_exercised;
    bool at_bound = false;       // the fit wants it beyond its physical bounds
    double sensitivity = 0;      // norm over the runs of d ln(time) / d ln(value); GiB per GiB for memory
    std::string reason;          // why it was not fitted
};

struct DeviceFit {
    std::string device;          // preset id, or name for an inline device
    std::vector<int> groups;     // cluster groups with that device; they share the fitted values
    int runs = 0;                // runs that use it
    std::vector<FittedParameter> parameters;
};

// The scenario's software stack (training.stack): its fixed overheads, shared by every run.
struct StackFit {
    std::string stack;           // preset id, or name for an inline stack
    int runs = 0;
    std::vector<FittedParameter> parameters;
};

struct RunFit {
    std::string name;
    double measured_s = 0, before_s = 0, after_s = 0;
    std::optional<double> measured_memory_GiB, before_memory_GiB, after_memory_GiB;
    std::string memory_device;   // device of the GPU predicted to hold the peak (after)
};

struct CalibrationResult {
    Scenario scenario;           // the input with the fitted values and their provenance
    std::vector<DeviceFit> devices;
    StackFit stack;
    std::vector<RunFit> runs;
    double rms_log_error_before = 0, rms_log_error_after = 0;
    std::optional<double> memory_rms_log_error_before, memory_rms_log_error_after;
    int iterations = 0;          // Levenberg-Marquardt iterations
    bool converged = false;
    std::vector<std::string> warnings;
};

// Throws InputError when a run's plan does not fit the scenario, or when the runs determine no
// time parameter at all. Deterministic: the same input gives the same output, bit for bit.
CalibrationResult calibrate(const Scenario& sc, const std::vector<MeasuredRun>& runs);

// RUNS.json (docs/formats.md, "Measured runs"), validated against the scenario; paths start
// with "runs", e.g. runs.runs[2].iteration_time_s.
std::vector<MeasuredRun> parse_runs(const Json& j, const Scenario& sc);
std::vector<MeasuredRun> parse_runs_text(std::string_view text, const Scenario& sc);

// The report (docs/formats.md, "Calibration output").
Json to_json(const CalibrationResult& r);
std::string to_text(const CalibrationResult& r);
// `scenario_json` (as the user wrote it: preset ids, stack, profile kept) with its cluster
// replaced by the calibrated one, inline. Accepted by estimate and plan.
Json calibrated_scenario_json(const Json& scenario_json, const CalibrationResult& r);

// The device key "calibration" (docs/formats.md, "device"), and the stack's (fitted overheads).
DeviceCalibration parse_device_calibration(const Json& j, const std::string& path, Problems& problems);
DeviceCalibration parse_stack_calibration(const Json& j, const std::string& path, Problems& problems);
Json to_json(const DeviceCalibration& c);

const char* to_string(FitStatus s);

}  // namespace poseidon
