// JSON and text front ends of calibration (docs/formats.md, "Measured runs" and "Calibration
// output"): RUNS.json, the report, the calibrated scenario and the device's provenance key.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <utility>
#include <string_view>
#include <sstream>
#include <stdexcept>
#include <vector>

#include "poseidon/calibrate.hpp"
#include "poseidon/cost_model.hpp"
#include "poseidon/estimate.hpp"
#include "poseidon/json_util.hpp"
#include "poseidon/scenario.hpp"

#include "calibrate_fit.hpp"

namespace poseidon {

namespace {

constexpr std::int64_t max_recorded_runs = 1'000'000'000;  // provenance may come from other tools

// Paths inside the plan validator start with "plan"; a run's plan lives at runs.runs[i].plan.
std::string rebase(const std::string& path, const std::string& plan_path) {
    return path.rfind("plan", 0) == 0 ? plan_path + path.substr(4) : path;
}

std::string pad(std::string s, std::size_t width) {
    if (s.size() < width) s.append(width - s.size(), ' ');
    return s;
}

std::string percent(double predicted, double measured) {
    char buf[32];
    const double tenths = std::round(1000 * (predicted / measured - 1));
    std::snprintf(buf, sizeof buf, "%+.1f %%", (tenths == 0 ? 0.0 : tenths) / 10);
    return buf;
}

}  // namespace

std::vector<MeasuredRun> parse_runs(const Json& j, const Scenario& sc) {
    Problems problems;
    ObjectReader r(j, "runs", problems);
    if (!r.ok()) problems.throw_if_any();
    r.reject_unknown({"runs", "name", "source", "notes"});
    r.string("name", false);
    r.string("source", false);
    r.string("notes", false);
    const std::string expected = "expected an array of 1 to " + std::to_string(max_calibration_runs) + " measured runs";
    const Json* list = r.get("runs");
    if (!list) problems.add("runs.runs", "is missing; " + expected);
    else if (!list->is_array() || list->empty() || list->size() > max_calibration_runs)
        problems.add("runs.runs", show(*list) + (list->is_array() ? " has " + std::to_string(list->size()) + " runs" : " is not an array") + "; " + expected);
    problems.throw_if_any();
    std::vector<MeasuredRun> runs;
    std::int64_t cells = 0;
    for (std::size_t i = 0; i < list->size(); ++i) {
        const std::string path = "runs.runs[" + std::to_string(i) + "]";
        ObjectReader rr((*list)[i], path, problems);
        if (!rr.ok()) continue;
        rr.reject_unknown({"name", "plan", "iteration_time_s", "peak_memory_GiB", "model", "global_batch_size", "notes"});
        MeasuredRun run;
        if (auto v = rr.string("name", false)) run.name = *v;
        rr.string("notes", false);
        auto time_s = rr.number("iteration_time_s", true, 0, false, 1e6);
        auto memory_GiB = rr.number("peak_memory_GiB", false, 0, false, 1e6);
        const std::size_t before = problems.size();
        if (const Json* m = rr.get("model")) run.model = parse_model(*m, rr.path_of("model"), problems);
        run.global_batch_size = rr.integer("global_batch_size", false, 1, max_global_batch_size);
        if (problems.size() != before) continue;  // the plan is checked against a valid model only
        const Json* pj = rr.get("plan");
        if (!pj) {
            problems.add(rr.path_of("plan"), "is missing; expected the plan that ran, as `poseidon estimate --plan` takes it");
            continue;
        }
        try {
            const Scenario rsc = run_scenario(sc, run);
            run.plan = parse_plan(*pj, rsc, rr.path_of("plan"), run.global_batch_size ? rr.path_of("global_batch_size") : "training.global_batch_size");
            place_plan(rsc, run.plan);
        } catch (const InputError& e) {
            for (const auto& p : e.problems()) problems.add(rebase(p.path, rr.path_of("plan")), p.message);
            continue;
        }
        cells += static_cast<std::int64_t>(run.plan.stages.size()) * run.plan.num_micro_batches;
        if (!time_s) continue;
        run.iteration_time_s = *time_s;
        run.peak_memory_GiB = memory_GiB;
        runs.push_back(std::move(run));
    }
    if (cells > max_calibration_dag_cells)
        problems.add("runs.runs", "the runs' plans have " + std::to_string(cells) + " stage x micro-batch cells in all; at most " +
                                      std::to_string(max_calibration_dag_cells) + " (each run is estimated many times)");
    problems.throw_if_any();
    return runs;
}

std::vector<MeasuredRun> parse_runs_text(std::string_view text, const Scenario& sc) { return parse_runs(parse_json(text, "runs"), sc); }

namespace {

constexpr const char* device_keys[] = {"matmul_efficiency", "memory_bw_efficiency", "intra_node_link_efficiency", "inter_node_link_efficiency", "framework_overhead_GiB"};

DeviceCalibration parse_calibration(const Json& j, const std::string& path, Problems& problems, bool stack) {
    DeviceCalibration c;
    ObjectReader r(j, path, problems);
    if (!r.ok()) return c;
    r.reject_unknown({"fitted", "runs", "source", "notes", "rms_log_error_before", "rms_log_error_after"});
    if (auto v = r.string("source", false)) c.source = *v;
    if (auto v = r.string("notes", false)) c.notes = *v;
    if (auto v = r.integer("runs", false, 0, max_recorded_runs)) c.runs = *v;
    c.rms_log_error_before = r.number("rms_log_error_before", false, 0, true, 1e6);
    c.rms_log_error_after = r.number("rms_log_error_after", false, 0, true, 1e6);
    const Json* fitted = r.get("fitted");
    if (!fitted) return c;
    ObjectReader f(*fitted, r.path_of("fitted"), problems);
    if (!f.ok()) return c;
    // each key with its bound: a stack's as parse_stack reads it (so a calibrated scenario written
    // back always reads again), 1e6 for a device's
    std::vector<std::pair<const char*, double>> keys;
    if (stack)
        for (const auto& k : stack_overhead_keys) keys.emplace_back(k.key, k.max_us);
    else
        for (const char* k : device_keys) keys.emplace_back(k, 1e6);
    if (stack)
        f.reject_unknown({keys[0].first, keys[1].first, keys[2].first});
    else
        f.reject_unknown({keys[0].first, keys[1].first, keys[2].first, keys[3].first, keys[4].first});
    for (const auto& [name, cap] : keys) {
        const Json* entry = f.get(name);
        if (!entry) continue;
        ObjectReader e(*entry, f.path_of(name), problems);
        if (!e.ok()) continue;
        e.reject_unknown({"from", "to"});
        auto from = e.number("from", true, 0, true, cap);
        auto to = e.number("to", true, 0, true, cap);
        if (from && to) c.fitted.push_back({name, *from, *to});
    }
    return c;
}

}  // namespace

DeviceCalibration parse_device_calibration(const Json& j, const std::string& path, Problems& problems) {
    return parse_calibration(j, path, problems, false);
}

DeviceCalibration parse_stack_calibration(const Json& j, const std::string& path, Problems& problems) {
    return parse_calibration(j, path, problems, true);
}

Json to_json(const DeviceCalibration& c) {
    Json fitted = Json::object();
    for (const auto& v : c.fitted) fitted[v.parameter] = {{"from", v.from}, {"to", v.to}};
    Json j = {{"fitted", fitted}, {"runs", c.runs}, {"source", c.source}};
    if (c.rms_log_error_before) j["rms_log_error_before"] = *c.rms_log_error_before;
    if (c.rms_log_error_after) j["rms_log_error_after"] = *c.rms_log_error_after;
    if (!c.notes.empty()) j["notes"] = c.notes;
    return j;
}

Json to_json(const CalibrationResult& res) {
    Json runs = Json::array();
    for (const auto& r : res.runs) {
        Json j = {{"name", r.name},
                  {"measured_s", r.measured_s},
                  {"predicted_before_s", round_output(r.before_s)},
                  {"predicted_after_s", round_output(r.after_s)},
                  {"error_before", calibration::round_report(round_output(r.before_s) / r.measured_s - 1)},
                  {"error_after", calibration::round_report(round_output(r.after_s) / r.measured_s - 1)}};
        if (r.measured_memory_GiB) {
            j["peak_memory_GiB"] = *r.measured_memory_GiB;
            j["predicted_memory_before_GiB"] = round_output(*r.before_memory_GiB);
            j["predicted_memory_after_GiB"] = round_output(*r.after_memory_GiB);
            j["memory_error_before"] = calibration::round_report(round_output(*r.before_memory_GiB) / *r.measured_memory_GiB - 1);
            j["memory_error_after"] = calibration::round_report(round_output(*r.after_memory_GiB) / *r.measured_memory_GiB - 1);
            j["memory_device"] = r.memory_device;
        }
        runs.push_back(std::move(j));
    }
    auto parameters = [](const std::vector<FittedParameter>& list) {
        Json params = Json::object();
        for (const auto& p : list) {
            Json pj = {{"status", to_string(p.status)}, {"from", p.from}, {"to", p.to}, {"at_bound", p.at_bound}, {"sensitivity", calibration::round_report(p.sensitivity)}};
            if (!p.reason.empty()) pj["reason"] = p.reason;
            params[p.name] = std::move(pj);
        }
        return params;
    };
    Json devices = Json::array();
    for (const auto& d : res.devices) devices.push_back({{"device", d.device}, {"groups", d.groups}, {"runs", d.runs}, {"parameters", parameters(d.parameters)}});
    Json j = {{"runs", runs},
              {"devices", devices},
              {"stack", {{"stack", res.stack.stack}, {"runs", res.stack.runs}, {"parameters", parameters(res.stack.parameters)}}},
              {"rms_log_error_before", calibration::round_report(res.rms_log_error_before)},
              {"rms_log_error_after", calibration::round_report(res.rms_log_error_after)},
              {"iterations", res.iterations},
              {"converged", res.converged},
              {"warnings", res.warnings}};
    if (res.memory_rms_log_error_before) {
        j["memory_rms_log_error_before"] = calibration::round_report(*res.memory_rms_log_error_before);
        j["memory_rms_log_error_after"] = calibration::round_report(*res.memory_rms_log_error_after);
    }
    return j;
}

std::string to_text(const CalibrationResult& res) {
    std::ostringstream o;
    o << "calibrated on " << res.runs.size() << " run(s): RMS log error of the iteration time " << fixed_text(res.rms_log_error_before, 4) << " before, "
      << fixed_text(res.rms_log_error_after, 4) << " after (" << res.iterations << " iterations)\n";
    if (res.memory_rms_log_error_before)
        o << "peak memory: RMS log error " << fixed_text(*res.memory_rms_log_error_before, 4) << " before, " << fixed_text(*res.memory_rms_log_error_after, 4) << " after\n";
    // the owner column as wide as its longest label (devices, the stack), within 48
    std::size_t width = 24;
    const std::string stack_label = printable("stack " + res.stack.stack, 46);
    for (const auto& d : res.devices) width = std::max(width, printable(d.device, 46).size() + 2);
    if (!res.stack.parameters.empty()) width = std::max(width, stack_label.size() + 2);
    o << "\n" << pad("device", width) << pad("parameter", 28) << "       before        after\n";
    auto rows = [&o, width](const std::string& owner, const std::vector<FittedParameter>& list) {
        bool first = true;
        for (const auto& p : list) {
            o << pad(first ? printable(owner, 46) : "", width) << pad(p.name, 28);
            char buf[64];
            std::snprintf(buf, sizeof buf, "%13.4f%13.4f", p.from, p.to);  // 1e6 us (the bound) keeps a space
            o << buf << "  " << (p.status == FitStatus::fitted ? (p.at_bound ? "fitted, at its bound" : "fitted") : p.reason) << "\n";
            first = false;
        }
    };
    for (const auto& d : res.devices) rows(d.device, d.parameters);
    rows(stack_label, res.stack.parameters);
    bool memory = false;
    for (const auto& r : res.runs) memory |= r.measured_memory_GiB.has_value();
    o << "\n" << pad("run", 24) << "measured_s  before_s    error   after_s    error" << (memory ? "  peak_GiB  before   after" : "") << "\n";
    for (const auto& r : res.runs) {
        char buf[160];
        std::snprintf(buf, sizeof buf, "%10.4f%10.4f %8s%10.4f %8s", r.measured_s, r.before_s, percent(r.before_s, r.measured_s).c_str(), r.after_s,
                      percent(r.after_s, r.measured_s).c_str());
        o << pad(printable(r.name, 22), 24) << buf;
        if (r.measured_memory_GiB) {
            std::snprintf(buf, sizeof buf, "%10.2f%8.2f%8.2f", *r.measured_memory_GiB, *r.before_memory_GiB, *r.after_memory_GiB);
            o << buf;
        }
        o << "\n";
    }
    for (const auto& w : res.warnings) o << "warning: " << w << "\n";
    return o.str();
}

Json calibrated_scenario_json(const Json& scenario_json, const CalibrationResult& res) {
    Json out = scenario_json;
    out["cluster"] = to_json(res.scenario.cluster);
    // Fitted stack overheads go on top of the stack as the user wrote it (a preset id stays the
    // base), so the calibrated scenario still says which stack it is.
    if (const Stack& st = res.scenario.training.stack; st.calibration) {
        Json& training = out["training"];
        Json stack = training.contains("stack") ? training["stack"] : Json(st.id);
        if (stack.is_string()) stack = Json{{"base", stack}};
        for (const auto& v : st.calibration->fitted) stack[v.parameter] = v.to;
        stack["calibration"] = to_json(*st.calibration);
        training["stack"] = std::move(stack);
    }
    // What calibrate writes must be what estimate and plan read.
    try {
        parse_scenario(out);
    } catch (const InputError& e) {
        throw std::logic_error("the calibrated scenario does not validate: " + (e.problems().empty() ? std::string(e.what()) : e.problems().front().line()));
    }
    return out;
}

}  // namespace poseidon
