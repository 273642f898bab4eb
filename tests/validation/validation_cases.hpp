// Published measurements that the analytic model is checked against (docs/validation.md).
// Every measured number here is copied from the cited table; nothing is fitted per case.
#pragma once

#include <string>
#include <vector>

namespace poseidon::validation {

struct Case {
    std::string name;
    std::string detail;      // chosen configuration (e.g. the per-replica micro-batch)
    double measured = 0;     // seconds
    double predicted = 0;    // seconds
    double rel_error() const { return (predicted - measured) / measured; }
};

struct Table {
    std::string title;
    std::string source;
    std::string unit = "s";  // "s" (shown in ms below 1 s) or "GiB"
    std::vector<Case> cases;
    double mape() const;
    double max_abs_error() const;
};

// Narayanan et al., SC'21 (arXiv 2104.04473), Table 1: iteration time of GPT 1.7B .. 1T on
// A100-80GB, derived from the published TFLOP/s per GPU with the paper's FLOP formula.
Table megatron_sc21_table1();

// Korthikanti et al. 2022 (arXiv 2205.05198), Table 4: forward and backward time of one layer of
// the 22B model (h 6144, a 64, s 2048, t 8, micro-batch 4) for five recompute/SP settings.
Table korthikanti_table4();

// Narayanan et al., SC'21 (arXiv 2104.04473), Table 2, "PTD Parallelism" rows (not the ZeRO-3
// rows): the 174.6B model (t 8, p 12) on 384/768/1536 GPUs and the 529.6B model (t 8, p 35) on
// 560/1120/2240 GPUs at the published micro-batch 1; iteration time derived from the published
// TFLOP/s per GPU as for Table 1.
Table megatron_sc21_table2();

std::string to_markdown(const Table& t);

// ---- Ranking fidelity (issue 5) ----

// 1-based ranks of `v` in ascending order; tied values get the mean of the ranks they span
// ({3, 1, 4, 1} -> {3, 1.5, 4, 1.5}).
std::vector<double> average_ranks(const std::vector<double>& v);

// Spearman's rank correlation: Pearson's correlation of the average ranks (correct with ties).
// Throws std::invalid_argument if the sizes differ; NaN if fewer than two values or either
// series is constant (undefined).
double spearman(const std::vector<double>& x, const std::vector<double>& y);

struct RankItem {
    std::string name;
    double measured = 0;   // in `unit`
    double predicted = 0;  // in `unit`
};

// A published sweep of plans on one cluster: does the model order the plans as measured?
struct Ranking {
    std::string title;
    std::string source;
    std::string metric;            // what is ranked, e.g. "forward + backward time"
    std::string unit;              // "ms", "TFLOP/s"
    bool lower_is_better = true;   // rank 1 = the best plan (display only; rho is unaffected)
    std::vector<RankItem> items;
    double rho() const;            // spearman(measured, predicted)
    std::vector<double> measured_ranks() const;   // 1 = best
    std::vector<double> predicted_ranks() const;  // 1 = best
};

// Korthikanti et al. 2022, Table 4: the five recompute/SP variants ranked by forward + backward
// time of one layer.
Ranking korthikanti_table4_ranking();

// SC'21 Table 2, PTD-P rows, ranked by per-GPU throughput (the paper's TFLOP/s): the 174.6B
// model's three GPU counts, the 529.6B model's three, and all six together.
std::vector<Ranking> megatron_sc21_table2_rankings();

std::string to_markdown(const Ranking& r);

}  // namespace poseidon::validation
