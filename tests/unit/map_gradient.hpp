// The objective of calibration's fit (docs/calibration.md, "The fit") differentiated at the
// calibrated values: for each fitted time parameter of group 0's device and of the stack,
// d/d ln p of sum_i r_i^2 + w_p (ln p - ln preset_p)^2, with w_p = (0.05 / 0.25)^2 for a device
// efficiency and (0.05 / 1)^2 for a stack overhead, stated here by hand. Zero at the fit's
// optimum unless the parameter sits on a bound.
#pragma once
#include <cmath>
#include <string>
#include <utility>
#include <vector>

#include "poseidon/calibrate.hpp"
#include "poseidon/estimate.hpp"

namespace poseidon::testing {

inline std::vector<std::pair<std::string, double>> map_gradient(const CalibrationResult& res, const std::vector<MeasuredRun>& runs) {
    struct Member {
        const char* name;
        double Device::*device;
        double Stack::*stack;
    };
    const Member members[] = {{"matmul_efficiency", &Device::matmul_efficiency, nullptr},
                              {"memory_bw_efficiency", &Device::memory_bw_efficiency, nullptr},
                              {"intra_node_link_efficiency", &Device::intra_node_link_efficiency, nullptr},
                              {"inter_node_link_efficiency", &Device::inter_node_link_efficiency, nullptr},
                              {"host_us_per_kernel", nullptr, &Stack::host_us_per_kernel},
                              {"pass_overhead_us", nullptr, &Stack::pass_overhead_us},
                              {"layer_overhead_us", nullptr, &Stack::layer_overhead_us}};
    auto cost_terms = [&](const Scenario& sc) {
        double c = 0;
        for (const auto& r : runs) {
            const double d = std::log(estimate(sc, r.plan, false).iteration_time_s / r.iteration_time_s);
            c += d * d;
        }
        return c;
    };
    std::vector<std::pair<std::string, double>> out;
    auto add = [&](const FittedParameter& p, const Member& m, double weight) {
        if (p.status != FitStatus::fitted || p.at_bound) return;
        const double h = 1e-4;
        Scenario up = res.scenario, down = res.scenario;
        auto set = [&](Scenario& s, double v) {
            if (m.stack) {
                s.training.stack.*m.stack = v;
            } else {
                for (auto& g : s.cluster.groups)
                    if (g.device.name == res.scenario.cluster.groups[0].device.name) g.device.*m.device = v;
            }
        };
        set(up, p.to * std::exp(h));
        set(down, p.to * std::exp(-h));
        const double data = (cost_terms(up) - cost_terms(down)) / (2 * h);
        out.emplace_back(p.name, data + 2 * weight * std::log(p.to / p.from));
    };
    for (const auto& m : members) {
        if (m.device) {
            for (const auto& p : res.devices.front().parameters)
                if (p.name == m.name) add(p, m, 0.04);
        } else {
            for (const auto& p : res.stack.parameters)
                if (p.name == m.name) add(p, m, 0.0025);
        }
    }
    return out;
}

}  // namespace poseidon::testing
