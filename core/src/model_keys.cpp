// Reading the model keys beyond the dense transformer (docs/formats.md, "model"): attention
// shape, multi-latent attention, sliding windows, mixture of experts and multi-token prediction.
#include "model_keys.hpp"

#include <algorithm>

#include "poseidon/scenario.hpp"

namespace poseidon {

namespace {

// A per-block pattern: an int N (its meaning is the caller's `every`) or an array of 0/1, one per
// block. Empty when absent or bad (the problem is reported).
std::vector<char> block_flags(ObjectReader& r, const char* key, int num_layers, Problems& problems, const char* int_meaning,
                              bool (*every)(int block, std::int64_t n)) {
    const Json* v = r.get(key);
    if (!v) return {};
    const std::string allowed = std::string("; expected an int N from 1 to ") + std::to_string(max_num_layers) + " (" + int_meaning + ") or an array of " + std::to_string(num_layers) +
                                " flags 0/1, one per block (num_layers " + std::to_string(num_layers) + ")";
    std::vector<char> flags;
    if (v->is_number_integer()) {
        const std::int64_t n = v->get<std::int64_t>();
        if (n < 1 || n > max_num_layers) {
            problems.add(r.path_of(key), show(*v) + " is not allowed" + allowed);
            return {};
        }
        for (int i = 0; i < num_layers; ++i) flags.push_back(every(i, n) ? 1 : 0);
        return flags;
    }
    if (!v->is_array()) {
        problems.add(r.path_of(key), describe(*v) + allowed);
        return {};
    }
    if (static_cast<std::int64_t>(v->size()) != num_layers) {
        // the usual cause: num_layers overridden over a preset whose array was for its own depth
        problems.add(r.path_of(key), "an array of " + std::to_string(v->size()) + " flags for " + std::to_string(num_layers) +
                                         " blocks; expected one flag per block (num_layers " + std::to_string(num_layers) + "), or an int N >= 1 (" +
                                         int_meaning + ")");
        return {};
    }
    for (std::size_t i = 0; i < v->size(); ++i) {
        const Json& x = (*v)[i];
        if (!x.is_number_integer() || (x.get<std::int64_t>() != 0 && x.get<std::int64_t>() != 1)) {
            problems.add(r.path_of(key) + "[" + std::to_string(i) + "]", show(x) + " is not 0 or 1" + allowed);
            return {};
        }
        flags.push_back(static_cast<char>(x.get<std::int64_t>()));
    }
    return flags;
}

// Keys that mean something only beside another: named, so that a misplaced one is not ignored.
void require_with(ObjectReader& r, Problems& problems, std::initializer_list<const char*> keys, bool present, const std::string& needs) {
    if (present) return;
    for (const char* k : keys)
        if (r.has(k)) problems.add(r.path_of(k), show(*r.get(k)) + " needs " + needs);
}

}  // namespace

void parse_model_variants(ObjectReader& r, ModelSpec& m, Problems& problems) {
    const int L = m.num_layers;
    if (auto v = r.integer("head_dim", false, 1, max_model_dim)) m.head_dim = static_cast<int>(*v);

    // Multi-latent attention (DeepSeek-V2 arXiv 2405.04434, sec. 2.1; DeepSeek-V3 config.json).
    if (auto v = r.choice("attention", false, {"gqa", "mla"})) m.mla = (*v == "mla");
    require_with(r, problems, {"q_lora_rank", "kv_lora_rank", "qk_nope_head_dim", "qk_rope_head_dim", "v_head_dim"}, m.mla, "attention \"mla\"");
    if (m.mla) {
        if (auto v = r.integer("q_lora_rank", false, 0, max_model_dim)) m.q_lora_rank = static_cast<int>(*v);
        if (auto v = r.integer("kv_lora_rank", true, 1, max_model_dim)) m.kv_lora_rank = static_cast<int>(*v);
        if (auto v = r.integer("qk_nope_head_dim", true, 1, max_model_dim)) m.qk_nope_head_dim = static_cast<int>(*v);
        if (auto v = r.integer("qk_rope_head_dim", true, 0, max_model_dim)) m.qk_rope_head_dim = static_cast<int>(*v);
        if (auto v = r.integer("v_head_dim", true, 1, max_model_dim)) m.v_head_dim = static_cast<int>(*v);
        // a head_dim beside them (a preset of grouped-query attention switched to MLA) plays no
        // part: the MLA paths read their own widths (model_size.cpp, qk_head_dim); a note says so
    }

    // Sliding windows (Beltagy et al. 2020; GPT-OSS: every other block, window 128).
    if (auto v = r.integer("sliding_window", false, 1, max_seq_length)) m.sliding_window = static_cast<int>(*v);
    require_with(r, problems, {"sliding_window_pattern"}, m.sliding_window > 0, "sliding_window (the window in tokens)");
    if (m.sliding_window > 0 && L > 0)
        m.sliding_window_blocks = block_flags(r, "sliding_window_pattern", L, problems, "every Nth block has full attention, the others the window",
                                              [](int i, std::int64_t n) { return (i + 1) % n != 0; });

    // Mixture of experts (Shazeer et al. 2017; Fedus et al. 2022; Megatron-Core's --num-experts).
    if (auto v = r.integer("num_experts", false, 0, 1'000'000)) m.num_experts = static_cast<int>(*v);
    require_with(r, problems, {"moe_top_k", "moe_ffn_hidden_size", "num_shared_experts", "moe_shared_expert_ffn_hidden_size", "moe_layer_freq", "first_dense_layers"},
                 m.is_moe(), "num_experts >= 1 (a mixture-of-experts model)");
    if (m.is_moe()) {
        if (auto v = r.integer("moe_top_k", true, 1, m.num_experts)) m.moe_top_k = static_cast<int>(*v);
        m.moe_ffn_hidden_size = m.ffn_hidden_size;
        if (auto v = r.integer("moe_ffn_hidden_size", false, 1, 4 * max_model_dim)) m.moe_ffn_hidden_size = static_cast<int>(*v);
        if (auto v = r.integer("num_shared_experts", false, 0, 1'000)) m.num_shared_experts = static_cast<int>(*v);
        m.moe_shared_expert_ffn_hidden_size = m.num_shared_experts * m.moe_ffn_hidden_size;
        if (auto v = r.integer("moe_shared_expert_ffn_hidden_size", false, 1, 4 * max_model_dim)) {
            // a size alone means one shared expert (Qwen2-MoE's config names only the size); a size
            // beside an explicit count of 0 contradicts it: over a preset, the preset's size
            if (r.has("num_shared_experts") && m.num_shared_experts == 0) {
                problems.add(r.path_of("moe_shared_expert_ffn_hidden_size"),
                             std::to_string(*v) + " beside num_shared_experts 0 (no shared expert); expected no size without a shared expert: leave it out "
                                                  "(over a preset, \"moe_shared_expert_ffn_hidden_size\": null removes the preset's), or num_shared_experts >= 1");
            } else {
                m.moe_shared_expert_ffn_hidden_size = static_cast<int>(*v);
                if (m.num_shared_experts == 0) m.num_shared_experts = 1;
            }
        }
        if (L > 0) {
            m.moe_blocks = r.has("moe_layer_freq")
                               ? block_flags(r, "moe_layer_freq", L, problems, "blocks 0, N, 2N, ... are MoE, as Megatron-Core's --moe-layer-freq",
                                             [](int i, std::int64_t n) { return i % n == 0; })
                               : std::vector<char>(static_cast<std::size_t>(L), 1);
            if (auto v = r.integer("first_dense_layers", false, 0, L))
                for (int i = 0; i < *v && i < static_cast<int>(m.moe_blocks.size()); ++i) m.moe_blocks[static_cast<std::size_t>(i)] = 0;
            if (!m.moe_blocks.empty() && std::find(m.moe_blocks.begin(), m.moe_blocks.end(), 1) == m.moe_blocks.end())
                problems.add(r.path_of("num_experts"), std::to_string(m.num_experts) + " experts, but moe_layer_freq and first_dense_layers leave no MoE block; expected at least one");
        }
    }
    // Multi-token prediction (DeepSeek-V3 arXiv 2412.19437, sec. 2.2; Megatron-Core --mtp-num-layers).
    if (auto v = r.integer("mtp_layers", false, 0, 100)) m.mtp_layers = static_cast<int>(*v);
}

void model_variants_to_json(const ModelSpec& m, Json& j) {
    auto flags = [](const std::vector<char>& f) {
        Json a = Json::array();
        for (char c : f) a.push_back(static_cast<int>(c));
        return a;
    };
    if (m.head_dim > 0) j["head_dim"] = m.head_dim;
    if (m.mla) {
        j["attention"] = "mla";
        j["q_lora_rank"] = m.q_lora_rank;
        j["kv_lora_rank"] = m.kv_lora_rank;
        j["qk_nope_head_dim"] = m.qk_nope_head_dim;
        j["qk_rope_head_dim"] = m.qk_rope_head_dim;
        j["v_head_dim"] = m.v_head_dim;
    }
    if (m.sliding_window > 0) {
        j["sliding_window"] = m.sliding_window;
        if (!m.sliding_window_blocks.empty()) j["sliding_window_pattern"] = flags(m.sliding_window_blocks);
    }
    if (m.is_moe()) {
        j["num_experts"] = m.num_experts;
        j["moe_top_k"] = m.moe_top_k;
        j["moe_ffn_hidden_size"] = m.moe_ffn_hidden_size;
        j["num_shared_experts"] = m.num_shared_experts;
        if (m.num_shared_experts > 0) j["moe_shared_expert_ffn_hidden_size"] = m.moe_shared_expert_ffn_hidden_size;
        j["moe_layer_freq"] = flags(m.moe_blocks);
    }
    if (m.mtp_layers > 0) j["mtp_layers"] = m.mtp_layers;
}

}  // namespace poseidon
