// poseidon: the native CLI over the core. Argument handling, file I/O and printing only.
//   exit 0: printed; 2: invalid input (one line per problem on stderr); 3: no feasible plan;
//   1: internal error.
#include <cstdio>
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

#include "poseidon/api.hpp"
#include "poseidon/error.hpp"
#include "poseidon/estimate.hpp"
#include "poseidon/presets.hpp"
#include "poseidon/scenario.hpp"
#include "poseidon/search.hpp"

namespace {

constexpr const char* usage = R"(usage:
  poseidon estimate SCENARIO.json --plan PLAN.json [--json]
  poseidon plan SCENARIO.json [--top K] [--exhaustive] [--time-limit SECONDS] [--json]
  poseidon presets [devices|models|clusters] [--json]
  poseidon version
A file argument of "-" reads standard input. Formats: docs/formats.md.
)";

struct Usage {
    std::string message;
};

std::string read_file(const std::string& path, const std::string& what) {
    std::ostringstream ss;
    if (path == "-") {
        ss << std::cin.rdbuf();
    } else {
        std::ifstream in(path, std::ios::binary);
        if (!in) throw poseidon::InputError(what, "cannot read file \"" + path + "\"");
        in.seekg(0, std::ios::end);
        auto size = in.tellg();
        if (size > static_cast<std::streamoff>(poseidon::max_json_bytes))
            throw poseidon::InputError(what, "file \"" + path + "\" is " + std::to_string(size) + " bytes; at most " + std::to_string(poseidon::max_json_bytes) + " are accepted");
        in.seekg(0);
        ss << in.rdbuf();
    }
    return ss.str();
}

double parse_double(const std::string& s, const std::string& flag) {
    try {
        std::size_t n = 0;
        double v = std::stod(s, &n);
        if (n != s.size()) throw std::invalid_argument(s);
        return v;
    } catch (...) {
        throw Usage{flag + ": \"" + s + "\" is not a number"};
    }
}

int cmd_presets(const std::vector<std::string>& args) {
    bool json = false;
    std::vector<std::string> kinds;
    for (const auto& a : args) {
        if (a == "--json")
            json = true;
        else if (a == "devices" || a == "models" || a == "clusters")
            kinds.push_back(a);
        else
            throw Usage{"presets: unknown argument \"" + a + "\"; expected devices, models, clusters or --json"};
    }
    if (kinds.empty()) kinds = {"devices", "models", "clusters"};
    if (json) {
        poseidon::Json all = poseidon::presets_as_json(), out = poseidon::Json::object();
        for (const auto& k : kinds) out[k] = all[k];
        std::cout << out.dump(2) << "\n";
        return 0;
    }
    for (const auto& k : kinds) {
        std::cout << k << ":\n";
        for (const auto& id : poseidon::preset_ids(k)) {
            const auto* p = poseidon::find_preset(k, id);
            std::string name = p && p->contains("name") && (*p)["name"].is_string() ? (*p)["name"].get<std::string>() : "";
            std::printf("  %-28s %s\n", id.c_str(), name.c_str());
        }
    }
    return 0;
}

int cmd_estimate(const std::vector<std::string>& args) {
    std::string scenario_path, plan_path;
    bool json = false;
    for (std::size_t i = 0; i < args.size(); ++i) {
        if (args[i] == "--json")
            json = true;
        else if (args[i] == "--plan" && i + 1 < args.size())
            plan_path = args[++i];
        else if (args[i].rfind("--", 0) == 0)
            throw Usage{"estimate: unknown option \"" + args[i] + "\""};
        else if (scenario_path.empty())
            scenario_path = args[i];
        else
            throw Usage{"estimate: unexpected argument \"" + args[i] + "\""};
    }
    if (scenario_path.empty() || plan_path.empty()) throw Usage{"estimate: needs SCENARIO.json and --plan PLAN.json"};
    auto sc = poseidon::parse_scenario_text(read_file(scenario_path, "scenario"));
    auto plan = poseidon::parse_plan_text(read_file(plan_path, "plan"), sc);
    auto e = poseidon::estimate(sc, plan, true);
    if (json)
        std::cout << poseidon::to_json(sc, e).dump(2) << "\n";
    else
        std::cout << poseidon::to_text(sc, e);
    return 0;
}

int cmd_plan(const std::vector<std::string>& args) {
    std::string scenario_path;
    bool json = false;
    poseidon::Json options = poseidon::Json::object();
    for (std::size_t i = 0; i < args.size(); ++i) {
        const auto& a = args[i];
        if (a == "--json")
            json = true;
        else if (a == "--exhaustive")
            options["exhaustive"] = true;
        else if (a == "--top" && i + 1 < args.size())
            options["top"] = parse_double(args[++i], "--top");
        else if (a == "--time-limit" && i + 1 < args.size())
            options["time_limit_s"] = parse_double(args[++i], "--time-limit");
        else if (a.rfind("--", 0) == 0)
            throw Usage{"plan: unknown option \"" + a + "\" (or missing value)"};
        else if (scenario_path.empty())
            scenario_path = a;
        else
            throw Usage{"plan: unexpected argument \"" + a + "\""};
    }
    if (scenario_path.empty()) throw Usage{"plan: needs SCENARIO.json"};
    auto sc = poseidon::parse_scenario_text(read_file(scenario_path, "scenario"));
    auto opt = poseidon::parse_search_options(options);
    auto result = poseidon::search(sc, opt);
    if (json) {
        std::cout << poseidon::to_json(sc, result).dump(2) << "\n";
    } else {
        if (!result.plans.empty()) {
            std::cout << "best plan\n" << poseidon::to_text(sc, result.plans.front()) << "\n";
            for (std::size_t k = 1; k < result.plans.size(); ++k)
                std::printf("#%zu  %.4f s  %.0f tokens/s  MFU %.1f %%\n", k + 1, result.plans[k].iteration_time_s, result.plans[k].tokens_per_s, 100 * result.plans[k].mfu);
        }
        for (const auto& b : result.baselines) {
            if (b.estimate)
                std::printf("baseline %-18s %.4f s (best plan is %.2fx faster)\n", b.name.c_str(), b.estimate->iteration_time_s,
                            result.plans.empty() ? 0.0 : b.estimate->iteration_time_s / result.plans.front().iteration_time_s);
            else
                std::printf("baseline %-18s no feasible plan: %s\n", b.name.c_str(), b.reason.c_str());
        }
        const auto& st = result.stats;
        std::printf("search: %lld evaluated, %lld pruned, %.3f s%s\n", static_cast<long long>(st.evaluated), static_cast<long long>(st.pruned), st.elapsed_s,
                    st.complete ? "" : " (incomplete: time limit)");
        for (const auto& [reason, n] : st.infeasible) std::printf("  infeasible (%s): %lld\n", reason.c_str(), static_cast<long long>(n));
    }
    if (result.plans.empty()) {
        std::cerr << "no feasible plan";
        for (const auto& [reason, n] : result.stats.infeasible) std::cerr << "; " << reason << ": " << n;
        std::cerr << "\n";
        return 3;
    }
    return 0;
}

}  // namespace

int main(int argc, char** argv) {
    std::vector<std::string> args(argv + 1, argv + argc);
    try {
        if (args.empty() || args[0] == "--help" || args[0] == "-h" || args[0] == "help") {
            std::cout << usage;
            return args.empty() ? 2 : 0;
        }
        std::string verb = args[0];
        std::vector<std::string> rest(args.begin() + 1, args.end());
        if (verb == "estimate") return cmd_estimate(rest);
        if (verb == "plan") return cmd_plan(rest);
        if (verb == "presets") return cmd_presets(rest);
        if (verb == "version" || verb == "--version") {
            std::cout << "poseidon " << poseidon::version() << "\n";
            return 0;
        }
        throw Usage{"unknown command \"" + verb + "\""};
    } catch (const Usage& u) {
        std::cerr << u.message << "\n" << usage;
        return 2;
    } catch (const poseidon::InputError& e) {
        for (const auto& p : e.problems()) std::cerr << p.line() << "\n";
        return 2;
    } catch (const std::bad_alloc&) {
        std::cerr << "out of memory\n";
        return 1;
    } catch (const std::exception& e) {
        std::cerr << "internal error: " << e.what() << "\n";
        return 1;
    }
}
