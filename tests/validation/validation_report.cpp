// Prints the validation tables of docs/validation.md:  build/tests/validation/validation_report
#include <cstdio>

#include "validation_cases.hpp"

int main() {
    using namespace poseidon::validation;
    std::printf("%s\n%s", to_markdown(megatron_sc21_table1()).c_str(), to_markdown(korthikanti_table4()).c_str());
    return 0;
}
