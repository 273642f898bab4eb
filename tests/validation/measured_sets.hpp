// Published measured sets of plans on clusters away from A100 + Megatron-LM (docs/validation.md,
// "Measured sets"): AMP's 16 x T4 trials (DeepSpeed 2022) and OneFlow DLPerf's V100 Megatron-LM
// runs. The data files are copies of shared/data/measurements (tests/validation/data/), each with
// its source; every scenario uses the published settings of its run and the default presets.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "poseidon/types.hpp"
#include "validation_cases.hpp"

namespace poseidon::validation {

struct Trial {
    std::string name;                     // e.g. "mbs 2, tp 1, dp 8, pp 2"
    Scenario scenario;
    Plan plan;
    std::optional<double> measured_s;     // none: the run failed (out of memory)
    std::optional<double> measured_peak_GiB;
};

struct MeasuredSet {
    std::string title;
    std::string source;
    std::vector<Trial> trials;
};

// AMP (Li et al., NeurIPS 2022): 52 trials of GPT-2 medium on 4 x g4dn.12xlarge, five of them out
// of memory. Stack deepspeed-megatron-v1-2022; T4s on PCIe without peer-to-peer, 50 Gb/s Ethernet.
MeasuredSet amp_t4_set();
// OneFlow DLPerf: 16 Megatron-LM runs on 4 nodes x 8 V100-SXM2-16GB (hybrid cube-mesh, one
// 100 Gb/s EDR HCA per node without GPUDirect RDMA). Stack megatron-lm-2020.
MeasuredSet dlperf_v100_set();

// Iteration time of every trial that ran.
Table time_table(const MeasuredSet& set);
Ranking time_ranking(const MeasuredSet& set);
// Peak memory per GPU of every trial with a measured peak (GiB).
Table memory_table(const MeasuredSet& set);

struct FitCheck {
    std::string name;
    bool ran = false;            // measured: the trial ran (did not run out of memory)
    bool predicted_fits = false; // estimate's `feasible`: fits in memory and the stack can build it
};
std::vector<FitCheck> memory_classification(const MeasuredSet& set);
std::string to_markdown(const std::vector<FitCheck>& checks, const std::string& title);

// Calibrate (docs/calibration.md) on `k` trials that ran, spread over the measured range (the
// trials at ranks round(i (n - 1) / (k - 1)) of the measured times), and predict the others.
struct Holdout {
    std::vector<std::string> calibrated_on;
    Table before;                // the held-out trials, default presets
    Table after;                 // the held-out trials, calibrated scenario
    double rho_before = 0, rho_after = 0;
    std::string fitted;          // "device: key from -> to, ..."
};
Holdout calibration_holdout(const MeasuredSet& set, int k);
std::string to_markdown(const Holdout& h, const std::string& title);

}  // namespace poseidon::validation
