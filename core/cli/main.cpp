// poseidon: the native CLI over the core. Argument handling, file I/O and printing only.
//   exit 0: printed; 2: invalid input (one line per problem on stderr); 3: no feasible plan;
//   1: internal error.
#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "poseidon/api.hpp"
#include "poseidon/calibrate.hpp"
#include "poseidon/cost_model.hpp"
#include "poseidon/error.hpp"
#include "poseidon/estimate.hpp"
#include "poseidon/json_util.hpp"
#include "poseidon/presets.hpp"
#include "poseidon/scenario.hpp"
#include "poseidon/search.hpp"

#include "cli_args.hpp"

namespace {

using namespace poseidon_cli;

constexpr const char* usage = R"(usage:
  poseidon estimate SCENARIO.json --plan PLAN.json [--json]
  poseidon plan SCENARIO.json [--top K] [--exhaustive] [--time-limit SECONDS] [--tp-per-stage] [--schedule any|1f1b|interleaved-1f1b] [--node-counts halving|all] [--group-blocks 1-4] [--split-nodes] [--empty-stages] [--mixed-stages] [--threads N] [--memory-cap GIB] [--precision any|P,P...] [--fsdp fixed|any] [--recompute fixed|any|R,R...] [--recompute-num-layers N,N...] [--cp-sizes N,N...] [--ep-sizes N,N...] [--etp-sizes N,N...] [--json]
  poseidon presets [devices|models|clusters|stacks|profiles] [--json]
  poseidon calibrate SCENARIO.json --runs RUNS.json --out CALIBRATED.json [--json]
  poseidon version                    (or --version; help, --help or -h prints this)
An option's value may also follow "=" (--top=3). A file argument of "-" reads standard input.
Formats: docs/formats.md.
)";

int cmd_presets(const std::vector<std::string>& args) {
    bool json = false;
    std::vector<std::string> kinds;
    for (const auto& a : args) {
        if (a == "--json") {
            if (json) throw Usage{"presets: --json given twice"};
            json = true;
        } else if (a == "devices" || a == "models" || a == "clusters" || a == "stacks" || a == "profiles") {
            if (std::find(kinds.begin(), kinds.end(), a) != kinds.end()) throw Usage{"presets: " + a + " given twice"};
            kinds.push_back(a);
        } else {
            throw Usage{"presets: unknown argument \"" + poseidon::printable(a, 60) + "\"; expected devices, models, clusters, stacks, profiles or --json"};
        }
    }
    if (kinds.empty()) kinds = {"devices", "models", "clusters", "stacks", "profiles"};
    if (json) {
        poseidon::Json all = poseidon::presets_as_json(), out = poseidon::Json::object();
        for (const auto& k : kinds) out[k] = all[k];
        std::cout << out.dump(2, ' ', false, poseidon::Json::error_handler_t::replace) << "\n";
        return 0;
    }
    for (const auto& k : kinds) {
        std::cout << k << ":\n";
        for (const auto& id : poseidon::preset_ids(k)) {
            const auto* p = poseidon::find_preset(k, id);
            std::string name = p && p->contains("name") && (*p)["name"].is_string() ? (*p)["name"].get<std::string>() : "";
            if (k == "models" && p) {  // the parameter count, total and active for a mixture of experts
                poseidon::Problems problems;
                const poseidon::ModelSpec m = poseidon::parse_model(poseidon::Json(id), "model", problems);
                if (problems.empty()) {
                    const poseidon::ParamCounts c = poseidon::model_param_counts(m);
                    char params[96];
                    if (m.is_moe())
                        std::snprintf(params, sizeof params, " (%.2f B parameters, %.2f B active)", c.total / 1e9, c.active / 1e9);
                    else
                        std::snprintf(params, sizeof params, " (%.2f B parameters)", c.total / 1e9);
                    name += params;
                }
            }
            std::printf("  %-28s %s\n", id.c_str(), name.c_str());
        }
    }
    return 0;
}

int cmd_estimate(const std::vector<std::string>& args) {
    std::string scenario_path, plan_path;
    bool json = false;
    for (std::size_t i = 0; i < args.size(); ++i) {
        const auto& a = args[i];
        if (a == "--json") {
            if (json) throw Usage{"estimate: --json given twice"};
            json = true;
        } else if (a == "--plan") {
            if (!plan_path.empty()) throw Usage{"estimate: --plan given twice"};
            plan_path = option_value(args, i);
        } else if (a.size() > 1 && a[0] == '-') {
            throw Usage{"estimate: unknown option \"" + poseidon::printable(a, 60) + "\""};
        } else if (scenario_path.empty()) {
            scenario_path = a;
        } else {
            throw Usage{"estimate: unexpected argument \"" + poseidon::printable(a, 60) + "\""};
        }
    }
    if (scenario_path.empty() || plan_path.empty()) throw Usage{"estimate: needs SCENARIO.json and --plan PLAN.json"};
    check_stdin_once({scenario_path, plan_path});
    const std::string scenario_text = read_file(scenario_path, "scenario"), plan_text = read_file(plan_path, "plan");
    auto sc = poseidon::parse_scenario_text(scenario_text, poseidon::plan_names_precision(plan_text));
    auto plan = poseidon::parse_plan_text(plan_text, sc);
    auto e = poseidon::estimate(sc, plan, true);
    if (json)
        std::cout << poseidon::to_json(sc, e).dump(2, ' ', false, poseidon::Json::error_handler_t::replace) << "\n";
    else
        std::cout << poseidon::to_text(sc, e);
    return 0;
}

int cmd_plan(const std::vector<std::string>& args) {
    std::string scenario_path;
    bool json = false;
    poseidon::Json options = poseidon::Json::object();
    std::set<std::string> given;
    for (std::size_t i = 0; i < args.size(); ++i) {
        const auto& a = args[i];
        if (a.size() > 2 && a.rfind("--", 0) == 0 && !given.insert(a).second) throw Usage{"plan: " + poseidon::printable(a, 60) + " given twice"};
        if (a == "--json")
            json = true;
        else if (a == "--exhaustive")
            options["exhaustive"] = true;
        else if (a == "--tp-per-stage")
            options["tp_per_stage"] = true;
        else if (a == "--top")
            options["top"] = option_number(option_value(args, i), "--top");
        else if (a == "--time-limit")
            options["time_limit_s"] = option_number(option_value(args, i), "--time-limit");
        else if (a == "--schedule")
            options["schedule"] = option_value(args, i);
        else if (a == "--node-counts")
            options["node_counts"] = option_value(args, i);
        else if (a == "--precision") {
            // "any" or a comma-separated list (options.precisions)
            const std::string v = option_value(args, i);
            options["precisions"] = v == "any" ? poseidon::Json(v) : comma_list(v, false, "--precision");
        } else if (a == "--fsdp")
            options["fsdp"] = option_value(args, i);
        else if (a == "--recompute") {
            // "fixed", "any" or a comma-separated list (options.recompute)
            const std::string v = option_value(args, i);
            options["recompute"] = v == "any" || v == "fixed" ? poseidon::Json(v) : comma_list(v, false, "--recompute");
        } else if (a == "--recompute-num-layers")
            options["recompute_num_layers"] = comma_list(option_value(args, i), true, "--recompute-num-layers");
        else if (a == "--cp-sizes")
            options["cp_sizes"] = comma_list(option_value(args, i), true, "--cp-sizes");
        else if (a == "--ep-sizes")
            options["ep_sizes"] = comma_list(option_value(args, i), true, "--ep-sizes");
        else if (a == "--etp-sizes")
            options["etp_sizes"] = comma_list(option_value(args, i), true, "--etp-sizes");
        else if (a == "--mixed-stages")
            options["mixed_stages"] = true;
        else if (a == "--split-nodes")
            options["split_nodes"] = true;
        else if (a == "--empty-stages")
            options["empty_stages"] = true;
        else if (a == "--group-blocks")
            options["group_blocks"] = option_number(option_value(args, i), "--group-blocks");
        else if (a == "--threads")
            options["threads"] = option_number(option_value(args, i), "--threads");
        else if (a == "--memory-cap")
            options["memory_cap_GiB"] = option_number(option_value(args, i), "--memory-cap");
        else if (a.size() > 1 && a[0] == '-')
            throw Usage{"plan: unknown option \"" + poseidon::printable(a, 60) + "\""};
        else if (scenario_path.empty())
            scenario_path = a;
        else
            throw Usage{"plan: unexpected argument \"" + poseidon::printable(a, 60) + "\""};
    }
    if (scenario_path.empty()) throw Usage{"plan: needs SCENARIO.json"};
    // name the flag the user typed beside the option's path, as the memory cap's notes do
    const auto with_flags = [](const poseidon::InputError& e) {
        static const std::pair<const char*, const char*> flags[] = {
            {"options.top", "--top"},           {"options.time_limit_s", "--time-limit"}, {"options.schedule", "--schedule"},
            {"options.node_counts", "--node-counts"}, {"options.group_blocks", "--group-blocks"}, {"options.threads", "--threads"},
            {"options.memory_cap_GiB", "--memory-cap"}, {"options.precisions", "--precision"}, {"options.fsdp", "--fsdp"},
            {"options.recompute", "--recompute"}, {"options.recompute_num_layers", "--recompute-num-layers"},
            {"options.cp_sizes", "--cp-sizes"}, {"options.ep_sizes", "--ep-sizes"}, {"options.etp_sizes", "--etp-sizes"}};
        std::vector<poseidon::Problem> problems = e.problems();
        for (auto& pr : problems)
            for (const auto& [path, flag] : flags)
                if (pr.path == path || pr.path.rfind(std::string(path) + "[", 0) == 0) {
                    pr.path = std::string(flag) + " (" + pr.path + ")";
                    break;
                }
        return poseidon::InputError(std::move(problems));
    };
    // the options first: where the search chooses the precision (--precision) the scenario's own
    // is not refused; the scenario's problems are still said before the options'
    poseidon::SearchOptions opt;
    std::optional<poseidon::InputError> bad_options;
    try {
        opt = poseidon::parse_search_options(options);
    } catch (const poseidon::InputError& e) {
        bad_options = with_flags(e);
    }
    auto sc = poseidon::parse_scenario_text(read_file(scenario_path, "scenario"), !bad_options && opt.chooses_precision());
    if (bad_options) throw *bad_options;
    // options the scenario refuses (a precision a group cannot run) are named by their flag too
    poseidon::SearchResult result;
    try {
        result = poseidon::search(sc, opt);
    } catch (const poseidon::InputError& e) {
        throw with_flags(e);
    }
    if (json) {
        std::cout << poseidon::to_json(sc, result).dump(2, ' ', false, poseidon::Json::error_handler_t::replace) << "\n";
    } else {
        if (!result.plans.empty()) {
            std::cout << "best plan\n" << poseidon::to_text(sc, result.plans.front()) << "\n";
            // with a batch tolerance the plans train different batches: ranked by tokens/s, and each shows its batch
            const bool batches = sc.training.global_batch_tolerance > 0;
            // Several of the K fastest plans are often the same stages with the layers moved between
            // stages that cost the same: each line names its layers and says so.
            auto same_stages = [](const poseidon::Estimate& a, const poseidon::Estimate& b) {
                if (a.plan.micro_batch_size != b.plan.micro_batch_size || a.plan.num_micro_batches != b.plan.num_micro_batches ||
                    a.plan.virtual_stages != b.plan.virtual_stages || a.plan.stages.size() != b.plan.stages.size() || a.plan.precision != b.plan.precision ||
                    a.plan.fsdp != b.plan.fsdp || a.plan.recompute != b.plan.recompute || a.plan.recompute_num_layers != b.plan.recompute_num_layers)
                    return false;
                for (std::size_t s = 0; s < a.plan.stages.size(); ++s)
                    if (a.plan.stages[s].replicas != b.plan.stages[s].replicas) return false;
                return std::abs(a.iteration_time_s - b.iteration_time_s) <= 1e-9 * a.iteration_time_s;
            };
            for (std::size_t k = 1; k < result.plans.size(); ++k) {
                const auto& p = result.plans[k];
                std::printf("#%zu  %.4f s  %.0f tokens/s  MFU %.1f %%", k + 1, p.iteration_time_s, p.tokens_per_s, 100 * p.mfu);
                if (batches) std::printf("  batch %lld", static_cast<long long>(p.plan.micro_batch_size * p.plan.num_micro_batches));
                // enough to tell the plans apart: layers, TP x DP per stage (the TP degrees of mixed
                // replicas joined by "/"), micro-batching and the schedule
                // (context parallelism: tp x cp x dp)
                std::string layers, tp_dp;
                bool cp = false;
                for (const auto& st : p.plan.stages) cp = cp || st.cp > 1;
                for (const auto& st : p.plan.stages) {
                    layers += (layers.empty() ? "" : "/") + std::to_string(st.num_layers);
                    tp_dp += (tp_dp.empty() ? "" : " ") + poseidon::tp_degrees_text(st) + (cp ? "x" + std::to_string(st.cp) : "") + "x" + std::to_string(st.dp());
                }
                std::printf("  %zu stage%s, layers %s, %s %s, micro-batch %lld x %lld", p.plan.stages.size(), p.plan.stages.size() == 1 ? "" : "s",
                            layers.c_str(), cp ? "tp x cp x dp" : "tp x dp", tp_dp.c_str(), static_cast<long long>(p.plan.micro_batch_size), static_cast<long long>(p.plan.num_micro_batches));
                if (p.plan.virtual_stages > 1) std::printf(", interleaved V %d", p.plan.virtual_stages);
                if (p.plan.precision) std::printf(", %s", poseidon::to_string(*p.plan.precision).c_str());
                if (p.plan.fsdp) std::printf(", %s", *p.plan.fsdp ? "FSDP" : "no FSDP");
                if (p.plan.recompute) std::printf(", recompute %s", poseidon::to_string(*p.plan.recompute).c_str());
                if (p.plan.recompute_num_layers) std::printf(" of %d", *p.plan.recompute_num_layers);
                for (std::size_t j = 0; j < k; ++j)
                    if (same_stages(result.plans[j], p)) {
                        std::printf(" (#%zu's stages, another split)", j + 1);
                        break;
                    }
                std::printf("\n");
            }
        }
        for (const auto& b : result.baselines) {
            if (b.estimate) {
                std::printf("baseline %-18s %.4f s  %.0f tokens/s", b.name.c_str(), b.estimate->iteration_time_s, b.estimate->tokens_per_s);
                // with a batch tolerance the plans train different batches: the ratio is of samples/s
                if (const auto x = poseidon::baseline_speedup(sc, result, b))
                    std::printf(sc.training.global_batch_tolerance > 0 ? " (best plan: %.2fx its samples/s)" : " (best plan is %.2fx faster)", *x);
                std::printf("\n");
            } else if (b.reason.rfind("not computed", 0) == 0) {
                std::printf("baseline %-18s %s\n", b.name.c_str(), b.reason.c_str());
            } else {
                std::printf("baseline %-18s no feasible plan: %s\n", b.name.c_str(), b.reason.c_str());
            }
        }
        const auto& st = result.stats;
        std::printf("search: %lld evaluated, %lld pruned, %.3f s, %d thread%s%s\n", static_cast<long long>(st.evaluated),
                    static_cast<long long>(st.pruned), st.elapsed_s, st.threads, st.threads == 1 ? "" : "s",
                    st.complete ? "" : (" (incomplete: " + st.stop_reason() + ")").c_str());
        for (const auto& [reason, n] : st.infeasible) std::printf("  infeasible (%s): %lld\n", reason.c_str(), static_cast<long long>(n));
        for (const auto& note : st.notes)  // the scenario's notes were printed with the best plan
            if (result.plans.empty() || std::find(result.plans.front().notes.begin(), result.plans.front().notes.end(), note) == result.plans.front().notes.end())
                std::printf("  note: %s\n", note.c_str());
    }
    if (result.plans.empty()) {
        const auto& st = result.stats;
        // exit 3: say whether no plan exists or none was found before the search stopped
        if (st.complete) {
            std::cerr << "no feasible plan: the whole space was searched";
        } else {
            const std::string by = st.stop_reason();
            // name only the limit that stopped it
            const std::string advice = by == "time limit" ? " (raise --time-limit)" : by == "memory cap" ? " (raise --memory-cap)" : "";
            std::cerr << "no plan found: the search stopped (" << by << ") before finding one, so feasible plans may exist" << advice;
        }
        for (const auto& [reason, n] : st.infeasible) std::cerr << "; " << reason << ": " << n;
        std::cerr << "\n";
        return 3;
    }
    return 0;
}

// Fits device efficiencies (and framework memory) to measured runs: docs/calibration.md.
int cmd_calibrate(const std::vector<std::string>& args) {
    std::string scenario_path, runs_path, out_path;
    bool json = false;
    for (std::size_t i = 0; i < args.size(); ++i) {
        const auto& a = args[i];
        if (a == "--json") {
            if (json) throw Usage{"calibrate: --json given twice"};
            json = true;
        } else if (a == "--runs" || a == "--out") {
            std::string& dest = a == "--runs" ? runs_path : out_path;
            if (!dest.empty()) throw Usage{"calibrate: " + a + " given twice"};
            dest = option_value(args, i);
            if (dest.empty()) throw Usage{"calibrate: " + a + " needs a file name"};
        } else if (a.size() > 1 && a[0] == '-') {
            throw Usage{"calibrate: unknown option \"" + poseidon::printable(a, 60) + "\""};
        } else if (scenario_path.empty()) {
            scenario_path = a;
        } else {
            throw Usage{"calibrate: unexpected argument \"" + poseidon::printable(a, 60) + "\""};
        }
    }
    if (scenario_path.empty() || runs_path.empty() || out_path.empty()) throw Usage{"calibrate: needs SCENARIO.json, --runs RUNS.json and --out CALIBRATED.json"};
    if (out_path == "-") throw Usage{"calibrate: --out needs a file name (standard output carries the report)"};
    for (const auto& [input, what] : {std::pair{scenario_path, "the scenario"}, std::pair{runs_path, "the runs file"}}) {
        std::error_code ec;
        if (out_path == input || std::filesystem::equivalent(out_path, input, ec))
            throw Usage{"calibrate: --out \"" + poseidon::printable(out_path, 200) + "\" is " + what + "; expected a new file name (the calibrated scenario would overwrite it)"};
    }
    check_stdin_once({scenario_path, runs_path});
    const poseidon::Json scenario_json = poseidon::parse_json(read_file(scenario_path, "scenario"), "scenario");
    auto sc = poseidon::parse_scenario(scenario_json);
    auto runs = poseidon::parse_runs_text(read_file(runs_path, "runs"), sc);
    auto result = poseidon::calibrate(sc, runs);
    const std::string calibrated = poseidon::calibrated_scenario_json(scenario_json, result).dump(2, ' ', false, poseidon::Json::error_handler_t::replace) + "\n";
    {
        std::ofstream out(out_path, std::ios::binary | std::ios::trunc);
        out << calibrated;
        out.flush();
        if (!out) throw poseidon::InputError("out", "cannot write file \"" + poseidon::printable(out_path, 200) + "\": " + std::strerror(errno));
    }
    if (json)
        std::cout << poseidon::to_json(result).dump(2, ' ', false, poseidon::Json::error_handler_t::replace) << "\n";
    else
        std::cout << poseidon::to_text(result) << "\nwrote " << out_path << "\n";
    return 0;
}

}  // namespace

int main(int argc, char** argv) {
    std::vector<std::string> args(argv + 1, argv + argc);
    try {
        if (args.empty()) {
            std::cerr << "no command given\n" << usage;
            return 2;
        }
        if (args[0] == "--help" || args[0] == "-h" || args[0] == "help") {
            std::cout << usage;
            return 0;
        }
        std::string verb = args[0];
        std::vector<std::string> rest = split_option_values(std::vector<std::string>(args.begin() + 1, args.end()));
        for (const auto& a : rest)
            if (a == "--help" || a == "-h") {
                std::cout << usage;
                return 0;
            }
        if (verb == "estimate") return cmd_estimate(rest);
        if (verb == "plan") return cmd_plan(rest);
        if (verb == "presets") return cmd_presets(rest);
        if (verb == "calibrate") return cmd_calibrate(rest);
        if (verb == "version" || verb == "--version") {
            if (!rest.empty()) throw Usage{"version: unexpected argument \"" + poseidon::printable(rest.front(), 60) + "\""};
            std::cout << "poseidon " << poseidon::version() << "\n";
            return 0;
        }
        throw Usage{"unknown command \"" + poseidon::printable(verb, 60) + "\""};
    } catch (const Usage& u) {
        std::cerr << u.message << "\n" << usage;
        return 2;
    } catch (const poseidon::InputError& e) {
        // One line per problem; a pathological input cannot flood the terminal.
        const auto& problems = e.problems();
        constexpr std::size_t max_lines = 50;
        for (std::size_t k = 0; k < problems.size() && k < max_lines; ++k) std::cerr << problems[k].line() << "\n";
        if (problems.size() > max_lines) std::cerr << "... and " << problems.size() - max_lines << " more problems\n";
        if (problems.empty()) std::cerr << e.what() << "\n";
        return 2;
    } catch (const std::bad_alloc&) {
        std::cerr << "out of memory\n";
        return 1;
    } catch (const std::exception& e) {
        std::cerr << "internal error: " << e.what() << "\n";
        return 1;
    }
}
