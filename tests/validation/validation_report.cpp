// Prints the validation tables of docs/validation.md:  build/tests/validation/validation_report
#include <cstdio>

#include "validation_cases.hpp"

int main() {
    using namespace poseidon::validation;
    std::printf("%s\n%s\n%s", to_markdown(megatron_sc21_table1()).c_str(), to_markdown(korthikanti_table4()).c_str(),
                to_markdown(megatron_sc21_table2()).c_str());
    std::printf("\n## Ranking fidelity\n\n%s", to_markdown(korthikanti_table4_ranking()).c_str());
    for (const Ranking& r : megatron_sc21_table2_rankings()) std::printf("\n%s", to_markdown(r).c_str());
    return 0;
}
