// One fuzz input through everything a hostile user can reach, shared by the libFuzzer target
// (fuzz_inputs.cpp) and the Catch2 replay of the corpus and regressions
// (tests/unit/robustness_fuzz_replay.tests.cpp), so that every crash found stays a test on any
// compiler.
//
// Input: scenario text, then optionally a NUL byte and plan text. With a plan, the pair goes
// through parse, estimate (detailed), the JSON and text reports and the string api; without one,
// a parsed scenario gets a tiny time-bounded plan search. Only InputError (and a search that is
// not implemented yet) may come out; anything else escapes and is reported as a crash.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <stdexcept>
#include <string>
#include <string_view>

#include "poseidon/api.hpp"
#include "poseidon/estimate.hpp"
#include "poseidon/json_util.hpp"
#include "poseidon/scenario.hpp"
#include "poseidon/search.hpp"

namespace poseidon_fuzz {

// The error object the page would show must itself be valid JSON (throws otherwise).
inline void check_error_object() {
    const std::string e = poseidon::error_json(std::current_exception());
    (void)poseidon::Json::parse(e).at("error").at("problems");
}

// Baselines are not what is fuzzed here and would spend their own time budget; the option exists
// once the search lands (detected, so this header builds before and after).
template <class Options>
void without_baselines(Options& o) {
    if constexpr (requires { o.baselines = false; }) o.baselines = false;
}

inline void run_one(const std::uint8_t* data, std::size_t size) {
    const std::string_view in(reinterpret_cast<const char*>(data), size);
    const std::size_t nul = in.find('\0');
    const std::string_view scenario_text = in.substr(0, nul);
    const bool has_plan = nul != std::string_view::npos;
    const std::string_view plan_text = has_plan ? in.substr(nul + 1) : std::string_view();

    poseidon::Scenario sc;
    try {
        sc = poseidon::parse_scenario_text(scenario_text);
    } catch (const poseidon::InputError&) {
        check_error_object();
        return;
    }
    if (has_plan) {
        try {
            poseidon::Plan plan = poseidon::parse_plan_text(plan_text, sc);
            poseidon::Estimate e = poseidon::estimate(sc, plan, true);
            (void)poseidon::to_json(sc, e).dump();
            (void)poseidon::to_text(sc, e);
        } catch (const poseidon::InputError&) {
            check_error_object();
        }
        try {
            (void)poseidon::estimate_json(scenario_text, plan_text);
        } catch (const poseidon::InputError&) {
            check_error_object();
        }
        return;
    }
    poseidon::SearchOptions options;
    options.top_k = 1;
    options.time_limit_s = 0.05;
    without_baselines(options);
    try {
        poseidon::SearchResult r = poseidon::search(sc, options);
        (void)poseidon::to_json(sc, r).dump();
    } catch (const poseidon::InputError&) {
        check_error_object();
    } catch (const std::runtime_error& e) {
        if (!std::strstr(e.what(), "not implemented")) throw;
    }
}

}  // namespace poseidon_fuzz
