// Selective recomputation of named modules (Megatron-Core --recompute-modules): what each module
// stops keeping, hand-computed per token; the default (core_attn) unchanged; the backward grows by
// the recomputed forward; the names read, checked and written back.
#include <catch2/catch.hpp>

#include "poseidon/cost_model.hpp"
#include "poseidon/expert_parallel.hpp"
#include "poseidon/estimate.hpp"
#include "poseidon/json_util.hpp"
#include "poseidon/scenario.hpp"
#include "problems_of.hpp"

using namespace poseidon;
using poseidon::testing::problems_of;

namespace {

constexpr double GiB_bytes = 1024.0 * 1024 * 1024;

Scenario scenario(const std::string& model, const std::string& training) {
    return parse_scenario_text(R"({"model": )" + model + R"(, "cluster": "dgx-h100-16", "training": {"global_batch_size": 16, "sequence_parallel": true,)" +
                               R"( "distributed_optimizer": true, "recompute": "selective")" + training + "}}");
}

// One stage of `layers` blocks on 16 H100s, TP 2 x DP 8, one sample per replica and micro-batch
// (one micro-batch in flight), `ep` for a MoE model.
Estimate one_stage(const Scenario& sc, int layers, int ep = 0) {
    const std::string plan = R"({"micro_batch_size": 8, "num_micro_batches": 2, "stages": [{"group": 0, "num_layers": )" + std::to_string(layers) +
                             R"(, "tp": 2, "dp": 8)" + (ep > 0 ? R"(, "ep": )" + std::to_string(ep) : std::string()) + "}]}";
    return estimate(sc, parse_plan_text(plan, sc), false);
}

// Bytes of activations the module list leaves out: every block's, but for the one block
// re-materialised at a time (one micro-batch in flight).
double saved_bytes(const Estimate& base, const Estimate& with) {
    return (base.stages[0].memory.activations_GiB - with.stages[0].memory.activations_GiB) * GiB_bytes;
}

}  // namespace

TEST_CASE("core_attn named alone is the default selective recompute, to the bit", "[recompute][modules]") {
    const Scenario a = scenario(R"("llama3-8b")", "");
    const Scenario b = scenario(R"("llama3-8b")", R"(, "recompute_modules": ["core_attn"])");
    const Estimate ea = one_stage(a, 32), eb = one_stage(b, 32);
    CHECK(ea.iteration_time_s == eb.iteration_time_s);
    CHECK(ea.stages[0].memory.total_GiB() == eb.stages[0].memory.total_GiB());
    CHECK_FALSE(to_json(b)["training"].contains("recompute_modules"));
}

TEST_CASE("mla_up_proj drops MLA's queries, keys and values, hand-computed", "[recompute][modules][mla]") {
    const std::string model = R"({"preset": "deepseek-v3", "num_layers": 8, "mtp_layers": 0})";
    const Estimate base = one_stage(scenario(model, ""), 8, 16);
    const Estimate up = one_stage(scenario(model, R"(, "recompute_modules": ["core_attn", "mla_up_proj"])"), 8, 16);
    // 4,096 tokens; per token 128 heads x (2 x 192 + 128) over TP 2, 2 bytes; 8 blocks less the one re-materialised
    const double per_block = 4096.0 * 128 * (2 * 192 + 128) / 2 * 2;
    CHECK(saved_bytes(base, up) == Approx(7 * per_block).epsilon(1e-9));
    // the backward runs the two up projections (and RoPE) again; the forward is unchanged
    CHECK(up.stages[0].times.forward_s == base.stages[0].times.forward_s);
    const double extra = up.stages[0].times.backward_s - base.stages[0].times.backward_s;
    // FLOPs per block: 2 x 4096 x (1536 x 128 x 192 + 512 x 128 x (128 + 128)) / TP 2 at H100's sustained bf16 rate
    const double flops = 2 * 4096.0 * (1536.0 * 128 * 192 + 512.0 * 128 * 256) / 2;
    CHECK(extra > 8 * flops / 989e12);         // never faster than the peak
    CHECK(extra < 8 * flops / 989e12 * 3.0);   // and a GEMM-bound pair, not more
}

TEST_CASE("moe_act drops the experts' activation output, layernorm the norms' outputs in bf16 only", "[recompute][modules][moe]") {
    const std::string model = R"("mixtral-8x7b")";
    const Estimate base = one_stage(scenario(model, ""), 32, 8);
    const Estimate act = one_stage(scenario(model, R"(, "recompute_modules": ["core_attn", "moe_act"])"), 32, 8);
    // every block is MoE: 4,096 tokens / TP 2 per GPU, top-2, one expert row of 14,336 in bf16 each
    const double act_block = 4096.0 / 2 * 2 * 14336 * 2;
    CHECK(saved_bytes(base, act) == Approx(31 * act_block).epsilon(1e-9));
    CHECK(act.stages[0].times.backward_s > base.stages[0].times.backward_s);
    // layernorm: the QKV and MLP inputs, 2 x 4096 bf16 per token, split over TP by sequence parallelism
    const Estimate norms = one_stage(scenario(model, R"(, "recompute_modules": ["core_attn", "layernorm"])"), 32, 8);
    CHECK(saved_bytes(base, norms) == Approx(31 * 4096.0 * 2 * 4096 * 2 / 2).epsilon(1e-9));
    // under FP8 the linear layers keep their own quantised copies: nothing to drop
    const Estimate fp8 = one_stage(scenario(model, R"(, "precision": "fp8")"), 32, 8);
    const Estimate fp8_norms = one_stage(scenario(model, R"(, "precision": "fp8", "recompute_modules": ["core_attn", "layernorm"])"), 32, 8);
    CHECK(saved_bytes(fp8, fp8_norms) == Approx(0).margin(1e-3));
}

TEST_CASE("mlp recomputes a dense block's MLP: its internals dropped, its forward GEMMs run again", "[recompute][modules][mlp]") {
    const Estimate base = one_stage(scenario(R"("llama3-8b")", ""), 32);
    const Estimate mlp = one_stage(scenario(R"("llama3-8b")", R"(, "recompute_modules": ["core_attn", "mlp"])"), 32);
    // 8,192 tokens; fc1's output (2 x 14,336) and the SwiGLU output (14,336) per token, over TP 2, bf16
    CHECK(saved_bytes(base, mlp) == Approx(31 * 8192.0 * 3 * 14336 / 2 * 2).epsilon(1e-9));
    // the MLP forward again per block: 3 x 2 x 8192 x 4096 x 14336 / TP 2 FLOPs, plus its share
    // of the TP collectives; between the sustained rate and twice that time
    const double flops = 32 * 6.0 * 8192 * 4096 * 14336 / 2;
    const double extra = mlp.stages[0].times.backward_s - base.stages[0].times.backward_s;
    CHECK(extra > flops / 989e12);
    CHECK(extra < 2 * flops / (989e12 * 0.68 * 0.85));
}

TEST_CASE("the experts keep no output for the combine: the saved bytes of one MoE block by hand", "[recompute][moe][memory]") {
    MoeShape x;
    x.tokens = 1000, x.hidden = 4096, x.expert_ffn = 14336, x.top_k = 2, x.experts = 8, x.gated = true, x.ep = 8, x.etp = 1;
    const MoeMemory m = moe_memory(x, 2.0, 1.0);
    // per routed row: input (1 B quantised), fc1's output (2 x 14336 x 2 B), activation output
    // (1 B), probability (4 B); per token probabilities (2 x 4 B) and routing map (8 B)
    CHECK(m.saved_bytes == Approx(2000.0 * (4096 + 2 * 14336 * 2 + 14336 + 4) + 1000.0 * (8 + 8)).epsilon(1e-12));
}

TEST_CASE("an interleaved stage holds the loss and dispatch buffers of one chunk at a time", "[recompute][interleaved][memory]") {
    const Scenario sc = scenario(R"("mixtral-8x7b")", "");
    auto stage0 = [&](int V) {
        const std::string plan = R"({"micro_batch_size": 8, "num_micro_batches": 2, "schedule": "interleaved-1f1b", "virtual_stages": )" + std::to_string(V) +
                                 R"(, "stages": [{"group": 0, "num_layers": 16, "tp": 2, "dp": 4, "ep": 8}, {"group": 0, "num_layers": 16, "tp": 2, "dp": 4, "ep": 8}]})";
        return estimate(sc, parse_plan_text(plan, sc), false).stages[0].memory.temporary_GiB;
    };
    // stage 0 holds no loss: its temporary is one MoE layer's dispatch buffers whatever V
    CHECK(stage0(2) > 0);
    CHECK(stage0(4) == Approx(stage0(2)).epsilon(1e-12));
}

TEST_CASE("recompute_modules is read, checked and written back", "[recompute][modules][scenario]") {
    const Scenario sc = scenario(R"("deepseek-v3")", R"(, "recompute_modules": ["mla_up_proj", "mlp"])");
    CHECK(sc.training.recompute_modules.mla_up_proj);
    CHECK(sc.training.recompute_modules.mlp);
    CHECK_FALSE(sc.training.recompute_modules.core_attn);
    CHECK(to_json(sc)["training"]["recompute_modules"] == Json::array({"mla_up_proj", "mlp"}));
    CHECK(parse_scenario(to_json(sc)).training.recompute_modules == sc.training.recompute_modules);
    auto problem = [](const std::string& training) {
        return problems_of([&] {
            parse_scenario_text(R"({"model": "llama3-8b", "cluster": "dgx-h100-16", "training": {"global_batch_size": 16)" + training + "}}");
        });
    };
    CHECK_THAT(problem(R"(, "recompute_modules": ["mlp"])"), Catch::Contains("scenario.training.recompute_modules: [\"mlp\"] needs recompute \"selective\""));
    CHECK_THAT(problem(R"(, "recompute": "selective", "recompute_modules": ["attention"])"),
               Catch::Contains("scenario.training.recompute_modules[0]: \"attention\" is not a module Megatron-Core recomputes"));
    CHECK_THAT(problem(R"(, "recompute": "selective", "recompute_modules": ["mlp", "mlp"])"), Catch::Contains("recompute_modules[1]: \"mlp\" is listed twice"));
    CHECK_THAT(problem(R"(, "recompute": "selective", "recompute_modules": [])"), Catch::Contains("scenario.training.recompute_modules: [] is not allowed"));
    CHECK_THAT(problem(R"(, "recompute": "selective", "recompute_modules": "mlp")"), Catch::Contains("expected a non-empty array"));
    // a module the model lacks changes nothing, and the estimate says so
    const Scenario dense = scenario(R"("llama3-8b")", R"(, "recompute_modules": ["mla_up_proj", "moe_act"])");
    const Estimate e = one_stage(dense, 32);
    REQUIRE(e.notes.size() == 2);
    CHECK_THAT(e.notes[0], Catch::Contains("mla_up_proj: the model has no multi-latent attention"));
}
