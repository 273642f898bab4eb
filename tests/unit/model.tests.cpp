#include <catch2/catch.hpp>

#include "poseidon/cost_model.hpp"
#include "poseidon/estimate.hpp"
#include "poseidon/json_util.hpp"
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

TEST_CASE("dropout's masks and passes are counted only where the model trains with dropout", "[model][memory][dropout]") {
    // The configuration above (s = h = 1024, b = 2, a = 16, t = 1, no flash attention, no
    // recompute), with each dropout switched off. Per block (Korthikanti et al. 2022, table 2):
    // hidden dropout keeps two 1-byte masks (2 s b h), attention dropout a 1-byte mask and its
    // 2-byte output per score (3 a s^2 b); the embedding's mask is s b h.
    auto run = [](const char* training, const char* dropout) {
        std::string text = std::string(R"({"model": {"name": "m", "num_layers": 4, "hidden_size": 1024, "num_attention_heads": 16,
                "vocab_size": 32000, "seq_length": 1024)") + dropout + R"(}, "training": {"global_batch_size": 8, "flash_attention": false)" + training +
                           R"(}, "cluster": {"name": "c", "groups": [{"device": {"name": "d", "peak_tflops": 100, "fp32_tflops": 20, "memory_GiB": 80,
                  "memory_bw_GBps": 1000, "intra_node_bw_GBps": 100, "framework_overhead_GiB": 2},
                  "nodes": 1, "gpus_per_node": 1, "inter_node_bw_GBps": 10}]}})";
        Scenario sc = parse_scenario_text(text);
        return estimate(sc, parse_plan_text(R"({"micro_batch_size": 2, "num_micro_batches": 4,
                                   "stages": [{"group": 0, "num_layers": 4, "tp": 1, "dp": 1}]})", sc));
    };
    const double GiB = 1024.0 * 1024 * 1024, sbh = 2'097'152, head = 2 * sbh;
    const Estimate both = run("", ""), none = run("", R"(, "hidden_dropout": 0, "attention_dropout": 0)");
    const Estimate no_hidden = run("", R"(, "hidden_dropout": 0)"), no_attention = run("", R"(, "attention_dropout": 0.0)");
    CHECK(both.stages[0].memory.activations_GiB * GiB == Approx(4 * 114 * sbh + 3 * sbh + head));
    // sbh (32 + 2 a s / h) = 64 sbh per block; the embedding keeps only its output.
    CHECK(none.stages[0].memory.activations_GiB * GiB == Approx(4 * 64 * sbh + 2 * sbh + head));
    CHECK(no_hidden.stages[0].memory.activations_GiB * GiB == Approx(4 * 112 * sbh + 2 * sbh + head));
    CHECK(no_attention.stages[0].memory.activations_GiB * GiB == Approx(4 * 66 * sbh + 3 * sbh + head));
    // Fewer memory-bound passes: every switch shortens the forward and the backward.
    CHECK(none.stages[0].times.forward_s < no_hidden.stages[0].times.forward_s);
    CHECK(no_hidden.stages[0].times.forward_s < both.stages[0].times.forward_s);
    CHECK(no_attention.stages[0].times.backward_s < both.stages[0].times.backward_s);
    // In fp32 the activations take 4 B, the masks still 1 B: per block 2 x 32 + 2 = 66 s b h and
    // (2 x 4 + 1) a s / h = 144 s b h for the scores; embedding 4 + 1, head input 4 s b h.
    const Estimate fp32 = run(R"(, "precision": "fp32")", "");
    CHECK(fp32.stages[0].memory.activations_GiB * GiB == Approx(4 * 210 * sbh + 5 * sbh + 4 * sbh));
    // An unfused fp32 softmax (deepspeed-megatron-v1-2022) keeps its fp32 output (4 B) and the AV
    // product its input: with dropout that is the dropout output (2 B) and the mask (1 B), 7 B per
    // score; without, the cast-down copy (2 B), 6 B. Four blocks of a s^2 b = 33,554,432 scores.
    const char* unfused = R"(, "stack": "deepspeed-megatron-v1-2022")";
    const double scores = 16.0 * 1024 * 1024 * 2;
    CHECK((run(unfused, "").stages[0].memory.activations_GiB - run(unfused, R"(, "attention_dropout": 0)").stages[0].memory.activations_GiB) * GiB ==
          Approx(4 * (7 - 6) * scores));
    CHECK(run(unfused, "").stages[0].memory.activations_GiB * GiB == Approx(4 * (34 * sbh + 7 * scores) + 3 * sbh + head));
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

// ---- fp32 matrix rates and TF32 (issue 10; docs/model.md, "Device rates") ----

namespace {
Device device(const Json& j) {
    Problems p;
    auto d = parse_device(j, "device", p);
    p.throw_if_any();
    return d;
}

// One block (a middle stage: no embedding, no LM head) of a model on one GPU, tp = 1, 1 sample.
ReplicaCost one_block(const ModelSpec& m, const Device& d, const char* precision, bool tf32, bool zero_stack_overheads) {
    Json sc = {{"model", to_json(m)}, {"training", {{"global_batch_size", 1}, {"precision", precision}, {"tf32", tf32}}},
               {"cluster", {{"name", "c"}, {"groups", {{{"device", to_json(d)}, {"nodes", 1}, {"gpus_per_node", 1}, {"inter_node_bw_GBps", 10}}}}}}};
    Scenario s = parse_scenario(sc);
    if (zero_stack_overheads) s.training.stack = Stack{};  // no host dispatch, pass or layer overheads
    return replica_cost(s, s.cluster.groups[0].device, 1, 1, 1, StagePosition{1, 3, 1, 1});
}

// A GEMM-dominated block: h = 8192, s = 2048, 4h MLP, flash attention.
ModelSpec big_block() {
    Problems p;
    auto m = parse_model(Json{{"name", "big"}, {"num_layers", 1}, {"hidden_size", 8192}, {"num_attention_heads", 64}, {"vocab_size", 32000}, {"seq_length", 2048}},
                         "model", p);
    p.throw_if_any();
    return m;
}

// Matmul FLOPs the cost model times for one block and one sample: the four linear layers plus the
// causal flash-attention core (half of 4 s^2 h).
double block_matmul_flops(const ModelSpec& m) {
    const double s = m.seq_length, h = m.hidden_size;
    return layer_forward_flops(m, 1) - 2 * s * s * h;
}
}  // namespace

TEST_CASE("fp32 GEMMs run at the device's fp32 rate, times the sustained clock and matmul efficiency", "[model][precision]") {
    // An inline device on which every GEMM is compute bound (memory at 10^16 B/s, no kernel
    // overhead): the block's forward is its matmul FLOPs at the rate alone, up to the element-wise
    // traffic and the GEMMs' result writes (about 1e-8 s against 1e-3 s, inside the 5e-5 tolerance).
    Json base = {{"name", "d"}, {"peak_tflops", 100}, {"fp32_tflops", 10}, {"sustained_clock_ratio", 0.5}, {"matmul_efficiency", 1},
                 {"memory_GiB", 80}, {"memory_bw_GBps", 1e7}, {"memory_bw_efficiency", 1}, {"kernel_overhead_us", 0}, {"intra_node_bw_GBps", 100}};
    Problems p;
    auto m = parse_model(Json{{"name", "m"}, {"num_layers", 1}, {"hidden_size", 1024}, {"num_attention_heads", 16}, {"vocab_size", 32000}, {"seq_length", 2048}},
                         "model", p);
    p.throw_if_any();
    const double C = block_matmul_flops(m);
    const double tol = 5e-5;
    // bf16: peak x clock x efficiency = 100 x 0.5 x 1 TFLOP/s.
    CHECK(one_block(m, device(base), "bf16", false, true).forward_s == Approx(C / 50e12).epsilon(tol));
    // fp32 without TF32: fp32_tflops x clock = 10 x 0.5.
    CHECK(one_block(m, device(base), "fp32", false, true).forward_s == Approx(C / 5e12).epsilon(tol));
    // The backward: twice the linear layers, 2.5x the flash core.
    const double s = m.seq_length, h = m.hidden_size;
    const double core = 2 * s * s * h;
    CHECK(one_block(m, device(base), "fp32", false, true).backward_s == Approx((2 * (C - core) + 2.5 * core) / 5e12).epsilon(tol));
    // A device without TF32 ignores training.tf32.
    CHECK(one_block(m, device(base), "fp32", true, true).forward_s == Approx(C / 5e12).epsilon(tol));
    // With TF32 and training.tf32 the fp32 GEMMs take the TF32 rate: 50 x 0.5; without the flag not.
    Json with_tf32 = base;
    with_tf32["tf32_tflops"] = 50;
    CHECK(one_block(m, device(with_tf32), "fp32", true, true).forward_s == Approx(C / 25e12).epsilon(tol));
    CHECK(one_block(m, device(with_tf32), "fp32", false, true).forward_s == Approx(C / 5e12).epsilon(tol));
    // training.tf32 changes nothing for bf16.
    CHECK(one_block(m, device(with_tf32), "bf16", true, true).forward_s == Approx(C / 50e12).epsilon(tol));
    // Without fp32_tflops the fp32 rate is peak / 8.
    Json no_fp32 = base;
    no_fp32.erase("fp32_tflops");
    CHECK(one_block(m, device(no_fp32), "fp32", false, true).forward_s == Approx(C / (100e12 / 8 * 0.5)).epsilon(tol));
}

TEST_CASE("an fp32 block on a V100 runs at 15.7 TFLOP/s, about 8x slower than fp16", "[model][precision]") {
    const auto m = big_block();
    // the GEMM rates alone: the attention core counted as flash (block_matmul_flops), which a V100
    // does not run (its preset's flash_attention is false), so this one says it does
    const Device v100 = device(Json{{"base", "v100-sxm2-16gb"}, {"flash_attention", true}});
    REQUIRE(v100.fp32_tflops == 15.7);
    const double C = block_matmul_flops(m);
    auto fp32 = one_block(m, v100, "fp32", false, false);
    auto fp16 = one_block(m, v100, "fp16", false, false);
    // The matmuls at 15.7 TFLOP/s x sustained clock x matmul efficiency take ~300 ms; element-wise
    // traffic (memory bound, twice the fp16 bytes) and kernel overheads add about 3 ms: within 2 %.
    const double rate = 15.7e12 * v100.sustained_clock_ratio * v100.matmul_efficiency;
    CHECK(fp32.forward_s == Approx(C / rate).epsilon(0.02));
    CHECK(fp32.forward_s > C / rate);
    // The ratio is 125 / 15.7 = 7.96 for the matmuls; the element-wise part (about 3 % of the fp16
    // block) only doubles, which brings the block's ratio a little below.
    const double ratio = fp32.forward_s / fp16.forward_s;
    CHECK(ratio < 125 / 15.7);
    CHECK(ratio > 7.5);
    // V100 has no TF32: the flag changes nothing.
    CHECK(one_block(m, v100, "fp32", true, false).forward_s == fp32.forward_s);
}

TEST_CASE("fp32 on an A100 runs at 156 TFLOP/s with TF32 enabled and at 19.5 without", "[model][precision]") {
    const auto m = big_block();
    const Device a100 = device(Json("a100-sxm4-80gb"));
    REQUIRE(a100.fp32_tflops == 19.5);
    REQUIRE(a100.tf32_tflops == 156);
    const double C = block_matmul_flops(m);
    auto off = one_block(m, a100, "fp32", false, false);
    auto on = one_block(m, a100, "fp32", true, false);
    // Both runs move the same bytes and every GEMM is compute bound at either rate, so the
    // difference of the two forward times is the matmul FLOPs at the two rates alone: exact.
    // The flash core runs at the device's attention efficiency, the GEMMs at its matmul efficiency.
    const double eff = a100.matmul_efficiency * a100.sustained_clock_ratio, eff_attn = a100.attention_efficiency * a100.sustained_clock_ratio;
    const double core = 2.0 * m.seq_length * m.seq_length * m.hidden_size, lin = C - core;
    CHECK(off.forward_s - on.forward_s ==
          Approx(lin / (19.5e12 * eff) - lin / (156e12 * eff) + core / (19.5e12 * eff_attn) - core / (156e12 * eff_attn)).epsilon(1e-9));
    // The ratio of the block times is 156 / 19.5 = 8 for the matmuls, a little less for the block.
    CHECK(off.forward_s / on.forward_s == Approx(8).epsilon(0.05));
    CHECK(off.forward_s / on.forward_s < 8);
    // PyTorch's default (training.tf32 absent = false) is the fp32 rate.
    Scenario dflt = parse_scenario_text(R"({"model": "gpt3-1.7b", "training": {"global_batch_size": 8, "precision": "fp32"}, "cluster": "dgx-a100-1"})");
    CHECK_FALSE(dflt.training.tf32);
}

TEST_CASE("every device preset states its fp32 rate, and a TF32 rate exactly where the hardware has TF32", "[presets][precision]") {
    // TF32: Ampere, Ada and Hopper, at half the dense bf16/fp16 tensor rate, and MI300X
    // (docs/presets.md). None on Volta, Turing and MI250X.
    const std::vector<std::string> with_tf32 = {"a100-sxm4-80gb", "a100-sxm4-40gb", "a100-pcie-80gb", "a10-24gb",       "l4-24gb",
                                                "l40s-48gb",      "rtx3090-24gb",   "rtx4090-24gb",   "h100-sxm5-80gb", "h100-pcie-80gb",
                                                "h200-sxm-141gb", "gh200-96gb",     "mi300x-192gb",   "mi325x-256gb",   "mi355x-288gb",
                                                "b200-180gb",     "b300-288gb",     "gb200-186gb",    "gb300-288gb"};
    const std::vector<std::string> without_tf32 = {"v100-sxm2-16gb", "v100-sxm2-32gb", "t4-16gb", "titan-rtx-24gb", "rtx2080-8gb", "rtx2080ti-11gb", "mi250x-128gb"};
    auto in = [](const std::vector<std::string>& v, const std::string& id) {
        for (const auto& x : v)
            if (x == id) return true;
        return false;
    };
    for (const auto& id : with_tf32) CHECK(find_preset("devices", id) != nullptr);
    for (const auto& id : without_tf32) CHECK(find_preset("devices", id) != nullptr);
    for (const auto& id : preset_ids("devices")) {
        INFO(id);
        const Json* j = find_preset("devices", id);
        REQUIRE(j != nullptr);
        // Every preset is on one of the two lists, so a new one has to decide.
        CHECK(in(with_tf32, id) != in(without_tf32, id));
        // fp32_tflops is stated, not left to the peak / 8 fallback.
        REQUIRE(j->contains("fp32_tflops"));
        const double peak = j->at("peak_tflops").get<double>();
        const double fp32 = j->at("fp32_tflops").get<double>();
        CHECK(fp32 > 0);
        CHECK(fp32 < peak);
        const double tf32 = j->value("tf32_tflops", 0.0);
        if (in(with_tf32, id)) {
            CHECK(tf32 == Approx(peak / 2).epsilon(0.02));
            CHECK(tf32 >= fp32);
        } else {
            CHECK(tf32 == 0);
        }
        const Device d = device(Json(id));
        CHECK(d.sustained_clock_ratio > 0);
        CHECK(d.sustained_clock_ratio <= 1);
    }
}

TEST_CASE("a GH200 node's pairwise NVLinks give a pair a third of a GPU's links and a ring of four two thirds", "[model][links]") {
    // Edge-disjoint directed rings among r of n GPUs wired in pairs, each at 1/(n - 1) of the links:
    // a pair has one, r = 4 and 6 have r - 2 (Tillson 1980), other r have r - 1.
    CHECK(intra_link_factor("nvlink_mesh", 2, 4) == Approx(1.0 / 3));
    CHECK(intra_link_factor("nvlink_mesh", 3, 4) == Approx(2.0 / 3));
    CHECK(intra_link_factor("nvlink_mesh", 4, 4) == Approx(2.0 / 3));
    CHECK(intra_link_factor("nvlink_mesh", 0, 4) == Approx(2.0 / 3));
    CHECK(intra_link_factor("nvlink_mesh", 5, 8) == Approx(4.0 / 7));
    CHECK(intra_link_factor("nvlink_mesh", 6, 8) == Approx(4.0 / 7));
    CHECK(intra_link_factor("nvlink_mesh", 8, 8) == Approx(1.0));
    CHECK(intra_link_factor("nvlink", 2, 4) == 1.0);
    // llama2-7b on one alps-gh200-32 node, TP 2 x DP 2, b = 1: each forward all-reduce moves
    // s b h x 2 B = 33,554,432 B over a pair at 450 x 0.8 / 3 = 120 GB/s, 2 (n-1)/n x bytes / bw +
    // 2 (n-1) x 8 us = 0.29562 ms; two per block and one for the embedding: 65 of them. On a
    // switched node (intra_node_link "nvlink") the pair gets the whole 360 GB/s: 0.10921 ms.
    // One stage of llama2-7b on GH200 nodes of 4 whose intra-node link is `link`.
    auto gh200 = [](const char* link, int nodes, int nic_GBps, int tp, int dp) {
        std::string text = std::string(R"({"model": "llama2-7b", "training": {"global_batch_size": 8},
            "cluster": {"name": "c", "groups": [{"device": "gh200-96gb", "nodes": )") + std::to_string(nodes) +
                           R"(, "gpus_per_node": 4, "inter_node_bw_GBps": )" + std::to_string(nic_GBps) + R"(, "intra_node_link": ")" + link + R"("}]}})";
        Scenario sc = parse_scenario_text(text);
        const std::string plan = R"({"micro_batch_size": 2, "num_micro_batches": 4, "stages": [{"group": 0, "num_layers": 32, "tp": )" +
                                 std::to_string(tp) + R"(, "dp": )" + std::to_string(dp) + "}]}";
        return estimate(sc, parse_plan_text(plan, sc)).stages[0].times;
    };
    auto tp_forward = [&](const char* link) { return gh200(link, 1, 100, 2, 2).forward_tp_comm_s; };
    const double bytes = 4096.0 * 4096 * 2;
    CHECK(tp_forward("nvlink_mesh") == Approx(65 * (bytes / 120e9 + 2 * 8e-6)).epsilon(1e-9));
    CHECK(tp_forward("nvlink") == Approx(65 * (bytes / 360e9 + 2 * 8e-6)).epsilon(1e-9));
    // TP 4 fills each node, so the data-parallel rings have one GPU per node and take no NVLink
    // hop: the gradient sync is the same as on a switched node, even with a NIC faster than a pair.
    auto dp_sync = [&](const char* link) { return gh200(link, 2, 2000, 4, 2).dp_sync_s; };
    CHECK(dp_sync("nvlink_mesh") > 0);
    CHECK(dp_sync("nvlink_mesh") == Approx(dp_sync("nvlink")).epsilon(1e-12));
}

TEST_CASE("rope_theta: carried by the RoPE presets, checked, written back, and not in the cost", "[model][presets]") {
    CHECK(model("llama3-8b").rope_theta == 500000.0);
    CHECK(model("llama2-7b").rope_theta == 10000.0);
    CHECK_FALSE(model("gpt3-1.7b").rope_theta.has_value());
    CHECK(to_json(model("qwen2.5-7b"))["rope_theta"] == 1000000.0);
    CHECK_FALSE(to_json(model("gpt3-1.7b")).contains("rope_theta"));
    Problems p;
    parse_model(Json{{"base", "llama3-8b"}, {"rope_theta", -1}}, "model", p);
    REQUIRE(p.size() == 1);
    CHECK(p.items().front().path == "model.rope_theta");
    // the cost does not read it
    const char* cluster = R"("cluster": {"name": "c", "groups": [{"device": "a100-sxm4-80gb", "nodes": 1, "gpus_per_node": 8, "inter_node_bw_GBps": 25}]})";
    const Scenario a = parse_scenario_text(std::string(R"({"model": "llama3-8b", "training": {"global_batch_size": 8}, )") + cluster + "}");
    const Scenario b = parse_scenario_text(std::string(R"({"model": {"base": "llama3-8b", "rope_theta": 10000}, "training": {"global_batch_size": 8}, )") + cluster + "}");
    const char* plan = R"({"micro_batch_size": 8, "num_micro_batches": 1, "stages": [{"group": 0, "num_layers": 32, "tp": 8, "dp": 1}]})";
    CHECK(estimate(a, parse_plan_text(plan, a)).iteration_time_s == estimate(b, parse_plan_text(plan, b)).iteration_time_s);
}
