#include "validation_cases.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <numeric>
#include <stdexcept>

#include "poseidon/cost_model.hpp"
#include "poseidon/estimate.hpp"
#include "poseidon/json_util.hpp"
#include "poseidon/scenario.hpp"

namespace poseidon::validation {

double Table::mape() const {
    double s = 0;
    for (const auto& c : cases) s += std::abs(c.rel_error());
    return cases.empty() ? 0 : s / static_cast<double>(cases.size());
}

double Table::max_abs_error() const {
    double m = 0;
    for (const auto& c : cases) m = std::max(m, std::abs(c.rel_error()));
    return m;
}

namespace {

struct MegatronRow {
    const char* params;
    int layers, hidden, heads, tp, pp, gpus, global_batch;
    double tflops_per_gpu;
};

// Narayanan et al. 2021, Table 1 (as listed in issue 5).
constexpr MegatronRow megatron_rows[] = {
    {"1.7B", 24, 2304, 24, 1, 1, 32, 512, 137},       {"3.6B", 30, 3072, 32, 2, 1, 64, 512, 138},
    {"7.5B", 36, 4096, 32, 4, 1, 128, 512, 142},      {"18.4B", 40, 6144, 48, 8, 1, 256, 1024, 135},
    {"39.1B", 48, 8192, 64, 8, 2, 512, 1536, 138},    {"76.1B", 60, 10240, 80, 8, 4, 1024, 1792, 140},
    {"145.6B", 80, 12288, 96, 8, 8, 1536, 2304, 148}, {"310.1B", 96, 16384, 128, 8, 16, 1920, 2160, 155},
    {"529.6B", 105, 20480, 128, 8, 35, 2520, 2520, 163}, {"1008B", 128, 25600, 160, 8, 64, 3072, 3072, 163},
};

// Narayanan et al. 2021, Table 2, "PTD Parallelism" rows: model-parallel size 96 = t 8 x p 12 and
// 280 = t 8 x p 35, micro-batch 1 (the ZeRO-3 rows are outside the plan space).
constexpr MegatronRow megatron_table2_rows[] = {
    {"174.6B", 96, 12288, 96, 8, 12, 384, 1536, 153},   {"174.6B", 96, 12288, 96, 8, 12, 768, 1536, 149},
    {"174.6B", 96, 12288, 96, 8, 12, 1536, 1536, 141},  {"529.6B", 105, 20480, 128, 8, 35, 560, 2240, 171},
    {"529.6B", 105, 20480, 128, 8, 35, 1120, 2240, 167}, {"529.6B", 105, 20480, 128, 8, 35, 2240, 2240, 159},
};

Json gpt_model(const std::string& name, int layers, int h, int heads) {
    return {{"name", name},       {"num_layers", layers}, {"hidden_size", h},    {"num_attention_heads", heads},
            {"vocab_size", 51200}, {"seq_length", 2048},  {"tied_embeddings", true}};
}

Json a100_cluster(int gpus) {
    // The megatron-a100-3072 preset's nodes (DGX A100: 8 x A100-80GB, NVLink3/NVSwitch,
    // 8 x 200 Gb/s HDR = 200 GB/s per node), as many as the run used.
    return {{"name", "Selene slice"},
            {"groups", Json::array({{{"device", "a100-sxm4-80gb"}, {"nodes", gpus / 8}, {"gpus_per_node", 8}, {"inter_node_bw_GBps", 200}}})}};
}

// The paper's FLOP count of one iteration (counts the recomputed forward).
double megatron_flops(const MegatronRow& r) {
    const double B = r.global_batch, s = 2048, l = r.layers, h = r.hidden, V = 51200;
    return 96 * B * s * l * h * h * (1 + s / (6 * h) + V / (16 * l * h));
}

// Iteration time implied by the published TFLOP/s per GPU.
double megatron_measured_s(const MegatronRow& r) { return megatron_flops(r) / (r.tflops_per_gpu * 1e12 * r.gpus); }

std::string megatron_case_name(const MegatronRow& r) {
    return std::string("GPT ") + r.params + " (t=" + std::to_string(r.tp) + ", p=" + std::to_string(r.pp) + ", " + std::to_string(r.gpus) + " GPUs)";
}

Scenario megatron_scenario(const MegatronRow& r) {
    Json scj = {{"model", gpt_model(r.params, r.layers, r.hidden, r.heads)},
                {"training",
                 {{"global_batch_size", r.global_batch},
                  {"precision", "fp16"},
                  {"recompute", "full"},
                  {"sequence_parallel", false},
                  {"distributed_optimizer", false},
                  {"flash_attention", false},
                  {"stack", "megatron-lm-2021"}}},
                {"cluster", a100_cluster(r.gpus)}};
    return parse_scenario(scj);
}

// The published plan: p stages of equal layers (the first `l mod p` one longer), TP t, DP
// d = GPUs / (t p), 1F1B, `b` samples per replica and micro-batch.
Estimate megatron_estimate(const Scenario& sc, const MegatronRow& r, int b) {
    const int dp = r.gpus / (r.tp * r.pp);
    Plan plan;
    plan.micro_batch_size = static_cast<std::int64_t>(b) * dp;
    plan.num_micro_batches = r.global_batch / plan.micro_batch_size;
    for (int p = 0; p < r.pp; ++p) {
        StagePlan st;
        st.num_layers = r.layers / r.pp + (p < r.layers % r.pp ? 1 : 0);
        st.replicas.push_back({0, r.tp, dp, b});
        plan.stages.push_back(st);
    }
    return estimate(sc, plan, false);
}

// A case of a Megatron table with its name and the measured time, the prediction to be filled.
Case megatron_case(const MegatronRow& r) {
    Case c;
    c.name = megatron_case_name(r);
    c.measured = megatron_measured_s(r);
    return c;
}

}  // namespace

Table megatron_sc21_table1() {
    Table t;
    t.title = "Megatron-LM SC'21 Table 1 (iteration time, full recompute, A100-80GB)";
    t.source = "Narayanan et al., SC'21, arXiv 2104.04473, Table 1";
    for (const auto& r : megatron_rows) {
        Case c = megatron_case(r);
        Scenario sc = megatron_scenario(r);
        const int dp = r.gpus / (r.tp * r.pp);
        double best = std::numeric_limits<double>::infinity();
        int best_b = 0;
        for (int b = 1; b <= 64; ++b) {
            if (r.global_batch % (b * dp) != 0) continue;
            Estimate e = megatron_estimate(sc, r, b);
            if (!e.memory_fits) continue;
            if (e.iteration_time_s < best) {
                best = e.iteration_time_s;
                best_b = b;
            }
        }
        c.predicted = best;
        c.detail = "best b=" + std::to_string(best_b) + " per replica (d=" + std::to_string(dp) + ")";
        t.cases.push_back(c);
    }
    return t;
}

Table megatron_sc21_table2() {
    Table t;
    t.title = "Megatron-LM SC'21 Table 2, PTD-P rows (iteration time, full recompute, A100-80GB)";
    t.source = "Narayanan et al., SC'21, arXiv 2104.04473, Table 2 (PTD Parallelism rows)";
    for (const auto& r : megatron_table2_rows) {
        Case c = megatron_case(r);
        Scenario sc = megatron_scenario(r);
        const int dp = r.gpus / (r.tp * r.pp);
        // The micro-batch is published (1); no choice is made for the prediction.
        Estimate e = megatron_estimate(sc, r, 1);
        c.predicted = e.memory_fits ? e.iteration_time_s : std::numeric_limits<double>::quiet_NaN();
        c.detail = "published b=1 per replica (d=" + std::to_string(dp) + ", " + std::to_string(r.global_batch / dp) + " micro-batches)";
        t.cases.push_back(c);
    }
    return t;
}

Table korthikanti_table4() {
    Table t;
    t.title = "Korthikanti et al. 2022 Table 4 (one 22B layer, t=8, b=4, A100-80GB)";
    t.source = "Korthikanti et al., arXiv 2205.05198, Table 4";
    struct Row {
        const char* name;
        const char* recompute;
        bool sp;
        double fwd_ms, bwd_ms;
    };
    constexpr Row rows[] = {{"no recompute", "none", false, 7.7, 11.9},
                            {"sequence parallel", "none", true, 7.2, 11.8},
                            {"full recompute", "full", false, 7.7, 19.5},
                            {"selective recompute", "selective", false, 7.7, 13.2},
                            {"selective + SP", "selective", true, 7.2, 13.1}};
    for (const auto& r : rows) {
        Json scj = {{"model", gpt_model("22B", 48, 6144, 64)},
                    {"training",
                     {{"global_batch_size", 4},
                      {"precision", "bf16"},
                      {"recompute", r.recompute},
                      {"sequence_parallel", r.sp},
                      {"flash_attention", false},
                  {"stack", "megatron-lm-2022"}}},
                    {"cluster", a100_cluster(8)}};
        Scenario sc = parse_scenario(scj);
        const Group& g = sc.cluster.groups[0];
        Device d = g.device;
        d.intra_node_bw_GBps = g.intra_node_bw_GBps;
        StagePosition mid{1, 3, 8, 1};  // a middle stage: no embedding, no LM head
        ReplicaCost rc = replica_cost(sc, d, 8, 4, 1, mid);
        // The table times one block; the schedule's per-pass cost is not part of it.
        const double pass_s = sc.training.stack.pass_overhead_us * 1e-6;
        t.cases.push_back({std::string(r.name) + " forward", "", r.fwd_ms * 1e-3, rc.forward_s - pass_s});
        t.cases.push_back({std::string(r.name) + " backward", "", r.bwd_ms * 1e-3, rc.backward_s - pass_s});
    }
    return t;
}

std::string to_markdown(const Table& t) {
    std::string out = "### " + t.title + "\n\nSource: " + t.source + "\n\n| case | configuration | measured | predicted | error |\n|---|---|---|---|---|\n";
    char buf[512];
    for (const auto& c : t.cases) {
        if (t.unit != "s") {
            std::snprintf(buf, sizeof buf, "| %s | %s | %.2f %s | %.2f %s | %+.1f %% |\n", c.name.c_str(), c.detail.c_str(), c.measured, t.unit.c_str(), c.predicted,
                          t.unit.c_str(), 100 * c.rel_error());
            out += buf;
            continue;
        }
        bool ms = c.measured < 1.0;
        std::snprintf(buf, sizeof buf, "| %s | %s | %.*f %s | %.*f %s | %+.1f %% |\n", c.name.c_str(), c.detail.c_str(), ms ? 2 : 2, ms ? 1e3 * c.measured : c.measured,
                      ms ? "ms" : "s", ms ? 2 : 2, ms ? 1e3 * c.predicted : c.predicted, ms ? "ms" : "s", 100 * c.rel_error());
        out += buf;
    }
    std::snprintf(buf, sizeof buf, "\nMAPE %.1f %%, largest error %.1f %%\n", 100 * t.mape(), 100 * t.max_abs_error());
    out += buf;
    return out;
}

// ---- Ranking fidelity ----

std::vector<double> average_ranks(const std::vector<double>& v) {
    std::vector<std::size_t> idx(v.size());
    std::iota(idx.begin(), idx.end(), std::size_t{0});
    std::stable_sort(idx.begin(), idx.end(), [&](std::size_t a, std::size_t b) { return v[a] < v[b]; });
    std::vector<double> rank(v.size());
    for (std::size_t i = 0; i < idx.size();) {
        std::size_t j = i;
        while (j + 1 < idx.size() && v[idx[j + 1]] == v[idx[i]]) ++j;
        const double mean = 0.5 * static_cast<double>(i + j) + 1.0;  // mean of ranks i+1 .. j+1
        for (std::size_t k = i; k <= j; ++k) rank[idx[k]] = mean;
        i = j + 1;
    }
    return rank;
}

double spearman(const std::vector<double>& x, const std::vector<double>& y) {
    if (x.size() != y.size()) throw std::invalid_argument("spearman: series of different lengths");
    const std::size_t n = x.size();
    if (n < 2) return std::numeric_limits<double>::quiet_NaN();
    const std::vector<double> rx = average_ranks(x), ry = average_ranks(y);
    const double mean = 0.5 * static_cast<double>(n + 1);  // the mean of ranks 1..n, ties or not
    double sxy = 0, sxx = 0, syy = 0;
    for (std::size_t i = 0; i < n; ++i) {
        const double dx = rx[i] - mean, dy = ry[i] - mean;
        sxy += dx * dy;
        sxx += dx * dx;
        syy += dy * dy;
    }
    if (sxx == 0 || syy == 0) return std::numeric_limits<double>::quiet_NaN();
    return sxy / std::sqrt(sxx * syy);
}

namespace {
std::vector<double> best_first_ranks(const std::vector<RankItem>& items, bool measured, bool lower_is_better) {
    std::vector<double> v;
    for (const auto& it : items) v.push_back((lower_is_better ? 1 : -1) * (measured ? it.measured : it.predicted));
    return average_ranks(v);
}
}  // namespace

double Ranking::rho() const {
    std::vector<double> m, p;
    for (const auto& it : items) {
        m.push_back(it.measured);
        p.push_back(it.predicted);
    }
    return spearman(m, p);
}

std::vector<double> Ranking::measured_ranks() const { return best_first_ranks(items, true, lower_is_better); }
std::vector<double> Ranking::predicted_ranks() const { return best_first_ranks(items, false, lower_is_better); }

Ranking korthikanti_table4_ranking() {
    const Table t = korthikanti_table4();  // forward, backward, forward, backward, ...
    Ranking r;
    r.title = "Korthikanti et al. 2022 Table 4: recompute/SP variants of one 22B layer (t=8, b=4, A100-80GB)";
    r.source = "Korthikanti et al., arXiv 2205.05198, Table 4";
    r.metric = "forward + backward time";
    r.unit = "ms";
    r.lower_is_better = true;
    for (std::size_t i = 0; i + 1 < t.cases.size(); i += 2) {
        const Case& f = t.cases[i];
        const Case& b = t.cases[i + 1];
        std::string name = f.name.substr(0, f.name.rfind(" forward"));
        r.items.push_back({name, 1e3 * (f.measured + b.measured), 1e3 * (f.predicted + b.predicted)});
    }
    return r;
}

std::vector<Ranking> megatron_sc21_table2_rankings() {
    const Table t = megatron_sc21_table2();
    auto make = [](const std::string& title) {
        Ranking r;
        r.title = title;
        r.source = "Narayanan et al., SC'21, arXiv 2104.04473, Table 2 (PTD Parallelism rows)";
        r.metric = "TFLOP/s per GPU (the paper's formula)";
        r.unit = "TFLOP/s";
        r.lower_is_better = false;
        return r;
    };
    Ranking small = make("SC'21 Table 2 PTD-P: GPT 174.6B (t=8, p=12) on 384/768/1536 GPUs");
    Ranking large = make("SC'21 Table 2 PTD-P: GPT 529.6B (t=8, p=35) on 560/1120/2240 GPUs");
    Ranking all = make("SC'21 Table 2 PTD-P: all six runs");
    for (std::size_t i = 0; i < t.cases.size(); ++i) {
        const MegatronRow& row = megatron_table2_rows[i];
        const double flops = megatron_flops(row);
        // TFLOP/s per GPU from an iteration time: the inverse of megatron_measured_s, so the
        // measured value is the published number.
        auto tflops = [&](double s) { return flops / (s * row.gpus) / 1e12; };
        RankItem it{t.cases[i].name, tflops(t.cases[i].measured), tflops(t.cases[i].predicted)};
        (i < 3 ? small : large).items.push_back(it);
        all.items.push_back(it);
    }
    return {small, large, all};
}

std::string to_markdown(const Ranking& r) {
    std::string out = "### " + r.title + "\n\nSource: " + r.source + "\n\nRanked by " + r.metric + ", rank 1 = " +
                      (r.lower_is_better ? "lowest" : "highest") + ".\n\n| case | measured | rank | predicted | rank |\n|---|---|---|---|---|\n";
    const std::vector<double> mr = r.measured_ranks(), pr = r.predicted_ranks();
    std::vector<std::size_t> order(r.items.size());
    std::iota(order.begin(), order.end(), std::size_t{0});
    std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) { return mr[a] < mr[b]; });
    char buf[512];
    auto rank_str = [](double x) {
        char b[32];
        std::snprintf(b, sizeof b, x == std::floor(x) ? "%.0f" : "%.1f", x);
        return std::string(b);
    };
    for (std::size_t i : order) {
        const RankItem& it = r.items[i];
        std::snprintf(buf, sizeof buf, "| %s | %.1f %s | %s | %.1f %s | %s |\n", it.name.c_str(), it.measured, r.unit.c_str(), rank_str(mr[i]).c_str(),
                      it.predicted, r.unit.c_str(), rank_str(pr[i]).c_str());
        out += buf;
    }
    std::snprintf(buf, sizeof buf, "\nSpearman rho = %.3f (n = %zu)\n", r.rho(), r.items.size());
    out += buf;
    return out;
}

}  // namespace poseidon::validation
