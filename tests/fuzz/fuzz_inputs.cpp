// libFuzzer target over the scenario and plan parsers, estimate and a small time-bounded search.
// Build and run: tests/fuzz/run_fuzz.sh SECONDS (docs/robustness.md, "Fuzzing").
#include <cstddef>
#include <cstdint>

#include "fuzz_one.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    poseidon_fuzz::run_one(data, size);
    return 0;
}
