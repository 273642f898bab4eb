#include "validation_cases.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>

#include "poseidon/cost_model.hpp"
#include "poseidon/estimate.hpp"
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

}  // namespace

Table megatron_sc21_table1() {
    Table t;
    t.title = "Megatron-LM SC'21 Table 1 (iteration time, full recompute, A100-80GB)";
    t.source = "Narayanan et al., SC'21, arXiv 2104.04473, Table 1";
    for (const auto& r : megatron_rows) {
        const double B = r.global_batch, s = 2048, l = r.layers, h = r.hidden, V = 51200;
        const double flops = 96 * B * s * l * h * h * (1 + s / (6 * h) + V / (16 * l * h));
        Case c;
        c.name = std::string("GPT ") + r.params + " (t=" + std::to_string(r.tp) + ", p=" + std::to_string(r.pp) + ", " + std::to_string(r.gpus) + " GPUs)";
        c.measured = flops / (r.tflops_per_gpu * 1e12 * r.gpus);
        Json scj = {{"model", gpt_model(r.params, r.layers, r.hidden, r.heads)},
                    {"training",
                     {{"global_batch_size", r.global_batch},
                      {"precision", "fp16"},
                      {"recompute", "full"},
                      {"sequence_parallel", false},
                      {"distributed_optimizer", false},
                      {"flash_attention", false}}},
                    {"cluster", a100_cluster(r.gpus)}};
        Scenario sc = parse_scenario(scj);
        const int dp = r.gpus / (r.tp * r.pp);
        double best = std::numeric_limits<double>::infinity();
        int best_b = 0;
        for (int b = 1; b <= 64; ++b) {
            if (r.global_batch % (b * dp) != 0) continue;
            Plan plan;
            plan.micro_batch_size = static_cast<std::int64_t>(b) * dp;
            plan.num_micro_batches = r.global_batch / plan.micro_batch_size;
            for (int p = 0; p < r.pp; ++p) {
                StagePlan st;
                st.num_layers = r.layers / r.pp + (p < r.layers % r.pp ? 1 : 0);
                st.replicas.push_back({0, r.tp, dp, b});
                plan.stages.push_back(st);
            }
            Estimate e = estimate(sc, plan, false);
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
                      {"flash_attention", false}}},
                    {"cluster", a100_cluster(8)}};
        Scenario sc = parse_scenario(scj);
        const Group& g = sc.cluster.groups[0];
        Device d = g.device;
        d.intra_node_bw_GBps = g.intra_node_bw_GBps;
        StagePosition mid{1, 3, 8, 1};  // a middle stage: no embedding, no LM head
        ReplicaCost rc = replica_cost(sc, d, 8, 4, 1, mid);
        t.cases.push_back({std::string(r.name) + " forward", "", r.fwd_ms * 1e-3, rc.forward_s});
        t.cases.push_back({std::string(r.name) + " backward", "", r.bwd_ms * 1e-3, rc.backward_s});
    }
    return t;
}

std::string to_markdown(const Table& t) {
    std::string out = "### " + t.title + "\n\nSource: " + t.source + "\n\n| case | configuration | measured | predicted | error |\n|---|---|---|---|---|\n";
    char buf[512];
    for (const auto& c : t.cases) {
        bool ms = c.measured < 1.0;
        std::snprintf(buf, sizeof buf, "| %s | %s | %.*f %s | %.*f %s | %+.1f %% |\n", c.name.c_str(), c.detail.c_str(), ms ? 2 : 2, ms ? 1e3 * c.measured : c.measured,
                      ms ? "ms" : "s", ms ? 2 : 2, ms ? 1e3 * c.predicted : c.predicted, ms ? "ms" : "s", 100 * c.rel_error());
        out += buf;
    }
    std::snprintf(buf, sizeof buf, "\nMAPE %.1f %%, largest error %.1f %%\n", 100 * t.mape(), 100 * t.max_abs_error());
    out += buf;
    return out;
}

}  // namespace poseidon::validation
