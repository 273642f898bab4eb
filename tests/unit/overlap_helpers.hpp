// Shared by the overlap tests: a comparison to rounding and the GPT-3 7.5B scenario on the A100
// slice whose training keys each test sets.
#pragma once

#include <algorithm>
#include <cmath>
#include <string>

#include "poseidon/scenario.hpp"

namespace overlap_test {

inline bool close(double a, double b) { return std::abs(a - b) <= 1e-12 * std::max(1.0, std::abs(b)); }

// `training`: the keys after the global batch, e.g. R"("distributed_optimizer": true)".
inline poseidon::Scenario scenario(const std::string& training) {
    return poseidon::parse_scenario_text(R"({"model": "gpt3-7.5b", "cluster": "dgx-a100-superpod-slice", "training": {"global_batch_size": 512, )" +
                                         training + "}}");
}

}  // namespace overlap_test
