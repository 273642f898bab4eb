// The model keys beyond the dense transformer (docs/formats.md, "model"): attention shape,
// multi-latent attention, sliding windows, mixture of experts, multi-token prediction.
#pragma once

#include "poseidon/json_util.hpp"
#include "poseidon/types.hpp"

namespace poseidon {

// Every key of parse_model_variants, for parse_model's reject_unknown.
inline constexpr std::string_view model_variant_keys[] = {
    "head_dim", "attention", "q_lora_rank", "kv_lora_rank", "qk_nope_head_dim", "qk_rope_head_dim", "v_head_dim",
    "sliding_window", "sliding_window_pattern", "num_experts", "moe_top_k", "moe_ffn_hidden_size", "num_shared_experts",
    "moe_shared_expert_ffn_hidden_size", "moe_layer_freq", "first_dense_layers", "mtp_layers"};

// Reads those keys into m (whose num_layers, hidden_size, heads and ffn_hidden_size are read
// already); every problem names its JSON path.
void parse_model_variants(ObjectReader& r, ModelSpec& m, Problems& problems);
// Writes them back where they differ from a dense model (scenario_json.cpp, to_json(ModelSpec)).
void model_variants_to_json(const ModelSpec& m, Json& j);

}  // namespace poseidon
