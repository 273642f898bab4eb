#include "bridge_runs.hpp"

#include <fstream>
#include <map>
#include <sstream>
#include <stdexcept>

#include "poseidon/estimate.hpp"
#include "poseidon/json_util.hpp"
#include "poseidon/presets.hpp"
#include "poseidon/scenario.hpp"

namespace poseidon::validation {

Json read_bridge_data() {
    const std::string path = std::string(POSEIDON_VALIDATION_DATA_DIR) + "/megatron_bridge_perf.json";
    std::ifstream in(path, std::ios::binary);
    if (!in) throw std::runtime_error("cannot read " + path);
    std::stringstream ss;
    ss << in.rdbuf();
    return parse_json(ss.str(), path);
}

const std::map<std::string, System> bridge_systems = {
    {"DGX-H100", {"h100-sxm5-80gb", 8, 0, 400, "H100"}},  {"DGX-B200", {"b200-180gb", 8, 0, 400, "B200"}},
    {"DGX-B300", {"b300-288gb", 8, 0, 800, "B300"}},      {"DGX-GB200", {"gb200-186gb", 4, 72, 200, "GB200"}},
    {"DGX-GB300", {"gb300-288gb", 4, 72, 400, "GB300"}}};
namespace {

const std::map<std::string, std::pair<const char*, const char*>> models = {
    {"LLAMA3_8B", {"llama3-8b", "Llama 3 8B"}}, {"LLAMA3_70B", {"llama3-70b", "Llama 3 70B"}}, {"LLAMA3.1_405B", {"llama3-405b", "Llama 3.1 405B"}}};

// The published precision names: FP8-CS and FP8 are per-tensor current scaling (Megatron-Core's
// tensorwise recipe), FP8-MX / MXFP8 the MX recipe.
}  // namespace

std::string bridge_precision(const std::string& p) {
    if (p.rfind("FP8-CS", 0) == 0 || p == "FP8") return "fp8";
    if (p == "FP8-MX" || p == "MXFP8") return "mxfp8";
    if (p == "NVFP4") return "nvfp4";
    if (p == "BF16") return "bf16";
    throw std::runtime_error("unknown precision " + p);
}

int bridge_int_or(const Json& j, const char* key, int fallback) { return j.contains(key) && j[key].is_number() ? j[key].get<int>() : fallback; }

int bridge_schedule(const Json& row, Plan& plan) {
    const int tp = row["tp"], pp = row["pp"], cp = bridge_int_or(row, "cp", 1), vp = std::max(1, bridge_int_or(row, "vp", 1));
    const int dp = row["gpus"].get<int>() / (tp * pp * cp);
    plan.micro_batch_size = row["mbs"].get<std::int64_t>() * dp;
    plan.num_micro_batches = row["gbs"].get<std::int64_t>() / plan.micro_batch_size;
    plan.schedule = vp > 1 ? "interleaved-1f1b" : "1f1b";
    plan.virtual_stages = vp;
    return dp;
}

Json bridge_cluster(const Json& row) {
    const System& sys = bridge_systems.at(row["system"].get<std::string>());
    const int nodes = row["gpus"].get<int>() / sys.gpus_per_node;
    Json group = {{"device", sys.device}, {"nodes", nodes}, {"gpus_per_node", sys.gpus_per_node}, {"inter_node_bw_GBps", sys.nic_GBps_per_node}};
    if (sys.nvlink_domain_gpus > 0) group["nvlink_domain_gpus"] = sys.nvlink_domain_gpus;
    return {{"name", row["system"]}, {"groups", Json::array({group})}};
}

std::vector<BridgeRun> bridge_dense_runs() {
    const Json data = read_bridge_data();
    std::vector<BridgeRun> out;
    for (const Json& r : data["rows"]) {
        const std::string model_key = r["model"].get<std::string>();
        if (!models.count(model_key) || !r["precision"].is_string()) continue;
        const System& sys = bridge_systems.at(r["system"].get<std::string>());
        const auto [model_id, model_name] = models.at(model_key);
        const int gpus = r["gpus"], tp = r["tp"], pp = r["pp"], cp = bridge_int_or(r, "cp", 1), vp = std::max(1, bridge_int_or(r, "vp", 1));
        const int mbs = r["mbs"], seq = r["seq_length"], fsdp = bridge_int_or(r, "fsdp", 0);
        const std::int64_t gbs = r["gbs"].get<std::int64_t>();
        const std::string precision = bridge_precision(r["precision"].get<std::string>());
        BridgeRun run;
        run.measured_tokens_per_s_per_gpu = r["tokens_per_s_per_gpu"].get<double>();
        run.name = r["release"].get<std::string>() + " " + sys.label + " " + model_name + " " + r["precision"].get<std::string>() + ", TP" + std::to_string(tp) +
                   " PP" + std::to_string(pp) + (cp > 1 ? " CP" + std::to_string(cp) : "") + (vp > 1 ? " VP" + std::to_string(vp) : "") +
                   (fsdp > 0 ? " FSDP" : "") + " (" + std::to_string(gpus) + " GPUs)";
        const Json& model_preset = *find_preset("models", model_id);
        const int layers = model_preset["num_layers"];
        if (layers % (pp * vp) != 0 && (vp == 1 || (layers + 2) % (pp * vp) != 0))
            run.excluded = std::to_string(layers) + " blocks on " + std::to_string(pp * vp) + " chunks need a pipeline layout other than Megatron-Bridge's, not modelled";
        if (!run.excluded.empty()) {
            out.push_back(std::move(run));
            continue;
        }
        // Megatron-Bridge's performance recipes (_benchmark_common and the Llama recipes): the
        // distributed optimizer with both overlaps, gradients reduced in bf16, sequence
        // parallelism with TP, TE userbuffers on H100, low-precision parameter all-gather.
        Json model = model_preset;
        model["seq_length"] = seq;
        model.erase("id");
        Json training = {{"global_batch_size", gbs},        {"precision", precision},       {"recompute", "none"},
                         {"sequence_parallel", tp > 1},      {"distributed_optimizer", true}, {"overlap_grad_reduce", true},
                         {"overlap_param_gather", true},     {"tp_comm_overlap", tp > 1},     {"grad_reduce_dtype", "bf16"},
                         {"fp8_param_gather", precision != "bf16"}, {"fsdp", fsdp > 0}};
        const Json scenario = {{"model", model}, {"cluster", bridge_cluster(r)}, {"training", training}};
        run.scenario = parse_scenario(scenario);
        const int dp = bridge_schedule(r, run.plan);
        // Blocks that do not split into the pp x vp chunks (Llama 3.1 405B: 126) are split as
        // Megatron-Bridge's recipes do, with --account-for-embedding-in-pipeline-split and
        // --account-for-loss-in-pipeline-split: the embedding and the loss count as one block each,
        // the 128 units split evenly, so the first chunk holds one block less, the last one too.
        const bool account = layers % (pp * vp) != 0;
        const int units = (layers + (account ? 2 : 0)) / (pp * vp);
        for (int s = 0; s < pp; ++s) {
            StagePlan st;
            st.num_layers = layers / pp;
            st.cp = cp;
            if (account) {
                st.chunk_layers.assign(vp, units);
                if (s == 0) --st.chunk_layers[0];
                if (s == pp - 1) --st.chunk_layers[vp - 1];
                st.num_layers = 0;
                for (int b : st.chunk_layers) st.num_layers += b;
            }
            st.replicas.push_back({0, tp, dp, mbs});
            run.plan.stages.push_back(st);
        }
        recompute_to_fit(run);
        out.push_back(std::move(run));
    }
    return out;
}

Table bridge_dense_table(const std::vector<BridgeRun>& runs, std::vector<bool>* fit) {
    return bridge_table(runs, fit, "Megatron-Bridge dense Llama 3 runs (tokens/s per GPU)");
}

Table bridge_table(const std::vector<BridgeRun>& runs, std::vector<bool>* fit, const std::string& title) {
    Table t;
    t.title = title;
    t.source = "NVIDIA Megatron-Bridge performance summary, releases 25.11 and 26.02 (tests/validation/data/megatron_bridge_perf.json)";
    t.unit = "tokens/s";
    for (const auto& run : runs) {
        if (!run.excluded.empty()) continue;
        const Estimate e = estimate(run.scenario, run.plan, false);
        t.cases.push_back({run.name, run.config, run.measured_tokens_per_s_per_gpu, e.tokens_per_s / e.num_gpus});
        if (fit) fit->push_back(e.feasible);
    }
    return t;
}

void recompute_to_fit(BridgeRun& run) {
    if (estimate(run.scenario, run.plan, false).memory_fits) return;
    int most = 0;
    for (const StagePlan& st : run.plan.stages) most = std::max(most, st.num_layers);
    Scenario sc = run.scenario;
    sc.training.recompute = Recompute::full;
    auto fits = [&](int n) {
        sc.training.recompute_num_layers = n;
        return estimate(sc, run.plan, false).memory_fits;
    };
    if (!fits(most)) return;  // not even with every block: left as published (it does not fit)
    int lo = 0, hi = most;    // fits(hi), !fits(lo) (0: as published)
    while (hi - lo > 1) {
        const int mid = (lo + hi) / 2;
        (fits(mid) ? hi : lo) = mid;
    }
    sc.training.recompute_num_layers = hi;
    run.scenario = sc;
    run.config = "recompute " + std::to_string(hi) + " of " + std::to_string(most) + " blocks (fewest that fit)";
}

std::string bridge_excluded_markdown(const std::vector<BridgeRun>& runs) {
    std::string s;
    for (const auto& run : runs)
        if (!run.excluded.empty()) s += "- " + run.name + ": " + run.excluded + "\n";
    return s;
}

}  // namespace poseidon::validation
