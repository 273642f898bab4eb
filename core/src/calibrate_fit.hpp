// Internal to calibration (core/src/calibrate*.cpp): the parameters it fits, the working state
// shared by the selection (calibrate_select.cpp) and the Levenberg-Marquardt fit (calibrate_fit.cpp).
#pragma once

#include <cmath>
#include <string>
#include <vector>

#include "poseidon/calibrate.hpp"
#include "poseidon/estimate.hpp"

namespace poseidon::calibration {

struct TimeParameter {
    const char* name;
    double Device::*member;
};

// Each is a fraction of a rate that the device preset states (docs/model.md, "Device rates"), so
// a fitted value keeps its physical meaning and its bounds. Order breaks sensitivity ties.
inline constexpr TimeParameter time_parameters[] = {
    {"matmul_efficiency", &Device::matmul_efficiency},
    {"memory_bw_efficiency", &Device::memory_bw_efficiency},
    {"intra_node_link_efficiency", &Device::intra_node_link_efficiency},
    {"inter_node_link_efficiency", &Device::inter_node_link_efficiency},
};
inline constexpr int num_time_parameters = 4;

// The software stack's fixed costs (docs/model.md, "Software stacks"): times the GPU waits through
// whatever the chip, which no device rate can imitate on small models and small cards. The
// bounds are what a framework can physically cost: a kernel launch is at least a fraction of a
// microsecond, and no stack pays a second per pass or 100 ms per layer and still trains.
struct StackParameter {
    const char* name;
    double Stack::*member;
    double min, max;
};
inline constexpr StackParameter stack_parameters[] = {
    {"host_us_per_kernel", &Stack::host_us_per_kernel, 0.1, 1000},
    {"pass_overhead_us", &Stack::pass_overhead_us, 1, 1e6},
    {"layer_overhead_us", &Stack::layer_overhead_us, 1, 1e5},
};
inline constexpr int num_stack_parameters = 3;

inline constexpr double fd_step = 1e-5;  // in ln(value); the model is piecewise smooth (roofline max)
inline constexpr int max_iterations = 100;

struct Candidate {
    int type = 0;        // device type: groups sharing a preset id (or name); -1: the stack
    int param = 0;       // index into time_parameters, or stack_parameters for the stack
    bool stack() const { return type < 0; }
    const char* name() const { return stack() ? stack_parameters[param].name : time_parameters[param].name; }
    double min() const { return stack() ? stack_parameters[param].min : min_fitted_efficiency; }
    double max() const { return stack() ? stack_parameters[param].max : max_fitted_efficiency; }
    // A device efficiency is known to about a quarter either way (the spread of published
    // sustained rates across software versions); a stack overhead is an estimate, known to a
    // factor of e (docs/calibration.md, "The fit").
    double prior_log_sigma() const { return stack() ? 1.0 : 0.25; }
};

struct Work {
    Scenario sc;                  // the calibrated scenario being built
    std::vector<Scenario> run_sc; // each run's scenario, kept in step with sc's devices
    const std::vector<MeasuredRun>& runs;
    std::vector<std::vector<int>> groups_of_type;
    std::vector<std::vector<char>> run_uses_type;  // [run][type]

    double get(const Candidate& c) const {
        if (c.stack()) return sc.training.stack.*stack_parameters[c.param].member;
        return sc.cluster.groups[groups_of_type[c.type].front()].device.*time_parameters[c.param].member;
    }
    void set_device(int type, double Device::*member, double v) {
        for (int g : groups_of_type[type]) {
            sc.cluster.groups[g].device.*member = v;
            for (auto& s : run_sc) s.cluster.groups[g].device.*member = v;
        }
    }
    void set(const Candidate& c, double v) {
        if (!c.stack()) return set_device(c.type, time_parameters[c.param].member, v);
        sc.training.stack.*stack_parameters[c.param].member = v;
        for (auto& s : run_sc) s.training.stack.*stack_parameters[c.param].member = v;
    }
    bool run_uses(std::size_t run, const Candidate& c) const { return c.stack() || run_uses_type[run][c.type]; }
    double ln_time(std::size_t i) const { return std::log(estimate(run_sc[i], runs[i].plan, false).iteration_time_s); }
    std::vector<double> residuals() const;
    std::vector<double> elasticity(const Candidate& c);
};

// (calibrate_select.cpp)
// One selection round: keeps `chosen` and adds, most sensitive first, each candidate that fewer
// than `num_runs` chosen parameters leave room for and whose elasticity column keeps a norm of
// min_independent_sensitivity once the chosen columns are projected out (Gram-Schmidt). Sets
// every candidate's status, reason and sensitivity; returns whether it added any.
bool select_parameters(const std::vector<std::vector<double>>& columns, std::size_t num_runs, const std::vector<std::string>& labels,
                       std::vector<std::size_t>& chosen, std::vector<FittedParameter>& info);

double sum_sq(const std::vector<double>& v);
double dot(const std::vector<double>& a, const std::vector<double>& b);

// Six significant digits (printf/strtod, correctly rounded in glibc and musl alike). Fitted
// values are written so, and the "after" figures computed with exactly those values.
double round6(double x);
// The report's figures that come through finite differences or logarithms (sensitivities,
// errors, RMS): six significant digits, and 0 below 1e-9, so that the native and wasm builds,
// whose libms differ in the last bit, print the same report.
double round_report(double x);

struct LmResult {
    int iterations = 0;
    bool converged = false;
};

// The fit is a maximum a posteriori estimate (docs/calibration.md, "The fit"): a run's log time is
// matched to about run_log_sigma (the model's error on the runs it reproduces best: 2-3 % MAPE on
// the Megatron-LM tables, docs/validation.md), and a preset's value is known to about
// Candidate::prior_log_sigma in ln p. Their ratio weighs the pull back to the preset: runs that
// cannot tell parameters apart leave them near their presets instead of trading one against
// another towards the bounds, while a parameter the runs determine moves as far as they say.
inline constexpr double run_log_sigma = 0.05;
inline double prior_weight(const Candidate& c) {
    const double ratio = run_log_sigma / c.prior_log_sigma();
    return ratio * ratio;
}

// Minimises sum_i r_i^2 + sum_p prior_weight(p) (x_p - ln preset_p)^2 over x = ln(values) of
// `params` (r_i: log residual of run i), each within its bounds (Candidate::min, max);
// `preset[p]` is the value the input scenario gives params[p]. Leaves the result in w.
LmResult levenberg_marquardt(Work& w, const std::vector<Candidate>& params, const std::vector<double>& preset);

}  // namespace poseidon::calibration
