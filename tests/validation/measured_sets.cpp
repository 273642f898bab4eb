#include "measured_sets.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <numeric>
#include <sstream>
#include <stdexcept>

#include "poseidon/calibrate.hpp"
#include "poseidon/estimate.hpp"
#include "poseidon/json_util.hpp"
#include "poseidon/scenario.hpp"

namespace poseidon::validation {

namespace {

constexpr double GiB = 1024.0 * 1024.0 * 1024.0;

Json read_data(const std::string& file) {
    const std::string path = std::string(POSEIDON_VALIDATION_DATA_DIR) + "/" + file;
    std::ifstream in(path, std::ios::binary);
    if (!in) throw std::runtime_error("cannot read " + path);
    std::stringstream ss;
    ss << in.rdbuf();
    return parse_json(ss.str(), path);
}

std::string plan_name(int mbs, int tp, int dp, int pp) {
    return "mbs " + std::to_string(mbs) + ", tp " + std::to_string(tp) + ", dp " + std::to_string(dp) + ", pp " + std::to_string(pp);
}

// A homogeneous plan: `layers[k]` blocks on stage k, TP t, DP d, `mbs` samples per replica.
Plan make_plan(const std::vector<int>& layers, int tp, int dp, int mbs, std::int64_t global_batch) {
    Plan plan;
    plan.micro_batch_size = static_cast<std::int64_t>(mbs) * dp;
    plan.num_micro_batches = global_batch / plan.micro_batch_size;
    for (int l : layers) {
        StagePlan st;
        st.num_layers = l;
        st.replicas.push_back({0, tp, dp, mbs});
        plan.stages.push_back(st);
    }
    return plan;
}

double predicted_s(const Trial& t) { return estimate(t.scenario, t.plan, false).iteration_time_s; }

double predicted_peak_GiB(const Trial& t) {
    const Estimate e = estimate(t.scenario, t.plan, false);
    double peak = 0;
    for (const auto& s : e.stages) peak = std::max(peak, s.memory.total_GiB());
    return peak;
}

}  // namespace

MeasuredSet amp_t4_set() {
    const Json d = read_data("amp_t4_16gpu.json");
    const Json& m = d["model"];
    // The published settings: fp16, no recompute, no flash attention, the 2022 DeepSpeed stack;
    // 4 T4 per node on PCIe without peer-to-peer (two CPU sockets), 50 Gb/s Ethernet (TCP).
    const Json scj = {{"model",
                       {{"name", "GPT-2 medium shape"},
                        {"num_layers", m["num_layers"]},
                        {"hidden_size", m["hidden_size"]},
                        {"num_attention_heads", m["num_attention_heads"]},
                        {"ffn_hidden_size", m["ffn_hidden_size"]},
                        {"vocab_size", m["vocab_size"]},
                        {"seq_length", m["seq_length"]},
                        {"tied_embeddings", m["tied_embeddings"]}}},
                      {"training",
                       {{"global_batch_size", d["global_batch_size"]},
                        {"precision", "fp16"},
                        {"recompute", "none"},
                        {"flash_attention", false},
                        {"stack", "deepspeed-megatron-v1-2022"}}},
                      {"cluster", "aws-g4dn-12xlarge-4"}};
    const Scenario sc = parse_scenario(scj);
    MeasuredSet set;
    set.title = "AMP: GPT-2 medium on 16 x T4 (4 x g4dn.12xlarge), DeepSpeed 2022";
    set.source = d["source"].get<std::string>();
    const std::int64_t gbs = d["global_batch_size"].get<std::int64_t>();
    for (const Json& t : d["trials"]) {
        const int pp = t["pp"].get<int>(), tp = t["tp"].get<int>(), dp = t["dp"].get<int>(), mbs = t["mbs"].get<int>();
        // DeepSpeed's layer units: 0 embedding, 1 no-op, 2..25 the blocks, 26-29 no-ops and the head.
        std::vector<int> layers;
        for (int k = 0; k < pp; ++k) {
            const int lo = t["partition"][k].get<int>(), hi = t["partition"][k + 1].get<int>();
            int blocks = 0;
            for (int u = lo; u < hi; ++u) blocks += (u >= 2 && u <= 25) ? 1 : 0;
            layers.push_back(blocks);
        }
        Trial tr;
        tr.name = plan_name(mbs, tp, dp, pp);
        tr.scenario = sc;
        tr.plan = make_plan(layers, tp, dp, mbs, gbs);
        if (!t["measured_s"].is_null()) tr.measured_s = t["measured_s"].get<double>();
        set.trials.push_back(std::move(tr));
    }
    return set;
}

MeasuredSet dlperf_v100_set() {
    const Json d = read_data("dlperf_v100_megatron.json");
    MeasuredSet set;
    set.title = "OneFlow DLPerf: Megatron-LM on 4 x 8 V100-SXM2-16GB";
    set.source = d["source"].get<std::string>();
    for (const Json& r : d["rows"]) {
        const int tp = r["tp"].get<int>(), dp = r["dp"].get<int>(), pp = r["pp"].get<int>(), mbs = r["mbs"].get<int>();
        const int layers = r["layers"].get<int>();
        // Megatron pads the vocabulary to a multiple of 128 x tp.
        const int multiple = 128 * tp, vocab = (50257 + multiple - 1) / multiple * multiple;
        const Json scj = {{"model",
                           {{"name", "GPT h" + std::to_string(r["hidden"].get<int>())},
                            {"num_layers", layers},
                            {"hidden_size", r["hidden"]},
                            {"num_attention_heads", r["heads"]},
                            {"vocab_size", vocab},
                            {"seq_length", 2048},
                            {"tied_embeddings", true}}},
                          {"training",
                           {{"global_batch_size", r["gbs"]},
                            {"precision", "fp16"},
                            {"recompute", "full"},
                            {"flash_attention", false},
                            {"stack", "megatron-lm-2020"}}},
                          {"cluster", "dlperf-v100-4x8"}};
        std::vector<int> split;
        for (int k = 0; k < pp; ++k) split.push_back(layers / pp + (k < layers % pp ? 1 : 0));
        Trial tr;
        tr.name = plan_name(mbs, tp, dp, pp) + ", h " + std::to_string(r["hidden"].get<int>()) + ", " + std::to_string(layers) + " layers";
        tr.scenario = parse_scenario(scj);
        tr.plan = make_plan(split, tp, dp, mbs, r["gbs"].get<std::int64_t>());
        tr.measured_s = r["iter_s"].get<double>();
        tr.measured_peak_GiB = r["peak_mem_MiB"].get<double>() / 1024.0;
        set.trials.push_back(std::move(tr));
    }
    return set;
}

Table time_table(const MeasuredSet& set) {
    Table t;
    t.title = set.title + " (iteration time)";
    t.source = set.source;
    for (const Trial& tr : set.trials)
        if (tr.measured_s) t.cases.push_back({tr.name, "", *tr.measured_s, predicted_s(tr)});
    return t;
}

Ranking time_ranking(const MeasuredSet& set) {
    Ranking r;
    r.title = set.title + ": plans ranked by iteration time";
    r.source = set.source;
    r.metric = "iteration time";
    r.unit = "s";
    r.lower_is_better = true;
    for (const Case& c : time_table(set).cases) r.items.push_back({c.name, c.measured, c.predicted});
    return r;
}

Table memory_table(const MeasuredSet& set) {
    Table t;
    t.title = set.title + " (peak memory per GPU)";
    t.source = set.source;
    t.unit = "GiB";
    for (const Trial& tr : set.trials)
        if (tr.measured_peak_GiB) t.cases.push_back({tr.name, "", *tr.measured_peak_GiB, predicted_peak_GiB(tr)});
    return t;
}

std::vector<FitCheck> memory_classification(const MeasuredSet& set) {
    std::vector<FitCheck> out;
    for (const Trial& tr : set.trials) out.push_back({tr.name, tr.measured_s.has_value(), estimate(tr.scenario, tr.plan, false).feasible});
    return out;
}

std::string to_markdown(const std::vector<FitCheck>& checks, const std::string& title) {
    std::string out = "### " + title + "\n\n| trial | measured | predicted |\n|---|---|---|\n";
    // "fits": estimate's `feasible` (memory, and a plan the stack can build).
    int agree = 0;
    for (const FitCheck& c : checks) {
        agree += c.ran == c.predicted_fits;
        if (c.ran && c.predicted_fits) continue;  // list only the out-of-memory trials and disagreements
        out += "| " + c.name + " | " + (c.ran ? "ran" : "failed (out of memory)") + " | " + (c.predicted_fits ? "fits" : "infeasible") + " |\n";
    }
    char buf[160];
    std::snprintf(buf, sizeof buf, "\n%d of %zu trials classified as measured (the table lists the out-of-memory trials and any disagreement).\n", agree,
                  checks.size());
    return out + buf;
}

Holdout calibration_holdout(const MeasuredSet& set, int k) {
    std::vector<std::size_t> ran;
    for (std::size_t i = 0; i < set.trials.size(); ++i)
        if (set.trials[i].measured_s) ran.push_back(i);
    std::stable_sort(ran.begin(), ran.end(), [&](std::size_t a, std::size_t b) { return *set.trials[a].measured_s < *set.trials[b].measured_s; });
    std::vector<bool> chosen(set.trials.size(), false);
    const Scenario& base = set.trials[ran.front()].scenario;
    // Every run shares the set's largest cluster; a run keeps its own model and global batch.
    const Trial* widest = &set.trials[ran.front()];
    for (std::size_t i : ran)
        if (set.trials[i].scenario.cluster.num_gpus() > widest->scenario.cluster.num_gpus()) widest = &set.trials[i];
    Scenario sc = base;
    sc.cluster = widest->scenario.cluster;
    std::vector<MeasuredRun> runs;
    Holdout h;
    for (int j = 0; j < k; ++j) {
        const std::size_t idx = ran[static_cast<std::size_t>(std::lround(static_cast<double>(j) * (ran.size() - 1) / (k - 1)))];
        chosen[idx] = true;
        const Trial& t = set.trials[idx];
        MeasuredRun r;
        r.name = t.name;
        r.plan = t.plan;
        r.iteration_time_s = *t.measured_s;
        r.model = t.scenario.model;
        r.global_batch_size = t.scenario.training.global_batch_size;
        runs.push_back(r);
        h.calibrated_on.push_back(t.name);
    }
    const CalibrationResult fit = calibrate(sc, runs);
    auto list = [&h](const std::string& owner, const std::vector<FittedParameter>& params) {
        for (const FittedParameter& p : params)
            if (p.status == FitStatus::fitted) {
                char buf[200];
                std::snprintf(buf, sizeof buf, "%s%s: %s %.4g -> %.4g", h.fitted.empty() ? "" : "; ", owner.c_str(), p.name.c_str(), p.from, p.to);
                h.fitted += buf;
            }
    };
    for (const DeviceFit& df : fit.devices) list(df.device, df.parameters);
    list("stack " + fit.stack.stack, fit.stack.parameters);
    h.before.title = set.title + ": held-out trials, default presets";
    h.after.title = set.title + ": held-out trials, calibrated on " + std::to_string(k);
    h.before.source = h.after.source = set.source;
    Ranking rb, ra;
    for (std::size_t i : ran) {
        if (chosen[i]) continue;
        const Trial& t = set.trials[i];
        Scenario calibrated = fit.scenario;
        calibrated.model = t.scenario.model;
        calibrated.training.global_batch_size = t.scenario.training.global_batch_size;
        const double before = predicted_s(t), after = estimate(calibrated, t.plan, false).iteration_time_s;
        h.before.cases.push_back({t.name, "", *t.measured_s, before});
        h.after.cases.push_back({t.name, "", *t.measured_s, after});
        rb.items.push_back({t.name, *t.measured_s, before});
        ra.items.push_back({t.name, *t.measured_s, after});
    }
    h.rho_before = rb.rho();
    h.rho_after = ra.rho();
    return h;
}

std::string to_markdown(const Holdout& h, const std::string& title) {
    std::string on;
    for (const auto& n : h.calibrated_on) on += (on.empty() ? "" : "; ") + n;
    std::string out = "### " + title + "\n\nCalibrated on " + std::to_string(h.calibrated_on.size()) + " trials (" + on + ").\nFitted: " +
                      (h.fitted.empty() ? std::string("nothing") : h.fitted) + ".\n\n| held-out trials | MAPE | largest error | Spearman |\n|---|---|---|---|\n";
    char buf[200];
    std::snprintf(buf, sizeof buf, "| default presets | %.1f %% | %.1f %% | %.3f |\n| calibrated | %.1f %% | %.1f %% | %.3f |\n", 100 * h.before.mape(),
                  100 * h.before.max_abs_error(), h.rho_before, 100 * h.after.mape(), 100 * h.after.max_abs_error(), h.rho_after);
    return out + buf;
}

}  // namespace poseidon::validation
