// The MoE rows of NVIDIA's Megatron-Bridge performance summary (docs/validation.md,
// "Megatron-Bridge"): DeepSeek-V3, Qwen3 30B-A3B and 235B-A22B and GPT-OSS 120B with their
// published parallel settings, the recipes' dispatcher and optimizer (frontier-facts.md, section
// 6) and the default presets.
#include <algorithm>
#include <map>
#include <stdexcept>

#include "bridge_runs.hpp"
#include "poseidon/presets.hpp"
#include "poseidon/scenario.hpp"

namespace poseidon::validation {

namespace {

struct MoeModel {
    const char* preset;
    const char* label;
    int mtp_layers;  // -1: the preset's
};

// The table's model names; DeepSeek-V3's recipes train its MTP module unless the row says "w/o MTP".
const std::map<std::string, MoeModel> moe_models = {{"DeepSeekV3", {"deepseek-v3", "DeepSeek-V3", -1}},
                                                    {"DeepSeekV3 (w/o MTP)", {"deepseek-v3", "DeepSeek-V3 w/o MTP", 0}},
                                                    {"DeepSeekV3 (w/ MTP)", {"deepseek-v3", "DeepSeek-V3", -1}},
                                                    {"GPT OSS 120B", {"gpt-oss-120b", "GPT-OSS 120B", -1}},
                                                    {"Qwen3_30B_a3B", {"qwen3-30b-a3b", "Qwen3 30B-A3B", -1}},
                                                    {"Qwen3_235B_a22B", {"qwen3-235b-a22b", "Qwen3 235B-A22B", -1}}};

// The recipes' dispatcher (perf_recipes/<model>/<gpu>/*.py): DeepEP / HybridEP ("flex") for
// DeepSeek-V3 and Qwen3 30B-A3B everywhere, Qwen3 235B-A22B beyond H100 and GPT-OSS under MXFP8;
// the alltoall dispatcher otherwise.
std::string dispatcher_of(const std::string& preset, const std::string& system, const std::string& precision) {
    if (preset == "deepseek-v3" || preset == "qwen3-30b-a3b") return "flex";
    if (preset == "qwen3-235b-a22b") return system == "DGX-H100" ? "alltoall" : "flex";
    return precision == "mxfp8" ? "flex" : "alltoall";
}

// The recipes' selective recomputation (Megatron-Core --recompute-modules; frontier-facts.md
// section 6): DeepSeek-V3 mla_up_proj (GB200 BF16; H100 adds mlp), mlp alone under FP8 current
// scaling (GB200); GPT-OSS 120B layernorm and moe_act in BF16 (H100, GB200), none under MXFP8;
// Qwen3 none. Taken for every system of the table, as the recipes published for two of them.
Json recompute_modules_of(const std::string& preset, const std::string& precision) {
    if (preset == "deepseek-v3") return precision == "fp8" ? Json::array({"mlp"}) : Json::array({"mla_up_proj"});
    if (preset == "gpt-oss-120b" && precision == "bf16") return Json::array({"layernorm", "moe_act"});
    return nullptr;
}

// The recipes' EP A2A overlap across micro-batches (--overlap-moe-expert-parallel-comm with
// --delay-wgrad-compute; frontier-facts.md section 6): Qwen3 235B-A22B on H100 and GPT-OSS 120B in
// BF16 on GB200. Only the systems whose recipes are digested, and only where the row's plan can
// run it (one stage, or virtual stages: Megatron-Core's combined 1F1B). Not DeepSeek-V3 under
// MXFP8 on GB200: its recipe lists the overlap with the full-iteration CUDA graph, paged stash and
// capacity 1.5 that release 26.08 brought, after these rows (docs/validation.md).
bool ep_overlap_of(const std::string& preset, const std::string& system, const std::string& precision, int pp, int vp) {
    if (pp > 1 && vp < 2) return false;
    if (preset == "qwen3-235b-a22b") return system == "DGX-H100";
    if (preset == "gpt-oss-120b") return system == "DGX-GB200" && precision == "bf16";
    return false;
}

// Blocks to the pp x vp model chunks (virtual stage v = c pp + s) as evenly as they go: the
// remainder to the middle chunks, the first and last (which hold the embedding and the loss) last.
std::vector<int> chunk_sizes(int layers, int chunks) {
    std::vector<int> n(chunks, layers / chunks);
    std::vector<int> order;
    for (int v = 1; v + 1 < chunks; ++v) order.push_back(v);
    order.push_back(0);
    if (chunks > 1) order.push_back(chunks - 1);
    for (int k = 0; k < layers % chunks; ++k) ++n[order[k]];
    return n;
}

// DeepSeek-V3 with its MTP module on 16 model chunks: the recipe's layout
// `E+4t | 4t x14 | t+m+L` (frontier-facts.md section 6, deepseek/gb200/deepseek_v3.py for PP 4 x VP 4:
// four blocks with the embedding, fourteen chunks of four, the last block with the MTP module and
// the loss). Taken for every 16-chunk row (PP 16, PP 2 x VP 8) as the same 16 virtual stages; other
// chunk counts go evenly (chunk_sizes).
std::vector<int> recipe_chunks(const std::string& preset, int mtp_layers, int layers, int chunks) {
    if (preset == "deepseek-v3" && mtp_layers != 0 && chunks == 16 && layers == 61) {
        std::vector<int> n(16, 4);
        n[15] = 1;
        return n;
    }
    return chunk_sizes(layers, chunks);
}

}  // namespace

std::vector<BridgeRun> bridge_moe_runs() {
    const Json data = read_bridge_data();
    std::vector<BridgeRun> out;
    for (const Json& r : data["rows"]) {
        const std::string model_key = r["model"].get<std::string>();
        if (!moe_models.count(model_key) || !r["precision"].is_string()) continue;
        const std::string system = r["system"].get<std::string>();
        const System& sys = bridge_systems.at(system);
        const MoeModel& mm = moe_models.at(model_key);
        const int gpus = r["gpus"], tp = r["tp"], pp = r["pp"], cp = bridge_int_or(r, "cp", 1), vp = std::max(1, bridge_int_or(r, "vp", 1));
        const int ep = std::max(1, bridge_int_or(r, "ep", 1)), mbs = r["mbs"], seq = r["seq_length"];
        const std::int64_t gbs = r["gbs"].get<std::int64_t>();
        const std::string precision = bridge_precision(r["precision"].get<std::string>());
        BridgeRun run;
        run.measured_tokens_per_s_per_gpu = r["tokens_per_s_per_gpu"].get<double>();
        run.name = r["release"].get<std::string>() + " " + sys.label + " " + mm.label + " " + r["precision"].get<std::string>() + ", TP" + std::to_string(tp) + " PP" +
                   std::to_string(pp) + (cp > 1 ? " CP" + std::to_string(cp) : "") + (vp > 1 ? " VP" + std::to_string(vp) : "") + " EP" + std::to_string(ep) +
                   " MBS" + std::to_string(mbs) + " (" + std::to_string(gpus) + " GPUs)";
        Json model = {{"preset", mm.preset}, {"seq_length", seq}};
        if (mm.mtp_layers >= 0) model["mtp_layers"] = mm.mtp_layers;
        // _benchmark_common: the distributed optimizer with both overlaps, gradients reduced in
        // bf16, sequence parallelism with TP; DeepSeek-V3's recipes the precision-aware optimizer.
        const Json modules = recompute_modules_of(mm.preset, precision);
        Json training = {{"global_batch_size", gbs},
                         {"precision", precision},
                         {"recompute", modules.is_null() ? "none" : "selective"},
                         {"sequence_parallel", tp > 1},
                         {"distributed_optimizer", true},
                         {"overlap_grad_reduce", true},
                         {"overlap_param_gather", true},
                         {"grad_reduce_dtype", "bf16"},
                         {"fp8_param_gather", precision != "bf16"},
                         {"moe_token_dispatcher", dispatcher_of(mm.preset, system, precision)}};
        if (!modules.is_null()) training["recompute_modules"] = modules;
        if (ep_overlap_of(mm.preset, system, precision, pp, vp)) training["overlap_moe_expert_parallel_comm"] = true;
        if (std::string(mm.preset) == "deepseek-v3") training["stack"] = "megatron-core-precision-aware";
        const Json scenario = {{"model", model}, {"cluster", bridge_cluster(r)}, {"training", training}};
        run.scenario = parse_scenario(scenario);
        const int dp = bridge_schedule(r, run.plan);
        const int layers = run.scenario.model.num_layers;
        const std::vector<int> chunks = recipe_chunks(mm.preset, mm.mtp_layers, layers, pp * vp);
        const bool even = std::all_of(chunks.begin(), chunks.end(), [&](int n) { return n == chunks[0]; });
        for (int s = 0; s < pp; ++s) {
            StagePlan st;
            st.cp = cp;
            st.ep = ep;
            for (int c = 0; c < vp; ++c) {
                st.num_layers += chunks[c * pp + s];
                if (!even && vp > 1) st.chunk_layers.push_back(chunks[c * pp + s]);
            }
            st.replicas.push_back({0, tp, dp, mbs});
            run.plan.stages.push_back(st);
        }
        recompute_to_fit(run);
        out.push_back(std::move(run));
    }
    return out;
}

}  // namespace poseidon::validation
