// Prints the generated part of docs/validation.md (every table and figure):
//   build/tests/validation/validation_report                         print it
//   build/tests/validation/validation_report --write docs/validation.md   replace the block between the markers
//   build/tests/validation/validation_report --check docs/validation.md   exit 1 if the block is stale (ctest)
#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "bridge_runs.hpp"
#include "measured_sets.hpp"
#include "validation_cases.hpp"

namespace {

using namespace poseidon::validation;

const std::string begin_marker = "<!-- validation_report:begin -->\n";
const std::string end_marker = "<!-- validation_report:end -->";

std::string report() {
    std::string out = "## Results\n\n" + to_markdown(megatron_sc21_table1()) + "\n" + to_markdown(korthikanti_table4()) + "\n" + to_markdown(megatron_sc21_table2());
    out += "\n### Ranking fidelity\n\n" + to_markdown(korthikanti_table4_ranking());
    for (const Ranking& r : megatron_sc21_table2_rankings()) out += "\n" + to_markdown(r);
    const MeasuredSet amp = amp_t4_set(), dlperf = dlperf_v100_set();
    out += "\n### Measured sets\n\n" + to_markdown(time_table(amp)) + "\n" + to_markdown(time_ranking(amp)) + "\n" +
           to_markdown(memory_classification(amp), amp.title + ": memory") + "\n" + to_markdown(time_table(dlperf)) + "\n" + to_markdown(time_ranking(dlperf)) +
           "\n" + to_markdown(memory_table(dlperf));
    out += "\n### Calibration from a few runs\n\n" + to_markdown(calibration_holdout(amp, 5), amp.title + ": calibrated on 5 trials") + "\n" +
           to_markdown(calibration_holdout(dlperf, 5), dlperf.title + ": calibrated on 5 runs");
    const auto bridge = bridge_dense_runs();
    std::vector<bool> fit;
    const Table bt = bridge_dense_table(bridge, &fit);
    int fits = 0;
    for (bool f : fit) fits += f;
    char line[160];
    const std::string excluded = bridge_excluded_markdown(bridge);
    std::snprintf(line, sizeof line, "\n%d of %zu rows predicted to fit.%s\n", fits, fit.size(), excluded.empty() ? "" : " Rows not estimated yet:\n");
    out += "\n### Megatron-Bridge (2025-26 hardware and precisions)\n\n" + to_markdown(bt) + line + excluded;
    const auto moe = bridge_moe_runs();
    std::vector<bool> moe_fit;
    const Table mt = bridge_table(moe, &moe_fit, "Megatron-Bridge MoE runs (tokens/s per GPU)");
    int moe_fits = 0;
    for (bool f : moe_fit) moe_fits += f;
    std::snprintf(line, sizeof line, "\n%d of %zu rows predicted to fit.\n", moe_fits, moe_fit.size());
    out += "\n" + to_markdown(mt) + line;
    return out;
}

}  // namespace

int main(int argc, char** argv) {
    const std::string text = report();
    if (argc == 1) {
        std::fputs(text.c_str(), stdout);
        return 0;
    }
    const std::string mode = argv[1];
    if (argc != 3 || (mode != "--write" && mode != "--check")) {
        std::fprintf(stderr, "usage: validation_report [--write|--check DOC.md]\n");
        return 2;
    }
    std::ifstream in(argv[2], std::ios::binary);
    std::stringstream ss;
    ss << in.rdbuf();
    const std::string doc = ss.str();
    const auto b = doc.find(begin_marker), e = doc.find(end_marker);
    if (!in || b == std::string::npos || e == std::string::npos || e < b) {
        std::fprintf(stderr, "%s: no block between %s and %s\n", argv[2], begin_marker.c_str(), end_marker.c_str());
        return 2;
    }
    const std::string updated = doc.substr(0, b + begin_marker.size()) + text + "\n" + doc.substr(e);
    if (mode == "--check") {
        if (updated == doc) return 0;
        std::fprintf(stderr, "%s is stale: regenerate with validation_report --write %s\n", argv[2], argv[2]);
        return 1;
    }
    std::ofstream(argv[2], std::ios::binary) << updated;
    return 0;
}
