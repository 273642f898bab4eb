// Embind bindings over the Poseidon core: JSON strings in, JSON strings out.
// This is the only translation unit that includes <emscripten/bind.h>. Every C++ exception
// is turned into {"error":{...}} by the core's error_json, so nothing aborts the module.
#include <emscripten/bind.h>
#include <emscripten/val.h>

#include <exception>
#include <string>

#include "poseidon/api.hpp"

namespace {

// Used when error_json itself throws (e.g. a message it cannot serialise): still a value, never a throw.
constexpr const char* kFallbackError =
    R"({"error":{"path":"","message":"internal error while reporting an input error","problems":[]}})";

template <typename F>
std::string guarded(F&& f) {
  try {
    return f();
  } catch (...) {
    try {
      return poseidon::error_json(std::current_exception());
    } catch (...) {
      return kFallbackError;
    }
  }
}

std::string presets() {
  return guarded([] { return poseidon::presets_json(); });
}

std::string estimate(const std::string& scenario, const std::string& plan) {
  return guarded([&] { return poseidon::estimate_json(scenario, plan); });
}

// on_progress: a JS function (string) -> bool; returning false cancels the search, which then
// returns the best plans so far marked incomplete. null/undefined: no progress reports.
std::string plan_with_progress(const std::string& scenario, const std::string& options,
                               emscripten::val on_progress) {
  const bool has_callback = !on_progress.isUndefined() && !on_progress.isNull();
  return guarded([&] {
    // no callback, no progress reports: each one estimates the best plan and builds its JSON
    if (!has_callback) return poseidon::plan_json(scenario, options);
    return poseidon::plan_json(scenario, options, [&](std::string_view progress) {
      return !on_progress(std::string(progress)).isFalse();
    });
  });
}

// the slices of a search (plan with options.shard_count), a JSON array, merged into one result
std::string merge(const std::string& scenario, const std::string& options, const std::string& shards) {
  return guarded([&] { return poseidon::merge_json(scenario, options, shards); });
}

// {"report": {...}, "scenario": {...}}: docs/formats.md, "Calibration output".
std::string calibrate(const std::string& scenario, const std::string& runs) {
  return guarded([&] { return poseidon::calibrate_json(scenario, runs); });
}

// {"feasible_now", "infeasible", "variants": [...], "elapsed_s"}: docs/web.md, "Advice".
std::string advise(const std::string& scenario, const std::string& options) {
  return guarded([&] { return poseidon::advise_json(scenario, options); });
}

std::string plan(const std::string& scenario, const std::string& options) {
  return plan_with_progress(scenario, options, emscripten::val::undefined());
}

}  // namespace

EMSCRIPTEN_BINDINGS(poseidon) {
  emscripten::function("version", &poseidon::version);
  emscripten::function("presets", &presets);
  emscripten::function("estimate", &estimate);
  emscripten::function("plan", &plan);                // plan(scenarioJson, optionsJson)
  emscripten::function("plan", &plan_with_progress);  // plan(scenarioJson, optionsJson, onProgress)
  emscripten::function("merge", &merge);              // merge(scenarioJson, optionsJson, shardsJson)
  emscripten::function("calibrate", &calibrate);      // calibrate(scenarioJson, runsJson)
  emscripten::function("advise", &advise);            // advise(scenarioJson, optionsJson)
}
