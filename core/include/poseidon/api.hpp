// The string-in, string-out surface shared by the CLI and the wasm bindings: JSON text in,
// JSON text out. Bad input throws InputError; error_json turns any exception into the
// {"error": {...}} object the page shows.
#pragma once

#include <exception>
#include <functional>
#include <string>
#include <string_view>

namespace poseidon {

std::string version();
std::string presets_json();
std::string estimate_json(std::string_view scenario_json, std::string_view plan_json);
// options: {"top": 3, "exhaustive": false, "time_limit_s": 10}. on_progress receives
// {"evaluated","pruned","best_iteration_time_s","elapsed_s","best"} and returns false to cancel.
std::string plan_json(std::string_view scenario_json, std::string_view options_json,
                      const std::function<bool(std::string_view)>& on_progress = {});
// With options.shard_count >= 1, plan_json runs that slice of the search and returns
// {"shard", "found", "stats"} (docs/formats.md, "Search slices"); merge_json merges the slices
// (a JSON array of those) into the plan output of the whole search: plans, baselines, stats.
std::string merge_json(std::string_view scenario_json, std::string_view options_json, std::string_view shards_json);
// docs/formats.md, "Calibration output": {"report": {...}, "scenario": {...calibrated...}}.
std::string calibrate_json(std::string_view scenario_json, std::string_view runs_json);
// For a scenario without a feasible plan, which changes would make one fit (docs/web.md,
// "Advice"). options: {"time_limit_s": 1, "total_time_limit_s": 10, "tp_per_stage": false}.
std::string advise_json(std::string_view scenario_json, std::string_view options_json);
// {"error":{"path":"...","message":"...","problems":[{"path","message"},...]}}
std::string error_json(const std::exception_ptr& e);

}  // namespace poseidon
