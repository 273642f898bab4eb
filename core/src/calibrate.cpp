// `poseidon calibrate` (docs/calibration.md): which parameters the runs determine, the fit of the
// times (Levenberg-Marquardt in calibrate_fit.cpp), a closed form for the framework memory
// overhead, and the report. JSON and text front ends: calibrate_json.cpp.
#include "poseidon/calibrate.hpp"
#include "poseidon/json_util.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "calibrate_fit.hpp"

namespace poseidon {

namespace {

using namespace calibration;

struct Peak {
    double GiB = 0;
    int stage = 0, replica = 0, group = 0;
};

// The GPU of the run predicted to hold the most memory, or (with `at`) the GPU a previous call
// found, so that a slope compares the same GPU.
Peak peak_memory(const Scenario& sc, const Plan& plan, const Peak* at = nullptr) {
    const Estimate e = estimate(sc, plan, false);
    Peak best;
    bool found = false;
    for (std::size_t s = 0; s < e.stages.size(); ++s)
        for (std::size_t k = 0; k < e.stages[s].replica_costs.size(); ++k) {
            const double m = e.stages[s].replica_costs[k].memory.total_GiB();
            const bool take = at ? static_cast<int>(s) == at->stage && static_cast<int>(k) == at->replica : !found || m > best.GiB;
            if (take) best = {m, static_cast<int>(s), static_cast<int>(k), plan.stages[s].replicas[k].group};
            found |= take;
        }
    return best;
}

std::string show_number(double x) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%g", x);
    return buf;
}

double rms(const std::vector<double>& v) { return v.empty() ? 0 : std::sqrt(sum_sq(v) / static_cast<double>(v.size())); }

}  // namespace

Scenario run_scenario(const Scenario& sc, const MeasuredRun& run) {
    Scenario s = sc;
    if (run.model) {
        s.model = *run.model;
        s.model_ref = run.model->id;
        s.profile.reset();
    }
    if (run.global_batch_size) s.training.global_batch_size = *run.global_batch_size;
    return s;
}

CalibrationResult calibrate(const Scenario& input, const std::vector<MeasuredRun>& runs) {
    if (runs.empty()) throw InputError("runs.runs", "is empty; expected at least one measured run");
    Work w{input, {}, runs, {}, {}};
    for (const auto& run : runs) w.run_sc.push_back(run_scenario(input, run));
    // Device types: groups with the same preset id (or name) share one set of values.
    std::vector<int> type_of_group(input.cluster.groups.size(), -1);
    std::vector<std::string> keys;
    CalibrationResult res;
    for (std::size_t g = 0; g < input.cluster.groups.size(); ++g) {
        const std::string key = device_key(input.cluster.groups[g].device);
        auto it = std::find(keys.begin(), keys.end(), key);
        type_of_group[g] = static_cast<int>(it - keys.begin());
        if (it == keys.end()) {
            keys.push_back(key);
            w.groups_of_type.emplace_back();
        }
        w.groups_of_type[type_of_group[g]].push_back(static_cast<int>(g));
    }
    const std::size_t num_types = keys.size();
    w.run_uses_type.assign(runs.size(), std::vector<char>(num_types, 0));
    std::vector<int> runs_of_type(num_types, 0);
    for (std::size_t i = 0; i < runs.size(); ++i) {
        for (const auto& st : runs[i].plan.stages)
            for (const auto& rs : st.replicas) w.run_uses_type[i][type_of_group.at(rs.group)] = 1;
        for (std::size_t t = 0; t < num_types; ++t) runs_of_type[t] += w.run_uses_type[i][t];
    }

    std::vector<double> before_log_error = w.residuals();

    // Which parameters the runs determine (docs/calibration.md): chosen at the input values, fitted,
    // then chosen again at the fitted values (a parameter far from its preset may only show there),
    // until a round adds none.
    std::vector<Candidate> candidates;
    std::vector<std::string> labels;
    std::vector<FittedParameter> info;
    for (std::size_t t = 0; t < num_types; ++t)
        if (runs_of_type[t])
            for (int p = 0; p < num_time_parameters; ++p) {
                candidates.push_back({static_cast<int>(t), p});
                labels.push_back(keys[t] + " " + time_parameters[p].name);
                FittedParameter fp;
                fp.name = time_parameters[p].name;
                fp.from = fp.to = w.get(candidates.back());
                info.push_back(fp);
            }
    // The stack's overheads, after the devices' (ties go to the device rates). A stack that does
    // not pay an overhead (0) keeps it: a ratio fit cannot leave 0, and 0 is the stack's claim.
    const std::string stack_key = input.training.stack.id.empty() ? input.training.stack.name : input.training.stack.id;
    for (int p = 0; p < num_stack_parameters; ++p) {
        const Candidate c{-1, p};
        FittedParameter fp;
        fp.name = c.name();
        fp.from = fp.to = w.get(c);
        if (!(fp.from > 0)) {
            fp.status = FitStatus::not_exercised;
            fp.reason = "the stack does not pay it (0); give the stack a non-zero value to fit it";
            res.stack.parameters.push_back(fp);
            continue;
        }
        candidates.push_back(c);
        labels.push_back("stack " + stack_key + " " + fp.name);
        info.push_back(fp);
    }
    std::vector<std::size_t> chosen;
    LmResult lm;
    for (std::size_t round = 0; round <= candidates.size(); ++round) {
        std::vector<std::vector<double>> columns;
        for (const auto& cand : candidates) columns.push_back(w.elasticity(cand));
        const bool added = select_parameters(columns, runs.size(), labels, chosen, info);
        if (chosen.empty()) {
            std::string why = "no run's time depends enough on any device efficiency or stack overhead";
            double most = 0;
            for (std::size_t k = 0; k < info.size(); ++k)
                if (info[k].status == FitStatus::not_determined && info[k].sensitivity > most) {
                    most = info[k].sensitivity;
                    why = labels[k] + " is " + info[k].reason;
                }
            throw InputError("runs.runs", "the runs determine no parameter of the time model (" + why +
                                              "); nothing can be calibrated. Measured profiles replace what they cover; add runs whose times depend on the devices");
        }
        if (!added) break;
        std::vector<Candidate> params;
        std::vector<double> preset;
        for (std::size_t k : chosen) {
            params.push_back(candidates[k]);
            preset.push_back(info[k].from);
        }
        const LmResult r = levenberg_marquardt(w, params, preset);
        lm.iterations += r.iterations;
        lm.converged = r.converged;
    }
    res.iterations = lm.iterations;
    res.converged = lm.converged;
    for (std::size_t k : chosen) {
        const Candidate& c = candidates[k];
        const double v = round6(std::clamp(w.get(c), c.min(), c.max()));
        w.set(c, v);
        FittedParameter& fp = info[k];
        fp.to = v;
        fp.at_bound = v <= c.min() * (1 + 1e-9) || v >= c.max();
        if (!fp.at_bound) continue;
        // An overhead at its upper bound means slower runs; an efficiency at its upper bound, faster.
        const bool high = v >= c.max();
        const bool runs_faster = c.stack() ? !high : high;
        res.warnings.push_back(labels[k] + " reached its bound " + show_number(high ? c.max() : c.min()) + ": the runs are " + (runs_faster ? "faster" : "slower") +
                               " than the model allows with any value in [" + show_number(c.min()) + ", " + show_number(c.max()) +
                               "]; another part of the model (or of the runs) is off");
    }
    if (!lm.converged) res.warnings.push_back("the fit stopped after " + std::to_string(lm.iterations) + " iterations without converging");

    // Framework overhead from peak memory: memory is linear in it, one closed-form least-squares
    // step per device; repeated while the GPU holding each run's peak changes.
    std::vector<FittedParameter> overhead(num_types);
    std::vector<double> sum_ss(num_types, 0.0);
    for (std::size_t t = 0; t < num_types; ++t) {
        overhead[t].name = "framework_overhead_GiB";
        overhead[t].from = overhead[t].to = input.cluster.groups[w.groups_of_type[t].front()].device.framework_overhead_GiB;
        overhead[t].status = FitStatus::no_data;
        overhead[t].reason = "no run gives peak_memory_GiB";
    }
    std::vector<int> attributed(runs.size(), -1);
    for (int pass = 0; pass < 10; ++pass) {
        std::vector<double> num(num_types, 0.0), den(num_types, 0.0);
        std::vector<int> now(runs.size(), -1);
        bool any = false;
        for (std::size_t i = 0; i < runs.size(); ++i) {
            if (!runs[i].peak_memory_GiB) continue;
            const Peak pk = peak_memory(w.run_sc[i], runs[i].plan);
            const int t = type_of_group[pk.group];
            Scenario bumped = w.run_sc[i];
            for (int g : w.groups_of_type[t]) bumped.cluster.groups[g].device.framework_overhead_GiB += 1;
            const double slope = peak_memory(bumped, runs[i].plan, &pk).GiB - pk.GiB;
            now[i] = t;
            num[t] += slope * (*runs[i].peak_memory_GiB - pk.GiB);
            den[t] += slope * slope;
            any = true;
        }
        if (!any) break;
        for (std::size_t t = 0; t < num_types; ++t) {
            if (!(den[t] > 0)) continue;
            const Device& d0 = w.sc.cluster.groups[w.groups_of_type[t].front()].device;
            const double v = round6(std::clamp(d0.framework_overhead_GiB + num[t] / den[t], 0.0, d0.memory_GiB));
            w.set_device(static_cast<int>(t), &Device::framework_overhead_GiB, v);
            overhead[t].to = v;
            overhead[t].status = FitStatus::fitted;
            overhead[t].reason.clear();
            sum_ss[t] = den[t];
        }
        if (now == attributed) break;
        attributed = now;
    }
    for (std::size_t t = 0; t < num_types; ++t) {
        FittedParameter& o = overhead[t];
        if (o.status != FitStatus::fitted) {
            bool has_memory = false;
            for (const auto& run : runs) has_memory |= run.peak_memory_GiB.has_value();
            if (has_memory) o.reason = "no run's predicted peak is on this device";
            continue;
        }
        o.sensitivity = std::sqrt(sum_ss[t]);
        const double cap = w.sc.cluster.groups[w.groups_of_type[t].front()].device.memory_GiB;
        o.at_bound = o.to <= 0 || o.to >= cap;
        if (o.to <= 0) res.warnings.push_back(keys[t] + " framework_overhead_GiB reached 0: the model predicts more memory than measured even without it");
        else if (o.at_bound)
            res.warnings.push_back(keys[t] + " framework_overhead_GiB reached the GPU's memory (" + show_number(cap) +
                                   " GiB): the measured peaks are far above what the model needs; check that each is one GPU's peak on this device");
    }

    // The report and the calibrated devices' provenance.
    std::vector<double> after_log_error = w.residuals();
    std::vector<double> mem_before, mem_after;
    for (std::size_t i = 0; i < runs.size(); ++i) {
        RunFit rf;
        rf.name = runs[i].name.empty() ? "run " + std::to_string(i) : runs[i].name;
        rf.measured_s = runs[i].iteration_time_s;
        const Scenario input_sc = run_scenario(input, runs[i]);
        const Estimate before = estimate(input_sc, runs[i].plan, false);
        rf.before_s = before.iteration_time_s;
        // a run the model cannot hold in memory, or a peak no GPU of the plan has: say so
        if (!before.memory_fits)
            res.warnings.push_back(printable(rf.name) + ": its plan does not fit in memory by the model (" + show_number(round_report(peak_memory(input_sc, runs[i].plan).GiB)) +
                                   " GiB on its fullest GPU); the run differs from the scenario (recomputation, precision, optimizer) or the model misses a saving");
        rf.after_s = estimate(w.run_sc[i], runs[i].plan, false).iteration_time_s;
        if (runs[i].peak_memory_GiB) {
            const Peak b = peak_memory(input_sc, runs[i].plan), a = peak_memory(w.run_sc[i], runs[i].plan);
            rf.measured_memory_GiB = runs[i].peak_memory_GiB;
            rf.before_memory_GiB = b.GiB;
            rf.after_memory_GiB = a.GiB;
            rf.memory_device = keys[type_of_group[a.group]];
            const double cap = input.cluster.groups[a.group].device.memory_GiB;
            if (*runs[i].peak_memory_GiB > cap)
                res.warnings.push_back(printable(rf.name) + ": peak_memory_GiB " + show_number(*runs[i].peak_memory_GiB) + " is more than the GPU's memory (" +
                                       show_number(cap) + " GiB, " + printable(rf.memory_device) + "); give one GPU's peak");
            mem_before.push_back(std::log(b.GiB / *runs[i].peak_memory_GiB));
            mem_after.push_back(std::log(a.GiB / *runs[i].peak_memory_GiB));
        }
        res.runs.push_back(std::move(rf));
    }
    res.rms_log_error_before = rms(before_log_error);
    res.rms_log_error_after = rms(after_log_error);
    if (chosen.size() == runs.size()) {
        // the run furthest off after the fit, as the run table gives it: predicted / measured - 1
        double worst = 0, worst_ratio = 1;
        for (const RunFit& rf : res.runs) {
            const double ratio = rf.after_s / rf.measured_s;
            if (std::abs(std::log(ratio)) > worst) worst = std::abs(std::log(ratio)), worst_ratio = ratio;
        }
        res.warnings.push_back("as many fitted parameters as runs (" + std::to_string(runs.size()) + "): " +
                               (worst < 0.05 ? "the fit reproduces every run (up to the prior's pull to the presets) and says nothing about its accuracy"
                                             : "the fit says nothing about its accuracy, and it does not even reproduce them (a run is still " +
                                                   show_number(round_report(100 * (worst_ratio - 1))) + " % off)") +
                               "; keep some runs out and compare their predictions");
    }
    if (!mem_before.empty()) {
        res.memory_rms_log_error_before = rms(mem_before);
        res.memory_rms_log_error_after = rms(mem_after);
    }
    res.stack.stack = stack_key;
    res.stack.runs = static_cast<int>(runs.size());
    {
        DeviceCalibration cal;
        for (std::size_t c = 0; c < candidates.size(); ++c) {
            if (!candidates[c].stack()) continue;
            res.stack.parameters.push_back(info[c]);
            if (info[c].status == FitStatus::fitted) cal.fitted.push_back({info[c].name, info[c].from, info[c].to});
        }
        // In the table's order, whatever order the zero-valued ones were reported in.
        std::stable_sort(res.stack.parameters.begin(), res.stack.parameters.end(), [](const FittedParameter& a, const FittedParameter& b) {
            auto rank = [](const std::string& n) {
                for (int p = 0; p < num_stack_parameters; ++p)
                    if (n == stack_parameters[p].name) return p;
                return num_stack_parameters;
            };
            return rank(a.name) < rank(b.name);
        });
        if (!cal.fitted.empty()) {
            cal.source = "poseidon calibrate";
            cal.runs = static_cast<std::int64_t>(runs.size());
            cal.rms_log_error_before = round_report(rms(before_log_error));
            cal.rms_log_error_after = round_report(rms(after_log_error));
            w.sc.training.stack.calibration = cal;
        }
    }
    for (std::size_t t = 0; t < num_types; ++t) {
        if (!runs_of_type[t]) continue;
        DeviceFit df{keys[t], w.groups_of_type[t], runs_of_type[t], {}};
        for (std::size_t c = 0; c < candidates.size(); ++c)
            if (candidates[c].type == static_cast<int>(t)) df.parameters.push_back(info[c]);
        df.parameters.push_back(overhead[t]);
        DeviceCalibration cal;
        cal.source = "poseidon calibrate";
        cal.runs = runs_of_type[t];
        for (const auto& p : df.parameters)
            if (p.status == FitStatus::fitted) cal.fitted.push_back({p.name, p.from, p.to});
        std::vector<double> eb, ea;
        for (std::size_t i = 0; i < runs.size(); ++i)
            if (w.run_uses_type[i][t]) eb.push_back(before_log_error[i]), ea.push_back(after_log_error[i]);
        cal.rms_log_error_before = round_report(rms(eb));
        cal.rms_log_error_after = round_report(rms(ea));
        if (!cal.fitted.empty())
            for (int g : w.groups_of_type[t]) w.sc.cluster.groups[g].device.calibration = cal;
        res.devices.push_back(std::move(df));
    }
    res.scenario = std::move(w.sc);
    return res;
}

const char* to_string(FitStatus s) {
    switch (s) {
        case FitStatus::fitted: return "fitted";
        case FitStatus::not_exercised: return "not exercised";
        case FitStatus::not_determined: return "not determined";
        default: return "no data";
    }
}

}  // namespace poseidon
