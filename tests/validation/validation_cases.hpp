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

std::string to_markdown(const Table& t);

}  // namespace poseidon::validation
