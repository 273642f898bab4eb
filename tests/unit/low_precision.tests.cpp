// Low-precision recipes, NVLink domains and today's interleaved warm-up (docs/model.md, "Low
// precision", "NVLink domains", "Interleaved 1F1B").
#include <catch2/catch.hpp>

#include "poseidon/cost_model.hpp"
#include "poseidon/dag.hpp"
#include "poseidon/error.hpp"
#include "poseidon/json_util.hpp"
#include "poseidon/estimate.hpp"
#include "poseidon/presets.hpp"
#include "poseidon/scenario.hpp"
#include "problems_of.hpp"

using namespace poseidon;

namespace {

Scenario scenario(const std::string& device, const std::string& precision, const std::string& training_extra = "", int nodes = 1, int gpn = 8,
                  const std::string& group_extra = "") {
    return parse_scenario_text(R"({"model": "llama3-8b", "training": {"global_batch_size": 64, "precision": ")" + precision + "\"" + training_extra +
                               R"(}, "cluster": {"name": "c", "groups": [{"device": )" + device + R"(, "nodes": )" + std::to_string(nodes) +
                               R"(, "gpus_per_node": )" + std::to_string(gpn) + group_extra + R"(, "inter_node_bw_GBps": 400}]}})");
}

ReplicaCost block(const Scenario& sc, int layers = 1) { return replica_cost(sc, sc.cluster.groups[0].device, 1, 1, layers, StagePosition{1, 3, 8, 1}); }

}  // namespace

TEST_CASE("a precision is refused on a group whose GPU lacks it, naming the group and the device", "[precision][validation]") {
    const std::string mixed = R"({"model": "llama3-8b", "training": {"global_batch_size": 64, "precision": "P"}, "cluster": {"name": "c", "groups": [
        {"device": "h100-sxm5-80gb", "nodes": 1, "gpus_per_node": 8, "inter_node_bw_GBps": 400},
        {"device": "b200-180gb", "nodes": 1, "gpus_per_node": 8, "inter_node_bw_GBps": 400}]}})";
    auto with = [&](const std::string& p) {
        std::string s = mixed;
        s.replace(s.find("\"P\""), 3, "\"" + p + "\"");
        return s;
    };
    // H100 + B200 train FP8 (both have it), not MXFP8 or NVFP4 (Hopper has neither).
    CHECK_NOTHROW(parse_scenario_text(with("fp8")));
    CHECK_NOTHROW(parse_scenario_text(with("fp8-blockwise")));
    CHECK(testing::problems_of([&] { parse_scenario_text(with("mxfp8")); }) ==
          "scenario.training.precision: \"mxfp8\" cannot run on cluster.groups[0] (h100-sxm5-80gb): the device has no mxfp8_tflops rate (no mxfp8 tensor cores); "
          "every group trains in the one precision, so choose one all its GPUs run (here: bf16, fp8, fp8-delayed, fp8-blockwise)");
    CHECK_THROWS_AS(parse_scenario_text(with("nvfp4")), InputError);
    // "none" is the same as leaving a rate out; anything else but a number is refused.
    CHECK(parse_scenario_text(with("bf16")).cluster.groups[0].device.mxfp8_tflops == 0);
    CHECK_THROWS_WITH(scenario(R"({"base": "h100-sxm5-80gb", "fp8_tflops": "fast"})", "bf16"),
                      Catch::Matchers::Contains("fp8_tflops: \"fast\" is a string; expected a finite number > 0 and <= 1000000 (dense TFLOP/s), or \"none\""));
    // fp8_param_gather with a low precision needs sharded states; beside bf16 it changes nothing
    // in the scenario itself (a note) and applies to the plans of a searched low precision
    CHECK_THROWS_WITH(scenario("\"h100-sxm5-80gb\"", "fp8", R"(, "fp8_param_gather": true)"), Catch::Matchers::Contains("needs distributed_optimizer or fsdp true"));
    const Scenario bf16 = scenario("\"h100-sxm5-80gb\"", "bf16", R"(, "fp8_param_gather": true, "distributed_optimizer": true)");
    CHECK_FALSE(bf16.training.fp8_param_gather);
    CHECK(scenario_notes(bf16) == std::vector<std::string>{"training.fp8_param_gather changes nothing with precision bf16: it gathers the parameters of a low precision, so it "
                                                           "applies to plans of a low precision a search chooses (options.precisions) whose states are sharded"});
    CHECK(to_json(bf16)["training"]["fp8_param_gather"] == true);  // (printed back as given)
    Plan fp8_plan;
    fp8_plan.precision = Precision::fp8;
    CHECK(scenario_for_plan(bf16, fp8_plan, "plan").training.fp8_param_gather);
}

TEST_CASE("quantisation kernels: bytes per element by recipe and GPU, hand-computed", "[precision][model]") {
    Problems problems;
    const Device h100 = parse_device(Json("h100-sxm5-80gb"), "d", problems);
    const Device b200 = parse_device(Json("b200-180gb"), "d", problems);
    REQUIRE(problems.empty());
    // Hopper, current scaling: read 2 B twice (amax, cast), write 1 B row-wise + 1 B transposed.
    CHECK(quantize_s(quant_recipe(h100, Precision::fp8), 1e9, 1, 1e12, 0) == Approx(6e9 / 1e12));
    // Blackwell reads a per-tensor FP8 operand column-wise in place: no second copy.
    CHECK(quantize_s(quant_recipe(b200, Precision::fp8), 1e9, 1, 1e12, 0) == Approx(5e9 / 1e12));
    // Delayed scaling: one read.
    CHECK(quantize_s(quant_recipe(b200, Precision::fp8_delayed), 1e9, 1, 1e12, 0) == Approx(3e9 / 1e12));
    // MXFP8: one read, two copies of 1 + 1/32 B.
    CHECK(quantize_s(quant_recipe(b200, Precision::mxfp8), 1e9, 1, 1e12, 0) == Approx((2 + 2 * (1 + 1.0 / 32)) * 1e9 / 1e12));
    // NVFP4: amax (global scale) and cast reads, the Hadamard read, two copies of 0.5 + 1/16 B.
    CHECK(quantize_s(quant_recipe(b200, Precision::nvfp4), 1e9, 1, 1e12, 0) == Approx((4 + 2 + 2 * (0.5 + 1.0 / 16)) * 1e9 / 1e12));
    CHECK(low_precision_tflops(b200, Precision::nvfp4) == 9000);
    CHECK(low_precision_tflops(h100, Precision::fp8_blockwise) == Approx(1978.9));
}

TEST_CASE("FP8 with the bf16 rate and free quantisation costs exactly what bf16 does", "[precision][model][identity]") {
    // A GPU whose FP8 peak equals its bf16 peak, with memory bandwidth so high that the cast kernels
    // and the smaller operands cost next to nothing and no kernel overhead: the block's time is
    // bf16's but for the casts' 3 B per element at 10^7 GB/s (a few parts in 10^5).
    const std::string dev = R"({"base": "h100-sxm5-80gb", "fp8_tflops": 989.4, "low_precision_efficiency_ratio": 1, "memory_bw_GBps": 10000000, "kernel_overhead_us": 0})";
    const ReplicaCost bf16 = block(scenario(dev, "bf16")), fp8 = block(scenario(dev, "fp8-delayed"));
    CHECK(fp8.forward_s == Approx(bf16.forward_s).epsilon(1e-4));
    CHECK(fp8.backward_s == Approx(bf16.backward_s).epsilon(1e-4));
    CHECK(fp8.forward_s > bf16.forward_s);
    // At twice the rate the linear layers take half the time, attention the same: in between.
    const ReplicaCost fast = block(scenario(R"({"base": "h100-sxm5-80gb", "memory_bw_GBps": 10000000, "kernel_overhead_us": 0})", "fp8-delayed"));
    CHECK(fast.forward_s < bf16.forward_s);
    CHECK(fast.forward_s > bf16.forward_s / 2);
}

TEST_CASE("low precision memory: compute copies of the weights, fp8_param_gather, quantised saved inputs", "[precision][memory]") {
    const Scenario bf = scenario("\"h100-sxm5-80gb\"", "bf16", R"(, "distributed_optimizer": true)");
    const Scenario h_fp8 = scenario("\"h100-sxm5-80gb\"", "fp8", R"(, "distributed_optimizer": true)");
    const Scenario h_gather = scenario("\"h100-sxm5-80gb\"", "fp8", R"(, "distributed_optimizer": true, "fp8_param_gather": true)");
    const Scenario b_gather = scenario("\"b200-180gb\"", "fp8", R"(, "distributed_optimizer": true, "fp8_param_gather": true)");
    const ReplicaCost a = block(bf, 4), b = block(h_fp8, 4), c = block(h_gather, 4), d = block(b_gather, 4);
    const double linear_GiB = a.linear_params_per_gpu / GiB;
    REQUIRE(a.linear_params_per_gpu > 0.9 * a.params_per_gpu);
    // Hopper FP8 keeps a row-wise and a transposed 1-byte copy beside the bf16 weights: + 2 B.
    CHECK(b.memory.weights_GiB - a.memory.weights_GiB == Approx(2 * linear_GiB));
    // With fp8_param_gather the two copies replace the bf16 one: the same 2 B.
    CHECK(c.memory.weights_GiB == Approx(a.memory.weights_GiB));
    // Blackwell needs one copy: 1 B instead of 2.
    CHECK(a.memory.weights_GiB - d.memory.weights_GiB == Approx(linear_GiB));
    // Saved activations: QKV and MLP inputs (2 s h) and the MLP down input (s f) at 1 B instead of
    // 2, the projection's input twice (bf16 for attention, 1 B for its wgrad): per block and sample.
    const double s = 8192, h = 4096, f = 14336;
    const double per_block = -(2 * s * h + s * f) + s * h;
    const double in_flight = 2;  // stage 1 of 3 holds min(3 - 1, 8) micro-batches
    CHECK((b.memory.activations_GiB - a.memory.activations_GiB) * GiB == Approx(4 * in_flight * per_block));
}

TEST_CASE("an NVLink domain of several nodes: rings and sends inside it run at NVLink speed", "[links][nvlink-domain]") {
    // 2 trays of 4 GPUs in one 8-GPU NVLink domain synchronise gradients as one 8-GPU node does.
    const Scenario one_node = scenario("\"gb200-186gb\"", "bf16", "", 1, 8);
    const Scenario trays = scenario("\"gb200-186gb\"", "bf16", "", 2, 4, R"(, "nvlink_domain_gpus": 8)");
    const Scenario apart = scenario("\"gb200-186gb\"", "bf16", "", 2, 4);
    // stage 0's times of a plan of one stage, `tp` x `dp`, on each cluster
    auto times = [&](const Scenario& sc, int tp, int dp) {
        const std::string plan = R"({"micro_batch_size": )" + std::to_string(dp) + R"(, "num_micro_batches": )" + std::to_string(64 / dp) +
                                 R"(, "stages": [{"group": 0, "num_layers": 32, "tp": )" + std::to_string(tp) + R"(, "dp": )" + std::to_string(dp) + "}]}";
        return estimate(sc, parse_plan_text(plan, sc)).stages[0].times;
    };
    CHECK(times(trays, 1, 8).dp_sync_s == Approx(times(one_node, 1, 8).dp_sync_s).epsilon(1e-12));
    CHECK(times(apart, 1, 8).dp_sync_s > 1.5 * times(trays, 1, 8).dp_sync_s);
    // TP 8 over two trays of one domain stays on NVLink; TP 8 across two domains crosses NICs.
    CHECK(times(trays, 8, 1).forward_tp_comm_s == Approx(times(one_node, 8, 1).forward_tp_comm_s).epsilon(1e-12));
    CHECK(times(apart, 8, 1).forward_tp_comm_s > 2 * times(trays, 8, 1).forward_tp_comm_s);
    // A domain is whole nodes.
    CHECK_THROWS_WITH(scenario("\"gb200-186gb\"", "bf16", "", 2, 4, R"(, "nvlink_domain_gpus": 6)"),
                      Catch::Matchers::Contains("nvlink_domain_gpus: 6 is not a multiple of gpus_per_node 4"));
}

TEST_CASE("a partial last NVLink domain has fewer NICs", "[links][nvlink-domain]") {
    Group g;
    g.nodes = 5;
    g.gpus_per_node = 4;
    g.nvlink_domain_gpus = 12;  // domains of 3 nodes: {3, 2}
    CHECK(g.domain_nodes(0) == 3);
    CHECK(g.domain_nodes(1) == 2);
    CHECK(g.domain_nodes(2) == 0);
    g.nvlink_domain_gpus = 0;
    CHECK(g.domain_gpus() == 4);
    CHECK(g.domain_nodes(4) == 1);
}

TEST_CASE("interleaved warm-up follows today's Megatron-Core also when m = p", "[interleaved][schedule]") {
    // p 4, V 3, m 4: the last stage warms up (V - 1) p = 8 of its 12 passes (it warmed up all 12
    // before Megatron-LM 4295be1a6c); stage 0 is capped at m V.
    CHECK(interleaved_in_flight(3, 4, 3, 4) == 9);
    CHECK(interleaved_in_flight(0, 4, 3, 4) == 12);
    std::vector<ChunkPass> order;
    interleaved_order(3, 4, 3, 4, order);
    REQUIRE(order.size() == 24);
    for (int k = 0; k < 8; ++k) CHECK(order[k].forward);
    CHECK(order[8].forward);
    CHECK_FALSE(order[9].forward);
}

TEST_CASE("optimizer-state composition: master weights and moments set the state bytes", "[memory][stack]") {
    auto stack = [](const std::string& extra) {
        Problems problems;
        const Stack st = parse_stack(Json::parse(R"({"base": "megatron-core")" + extra + "}"), "stack", problems);
        problems.throw_if_any();
        return st;
    };
    CHECK(stack("").optimizer_state_bytes_per_param == 12);
    CHECK(stack(R"(, "master_weight_bytes_per_param": 2, "moment_bytes_per_param": 2, "optimizer_state_bytes_per_param": 6)").optimizer_state_bytes_per_param == 6);
    CHECK(stack(R"(, "master_weight_bytes_per_param": 0, "moment_bytes_per_param": 2, "optimizer_state_bytes_per_param": 4)").optimizer_state_bytes_per_param == 4);
    // over a preset, the composition given replaces the preset's total, and the total its composition
    CHECK(stack(R"(, "master_weight_bytes_per_param": 2, "moment_bytes_per_param": 2)").optimizer_state_bytes_per_param == 6);
    CHECK(stack(R"(, "moment_bytes_per_param": 2)").optimizer_state_bytes_per_param == 8);  // the preset's 4 B master weights
    const Stack total = stack(R"(, "optimizer_state_bytes_per_param": 0)");
    CHECK(total.optimizer_state_bytes_per_param == 0);
    CHECK(total.moment_bytes_per_param == 0);  // (no composition stated)
    // both ways in one override must agree
    CHECK_THROWS_WITH(stack(R"(, "master_weight_bytes_per_param": 2, "optimizer_state_bytes_per_param": 12)"),
                      Catch::Matchers::Contains("optimizer_state_bytes_per_param: 12 contradicts master_weight_bytes_per_param 2 + 2 x moment_bytes_per_param 4 = 10"));
    CHECK_THROWS_WITH(stack(R"(, "master_weight_bytes_per_param": 3, "moment_bytes_per_param": 4, "optimizer_state_bytes_per_param": 11)"),
                      Catch::Matchers::Contains("master_weight_bytes_per_param: 3 is not allowed; expected 4 (fp32 master weights), 2"));
    // The presets: Megatron-Core's precision-aware optimizer holds 6 B, NeMo 1.x's bf16 Apex Adam 4 B;
    // on a replica with the distributed optimizer over d = 4 the states are that / 4 per parameter.
    const Scenario pa = parse_scenario_text(R"({"model": "llama3-8b", "training": {"global_batch_size": 64, "distributed_optimizer": true, "stack": "megatron-core-precision-aware"},
        "cluster": {"name": "c", "groups": [{"device": "h100-sxm5-80gb", "nodes": 1, "gpus_per_node": 8, "inter_node_bw_GBps": 400}]}})");
    CHECK(pa.training.stack.optimizer_state_bytes_per_param == 6);
    CHECK_FALSE(pa.training.stack.grad_fp32);
    const ReplicaCost rc = replica_cost(pa, pa.cluster.groups[0].device, 1, 1, 4, StagePosition{1, 3, 8, 4});
    CHECK(rc.memory.optimizer_GiB == Approx(rc.params_per_gpu * 6 / 4 / GiB));
    CHECK(rc.memory.gradients_GiB == Approx(rc.params_per_gpu * 2 / GiB));
    CHECK(parse_scenario_text(R"({"model": "llama3-8b", "training": {"global_batch_size": 64, "stack": "nemo1-apex-bf16"},
        "cluster": {"name": "c", "groups": [{"device": "h100-sxm5-80gb", "nodes": 1, "gpus_per_node": 8, "inter_node_bw_GBps": 400}]}})")
              .training.stack.optimizer_state_bytes_per_param == 4);
}

TEST_CASE("a low precision the stack has no recipe for is refused, naming the stack", "[precision][stack]") {
    auto problems = [](const std::string& precision, const std::string& stack) {
        return poseidon::testing::problems_of([&] {
            parse_scenario_text(R"({"model": "llama3-8b", "cluster": "dgx-h100-16", "training": {"global_batch_size": 8, "precision": ")" + precision + R"(", "stack": )" + stack + "}}");
        });
    };
    CHECK(problems("fp8", "\"megatron-lm-2021\"") ==
          "scenario.training.precision: \"fp8\" is not a recipe of the stack megatron-lm-2021 (its low_precision_recipes: none); choose a recipe it runs, bf16, or a stack with Transformer Engine's recipes (megatron-core)");
    CHECK(problems("fp8-delayed", "\"nemo1-apex-bf16\"").empty());
    CHECK(problems("fp8", "\"nemo1-apex-bf16\"").find("(its low_precision_recipes: fp8-delayed)") != std::string::npos);
    CHECK(problems("fp8", "\"megatron-core\"").empty());
    CHECK(problems("bf16", "\"megatron-lm-2020\"").empty());
    // an inline stack states its own
    CHECK(problems("fp8", R"({"preset": "megatron-core", "low_precision_recipes": ["mxfp8"]})").find("(its low_precision_recipes: mxfp8)") != std::string::npos);
    CHECK(problems("bf16", R"({"preset": "megatron-core", "low_precision_recipes": ["bf16"]})").rfind("scenario.training.stack.low_precision_recipes[0]: \"bf16\" is not a low-precision recipe", 0) == 0);
}
