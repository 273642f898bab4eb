#include <catch2/catch.hpp>

#include "poseidon/cost_model.hpp"
#include "poseidon/estimate.hpp"
#include "poseidon/presets.hpp"
#include "poseidon/scenario.hpp"

using namespace poseidon;

namespace {
ModelSpec model(const char* id) {
    Problems p;
    auto m = parse_model(Json(id), "model", p);
    p.throw_if_any();
    return m;
}
}  // namespace

TEST_CASE("parameter counts match the published models", "[model][params]") {
    // GPT-3 175B: 174.6 B (Narayanan et al. 2021, table 1 lists 175 B; the exact count with
    // V = 51200, s = 2048 and tied embeddings is 174.6 B).
    CHECK(model_params(model("gpt3-175b")) / 1e9 == Approx(174.6).epsilon(0.001));
    // Llama-2-7B: 6.74 B (Touvron et al. 2023; Hugging Face config).
    CHECK(model_params(model("llama2-7b")) / 1e9 == Approx(6.738).epsilon(0.001));
    // Llama-3-8B: 8.03 B.
    CHECK(model_params(model("llama3-8b")) / 1e9 == Approx(8.03).epsilon(0.002));
    // GPT-3 block: 12h^2 + 13h.
    auto g = model("gpt3-175b");
    double h = g.hidden_size;
    CHECK(layer_params(g) == Approx(12 * h * h + 13 * h));
}

TEST_CASE("model FLOPs follow Narayanan et al.'s 72 B s l h^2 (1 + s/6h) + 6 B s h V", "[model][flops]") {
    auto g = model("gpt3-175b");
    double B = 1536, s = g.seq_length, l = g.num_layers, h = g.hidden_size, V = g.vocab_size;
    double expected = 72 * B * s * l * h * h * (1 + s / (6 * h)) + 6 * B * s * h * V;
    CHECK(model_flops_per_iteration(g, 1536) == Approx(expected).epsilon(1e-12));
}

TEST_CASE("memory per GPU of a known configuration, computed by hand", "[model][memory]") {
    // One stage holding the whole model on one GPU: tp = dp = 1, 2 samples per micro-batch,
    // 4 micro-batches (1 in flight), no recompute, no flash attention, bf16.
    const char* text = R"({
      "model": {"name": "m", "num_layers": 4, "hidden_size": 1024, "num_attention_heads": 16,
                "vocab_size": 32000, "seq_length": 1024},
      "training": {"global_batch_size": 8, "flash_attention": false},
      "cluster": {"name": "c", "groups": [{"device": {"name": "d", "peak_tflops": 100, "memory_GiB": 80,
                  "memory_bw_GBps": 1000, "intra_node_bw_GBps": 100, "framework_overhead_GiB": 2},
                  "nodes": 1, "gpus_per_node": 1, "inter_node_bw_GBps": 10}]}})";
    Scenario sc = parse_scenario_text(text);
    Plan plan = parse_plan_text(R"({"micro_batch_size": 2, "num_micro_batches": 4,
                                   "stages": [{"group": 0, "num_layers": 4, "tp": 1, "dp": 1}]})", sc);
    Estimate e = estimate(sc, plan);
    const auto& mem = e.stages[0].memory;
    const double GiB = 1024.0 * 1024 * 1024;
    // Parameters: 4 x (12h^2 + 13h) + V h (embedding) + s h (positions) + 2h (final norm) + V h (head).
    const double params = 4 * 12'596'224.0 + 32'768'000 + 1'048'576 + 2'048 + 32'768'000;
    CHECK(params == 116'971'520);
    CHECK(mem.weights_GiB * GiB == Approx(2 * params));
    CHECK(mem.gradients_GiB * GiB == Approx(4 * params));
    CHECK(mem.optimizer_GiB * GiB == Approx(12 * params));
    // Activations (Korthikanti et al. 2022, table 2, t = 1): s b h (34 + 5 a s / h) per layer
    //   = 2'097'152 x 114 = 239'075'328 B; embedding output + mask 3 s b h = 6'291'456 B;
    //   the head's input 2 s b h = 4'194'304 B.
    const double act = 4 * 239'075'328.0 + 6'291'456 + 4'194'304;
    CHECK(mem.activations_GiB * GiB == Approx(act));
    // The loss's buffers (the default megatron-core stack: 6 B per logit): 6 s b V = 393'216'000 B;
    // the allocator's reserve 5 % of activations and temporaries.
    const double temporary = 393'216'000;
    CHECK(mem.temporary_GiB * GiB == Approx(temporary));
    CHECK(mem.allocator_GiB * GiB == Approx(0.05 * (act + temporary)));
    CHECK(mem.overhead_GiB == Approx(2));
    CHECK(mem.total_GiB() == Approx((18 * params + 1.05 * (act + temporary)) / GiB + 2));
}

TEST_CASE("the distributed optimizer shards optimizer state over data-parallel replicas", "[model][memory]") {
    const char* base = R"({"model": "gpt3-1.7b", "training": {"global_batch_size": 64, "distributed_optimizer": %s},
                           "cluster": "dgx-a100-1"})";
    char a[512], b[512];
    std::snprintf(a, sizeof a, base, "false");
    std::snprintf(b, sizeof b, base, "true");
    Scenario plain = parse_scenario_text(a), dist = parse_scenario_text(b);
    const char* p = R"({"micro_batch_size": 8, "num_micro_batches": 8, "stages": [{"group": 0, "num_layers": 24, "tp": 1, "dp": 8}]})";
    auto e1 = estimate(plain, parse_plan_text(p, plain));
    auto e2 = estimate(dist, parse_plan_text(p, dist));
    CHECK(e2.stages[0].memory.optimizer_GiB == Approx(e1.stages[0].memory.optimizer_GiB / 8));
    CHECK(e2.stages[0].memory.weights_GiB == Approx(e1.stages[0].memory.weights_GiB));
}

TEST_CASE("activation memory shrinks with selective and full recomputation", "[model][memory]") {
    auto act = [](const char* recompute) {
        std::string text = std::string(R"({"model": "gpt3-1.7b", "training": {"global_batch_size": 64, "flash_attention": false, "recompute": ")") + recompute +
                           R"("}, "cluster": "dgx-a100-1"})";
        Scenario sc = parse_scenario_text(text);
        auto e = estimate(sc, parse_plan_text(R"({"micro_batch_size": 8, "num_micro_batches": 8, "stages": [{"group": 0, "num_layers": 24, "tp": 1, "dp": 8}]})", sc));
        return std::make_pair(e.stages[0].memory.activations_GiB, e.stages[0].times.backward_s);
    };
    auto none = act("none"), sel = act("selective"), full = act("full");
    CHECK(sel.first < none.first);
    CHECK(full.first < sel.first);
    // Recomputation costs backward time.
    CHECK(sel.second > none.second);
    CHECK(full.second > sel.second);
}

TEST_CASE("a plan that does not fit says which stage and by how much", "[model][memory]") {
    Scenario sc = parse_scenario_text(R"({"model": "gpt3-175b", "training": {"global_batch_size": 8}, "cluster": "dgx-a100-1"})");
    auto e = estimate(sc, parse_plan_text(R"({"micro_batch_size": 1, "num_micro_batches": 8, "stages": [{"group": 0, "num_layers": 96, "tp": 8, "dp": 1}]})", sc));
    CHECK_FALSE(e.memory_fits);
    REQUIRE(e.problems.size() == 1);
    CHECK_THAT(e.problems[0], Catch::Contains("stage 0 needs") && Catch::Contains("over by"));
}
