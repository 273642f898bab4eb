// MoE, MLA, sliding-window and MTP models: their keys, hand-computed parameter and FLOP counts of
// tiny models, the frontier presets against frontier-facts.md section 1, and the interim cost rule.
#include <catch2/catch.hpp>

#include "poseidon/cost_model.hpp"
#include "poseidon/estimate.hpp"
#include "poseidon/json_util.hpp"
#include "poseidon/model_size.hpp"
#include "poseidon/scenario.hpp"
#include "problems_of.hpp"

using namespace poseidon;
using poseidon::testing::problems_of;

namespace {
ModelSpec parse(const Json& j) {
    Problems p;
    auto m = parse_model(j, "model", p);
    p.throw_if_any();
    return m;
}
// 3 blocks (block 0 dense), MLA, 4 experts top 2 + 1 shared, one MTP module.
Json tiny_moe_mla() {
    return parse_json(R"({"name": "tiny-moe", "num_layers": 3, "hidden_size": 16, "num_attention_heads": 4, "ffn_hidden_size": 64,
        "vocab_size": 100, "seq_length": 32, "gated_mlp": true, "bias": false, "position_embedding": "rope",
        "attention": "mla", "q_lora_rank": 8, "kv_lora_rank": 4, "qk_nope_head_dim": 4, "qk_rope_head_dim": 2, "v_head_dim": 4,
        "num_experts": 4, "moe_top_k": 2, "moe_ffn_hidden_size": 8, "num_shared_experts": 1, "first_dense_layers": 1, "mtp_layers": 1})", "test");
}
}  // namespace

TEST_CASE("a tiny MoE + MLA model's parameters, counted by hand", "[model][moe][params]") {
    const ModelSpec m = parse(tiny_moe_mla());
    // MLA matrices: q 16x8 + 8x(4x6) = 320, kv 16x(4+2) + 4x(4x8) = 224, out 4x4x16 = 256: 800;
    // vectors: the latents' norms 8 + 4 and the block's two RMSNorms 2 x 16: 44.
    // Dense MLP 3 x 16 x 64 = 3072. An expert 3 x 16 x 8 = 384: routed 4 x 384, shared 384, router
    // 16 x 4 = 64: 1984 held, 2 x 384 + 384 + 64 = 1216 active.
    CHECK(block_param_counts(m, 0).total == 844 + 3072);
    CHECK(block_param_counts(m, 0).active == 844 + 3072);
    CHECK(block_param_counts(m, 1).total == 844 + 1984);
    CHECK(block_param_counts(m, 2).active == 844 + 1216);
    // MTP: an MoE block + the 2h x h projection 512 + three norms 48.
    CHECK(block_param_counts(m, 3).total == 844 + 1984 + 560);
    CHECK(block_param_counts(m, 3).active == 844 + 1216 + 560);
    // + embedding 1600, final norm 16, head 1600
    const ParamCounts c = model_param_counts(m);
    CHECK(c.total == 3916 + 2 * 2828 + 3388 + 3216);
    CHECK(c.active == 3916 + 2 * 2060 + 2620 + 3216);
    CHECK(model_params(m) == c.total);
    // the average block is the blocks' (the MTP module sits on the last stage, memory_model.cpp)
    CHECK(layer_params(m) == Approx((3916 + 2 * 2828) / 3.0));
}

TEST_CASE("a tiny MoE + MLA model's forward FLOPs count the active experts", "[model][moe][flops]") {
    const ModelSpec m = parse(tiny_moe_mla());
    // T = 32 tokens; attention scores in full: 2 s^2 a (d_qk + d_v) = 2 x 32^2 x 4 x (6 + 4) = 81920.
    const double core = 81920;
    CHECK(block_forward_flops(m, 0, 1) == 2 * 32 * (800 + 3072) + core);
    CHECK(block_forward_flops(m, 1, 1) == 2 * 32 * (800 + 1216) + core);
    // MTP: its block, the projection 2h x h and one more pass through the head h x V
    CHECK(block_forward_flops(m, 3, 1) == 2 * 32 * (800 + 1216) + core + 2 * 32 * (512 + 1600));
    const double blocks = 2 * 32 * (800 + 3072) + 2 * (2 * 32 * (800 + 1216)) + 4 * core + 2 * 32 * (800 + 1216 + 512 + 1600);
    CHECK(model_flops_per_iteration(m, 1) == Approx(3 * (blocks + 2 * 32 * 16 * 100)).epsilon(1e-12));
}

TEST_CASE("sliding-window blocks count the window instead of the sequence", "[model][window][flops]") {
    // head_dim 8 where h / a = 4: Q is 32 wide, K and V 16 each
    const ModelSpec m = parse(parse_json(R"({"name": "w", "num_layers": 2, "hidden_size": 16, "num_attention_heads": 4, "num_kv_heads": 2,
        "head_dim": 8, "ffn_hidden_size": 32, "vocab_size": 100, "seq_length": 32, "bias": false, "position_embedding": "rope",
        "sliding_window": 8, "sliding_window_pattern": 2})", "test"));
    // attention 16 x (32 + 2 x 16) + 32 x 16 = 1536, MLP 2 x 16 x 32 = 1024, norms 32
    CHECK(block_param_counts(m, 0).total == 1536 + 1024 + 32);
    // block 0 windowed: 2 s w a (8 + 8) = 32768; block 1 full: 2 s^2 a 16 = 131072
    CHECK(block_forward_flops(m, 0, 1) == 2 * 32 * (1536 + 1024) + 32768);
    CHECK(block_forward_flops(m, 1, 1) == 2 * 32 * (1536 + 1024) + 131072);
    // the kernels' causal pairs: s w - w^2 / 2 = 224 and s^2 / 2 = 512, x 2 a 16
    CHECK(average_block(m, 1).core_causal_flops == (2 * 224 * 64 + 2 * 512 * 64) / 2.0);
}

TEST_CASE("the MoE presets match frontier-facts.md's derived totals within 1 %", "[model][moe][presets]") {
    struct Row {
        const char* id;
        // frontier-facts.md section 1b, "Derived total / active (incl. emb + head)"; gpt-oss-20b's
        // 3.61 B is by OpenAI's rule (the head, not the embedding): + V h for both
        double total_B, active_B;
    };
    const Row rows[] = {{"deepseek-v3", 671.0, 37.6}, {"kimi-k2", 1026, 32.9},     {"qwen3-235b-a22b", 235.1, 22.2}, {"qwen3-30b-a3b", 30.5, 3.35},
                        {"gpt-oss-120b", 116.8, 5.71}, {"gpt-oss-20b", 20.9, 3.61 + 201088 * 2880 / 1e9}, {"mixtral-8x7b", 46.7, 12.9},     {"mixtral-8x22b", 140.6, 39.2},
                        {"llama4-scout", 107.8, 17.2}, {"llama4-maverick", 400.7, 17.2}};
    for (const Row& r : rows) {
        INFO(r.id);
        // the derived figures are without MTP (DeepSeek-V3's module is listed apart: +11.6 B)
        const ModelSpec m = parse(Json{{"preset", r.id}, {"mtp_layers", 0}});
        const ParamCounts c = model_param_counts(m);
        CHECK(c.total / 1e9 == Approx(r.total_B).epsilon(0.01));
        CHECK(c.active / 1e9 == Approx(r.active_B).epsilon(0.01));
    }
    const ParamCounts with_mtp = model_param_counts(parse(Json("deepseek-v3")));
    const ParamCounts without = model_param_counts(parse(Json{{"preset", "deepseek-v3"}, {"mtp_layers", 0}}));
    CHECK((with_mtp.total - without.total) / 1e9 == Approx(11.6).epsilon(0.01));
}

TEST_CASE("a preset with overrides: {\"preset\": id, ...}", "[model][scenario]") {
    const ModelSpec m = parse(parse_json(R"({"preset": "deepseek-v3", "seq_length": 8192, "mtp_layers": 0})", "test"));
    CHECK(m.seq_length == 8192);
    CHECK(m.mtp_layers == 0);
    CHECK(m.num_experts == 256);
    CHECK(m.id.empty());  // no longer the preset
    CHECK(parse(parse_json(R"({"base": "llama3-8b", "seq_length": 4096})", "test")).seq_length == 4096);
    CHECK(problems_of([] { parse(parse_json(R"({"preset": "deepseek-v3", "base": "llama3-8b"})", "test")); }) ==
          R"(model.preset: "deepseek-v3" beside base "llama3-8b"; expected one of the two (they mean the same))");
    CHECK(problems_of([] { parse(parse_json(R"({"preset": "deepseek-v4"})", "test")); }).rfind("model.preset: \"deepseek-v4\" is not a model preset (did you mean \"deepseek-v3\"?)", 0) == 0);
    // the shared expert dropped: a count of 0 over the preset's size is refused (it was ignored:
    // the preset's size kept one shared expert), and null removes the size
    CHECK(problems_of([] { parse(parse_json(R"({"preset": "deepseek-v3", "num_shared_experts": 0})", "test")); })
              .rfind("model.moe_shared_expert_ffn_hidden_size: 2048 beside num_shared_experts 0", 0) == 0);
    const ModelSpec full = parse(parse_json(R"({"preset": "deepseek-v3", "mtp_layers": 0})", "test"));
    const ModelSpec bare = parse(parse_json(R"({"preset": "deepseek-v3", "mtp_layers": 0, "num_shared_experts": 0, "moe_shared_expert_ffn_hidden_size": null})", "test"));
    CHECK(bare.num_shared_experts == 0);
    CHECK(bare.moe_shared_expert_ffn_hidden_size == 0);
    // 58 MoE blocks lose a SwiGLU expert of 2048: 3 x 7168 x 2048 parameters each
    CHECK(model_params(full) - model_params(bare) == Approx(58.0 * 3 * 7168 * 2048).epsilon(1e-12));
    // null removes any key of the preset: its default applies
    CHECK(parse(parse_json(R"({"preset": "qwen3-30b-a3b", "head_dim": null})", "test")).head_dim == 0);
}

TEST_CASE("bad MoE, MLA and window keys are named with what is allowed", "[model][moe][errors]") {
    auto problems = [](const char* extra) {
        std::string text = std::string(R"({"name": "m", "num_layers": 4, "hidden_size": 64, "num_attention_heads": 4, "vocab_size": 10, "seq_length": 16)") + extra + "}";
        return problems_of([&] { parse(parse_json(text, "test")); });
    };
    CHECK(problems(R"(, "num_experts": 8, "moe_top_k": 9)") == "model.moe_top_k: 9 is out of range; expected an integer in [1, 8]");
    CHECK(problems(R"(, "moe_top_k": 2)") == "model.moe_top_k: 2 needs num_experts >= 1 (a mixture-of-experts model)");
    const std::string freq = problems(R"(, "num_experts": 8, "moe_top_k": 2, "moe_layer_freq": [1, 0])");
    CHECK(freq.rfind("model.moe_layer_freq: ", 0) == 0);
    CHECK(freq == "model.moe_layer_freq: an array of 2 flags for 4 blocks; expected one flag per block (num_layers 4), or an int N >= 1 (blocks 0, N, "
                  "2N, ... are MoE, as Megatron-Core's --moe-layer-freq)");
    CHECK(problems(R"(, "num_experts": 8, "moe_top_k": 2, "moe_layer_freq": "1")").find("; expected an int N from 1 to 10000 (blocks 0, N, 2N, ... are MoE, as Megatron-Core's --moe-layer-freq) or an array of 4 flags 0/1, one per block (num_layers 4)") != std::string::npos);
    // a shared expert's size beside an explicit count of 0 contradicts it (it was costed as one)
    CHECK(problems(R"(, "num_experts": 8, "moe_top_k": 2, "num_shared_experts": 0, "moe_shared_expert_ffn_hidden_size": 32)")
              .rfind("model.moe_shared_expert_ffn_hidden_size: 32 beside num_shared_experts 0 (no shared expert); expected no size without a shared expert", 0) == 0);
    CHECK(problems(R"(, "num_experts": 8, "moe_top_k": 2, "moe_layer_freq": [1, 0, 2, 0])").rfind("model.moe_layer_freq[2]: 2 is not 0 or 1", 0) == 0);
    CHECK(problems(R"(, "num_experts": 8, "moe_top_k": 2, "first_dense_layers": 4)") ==
          "model.num_experts: 8 experts, but moe_layer_freq and first_dense_layers leave no MoE block; expected at least one");
    CHECK(problems(R"(, "kv_lora_rank": 4)") == "model.kv_lora_rank: 4 needs attention \"mla\"");
    CHECK(problems(R"(, "attention": "mla", "kv_lora_rank": 4, "qk_nope_head_dim": 4, "qk_rope_head_dim": 2)").rfind("model.v_head_dim: is missing", 0) == 0);
    CHECK(problems(R"(, "sliding_window_pattern": 2)") == "model.sliding_window_pattern: 2 needs sliding_window (the window in tokens)");
    CHECK(problems(R"(, "moe_experts": 2)").rfind("model.moe_experts: unknown key", 0) == 0);
}

TEST_CASE("MoE scenarios round-trip through to_json", "[model][moe][scenario]") {
    const ModelSpec a = parse(Json("llama4-maverick"));
    const ModelSpec b = parse(to_json(a));
    CHECK(b.moe_blocks == a.moe_blocks);
    CHECK(model_param_counts(b).total == model_param_counts(a).total);
    const ModelSpec c = parse(to_json(parse(Json("gpt-oss-20b"))));
    CHECK(c.sliding_window_blocks.size() == 24);
    CHECK(block_forward_flops(c, 0, 1) == block_forward_flops(parse(Json("gpt-oss-20b")), 0, 1));
    CHECK(to_json(parse(Json("llama3-8b"))).contains("num_experts") == false);
}

TEST_CASE("the MTP module sits on the last stage: its block, parameters and head pass there, not spread", "[model][moe][mtp]") {
    // DeepSeek-V3 on two stages of 8 H100s: with its MTP module the first stage is unchanged and the
    // last one holds one more block's parameters (its 256 routed experts over ep 8), the embedding
    // copy, and runs one more block and head pass per micro-batch.
    const Scenario with = parse_scenario_text(R"({"model": {"preset": "deepseek-v3", "num_layers": 8, "first_dense_layers": 1},)"
                                              R"( "cluster": "dgx-h100-16", "training": {"global_batch_size": 8, "recompute": "full"}})");
    Scenario without = with;
    without.model.mtp_layers = 0;
    REQUIRE(with.model.mtp_layers == 1);
    const char* plan = R"({"micro_batch_size": 1, "num_micro_batches": 8, "stages": [{"group": 0, "num_layers": 4, "tp": 8, "dp": 1, "ep": 8},)"
                       R"( {"group": 0, "num_layers": 4, "tp": 8, "dp": 1, "ep": 8}]})";
    const Estimate a = estimate(with, parse_plan_text(plan, with)), b = estimate(without, parse_plan_text(plan, without));
    const ReplicaCost &a0 = a.stages[0].replica_costs[0], &b0 = b.stages[0].replica_costs[0];
    const ReplicaCost &a1 = a.stages[1].replica_costs[0], &b1 = b.stages[1].replica_costs[0];
    CHECK(a0.forward_s == Approx(b0.forward_s).epsilon(1e-12));
    CHECK(a0.params_per_gpu == Approx(b0.params_per_gpu).epsilon(1e-12));
    const double mtp_params = block_param_counts(with.model, with.model.num_layers).total;
    const double routed = mtp_module_routed_params(with.model);
    CHECK(routed == Approx(256.0 * 3 * 7168 * 2048));
    // the module's dense part over TP 8 but its two block norms (2h, replicated), its experts over
    // ep 8, and the embedding copy over TP 8
    const double extra = (mtp_params - routed - 2 * 7168) / 8 + 2 * 7168 + routed / 8 + 129280.0 * 7168 / 8;
    CHECK(a1.expert_params_per_gpu - b1.expert_params_per_gpu == Approx(routed / 8).epsilon(1e-9));
    CHECK(a1.params_per_gpu - b1.params_per_gpu == Approx(extra).epsilon(1e-6));
    // one more (average) block and a head pass: more than a quarter of a 4-block stage's forward
    CHECK(a1.forward_s > 1.25 * b1.forward_s);
    CHECK(a1.forward_s < 2.25 * b1.forward_s);
}

TEST_CASE("QK layer norm: read, written only where set, and costed as its traffic and its saved input", "[model][scenario]") {
    // Qwen3-30B-A3B (32 query and 4 KV heads of 128) on 16 H100s, one stage, a sample per replica
    const char* with_text = R"({"model": {"preset": "qwen3-30b-a3b"}, "cluster": "dgx-h100-16", "training": {"global_batch_size": 16}})";
    const char* without_text = R"({"model": {"preset": "qwen3-30b-a3b", "qk_layernorm": false}, "cluster": "dgx-h100-16", "training": {"global_batch_size": 16}})";
    const Scenario with = parse_scenario_text(with_text), without = parse_scenario_text(without_text);
    REQUIRE(with.model.qk_layernorm);
    REQUIRE_FALSE(without.model.qk_layernorm);
    CHECK(to_json(with.model)["qk_layernorm"] == true);
    CHECK_FALSE(to_json(without.model).contains("qk_layernorm"));
    CHECK(parse(to_json(with.model)).qk_layernorm);
    CHECK_FALSE(parse(Json("llama3-8b")).qk_layernorm);
    CHECK_THAT(testing::problems_of([] { parse_scenario_text(R"({"model": {"preset": "qwen3-30b-a3b", "qk_layernorm": 1}, "cluster": "dgx-h100-16", "training": {"global_batch_size": 16}})"); }),
               Catch::Matchers::StartsWith("scenario.model.qk_layernorm: "));
    const char* plan = R"({"micro_batch_size": 16, "num_micro_batches": 1, "stages": [{"group": 0, "num_layers": 48, "tp": 1, "dp": 16, "ep": 8}]})";
    const Estimate a = estimate(with, parse_plan_text(plan, with)), b = estimate(without, parse_plan_text(plan, without));
    // saved: the norms' input, (32 + 4) x 128 values of 2 B per token, 4096 tokens, 48 blocks
    CHECK(a.stages[0].replica_costs[0].memory.activations_GiB - b.stages[0].replica_costs[0].memory.activations_GiB == Approx(48.0 * 2 * 4096 * 36 * 128 / (1024.0 * 1024 * 1024)).epsilon(1e-9));
    // time: the queries and keys read and written once more (75.5 MB a block) at no more than the
    // HBM's 3.35 TB/s, and two kernels
    const double bytes = 4096.0 * 2 * 36 * 128 * 2;
    const double more = a.stages[0].replica_costs[0].forward_s - b.stages[0].replica_costs[0].forward_s;
    CHECK(more > 48 * bytes / 3.35e12);
    CHECK(more < 48 * (2 * bytes / 3.35e12 + 2 * 20e-6));
}
