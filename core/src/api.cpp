#include "poseidon/api.hpp"

#include "poseidon/advice.hpp"
#include "poseidon/calibrate.hpp"
#include "poseidon/estimate.hpp"
#include "poseidon/presets.hpp"
#include "poseidon/scenario.hpp"
#include "poseidon/search.hpp"

namespace poseidon {

namespace {
// Names and notes come from user input; replacing invalid UTF-8 keeps dump() from throwing.
std::string dump(const Json& j) { return j.dump(-1, ' ', false, Json::error_handler_t::replace); }
}  // namespace

std::string version() { return "0.1.0"; }

std::string presets_json() { return dump(presets_as_json()); }

std::string estimate_json(std::string_view scenario_json, std::string_view plan_json_text) {
    // (a plan that names its precision, as a search that chose it writes, trains in that one)
    Scenario sc = parse_scenario_text(scenario_json, plan_names_precision(plan_json_text));
    Plan plan = parse_plan_text(plan_json_text, sc);
    return dump(to_json(sc, estimate(sc, plan, true)));
}

namespace {
// The options before the scenario, whose precision is checked only where the search does not
// choose one; the scenario's problems still come first when both have some.
std::pair<Scenario, SearchOptions> scenario_and_options(std::string_view scenario_json, std::string_view options_json) {
    SearchOptions opt;
    std::exception_ptr bad_options;
    try {
        opt = parse_search_options(options_json.empty() ? Json::object() : parse_json(options_json, "options"));
    } catch (const InputError&) {
        bad_options = std::current_exception();
    }
    Scenario sc = parse_scenario_text(scenario_json, !bad_options && opt.chooses_precision());
    if (bad_options) std::rethrow_exception(bad_options);
    return {std::move(sc), std::move(opt)};
}
}  // namespace

std::string plan_json(std::string_view scenario_json, std::string_view options_json, const std::function<bool(std::string_view)>& on_progress) {
    // (named, not a structured binding: the progress lambda captures the scenario, which clang 14,
    // the wasm build's, does not allow of a binding)
    auto both = scenario_and_options(scenario_json, options_json);
    const Scenario& sc = both.first;
    SearchOptions& opt = both.second;
    if (on_progress) {
        opt.on_progress = [&](const SearchProgress& p) {
            Json j = {{"evaluated", p.evaluated}, {"pruned", p.pruned}, {"elapsed_s", p.elapsed_s}, {"best_iteration_time_s", nullptr}, {"best", nullptr}};
            if (p.best) {
                j["best_iteration_time_s"] = p.best->iteration_time_s;
                j["best"] = to_json(sc, *p.best, false);
            }
            return on_progress(dump(j));
        };
    }
    if (opt.shard_count > 0) return dump(to_json(search_shard(sc, opt)));
    return dump(to_json(sc, search(sc, opt)));
}

std::string merge_json(std::string_view scenario_json, std::string_view options_json, std::string_view shards_json) {
    auto [sc, opt] = scenario_and_options(scenario_json, options_json);
    return dump(to_json(sc, merge_shards(sc, parse_shard_results(parse_json(shards_json, "shards"), sc), opt)));
}

std::string calibrate_json(std::string_view scenario_json, std::string_view runs_json) {
    const Json scenario = parse_json(scenario_json, "scenario");
    Scenario sc = parse_scenario(scenario);
    CalibrationResult res = calibrate(sc, parse_runs_text(runs_json, sc));
    return dump(Json{{"report", to_json(res)}, {"scenario", calibrated_scenario_json(scenario, res)}});
}

std::string advise_json(std::string_view scenario_json, std::string_view options_json) {
    Scenario sc = parse_scenario_text(scenario_json);
    AdviceOptions opt = parse_advice_options(options_json.empty() ? Json::object() : parse_json(options_json, "options"));
    return dump(to_json(advise(sc, opt)));
}

std::string error_json(const std::exception_ptr& e) {
    Json problems = Json::array();
    std::string path, message;
    try {
        std::rethrow_exception(e);
    } catch (const InputError& err) {
        for (const auto& p : err.problems()) problems.push_back({{"path", p.path}, {"message", p.message}});
        if (!err.problems().empty()) {
            path = err.problems().front().path;
            message = err.problems().front().message;
        }
    } catch (const std::bad_alloc&) {
        message = "out of memory";
    } catch (const std::exception& err) {
        message = std::string("internal error: ") + err.what();
    } catch (...) {
        message = "internal error";
    }
    return dump(Json{{"error", {{"path", path}, {"message", message}, {"problems", problems}}}});
}

}  // namespace poseidon
