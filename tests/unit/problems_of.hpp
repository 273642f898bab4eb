// Test helper: every problem line of the InputError `f` raises, joined by newlines ("" if none),
// so that a test asserts the exact messages a user reads.
#pragma once

#include <functional>
#include <string>

#include "poseidon/error.hpp"

namespace poseidon::testing {

inline std::string problems_of(const std::function<void()>& f) {
    try {
        f();
    } catch (const InputError& e) {
        std::string all;
        for (const auto& p : e.problems()) all += (all.empty() ? "" : "\n") + p.line();
        return all;
    }
    return "";
}

}  // namespace poseidon::testing
