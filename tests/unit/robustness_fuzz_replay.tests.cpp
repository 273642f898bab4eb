// Replays the fuzz seed corpus and every crash the fuzzer ever found (tests/fuzz/regressions)
// through the fuzz target's own function, on any compiler and under the sanitizer build.
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "../fuzz/fuzz_one.hpp"

TEST_CASE("the fuzz corpus and the fuzz regressions run clean", "[robustness][fuzz]") {
    namespace fs = std::filesystem;
    std::vector<fs::path> inputs;
    for (const char* dir : {"tests/fuzz/corpus", "tests/fuzz/regressions"}) {
        const fs::path d = fs::path(POSEIDON_SOURCE_DIR) / dir;
        if (!fs::is_directory(d)) continue;
        for (const auto& e : fs::directory_iterator(d))
            if (e.is_regular_file() && e.path().filename().string()[0] != '.') inputs.push_back(e.path());
    }
    REQUIRE(inputs.size() >= 50);
    for (const auto& p : inputs) {
        std::ifstream in(p, std::ios::binary);
        std::ostringstream ss;
        ss << in.rdbuf();
        const std::string data = ss.str();
        INFO("input: " << p.string());
        CHECK_NOTHROW(poseidon_fuzz::run_one(reinterpret_cast<const std::uint8_t*>(data.data()), data.size()));
    }
}
