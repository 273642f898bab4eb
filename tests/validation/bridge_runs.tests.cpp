#include <catch2/catch.hpp>

#include <cmath>

#include "bridge_runs.hpp"

using namespace poseidon::validation;

TEST_CASE("Megatron-Bridge dense Llama 3 rows: predicted to fit, tokens/s per GPU MAPE <= 10 % without NVFP4", "[validation][bridge]") {
    const auto runs = bridge_dense_runs();
    // 25 dense rows with a published precision; those needing FSDP or context parallelism are
    // listed as not estimated (docs/validation.md). The Llama 3.1 405B rows run Megatron-Bridge's
    // account-for-embedding/loss layout (chunk_layers).
    REQUIRE(runs.size() == 25);
    std::vector<bool> fit;
    const Table t = bridge_dense_table(runs, &fit);
    REQUIRE(t.cases.size() == 15);
    for (std::size_t i = 0; i < fit.size(); ++i) {
        INFO(t.cases[i].name);
        CHECK(fit[i]);
    }
    double sum = 0;
    int n = 0;
    for (const auto& c : t.cases)
        if (c.name.find("NVFP4") == std::string::npos) {
            INFO(c.name);
            CHECK(std::abs(c.rel_error()) <= 0.25);
            sum += std::abs(c.rel_error());
            ++n;
        }
    CHECK(sum / n <= 0.10);
    // The bound is 25 % for every row; the NVFP4 rows are still predicted 19-41 % fast (the
    // model gives NVFP4 GEMMs FP8's efficiency; docs/validation.md): this guards today's figures
    // (all rows: MAPE 12.0 %, largest 41.2 %) until they are not.
    CHECK(t.mape() <= 0.121);
    CHECK(t.max_abs_error() <= 0.413);
}
