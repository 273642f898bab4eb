// The measured sets of issue 10 (docs/validation.md, "Measured sets"): uncalibrated predictions
// with the default presets and the published settings of each run, and calibration on a few runs.
#include <catch2/catch.hpp>

#include <cmath>

#include "measured_sets.hpp"

using namespace poseidon::validation;

TEST_CASE("AMP 16 x T4: iteration time MAPE <= 20 % and Spearman >= 0.85", "[validation][measured]") {
    const MeasuredSet set = amp_t4_set();
    REQUIRE(set.trials.size() == 52);
    const Table t = time_table(set);
    INFO(to_markdown(t));
    REQUIRE(t.cases.size() == 47);
    for (const auto& c : t.cases) CHECK(std::isfinite(c.predicted));
    CHECK(t.mape() <= 0.20);
    const Ranking r = time_ranking(set);
    CHECK(r.rho() >= 0.85);
}

// Four failed trials run out of memory by the model; the fifth ("mbs 16, tp 1, dp 1, pp 16") fits
// (13.8 of 15 GiB) but its partition gives stage 1 nothing but a no-op unit, a stage without
// parameters, which DeepSpeed's per-stage optimizer refuses: infeasible for the stack, not for
// memory (docs/validation.md).
TEST_CASE("AMP 16 x T4: the trials that ran are feasible, the five that failed are not", "[validation][measured]") {
    const auto checks = memory_classification(amp_t4_set());
    INFO(to_markdown(checks, "AMP memory"));
    int oom = 0, oom_predicted = 0;
    for (const auto& c : checks) {
        if (c.ran) {
            INFO(c.name);
            CHECK(c.predicted_fits);
        } else {
            ++oom;
            oom_predicted += !c.predicted_fits;
            INFO(c.name);
            CHECK(!c.predicted_fits);
        }
    }
    CHECK(oom == 5);
    CHECK(oom_predicted == 5);
}

TEST_CASE("DLPerf V100: iteration time MAPE <= 10 %, none beyond 20 %", "[validation][measured]") {
    const Table t = time_table(dlperf_v100_set());
    INFO(to_markdown(t));
    REQUIRE(t.cases.size() == 16);
    CHECK(t.mape() <= 0.10);
    CHECK(t.max_abs_error() <= 0.20);
}

// Not the target (within 10 % each): a guard that the figures in docs/validation.md hold.
TEST_CASE("DLPerf V100: peak memory as documented (MAPE <= 25 %)", "[validation][measured]") {
    const Table t = memory_table(dlperf_v100_set());
    INFO(to_markdown(t));
    REQUIRE(t.cases.size() == 16);
    CHECK(t.mape() <= 0.25);
}

TEST_CASE("AMP 16 x T4: calibrated on 5 trials, the other 42 within MAPE 10 %", "[validation][measured][calibrate]") {
    const Holdout h = calibration_holdout(amp_t4_set(), 5);
    INFO(to_markdown(h, "AMP holdout"));
    REQUIRE(h.after.cases.size() == 42);
    CHECK(h.after.mape() <= 0.10);
    CHECK(h.after.mape() < h.before.mape());
}

TEST_CASE("DLPerf V100: calibrated on 5 runs, the other 11 no worse than uncalibrated", "[validation][measured][calibrate]") {
    const Holdout h = calibration_holdout(dlperf_v100_set(), 5);
    INFO(to_markdown(h, "DLPerf holdout"));
    REQUIRE(h.after.cases.size() == 11);
    CHECK(h.after.mape() <= h.before.mape() + 0.02);
}
