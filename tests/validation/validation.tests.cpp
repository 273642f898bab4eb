// Validation against published measurements (docs/validation.md). The tolerances are the targets
// of issue 5: MAPE at most 10 %, no case beyond 20 %, one parameter set per device.
#include <catch2/catch.hpp>

#include <cmath>

#include "validation_cases.hpp"

using namespace poseidon::validation;

namespace {
void check(const Table& t) {
    INFO(to_markdown(t));
    for (const auto& c : t.cases) {
        INFO(c.name << ": measured " << c.measured << " s, predicted " << c.predicted << " s");
        CHECK(std::isfinite(c.predicted));
        CHECK(std::abs(c.rel_error()) <= 0.20);
    }
    CHECK(t.mape() <= 0.10);
}
}  // namespace

TEST_CASE("Megatron-LM SC'21 Table 1: iteration time within tolerance", "[validation]") { check(megatron_sc21_table1()); }

TEST_CASE("Korthikanti et al. 2022 Table 4: per-layer forward/backward within tolerance", "[validation]") { check(korthikanti_table4()); }
