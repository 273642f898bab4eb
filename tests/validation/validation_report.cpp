// Prints the validation tables of docs/validation.md:  build/tests/validation/validation_report
#include <cstdio>

#include "measured_sets.hpp"
#include "validation_cases.hpp"

int main() {
    using namespace poseidon::validation;
    std::printf("%s\n%s\n%s", to_markdown(megatron_sc21_table1()).c_str(), to_markdown(korthikanti_table4()).c_str(),
                to_markdown(megatron_sc21_table2()).c_str());
    std::printf("\n## Ranking fidelity\n\n%s", to_markdown(korthikanti_table4_ranking()).c_str());
    for (const Ranking& r : megatron_sc21_table2_rankings()) std::printf("\n%s", to_markdown(r).c_str());
    const MeasuredSet amp = amp_t4_set(), dlperf = dlperf_v100_set();
    std::printf("\n## Measured sets\n\n%s\n%s\n", to_markdown(time_table(amp)).c_str(), to_markdown(time_ranking(amp)).c_str());
    std::printf("%s\n", to_markdown(memory_classification(amp), amp.title + ": memory").c_str());
    std::printf("%s\n%s\n%s\n", to_markdown(time_table(dlperf)).c_str(), to_markdown(time_ranking(dlperf)).c_str(), to_markdown(memory_table(dlperf)).c_str());
    std::printf("## Calibration from a few runs\n\n%s\n%s", to_markdown(calibration_holdout(amp, 5), amp.title + ": calibrated on 5 trials").c_str(),
                to_markdown(calibration_holdout(dlperf, 5), dlperf.title + ": calibrated on 5 runs").c_str());
    return 0;
}
