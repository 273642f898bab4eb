// CLI tests for the `poseidon` binary (registered with CTest by tests/cli/CMakeLists.txt):
//
//   cli_driver hostile POSEIDON tests/cli/hostile_cases.json
//       every case: exit code 2, a stderr line whose path contains expect_path_substring (and
//       expect_message_substring if given), no "internal error", under one second.
//   cli_driver files POSEIDON WORKDIR
//       file and argument handling: a directory, a missing file, a file over 4 MiB, /dev/zero,
//       standard input ("-"), "-" twice, missing option values, unknown options and commands.
//   cli_driver golden POSEIDON tests/cli/golden
//       `estimate` text and --json for every NAME.scenario.json + NAME.plan.json, compared byte
//       for byte with NAME.txt and NAME.json. With UPDATE_GOLDEN=1 the files are rewritten
//       instead (the cost model is still being calibrated: docs/robustness.md, "Golden outputs").
//
// No Python or shell tools needed: the test command runs on a bare Debian machine.
#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

namespace fs = std::filesystem;
using Json = nlohmann::json;

namespace {

struct Result {
    int rc = -1;  // exit code, or 128 + signal
    std::string out, err;
    double seconds = 0;
    bool timed_out = false;
};

std::string slurp(const fs::path& p) {
    std::ifstream in(p, std::ios::binary);
    std::ostringstream ss;
    ss << in.rdbuf();
    return ss.str();
}

void spit(const fs::path& p, const std::string& data) {
    std::ofstream out(p, std::ios::binary | std::ios::trunc);
    out << data;
}

fs::path g_tmp;

// Runs argv with stdin from `stdin_path` (or /dev/null), killing it after `timeout_s`.
Result run(const std::vector<std::string>& argv, const std::string& stdin_path = "/dev/null", double timeout_s = 10) {
    const fs::path out = g_tmp / "stdout", err = g_tmp / "stderr";
    auto t0 = std::chrono::steady_clock::now();
    pid_t pid = fork();
    if (pid == 0) {
        int in = open(stdin_path.c_str(), O_RDONLY);
        int o = open(out.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
        int e = open(err.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
        if (in < 0 || o < 0 || e < 0) _exit(127);
        dup2(in, 0);
        dup2(o, 1);
        dup2(e, 2);
        std::vector<char*> args;
        for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
        args.push_back(nullptr);
        execv(args[0], args.data());
        _exit(127);
    }
    Result r;
    int status = 0;
    for (;;) {
        pid_t w = waitpid(pid, &status, WNOHANG);
        r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
        if (w == pid) break;
        if (r.seconds > timeout_s) {
            kill(pid, SIGKILL);
            waitpid(pid, &status, 0);
            r.timed_out = true;
            break;
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(2));
    }
    r.rc = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + (WIFSIGNALED(status) ? WTERMSIG(status) : 0);
    r.out = slurp(out);
    r.err = slurp(err);
    return r;
}

std::vector<std::string> lines(const std::string& s) {
    std::vector<std::string> v;
    std::istringstream in(s);
    for (std::string l; std::getline(in, l);) v.push_back(l);
    return v;
}

// Code points U+0000..U+00FF of a JSON string, one byte each.
std::string latin1_bytes(const std::string& utf8) {
    std::string out;
    for (std::size_t i = 0; i < utf8.size(); ++i) {
        unsigned char c = static_cast<unsigned char>(utf8[i]);
        if (c < 0x80) {
            out += static_cast<char>(c);
        } else {
            unsigned char c2 = static_cast<unsigned char>(utf8[++i]);
            out += static_cast<char>(((c & 0x1F) << 6) | (c2 & 0x3F));
        }
    }
    return out;
}

int failures = 0;
void fail(const std::string& name, const std::string& why, const Result& r) {
    ++failures;
    std::cerr << "FAIL " << name << ": " << why << " (exit " << r.rc << ", " << r.seconds << " s)\n";
    std::string e = r.err.substr(0, 800);
    std::cerr << "  stderr: " << e << "\n";
}

// Exit 2, no crash, no internal error, under a second, and every stderr line non-empty.
bool check_refusal(const std::string& name, const Result& r, const std::string& path_sub, const std::string& msg_sub) {
    if (r.timed_out) return fail(name, "timed out", r), false;
    if (r.rc != 2) return fail(name, "expected exit code 2", r), false;
    if (r.seconds > 1.0) return fail(name, "took more than one second", r), false;
    if (r.err.empty()) return fail(name, "nothing on stderr", r), false;
    if (r.err.find("internal error") != std::string::npos) return fail(name, "internal error", r), false;
    bool path_found = path_sub.empty();
    for (const auto& l : lines(r.err)) {
        auto colon = l.find(": ");
        if (colon != std::string::npos && l.substr(0, colon).find(path_sub) != std::string::npos) path_found = true;
    }
    if (!path_found) return fail(name, "no stderr line whose path contains \"" + path_sub + "\"", r), false;
    if (!msg_sub.empty() && r.err.find(msg_sub) == std::string::npos) return fail(name, "stderr lacks \"" + msg_sub + "\"", r), false;
    return true;
}

int hostile(const std::string& bin, const fs::path& cases_file) {
    Json cases = Json::parse(slurp(cases_file));
    int n = 0;
    for (const auto& c : cases) {
        const std::string name = c.at("name");
        std::string sc = c.contains("scenario_bytes") ? latin1_bytes(c["scenario_bytes"]) : c.at("scenario").get<std::string>();
        std::string pl = c.contains("plan_bytes") ? latin1_bytes(c["plan_bytes"]) : c.at("plan").get<std::string>();
        spit(g_tmp / "s.json", sc);
        spit(g_tmp / "p.json", pl);
        Result r = run({bin, "estimate", (g_tmp / "s.json").string(), "--plan", (g_tmp / "p.json").string()});
        check_refusal(name, r, c.at("expect_path_substring"), c.value("expect_message_substring", ""));
        // The same through standard input.
        Result r2 = run({bin, "estimate", "-", "--plan", (g_tmp / "p.json").string()}, (g_tmp / "s.json").string());
        if (r2.rc != r.rc || r2.err != r.err) fail(name + " (stdin)", "differs from reading the file", r2);
        ++n;
    }
    std::cout << n << " hostile cases, " << failures << " failures\n";
    return failures ? 1 : 0;
}

int files(const std::string& bin, const fs::path& work) {
    fs::create_directories(work);
    const std::string sc = R"({"model":"tiny-8l","training":{"global_batch_size":64},"cluster":"demo-mixed-16"})";
    const std::string pl = R"({"micro_batch_size":8,"num_micro_batches":8,"stages":[{"group":0,"num_layers":4,"tp":2,"dp":4},{"group":1,"num_layers":4,"tp":2,"dp":4}]})";
    const std::string s = (work / "s.json").string(), p = (work / "p.json").string();
    spit(s, sc);
    spit(p, pl);
    // The good pair works, from files and from standard input.
    Result ok = run({bin, "estimate", s, "--plan", p});
    if (ok.rc != 0) fail("valid pair", "expected exit 0", ok);
    Result ok_stdin = run({bin, "estimate", "-", "--plan", p, "--json"}, s);
    if (ok_stdin.rc != 0 || ok_stdin.out.find("iteration_time_s") == std::string::npos) fail("scenario from stdin", "expected exit 0 and JSON", ok_stdin);
    Result ok_plan_stdin = run({bin, "estimate", s, "--plan", "-"}, p);
    if (ok_plan_stdin.rc != 0) fail("plan from stdin", "expected exit 0", ok_plan_stdin);
    // Huge file: 5 MB of spaces around a valid object.
    const std::string huge = (work / "huge.json").string();
    spit(huge, sc + std::string(5'000'000, ' '));
    struct Case {
        std::string name;
        std::vector<std::string> argv;
        std::string stdin_path, path_sub, msg_sub;
    };
    const std::vector<Case> cases = {
        {"scenario is a directory", {bin, "estimate", work.string(), "--plan", p}, "/dev/null", "scenario", "is a directory"},
        {"plan is a directory", {bin, "estimate", s, "--plan", work.string()}, "/dev/null", "plan", "is a directory"},
        {"missing scenario file", {bin, "estimate", (work / "nope.json").string(), "--plan", p}, "/dev/null", "scenario", "cannot read file"},
        {"missing plan file", {bin, "estimate", s, "--plan", (work / "nope.json").string()}, "/dev/null", "plan", "cannot read file"},
        {"file over 4 MiB", {bin, "estimate", huge, "--plan", p}, "/dev/null", "scenario", "at most 4194304 bytes"},
        {"standard input over 4 MiB", {bin, "estimate", "-", "--plan", p}, huge, "scenario", "at most 4194304 bytes"},
        {"endless device file", {bin, "estimate", "/dev/zero", "--plan", p}, "/dev/null", "scenario", "at most 4194304 bytes"},
        {"empty standard input", {bin, "estimate", "-", "--plan", p}, "/dev/null", "scenario", "empty input"},
        {"standard input twice", {bin, "estimate", "-", "--plan", "-"}, s, "", "standard input"},
        {"--plan without a value", {bin, "estimate", s, "--plan"}, "/dev/null", "", "--plan needs a value"},
        {"--plan twice", {bin, "estimate", s, "--plan", p, "--plan", p}, "/dev/null", "", "--plan given twice"},
        {"estimate --json twice", {bin, "estimate", s, "--plan", p, "--json", "--json"}, "/dev/null", "", "--json given twice"},
        {"presets --json twice", {bin, "presets", "--json", "--json"}, "/dev/null", "", "--json given twice"},
        {"no plan", {bin, "estimate", s}, "/dev/null", "", "needs SCENARIO.json and --plan"},
        {"unknown option", {bin, "estimate", s, "--plan", p, "--fast"}, "/dev/null", "", "unknown option"},
        {"extra argument", {bin, "estimate", s, s, "--plan", p}, "/dev/null", "", "unexpected argument"},
        {"unknown command", {bin, "estimat", s}, "/dev/null", "", "unknown command"},
        {"no command", {bin}, "/dev/null", "", "usage"},
        {"--top not a number", {bin, "plan", s, "--top", "three"}, "/dev/null", "", "not a decimal number"},
        {"--time-limit nan", {bin, "plan", s, "--time-limit", "nan"}, "/dev/null", "", "not a decimal number"},
        {"--time-limit inf", {bin, "plan", s, "--time-limit", "inf"}, "/dev/null", "", "not a decimal number"},
        {"--time-limit in hex", {bin, "plan", s, "--time-limit", "0x10"}, "/dev/null", "", "not a decimal number"},
        {"--top twice", {bin, "plan", s, "--top", "3", "--top", "4"}, "/dev/null", "", "--top given twice"},
        {"version with an argument", {bin, "version", "extra"}, "/dev/null", "", "unexpected argument"},
        {"--time-limit without a value", {bin, "plan", s, "--time-limit"}, "/dev/null", "", "needs a value"},
        // the flag as typed, then the option's path
        {"--top out of range", {bin, "plan", s, "--top", "0"}, "/dev/null", "--top (options.top)", "out of range"},
        {"--time-limit out of range", {bin, "plan", s, "--time-limit", "100000"}, "/dev/null", "--time-limit (options.time_limit_s)", "<= 86400"},
        {"--top not an integer", {bin, "plan", s, "--top", "2.5"}, "/dev/null", "options.top", "not an integer"},
        // a whole number is echoed as typed, and so is the bound: no ".0" on either
        {"--memory-cap out of range", {bin, "plan", s, "--memory-cap", "2000000"}, "/dev/null", "--memory-cap (options.memory_cap_GiB)",
         "2000000 is out of range; expected a finite number > 0 and <= 1000000\n"},
        {"--precision unknown", {bin, "plan", s, "--precision", "bf16,fp9"}, "/dev/null", "--precision (options.precisions[1])", "\"fp9\" is not a precision"},
        {"--precision a GPU cannot run", {bin, "plan", s, "--precision", "bf16,nvfp4"}, "/dev/null", "--precision (options.precisions[1])", "\"nvfp4\" cannot run on cluster.groups[0]"},
        {"--fsdp unknown", {bin, "plan", s, "--fsdp", "yes"}, "/dev/null", "--fsdp (options.fsdp)", "\"yes\" is not allowed"},
        {"--ep-sizes on a dense model", {bin, "plan", s, "--ep-sizes", "1,2"}, "/dev/null", "--ep-sizes (options.ep_sizes[1])", "2 needs a mixture-of-experts model"},
        {"--cp-sizes zero", {bin, "plan", s, "--cp-sizes", "0"}, "/dev/null", "--cp-sizes (options.cp_sizes[0])", "0 is not allowed"},
        {"--etp-sizes not a number", {bin, "plan", s, "--etp-sizes", "two"}, "/dev/null", "", "not a decimal number"},
        {"presets unknown kind", {bin, "presets", "gpus"}, "/dev/null", "", "unknown argument"},
        {"presets kind twice", {bin, "presets", "stacks", "stacks"}, "/dev/null", "", "stacks given twice"},
        // "--option=value" is "--option value" for every option; a switch takes no value
        {"--top=0", {bin, "plan", s, "--top=0"}, "/dev/null", "--top (options.top)", "out of range"},
        {"--json=1", {bin, "estimate", s, "--plan", p, "--json=1"}, "/dev/null", "", "--json takes no value"},
        {"argument with invalid UTF-8", {bin, "estimate", s, "--plan", p, "--\xff\xfe"}, "/dev/null", "", "unknown option \"--\\xFF\\xFE\""},
    };
    for (const auto& c : cases) check_refusal(c.name, run(c.argv, c.stdin_path), c.path_sub, c.msg_sub);
    {  // the expert grid fixed: every plan on it, and the note says so
        const std::string moe = (work / "moe.json").string();
        spit(moe, R"({"model": "mixtral-8x7b", "cluster": "dgx-h100-16", "training": {"global_batch_size": 64, "recompute": "full"}})");
        Result r = run({bin, "plan", moe, "--top", "2", "--ep-sizes", "4", "--json"});
        bool on_grid = r.rc == 0;
        if (on_grid) {
            const Json out = Json::parse(r.out);
            for (const auto& p : out["plans"])
                for (const auto& st : p["plan"]["stages"]) on_grid = on_grid && st.value("ep", 1) == 4;
            on_grid = on_grid && out["stats"]["notes"].dump().find("ep x etp: 4x1, as options.ep_sizes fixes them") != std::string::npos;
        }
        if (!on_grid) fail("plan --ep-sizes 4", "expected every stage of every plan at ep 4 and the note naming the fixed grid", r);
    }
    {  // the other plans' lines name their layers and say when they only move layers between equal stages
        const std::string splits = (work / "splits.json").string();
        spit(splits, R"({"model": "gpt2-xl-1.5b", "cluster": "metis-t4-a100", "training": {"global_batch_size": 128}})");
        Result r = run({bin, "plan", splits, "--top", "3"});
        if (r.rc != 0 || r.out.find("\n#2  ") == std::string::npos || r.out.find(" stages, layers ") == std::string::npos ||
            r.out.find(", tp x dp ") == std::string::npos || r.out.find(", micro-batch ") == std::string::npos ||
            r.out.find("(#1's stages, another split)") == std::string::npos)
            fail("plan: other layer splits of the same stages",
                 "expected '#2 ... N stages, layers a/b/..., tp x dp TxD ..., micro-batch B x M (#1's stages, another split)'", r);
    }
    {  // with a batch tolerance the plans train different batches: a baseline's ratio is of samples/s, not "faster"
        const std::string tol = (work / "tolerance.json").string();
        spit(tol, R"({"model": "gpt3-1.7b", "cluster": "demo-mixed-16", "training": {"global_batch_size": 60, "global_batch_tolerance": 0.1}})");
        Result r = run({bin, "plan", tol, "--top", "1", "--time-limit", "20"});
        if (r.rc != 0 || r.out.find("x its samples/s)") == std::string::npos || r.out.find("x faster)") != std::string::npos)
            fail("plan: baselines under a batch tolerance", "expected '(best plan: N.NNx its samples/s)' and no 'faster'", r);
    }
    {  // exit 3 from a search the time limit stopped: the advice names that limit alone. Without a
       // plan the walk may go on 30 ms past the limit (docs/search.md, "Time limit"); GPT-3 175B's
       // own 96 blocks found a plan within them (2026-12-07), 768 blocks none within 0.4 s
        const std::string big = (work / "big.json").string();
        spit(big, R"({"model": {"preset": "gpt3-175b", "num_layers": 768}, "cluster": "megatron-a100-3072", "training": {"global_batch_size": 1536}})");
        Result r = run({bin, "plan", big, "--time-limit", "0.001"});
        if (r.rc != 3 || r.err.find("the search stopped (time limit)") == std::string::npos || r.err.find("(raise --time-limit)") == std::string::npos ||
            r.err.find("--memory-cap") != std::string::npos)
            fail("plan: no plan within the time limit", "expected exit 3 and '(raise --time-limit)' without --memory-cap", r);
    }
    {  // precision and FSDP left to the search: the plan says which it trains with, and estimate of
       // the --json plan (which carries them) gives the same time
        const std::string h100 = (work / "h100.json").string();
        spit(h100, R"({"model": "gpt3-1.7b", "training": {"global_batch_size": 64}, "cluster": {"name": "16 H100", "groups": [{"device": "h100-sxm5-80gb", "nodes": 2, "gpus_per_node": 8, "inter_node_bw_GBps": 50}]}})");
        Result r = run({bin, "plan", h100, "--top", "2", "--precision", "bf16,fp8", "--fsdp", "any"});
        if (r.rc != 0 || r.out.find(", fp8 (training.precision bf16)") == std::string::npos || r.out.find("training choices searched: fp8 without FSDP, bf16 without FSDP, fp8 with FSDP, bf16 with FSDP") == std::string::npos)
            fail("plan --precision --fsdp any", "expected the plan line to name fp8 and the note to list the four choices", r);
        Result j = run({bin, "plan", h100, "--top", "1", "--precision", "bf16,fp8", "--json"});
        if (j.rc == 0) {
            const auto out = Json::parse(j.out);
            spit((work / "choice.plan.json").string(), out["plans"][0]["plan"].dump());
            Result e = run({bin, "estimate", h100, "--plan", (work / "choice.plan.json").string(), "--json"});
            if (e.rc != 0 || Json::parse(e.out)["iteration_time_s"] != out["plans"][0]["iteration_time_s"] || out["plans"][0]["plan"]["precision"] != "fp8")
                fail("estimate of a plan with its precision", "expected the search's time and precision fp8", e);
        } else {
            fail("plan --precision --json", "expected exit 0", j);
        }
        // a precision the GPUs cannot run is refused where fixed, not where --precision chooses
        const std::string mx = (work / "h100-mxfp8.json").string();
        spit(mx, R"({"model": "gpt3-1.7b", "training": {"global_batch_size": 64, "precision": "mxfp8"}, "cluster": {"name": "16 H100", "groups": [{"device": "h100-sxm5-80gb", "nodes": 2, "gpus_per_node": 8, "inter_node_bw_GBps": 50}]}})");
        Result fixed = run({bin, "plan", mx, "--top", "1"});
        if (fixed.rc != 2 || fixed.err.find("scenario.training.precision: \"mxfp8\" cannot run on cluster.groups[0] (h100-sxm5-80gb)") == std::string::npos)
            fail("plan: a fixed precision a GPU cannot run", "expected exit 2 naming scenario.training.precision", fixed);
        Result chosen = run({bin, "plan", mx, "--top", "1", "--precision", "any"});
        if (chosen.rc != 0 || chosen.out.find("training.precision \"mxfp8\" cannot run on cluster.groups[0] (h100-sxm5-80gb)") == std::string::npos ||
            chosen.out.find("so no plan trains in it") == std::string::npos)
            fail("plan --precision any beside a training.precision the GPUs cannot run", "expected exit 0 and the note", chosen);
    }
    {  // "--option=value" reads as "--option value"
        Result eq = run({bin, "estimate", s, "--plan=" + p, "--json"}), sp = run({bin, "estimate", s, "--plan", p, "--json"});
        if (eq.rc != 0 || eq.out != sp.out) fail("estimate --plan=FILE", "expected the output of --plan FILE", eq);
    }
    Result help = run({bin, "estimate", "--help"});
    if (help.rc != 0 || help.out.find("usage") == std::string::npos) fail("estimate --help", "expected usage and exit 0", help);
    // calibrate: a good run, its output accepted by estimate, and its refusals.
    const std::string runs = (work / "runs.json").string(), bad_runs = (work / "bad-runs.json").string(), out = (work / "calibrated.json").string();
    spit(runs, R"({"runs":[{"name":"measured","plan":)" + pl + R"(,"iteration_time_s":0.5,"peak_memory_GiB":12}]})");
    spit(bad_runs, R"({"runs":[{"plan":)" + pl + R"(,"iteration_time_s":0}]})");
    Result cal = run({bin, "calibrate", s, "--runs", runs, "--out", out, "--json"});
    if (cal.rc != 0 || cal.out.find("rms_log_error_after") == std::string::npos) fail("calibrate", "expected exit 0 and the JSON report", cal);
    Result cal_est = run({bin, "estimate", out, "--plan", p});
    if (cal_est.rc != 0) fail("estimate of the calibrated scenario", "expected exit 0", cal_est);
    Result cal_text = run({bin, "calibrate", "-", "--runs", runs, "--out", out}, s);
    if (cal_text.rc != 0 || cal_text.out.find("wrote " + out) == std::string::npos) fail("calibrate (text, scenario from stdin)", "expected exit 0 and the table", cal_text);
    const std::vector<Case> calibrate_cases = {
        {"calibrate without --out", {bin, "calibrate", s, "--runs", runs}, "/dev/null", "", "needs SCENARIO.json, --runs RUNS.json and --out"},
        {"calibrate --runs twice", {bin, "calibrate", s, "--runs", runs, "--runs", runs, "--out", out}, "/dev/null", "", "--runs given twice"},
        {"calibrate --json twice", {bin, "calibrate", s, "--runs", runs, "--out", out, "--json", "--json"}, "/dev/null", "", "--json given twice"},
        {"calibrate --out to standard output", {bin, "calibrate", s, "--runs", runs, "--out", "-"}, "/dev/null", "", "--out needs a file name"},
        {"calibrate unknown option", {bin, "calibrate", s, "--runs", runs, "--out", out, "--fit"}, "/dev/null", "", "unknown option"},
        {"calibrate runs is a directory", {bin, "calibrate", s, "--runs", work.string(), "--out", out}, "/dev/null", "runs", "is a directory"},
        {"calibrate a bad time", {bin, "calibrate", s, "--runs", bad_runs, "--out", out}, "/dev/null", "runs.runs[0].iteration_time_s", "out of range"},
        {"calibrate into a directory", {bin, "calibrate", s, "--runs", runs, "--out", work.string()}, "/dev/null", "out", "cannot write file"},
        {"calibrate over its runs", {bin, "calibrate", s, "--runs", runs, "--out", runs}, "/dev/null", "", "is the runs file"},
        {"calibrate over its scenario", {bin, "calibrate", s, "--runs", runs, "--out", (work / "." / fs::path(s).filename()).string()}, "/dev/null", "", "is the scenario"},
    };
    for (const auto& c : calibrate_cases) check_refusal(c.name, run(c.argv, c.stdin_path), c.path_sub, c.msg_sub);
    std::cout << cases.size() + calibrate_cases.size() + 7 << " file and argument cases, " << failures << " failures\n";
    return failures ? 1 : 0;
}

int golden(const std::string& bin, const fs::path& dir) {
    const bool update = std::getenv("UPDATE_GOLDEN") && std::string(std::getenv("UPDATE_GOLDEN")) == "1";
    int n = 0;
    std::vector<fs::path> scenarios;
    for (const auto& e : fs::directory_iterator(dir)) {
        const std::string f = e.path().filename().string();
        if (f.size() > 14 && f.substr(f.size() - 14) == ".scenario.json") scenarios.push_back(e.path());
    }
    std::sort(scenarios.begin(), scenarios.end());
    for (const auto& sp : scenarios) {
        const std::string f = sp.filename().string();
        const std::string name = f.substr(0, f.size() - 14);
        const fs::path pp = dir / (name + ".plan.json");
        for (bool json : {false, true}) {
            const fs::path expected = dir / (name + (json ? ".json" : ".txt"));
            std::vector<std::string> argv = {bin, "estimate", sp.string(), "--plan", pp.string()};
            if (json) argv.push_back("--json");
            Result r = run(argv);
            if (r.rc != 0) {
                fail(name, "estimate failed", r);
                continue;
            }
            ++n;
            if (update) {
                spit(expected, r.out);
                std::cout << "wrote " << expected.string() << "\n";
            } else if (!fs::exists(expected)) {
                fail(name, expected.string() + " is missing; run with UPDATE_GOLDEN=1 to create it", r);
            } else if (slurp(expected) != r.out) {
                ++failures;
                spit(g_tmp / (name + (json ? ".json" : ".txt")), r.out);
                std::cerr << "FAIL golden " << expected.string() << " differs from the output (saved to " << (g_tmp / (name + (json ? ".json" : ".txt"))).string()
                          << "). If the cost model changed on purpose, regenerate: UPDATE_GOLDEN=1 ctest -R cli_golden (docs/robustness.md)\n";
            }
        }
    }
    if (n == 0) {
        std::cerr << "no golden pairs found in " << dir.string() << "\n";
        return 1;
    }
    std::cout << n << " golden outputs " << (update ? "written" : "compared") << ", " << failures << " failures\n";
    return failures ? 1 : 0;
}

}  // namespace

int main(int argc, char** argv) {
    if (argc != 4) {
        std::cerr << "usage: cli_driver hostile|files|golden POSEIDON ARG\n";
        return 2;
    }
    const std::string mode = argv[1], bin = fs::absolute(argv[2]).string();
    char tmpl[] = "/tmp/poseidon-cli-XXXXXX";
    if (!mkdtemp(tmpl)) return 2;
    g_tmp = tmpl;
    int rc = 2;
    if (mode == "hostile") rc = hostile(bin, argv[3]);
    else if (mode == "files") rc = files(bin, fs::path(argv[3]));
    else if (mode == "golden") rc = golden(bin, fs::path(argv[3]));
    std::error_code ec;
    if (rc == 0) fs::remove_all(g_tmp, ec);
    if (mode == "files") fs::remove_all(argv[3], ec);
    return rc;
}
