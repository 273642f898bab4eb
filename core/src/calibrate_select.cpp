// Which parameters the runs determine (docs/calibration.md, "Which parameters are fitted"): one round of the
// selection that calibrate.cpp repeats at the input and at the fitted values.
#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "calibrate_fit.hpp"

namespace poseidon::calibration {

// One selection round: keeps `chosen` and adds, most sensitive first, each candidate that fewer
// than `num_runs` chosen parameters leave room for and whose elasticity column keeps a norm of
// min_independent_sensitivity once the chosen columns are projected out (Gram-Schmidt). Sets
// every candidate's status, reason and sensitivity; returns whether it added any.
bool select_parameters(const std::vector<std::vector<double>>& columns, std::size_t num_runs, const std::vector<std::string>& labels,
                       std::vector<std::size_t>& chosen, std::vector<FittedParameter>& info) {
    std::vector<std::vector<double>> basis;  // orthonormal span of the chosen columns
    auto project_out = [&](std::vector<double> v) {
        for (const auto& q : basis) {
            const double d = dot(q, v);
            for (std::size_t i = 0; i < v.size(); ++i) v[i] -= d * q[i];
        }
        return v;
    };
    auto extend = [&](std::vector<double> r) {
        const double n = std::sqrt(sum_sq(r));
        if (n < 1e-12) return;
        for (double& e : r) e /= n;
        basis.push_back(std::move(r));
    };
    for (std::size_t k : chosen) {
        info[k].sensitivity = std::sqrt(sum_sq(columns[k]));
        extend(project_out(columns[k]));
    }
    std::vector<std::size_t> order;
    for (std::size_t k = 0; k < columns.size(); ++k)
        if (std::find(chosen.begin(), chosen.end(), k) == chosen.end()) order.push_back(k);
    std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) { return sum_sq(columns[a]) > sum_sq(columns[b]); });
    bool added = false;
    for (std::size_t k : order) {
        FittedParameter& fp = info[k];
        fp.sensitivity = std::sqrt(sum_sq(columns[k]));
        double largest = 0;
        for (double e : columns[k]) largest = std::max(largest, std::abs(e));
        if (largest < min_elasticity) {
            fp.status = FitStatus::not_exercised;
            fp.reason = "the runs do not exercise it (no run's time depends on it)";
            continue;
        }
        fp.status = FitStatus::not_determined;
        if (chosen.size() >= num_runs) {
            fp.reason = "not determined: " + std::to_string(num_runs) + " run(s) determine at most " + std::to_string(num_runs) + " parameter(s); more runs are needed";
            continue;
        }
        std::vector<double> r = project_out(columns[k]);
        if (std::sqrt(sum_sq(r)) >= min_independent_sensitivity) {
            extend(std::move(r));
            chosen.push_back(k);
            fp.status = FitStatus::fitted;
            fp.reason.clear();
            added = true;
        } else if (fp.sensitivity < min_independent_sensitivity || chosen.empty()) {
            fp.reason = "not determined: its effect on the runs is too small (changing it by 10 % moves their times by under 0.5 %)";
        } else {
            std::size_t closest = chosen.front();
            double best = -1;
            for (std::size_t o : chosen) {
                const double cosine = std::abs(dot(columns[o], columns[k])) / std::sqrt(sum_sq(columns[o]) * sum_sq(columns[k]));
                if (cosine > best) best = cosine, closest = o;
            }
            fp.reason = "not determined: the runs cannot tell it apart from " + labels[closest] + "; runs that differ more (micro-batch size, TP degree, stages, nodes) would tell them apart";
        }
    }
    return added;
}

}  // namespace poseidon::calibration
