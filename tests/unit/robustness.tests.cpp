// Robustness of the one validator that the CLI, the wasm module and the page share: malformed
// scenarios and plans with their exact messages, plans built in code, and settings that change
// nothing. The hostile inputs of tests/cli/hostile_cases.json, the JSON reader and the escaping of
// messages: robustness_hostile.tests.cpp.
#include <catch2/catch.hpp>

#include <string>
#include <utility>
#include <vector>

#include "poseidon/api.hpp"
#include "poseidon/estimate.hpp"
#include "poseidon/json_util.hpp"
#include "poseidon/scenario.hpp"

using namespace poseidon;

namespace {

const char* const kScenario = R"({"model":"tiny-8l","training":{"global_batch_size":64},"cluster":"demo-mixed-16"})";
const char* const kPlan =
    R"({"micro_batch_size":8,"num_micro_batches":8,"stages":[{"group":0,"num_layers":4,"tp":2,"dp":4},{"group":1,"num_layers":4,"tp":2,"dp":4}]})";

// Every problem line of the InputError the inputs raise, joined by newlines ("" if none).
std::string problems_of(const std::string& scenario, const char* plan) {
    try {
        Scenario sc = parse_scenario_text(scenario);
        if (plan) {
            Plan p = parse_plan_text(plan, sc);
            estimate(sc, p, false);
        }
    } catch (const InputError& e) {
        std::string all;
        for (const auto& p : e.problems()) all += (all.empty() ? "" : "\n") + p.line();
        return all;
    }
    return "";
}

struct Malformed {
    const char* name;
    const char* scenario;  // nullptr: kScenario
    const char* plan;      // nullptr: the scenario alone is parsed
    const char* expected;  // every line, exactly
    bool prefix = false;   // expected is a prefix (messages that list the presets)
};

const Malformed kMalformed[] = {
    {"empty scenario", "", nullptr, "scenario: empty input; expected a JSON object"},
    {"a replica in no group: one message, not also a wrong sum", nullptr,
     R"({"micro_batch_size":8,"num_micro_batches":8,"stages":[{"group":0,"num_layers":4,"tp":2,"dp":4},)"
     R"({"num_layers":4,"replicas":[{"group":1,"tp":2,"samples":4},{"group":9,"tp":2,"samples":4}]}]})",
     "plan.stages[1].replicas[1].group: 9 is not a group of the cluster; expected 0..1"},
    {"a document cut short names the value left open", R"({"model":{"name":"m","layers":[1,2)", nullptr,
     "scenario.model.layers: is not valid JSON at line 1, column 35: syntax error while parsing array - unexpected end of input; expected ']' (the document "
     "ends early: a brace, bracket or string is not closed)"},
    {"top-level array", "[]", nullptr, "scenario: [] is an array; expected an object"},
    {"trailing garbage", R"({"model":"tiny-8l"} x)", nullptr,
     "scenario: is not valid JSON at line 1, column 21: syntax error while parsing value - invalid literal; last read: '\"tiny-8l\"} x' (JSON has no NaN, "
     "Infinity, comments or unquoted words)"},
    {"NaN literal", R"({"training":{"global_batch_size":NaN}})", nullptr,
     "scenario.training.global_batch_size: is not valid JSON at line 1, column 34: syntax error while parsing value - invalid literal; last read: "
     "'\"global_batch_size\":N' (JSON has no NaN, Infinity, comments or unquoted words)"},
    {"1e999 overflows a double", R"({"training":{"global_batch_size":1e999}})", nullptr,
     "scenario.training.global_batch_size: 1e999 overflows a double; numbers must be finite (magnitude below 1.8e308)"},
    {"integer beyond 2^53", R"({"model":"tiny-8l","training":{"global_batch_size":9007199254740993},"cluster":"demo-mixed-16"})", nullptr,
     "scenario.training.global_batch_size: 9007199254740993 is beyond 2^53; integers must be within +-9007199254740992 (exact in a double)"},
    {"duplicated key", R"({"model":"tiny-8l","model":"tiny-8l"})", nullptr, "scenario.model: duplicated key; each key may appear once per object"},
    {"invalid escape", R"({"name":"\q"})", nullptr,
     "scenario.name: is not valid JSON at line 1, column 11: syntax error while parsing value - invalid string: forbidden character after backslash; last "
     "read: '\"\\q'"},
    {"missing model", R"({"training":{"global_batch_size":64},"cluster":"demo-mixed-16"})", nullptr,
     "scenario.model: is missing; expected a model preset id or an inline model object"},
    {"unknown model preset", R"({"model":"llama2-7", "training":{"global_batch_size":64},"cluster":"demo-mixed-16"})", nullptr,
     "scenario.model: \"llama2-7\" is not a model preset (did you mean \"llama2-7b\"?); known: ", true},
    {"misspelled key", R"({"model":"tiny-8l","trainig":{"global_batch_size":64},"cluster":"demo-mixed-16"})", nullptr,
     "scenario.trainig: unknown key (did you mean \"training\"?); allowed keys are documented in docs/formats.md\n"
     "scenario.training: is missing; expected an object with at least global_batch_size"},
    {"global_batch_size 0", R"({"model":"tiny-8l","training":{"global_batch_size":0},"cluster":"demo-mixed-16"})", nullptr,
     "scenario.training.global_batch_size: 0 is out of range; expected an integer in [1, 100000000]"},
    {"global_batch_size negative zero", R"({"model":"tiny-8l","training":{"global_batch_size":-0},"cluster":"demo-mixed-16"})", nullptr,
     "scenario.training.global_batch_size: 0 is out of range; expected an integer in [1, 100000000]"},
    {"global_batch_size 2.5", R"({"model":"tiny-8l","training":{"global_batch_size":2.5},"cluster":"demo-mixed-16"})", nullptr,
     "scenario.training.global_batch_size: 2.5 is not an integer; expected an integer in [1, 100000000]"},
    {"global_batch_size null", R"({"model":"tiny-8l","training":{"global_batch_size":null},"cluster":"demo-mixed-16"})", nullptr,
     "scenario.training.global_batch_size: is null; expected an integer in [1, 100000000]"},
    {"unknown precision", R"({"model":"tiny-8l","training":{"global_batch_size":64,"precision":"fp6"},"cluster":"demo-mixed-16"})", nullptr,
     "scenario.training.precision: \"fp6\" is not allowed; expected one of \"bf16\", \"fp16\", \"fp32\", \"fp8\", \"fp8-delayed\", \"fp8-blockwise\", \"mxfp8\", \"nvfp4\" (did you mean \"fp16\"?)"},
    {"a precision a group's GPU lacks", R"({"model":"tiny-8l","training":{"global_batch_size":64,"precision":"fp8"},"cluster":"demo-mixed-16"})", nullptr,
     "scenario.training.precision: \"fp8\" cannot run on cluster.groups[0] (a100-sxm4-80gb): the device has no fp8_tflops rate (no fp8 tensor cores); every group trains in the one precision, so choose one all its GPUs run (here: bf16)\n"
     "scenario.training.precision: \"fp8\" cannot run on cluster.groups[1] (v100-sxm2-32gb): the device has no fp8_tflops rate (no fp8 tensor cores); every group trains in the one precision, so choose one all its GPUs run (here: bf16)"},
    {"misspelled recompute", R"({"model":"tiny-8l","training":{"global_batch_size":64,"recompute":"ful"},"cluster":"demo-mixed-16"})", nullptr,
     "scenario.training.recompute: \"ful\" is not allowed; expected one of \"none\", \"selective\", \"full\" (did you mean \"full\"?)"},
    {"heads do not divide hidden_size",
     R"({"model":{"name":"m","num_layers":2,"hidden_size":100,"num_attention_heads":3,"vocab_size":10,"seq_length":8},"training":{"global_batch_size":64},"cluster":"demo-mixed-16"})",
     nullptr, "scenario.model.num_attention_heads: 3 does not divide hidden_size 100; the head dimension must be an integer"},
    {"kv heads do not divide heads",
     R"({"model":{"name":"m","num_layers":2,"hidden_size":96,"num_attention_heads":12,"num_kv_heads":5,"vocab_size":10,"seq_length":8},"training":{"global_batch_size":64},"cluster":"demo-mixed-16"})",
     nullptr, "scenario.model.num_kv_heads: 5 does not divide num_attention_heads 12; grouped-query attention needs heads to be a multiple of kv heads"},
    {"more than 10,000 layers",
     R"({"model":{"name":"m","num_layers":20000,"hidden_size":96,"num_attention_heads":12,"vocab_size":10,"seq_length":8},"training":{"global_batch_size":64},"cluster":"demo-mixed-16"})",
     nullptr, "scenario.model.num_layers: 20000 is out of range; expected an integer in [1, 10000]"},
    {"unknown position embedding",
     R"({"model":{"name":"m","num_layers":2,"hidden_size":96,"num_attention_heads":12,"vocab_size":10,"seq_length":8,"position_embedding":"alibi"},"training":{"global_batch_size":64},"cluster":"demo-mixed-16"})",
     nullptr, "scenario.model.position_embedding: \"alibi\" is not allowed; expected one of \"learned\", \"rope\""},
    {"dropout above 1",
     R"({"model":{"name":"m","num_layers":2,"hidden_size":96,"num_attention_heads":12,"vocab_size":10,"seq_length":8,"hidden_dropout":1.5},"training":{"global_batch_size":64},"cluster":"demo-mixed-16"})",
     nullptr, "scenario.model.hidden_dropout: 1.5 is out of range; expected a finite number >= 0 and <= 1"},
    {"dropout as a percentage string",
     R"({"model":{"name":"m","num_layers":2,"hidden_size":96,"num_attention_heads":12,"vocab_size":10,"seq_length":8,"attention_dropout":"10%"},"training":{"global_batch_size":64},"cluster":"demo-mixed-16"})",
     nullptr, "scenario.model.attention_dropout: \"10%\" is a string; expected a finite number >= 0 and <= 1", true},
    {"more than 1,000,000 GPUs",
     R"({"model":"tiny-8l","training":{"global_batch_size":64},"cluster":{"name":"c","groups":[{"device":"t4-16gb","nodes":1000000,"gpus_per_node":2,"inter_node_bw_GBps":1}]}})",
     nullptr, "scenario.cluster.groups: 2000000 GPUs in all is too many; at most 1000000"},
    {"truncated device id",
     R"({"model":"tiny-8l","training":{"global_batch_size":64},"cluster":{"name":"c","groups":[{"device":"h100-sxm5","nodes":1,"gpus_per_node":8,"inter_node_bw_GBps":1}]}})",
     nullptr, "scenario.cluster.groups[0].device: \"h100-sxm5\" is not a device preset (did you mean \"h100-sxm5-80gb\"?); known: ", true},
    {"memory_GiB negative zero",
     R"({"model":"tiny-8l","training":{"global_batch_size":64},"cluster":{"name":"c","groups":[{"device":{"name":"d","peak_tflops":1,"memory_GiB":-0.0,"memory_bw_GBps":1,"intra_node_bw_GBps":1},"nodes":1,"gpus_per_node":8,"inter_node_bw_GBps":1}]}})",
     nullptr, "scenario.cluster.groups[0].device.memory_GiB: -0.0 is out of range; expected a finite number > 0 and <= 1000000"},
    {"matmul_efficiency 0",
     R"({"model":"tiny-8l","training":{"global_batch_size":64},"cluster":{"name":"c","groups":[{"device":{"name":"d","peak_tflops":1,"memory_GiB":1,"memory_bw_GBps":1,"intra_node_bw_GBps":1,"matmul_efficiency":0},"nodes":1,"gpus_per_node":8,"inter_node_bw_GBps":1}]}})",
     nullptr, "scenario.cluster.groups[0].device.matmul_efficiency: 0 is out of range; expected a finite number > 0 and <= 1"},
    {"peak_tflops 1e-320 (it passed > 0 and gave an iteration of inf s)",
     R"({"model":"tiny-8l","training":{"global_batch_size":64},"cluster":{"name":"c","groups":[{"device":{"name":"d","peak_tflops":1e-320,"memory_GiB":1,"memory_bw_GBps":1,"intra_node_bw_GBps":1},"nodes":1,"gpus_per_node":8,"inter_node_bw_GBps":1}]}})",
     nullptr, "scenario.cluster.groups[0].device.peak_tflops: 1e-320 is out of range; expected a finite number > 0 and <= 1000000, and at least 1e-09 (a smaller rate, time or fraction is not physical, and the model's arithmetic would overflow)"},
    {"a link's bandwidth 1e-10 GB/s",
     R"({"model":"tiny-8l","training":{"global_batch_size":64},"cluster":{"name":"c","groups":[{"device":"t4-16gb","nodes":1,"gpus_per_node":8,"inter_node_bw_GBps":1e-10}]}})",
     nullptr, "scenario.cluster.groups[0].inter_node_bw_GBps: 1e-10 is out of range; expected a finite number > 0 and <= 1000000, and at least 1e-09", true},
    {"unknown intra-node link",
     R"({"model":"tiny-8l","training":{"global_batch_size":64},"cluster":{"name":"c","groups":[{"device":{"name":"d","peak_tflops":1,"memory_GiB":1,"memory_bw_GBps":1,"intra_node_bw_GBps":1,"intra_node_link":"nvswitch"},"nodes":1,"gpus_per_node":8,"inter_node_bw_GBps":1}]}})",
     nullptr, "scenario.cluster.groups[0].device.intra_node_link: \"nvswitch\" is not allowed; expected one of \"nvlink\", \"nvlink_cube_mesh\", \"nvlink_mesh\", \"pcie\", \"pcie_host\", \"infinity_fabric\""},
    {"framework overhead above the memory",
     R"({"model":"tiny-8l","training":{"global_batch_size":64},"cluster":{"name":"c","groups":[{"device":{"name":"d","peak_tflops":1,"memory_GiB":80,"memory_bw_GBps":1,"intra_node_bw_GBps":1,"framework_overhead_GiB":100},"nodes":1,"gpus_per_node":8,"inter_node_bw_GBps":1}]}})",
     nullptr, "scenario.cluster.groups[0].device.framework_overhead_GiB: 100 is more than memory_GiB 80; expected at most the GPU's memory, which the CUDA context, NCCL buffers and workspaces come out of"},
    {"negative kernel overhead",
     R"({"model":"tiny-8l","training":{"global_batch_size":64},"cluster":{"name":"c","groups":[{"device":{"name":"d","peak_tflops":1,"memory_GiB":1,"memory_bw_GBps":1,"intra_node_bw_GBps":1,"kernel_overhead_us":-1},"nodes":1,"gpus_per_node":8,"inter_node_bw_GBps":1}]}})",
     nullptr, "scenario.cluster.groups[0].device.kernel_overhead_us: -1 is out of range; expected a finite number >= 0 and <= 1000000"},
    {"groups is an object", R"({"model":"tiny-8l","training":{"global_batch_size":64},"cluster":{"name":"c","groups":{}}})", nullptr,
     "scenario.cluster.groups: {} is not allowed; expected an array of 1 to 64 groups"},
    {"empty plan", nullptr, "", "plan: empty input; expected a JSON object"},
    {"plan is a string", nullptr, R"("1f1b")", "plan: \"1f1b\" is a string; expected an object"},
    {"tp does not divide heads", nullptr,
     R"({"micro_batch_size":8,"num_micro_batches":8,"stages":[{"group":0,"num_layers":4,"tp":3,"dp":2},{"group":1,"num_layers":4,"tp":2,"dp":4}]})",
     "plan.stages[0].tp: 3 does not divide num_attention_heads 8"},
    {"tp larger than a node", nullptr,
     R"({"micro_batch_size":8,"num_micro_batches":8,"stages":[{"group":0,"num_layers":4,"tp":8,"dp":1},{"group":1,"num_layers":4,"tp":16,"dp":1}]})",
     "plan.stages[1].tp: 16 does not divide num_attention_heads 8\n"
     "plan.stages: use 16 GPUs of group 1 (NVIDIA V100 SXM2 32GB) but it has 8 (1 nodes x 8)"},
    {"layers do not sum to the model", nullptr,
     R"({"micro_batch_size":8,"num_micro_batches":8,"stages":[{"group":0,"num_layers":4,"tp":2,"dp":4},{"group":1,"num_layers":5,"tp":2,"dp":4}]})",
     "plan.stages: num_layers sum to 9, not the model's num_layers 8; every layer goes to exactly one stage"},
    {"more GPUs than a group has", nullptr,
     R"({"micro_batch_size":8,"num_micro_batches":8,"stages":[{"group":0,"num_layers":4,"tp":2,"dp":4},{"group":0,"num_layers":4,"tp":2,"dp":2}]})",
     "plan.stages: use 12 GPUs of group 0 (NVIDIA A100 SXM4 80GB) but it has 8 (1 nodes x 8)"},
    {"micro-batches do not multiply to the global batch", nullptr,
     R"({"micro_batch_size":8,"num_micro_batches":9,"stages":[{"group":0,"num_layers":4,"tp":2,"dp":4},{"group":1,"num_layers":4,"tp":2,"dp":4}]})",
     "plan.num_micro_batches: 8 x 9 = 72 samples does not equal training.global_batch_size 64; micro_batch_size x num_micro_batches must equal it"},
    {"dp does not divide the micro-batch", nullptr,
     R"({"micro_batch_size":8,"num_micro_batches":8,"stages":[{"group":0,"num_layers":4,"tp":2,"dp":3},{"group":1,"num_layers":4,"tp":2,"dp":4}]})",
     "plan.stages[0].dp: 3 does not divide micro_batch_size 8; each data-parallel replica takes an equal share of the micro-batch"},
    {"group that does not exist", nullptr,
     R"({"micro_batch_size":8,"num_micro_batches":8,"stages":[{"group":0,"num_layers":4,"tp":2,"dp":4},{"group":2,"num_layers":4,"tp":2,"dp":4}]})",
     "plan.stages[1].group: 2 is not a group of the cluster; expected 0..1"},
    {"replica samples do not sum to the micro-batch", nullptr,
     R"({"micro_batch_size":8,"num_micro_batches":8,"stages":[{"group":0,"num_layers":4,"tp":2,"dp":4},{"num_layers":4,"replicas":[{"group":1,"tp":2,"samples":5},{"group":1,"tp":2,"samples":5}]}]})",
     "plan.stages[1].replicas: samples sum to 10, not micro_batch_size 8; they must sum to it"},
    {"misspelled replica key", nullptr,
     R"({"micro_batch_size":8,"num_micro_batches":8,"stages":[{"group":0,"num_layers":4,"tp":2,"dp":4},{"num_layers":4,"replicas":[{"group":1,"tp":2,"sample":8}]}]})",
     "plan.stages[1].replicas[0].sample: unknown key (did you mean \"samples\"?); allowed keys are documented in docs/formats.md\n"
     "plan.stages[1].replicas[0].samples: is missing; expected an integer in [1, 100000000]"},
    {"more than 100,000 micro-batches", nullptr,
     R"({"micro_batch_size":8,"num_micro_batches":200000,"stages":[{"group":0,"num_layers":4,"tp":2,"dp":4},{"group":1,"num_layers":4,"tp":2,"dp":4}]})",
     "plan.num_micro_batches: 200000 is out of range; expected an integer in [1, 100000]"},
    {"schedule in capitals", nullptr,
     R"({"micro_batch_size":8,"num_micro_batches":8,"schedule":"1F1B","stages":[{"group":0,"num_layers":4,"tp":2,"dp":4},{"group":1,"num_layers":4,"tp":2,"dp":4}]})",
     "plan.schedule: \"1F1B\" is not allowed; expected one of \"1f1b\", \"interleaved-1f1b\" (did you mean \"1f1b\"?)"},
    {"misspelled stages", nullptr, R"({"micro_batch_size":8,"num_micro_batches":8,"stage":[]})",
     "plan.stage: unknown key (did you mean \"stages\"?); allowed keys are documented in docs/formats.md\n"
     "plan.stages: is missing; expected an array of 1 to 1000 stages"},
    {"stage is a number", nullptr, R"({"micro_batch_size":8,"num_micro_batches":8,"stages":[4]})", "plan.stages[0]: 4 is a number; expected an object"},
    {"stages x micro-batches beyond the DAG limit",
     R"({"model":{"name":"m","num_layers":16,"hidden_size":64,"num_attention_heads":8,"vocab_size":100,"seq_length":8},"training":{"global_batch_size":100000},"cluster":"demo-mixed-16"})",
     R"({"micro_batch_size":1,"num_micro_batches":100000,"stages":[
       {"group":0,"num_layers":1,"tp":1,"dp":1},{"group":0,"num_layers":1,"tp":1,"dp":1},{"group":0,"num_layers":1,"tp":1,"dp":1},{"group":0,"num_layers":1,"tp":1,"dp":1},
       {"group":0,"num_layers":1,"tp":1,"dp":1},{"group":0,"num_layers":1,"tp":1,"dp":1},{"group":0,"num_layers":1,"tp":1,"dp":1},{"group":0,"num_layers":1,"tp":1,"dp":1},
       {"group":1,"num_layers":1,"tp":1,"dp":1},{"group":1,"num_layers":1,"tp":1,"dp":1},{"group":1,"num_layers":1,"tp":1,"dp":1},{"group":1,"num_layers":1,"tp":1,"dp":1},
       {"group":1,"num_layers":1,"tp":1,"dp":1},{"group":1,"num_layers":1,"tp":1,"dp":1},{"group":1,"num_layers":1,"tp":1,"dp":1},{"group":1,"num_layers":1,"tp":1,"dp":1}]})",
     "plan.num_micro_batches: 16 stages x 100000 micro-batches is too large a DAG; at most 1000000 stage x micro-batch cells"},
};

}  // namespace

TEST_CASE("malformed scenarios and plans are refused with the exact message", "[robustness][validation]") {
    static_assert(sizeof kMalformed / sizeof kMalformed[0] >= 30, "at least 30 malformed inputs");
    for (const auto& m : kMalformed) {
        SECTION(m.name) {
            const std::string got = problems_of(m.scenario ? m.scenario : kScenario, m.plan);
            if (m.prefix)
                CHECK_THAT(got, Catch::Matchers::StartsWith(m.expected));
            else
                CHECK(got == m.expected);
        }
    }
}

TEST_CASE("a search result or an estimate given as a plan gets one line that says which part to pass", "[robustness][validation]") {
    const Scenario sc = parse_scenario_text(R"({"model": "gpt3-1.7b", "training": {"global_batch_size": 64}, "cluster": "demo-mixed-16"})");
    const std::string plan = R"({"micro_batch_size": 8, "num_micro_batches": 8, "stages": [{"group": 0, "num_layers": 24, "tp": 1, "dp": 8}]})";
    const std::pair<std::string, std::string> cases[] = {
        {R"({"plans": [{"plan": )" + plan + R"(, "iteration_time_s": 1}], "baselines": [], "stats": {}})", "plans[0].plan"},
        {R"({"plan": )" + plan + R"(, "iteration_time_s": 1})", "the value of its \"plan\" key"}};
    for (const auto& [text, hint] : cases) {
        INFO(text);
        try {
            (void)parse_plan_text(text, sc);
            FAIL("accepted");
        } catch (const InputError& e) {
            REQUIRE(e.problems().size() == 1);
            CHECK(e.problems()[0].path == "plan");
            CHECK(e.problems()[0].message.find(hint) != std::string::npos);
        }
    }
}

TEST_CASE("plans built in code are checked before the cost model sees them", "[robustness][validation]") {
    const Scenario sc = parse_scenario_text(kScenario);
    const Plan good = parse_plan_text(kPlan, sc);
    auto problems_for = [&](Plan p) {
        Problems problems;
        validate_plan(p, sc, problems);
        std::string all;
        for (const auto& q : problems.items()) all += q.line() + "\n";
        return all;
    };
    CHECK(problems_for(good).empty());
    Plan p = good;
    p.stages[0].replicas[0].tp = 0;
    CHECK(problems_for(p) == "plan.stages[0].tp: 0 is out of range; expected an integer in [1, 1024]\n");
    p = good;
    p.stages[1].replicas.clear();
    CHECK(problems_for(p) == "plan.stages[1].replicas: 0 replicas; expected 1 to 4096\n");
    p = good;
    p.stages.clear();
    CHECK(problems_for(p) == "plan.stages: 0 stages; expected 1 to 1000 stages\n");
    p = good;
    p.num_micro_batches = 0;
    CHECK(problems_for(p) == "plan.num_micro_batches: 0 is out of range; expected an integer in [1, 100000]\n");
    p = good;
    p.stages[0].replicas[0].group = 7;
    CHECK(problems_for(p) == "plan.stages[0].group: 7 is not a group of the cluster; expected 0..1\n");
    p = good;
    p.stages[1].replicas[0].samples = 0;
    p.stages[1].homogeneous_form = false;
    CHECK_THROWS_AS(estimate(sc, p), InputError);
}

TEST_CASE("a normalised plan parses back to itself", "[robustness][validation]") {
    const Scenario sc = parse_scenario_text(kScenario);
    const Plan p = parse_plan_text(kPlan, sc);
    CHECK(parse_plan_text(to_json(p).dump(), sc) == p);
    const Scenario again = parse_scenario(to_json(sc));
    CHECK(again.model.num_layers == sc.model.num_layers);
    CHECK(again.cluster.num_gpus() == sc.cluster.num_gpus());
}

TEST_CASE("settings that change nothing are accepted and named in notes", "[robustness][notes]") {
    const Scenario sc = parse_scenario_text(R"({"model":"gpt3-1.7b","training":{"global_batch_size":64,"tf32":true,"tp_comm_overlap":true,"sequence_parallel":true,
      "stack":"megatron-lm-2021"},"cluster":{"name":"c","inter_group_bw_GBps":1000,"groups":[
      {"device":"a100-sxm4-80gb","nodes":1,"gpus_per_node":8,"inter_node_bw_GBps":25},
      {"device":"v100-sxm2-32gb","nodes":1,"gpus_per_node":8,"inter_node_bw_GBps":12.5}]}})");
    const std::vector<std::string> notes = scenario_notes(sc);
    REQUIRE(notes.size() == 5);
    CHECK(notes[0] == "training.tf32 changes nothing with precision bf16: TF32 is a rate for fp32 matrix products");
    CHECK(notes[1] == "training.tp_comm_overlap changes nothing with the megatron-lm-2021 stack: its tp_comm_overlap_fraction is 0 (no Transformer Engine userbuffers)");
    CHECK(notes[2] ==
          "training.precision bf16: v100-sxm2-32gb has no bf16 (pre-Ampere); costed at the same fp16 tensor rate, as fp16 mixed precision with loss scaling would train there");
    CHECK(notes[3] ==
          "training.flash_attention: v100-sxm2-32gb runs no fused attention (device flash_attention false: Transformer Engine's fused attention needs Ampere or newer); attention "
          "there is "
          "costed unfused, its s x s scores in memory");
    CHECK(notes[4] == "cluster.inter_group_bw_GBps 1000 changes nothing: no node's NIC is faster, at most 25 GB/s per node here");
    const Plan plan = parse_plan_text(R"({"micro_batch_size":8,"num_micro_batches":8,"stages":[{"group":0,"num_layers":16,"tp":1,"dp":8},{"group":1,"num_layers":8,"tp":1,"dp":8}]})", sc);
    const Estimate e = estimate(sc, plan);
    CHECK(e.notes == notes);
    CHECK(to_json(sc, e)["notes"].size() == 5);
    // a cap below the NICs binds, fp32 with TF32 uses it, a stack with userbuffers overlaps, no flash
    // attention asked of the V100s: no notes
    const Scenario used = parse_scenario_text(R"({"model":"gpt3-1.7b","training":{"global_batch_size":64,"tf32":true,"precision":"fp32","tp_comm_overlap":true,"sequence_parallel":true,"flash_attention":false},
      "cluster":{"name":"c","inter_group_bw_GBps":5,"groups":[{"device":"a100-sxm4-80gb","nodes":1,"gpus_per_node":8,"inter_node_bw_GBps":25},
      {"device":"v100-sxm2-32gb","nodes":1,"gpus_per_node":8,"inter_node_bw_GBps":12.5}]}})");
    CHECK(scenario_notes(used).empty());
    CHECK(estimate(used, plan).notes.empty());
    // the MoE settings on a dense model, and windows that window nothing
    const auto notes_of = [](const char* model, const char* training) {
        return scenario_notes(parse_scenario_text(std::string(R"({"model":)") + model + R"(,"training":{"global_batch_size":64)" + training + R"(},"cluster":"dgx-h100-16"})"));
    };
    CHECK(notes_of(R"("llama3-8b")", R"(,"moe_imbalance":2,"moe_token_dispatcher":"flex")") ==
          std::vector<std::string>{"training.moe_imbalance 2 changes nothing: the model has no routed experts",
                                   "training.moe_token_dispatcher \"flex\" changes nothing: the model has no routed experts"});
    CHECK(notes_of(R"({"preset":"llama3-8b","sliding_window":128,"sliding_window_pattern":[0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0]})", "") ==
          std::vector<std::string>{"model.sliding_window changes nothing: sliding_window_pattern gives no block the window"});
    CHECK(notes_of(R"({"preset":"llama3-8b","sliding_window":8192})", "") ==
          std::vector<std::string>{"model.sliding_window 8192 changes nothing: a window of at least seq_length 8192 is full attention"});
    CHECK(notes_of(R"({"preset":"llama3-8b","sliding_window":128})", "").empty());
    CHECK(notes_of(R"("qwen3-30b-a3b")", R"(,"moe_imbalance":2,"moe_token_dispatcher":"flex")").empty());
    // a plan's own: a CP exchange chosen where no stage splits its sequence
    const Scenario a2a = parse_scenario_text(R"({"model":"llama3-8b","training":{"global_batch_size":64,"cp_comm_type":"a2a"},"cluster":"dgx-h100-16"})");
    const auto plan_of = [&](int cp) {
        return parse_plan_text(R"({"micro_batch_size":8,"num_micro_batches":8,"stages":[{"group":0,"num_layers":32,"tp":2,"dp":)" + std::to_string(8 / cp) +
                                   R"(,"cp":)" + std::to_string(cp) + "}]}",
                               a2a);
    };
    CHECK_THAT(estimate(a2a, plan_of(1), false).notes,
               Catch::Matchers::VectorContains(std::string("training.cp_comm_type \"a2a\" changes nothing in this plan: no stage splits its sequence (cp 1)")));
    CHECK(estimate(a2a, plan_of(2), false).notes.empty());
    // a RoPE base beside learned positions; MLA's num_kv_heads, which it ignores
    CHECK(notes_of(R"({"preset":"gpt3-1.7b","rope_theta":10000})", "") ==
          std::vector<std::string>{"model.rope_theta plays no part with position_embedding \"learned\": it is the base of rotary positions (position_embedding \"rope\"), and "
                                   "the Megatron-LM command then writes no --rotary-base"});
    CHECK(notes_of(R"({"preset":"llama3-8b","rope_theta":500000})", "").empty());
    CHECK(notes_of(R"({"preset":"deepseek-v3","head_dim":128})", "") ==
          std::vector<std::string>{"model.head_dim 128 plays no part with attention \"mla\": its heads are qk_nope_head_dim + qk_rope_head_dim (queries, keys) and "
                                   "v_head_dim (values)"});
    CHECK(notes_of(R"({"preset":"deepseek-v3","num_kv_heads":3})", "") ==
          std::vector<std::string>{"model.num_kv_heads 3 plays no part with attention \"mla\": multi-latent attention up-projects its keys and values for all 128 heads"});
}

TEST_CASE("multi-latent attention ignores num_kv_heads: no divisibility asked of it, none of TP by it", "[scenario][mla]") {
    // 3 does not divide DeepSeek-V3's 128 heads, and TP 8 would not divide 3 KV heads: under MLA
    // the keys and values have all 128 heads (docs/formats.md, "model")
    const Scenario sc = parse_scenario_text(R"({"model":{"preset":"deepseek-v3","num_layers":7,"mtp_layers":0,"num_kv_heads":3},"training":{"global_batch_size":64},"cluster":"dgx-h100-16"})");
    const Scenario ref = parse_scenario_text(R"({"model":{"preset":"deepseek-v3","num_layers":7,"mtp_layers":0},"training":{"global_batch_size":64},"cluster":"dgx-h100-16"})");
    const char* plan = R"({"micro_batch_size":8,"num_micro_batches":8,"stages":[{"group":0,"num_layers":3,"tp":8,"dp":1},{"group":0,"num_layers":4,"tp":1,"dp":8,"ep":8}]})";
    const Estimate e = estimate(sc, parse_plan_text(plan, sc), false), r = estimate(ref, parse_plan_text(plan, ref), false);
    CHECK(e.iteration_time_s == r.iteration_time_s);
    CHECK(e.stages[0].memory.total_GiB() == r.stages[0].memory.total_GiB());
    // and a stage that holds only the leading dense blocks says its expert grid changes nothing
    const char* dense_first = R"({"micro_batch_size":8,"num_micro_batches":8,"stages":[{"group":0,"num_layers":3,"tp":1,"dp":8,"ep":8},{"group":0,"num_layers":4,"tp":1,"dp":8,"ep":8}]})";
    CHECK_THAT(estimate(ref, parse_plan_text(dense_first, ref), false).notes,
               Catch::Matchers::VectorContains(std::string("plan.stages[0]: ep 8 changes nothing there: the stage holds only the model's leading dense blocks (blocks 0-2), so no experts")));
    // (nothing about the stages or the model: at most the MoE layers' host wait)
    for (const std::string& n : estimate(ref, parse_plan_text(plan, ref), false).notes) CHECK(n.rfind("MoE host wait", 0) == 0);
    // a later stage of dense blocks only is named by its own blocks
    const char* second = R"({"micro_batch_size":8,"num_micro_batches":8,"stages":[{"group":0,"num_layers":2,"tp":1,"dp":8,"ep":8},{"group":0,"num_layers":1,"tp":1,"dp":8,"ep":8},{"group":0,"num_layers":4,"tp":1,"dp":8,"ep":8}]})";
    const Scenario three = parse_scenario_text(R"({"model":{"preset":"deepseek-v3","num_layers":7,"mtp_layers":0},"training":{"global_batch_size":64},"cluster":{"name":"c","groups":[{"device":"h100-sxm5-80gb","nodes":3,"gpus_per_node":8,"inter_node_bw_GBps":50}]}})");
    CHECK_THAT(estimate(three, parse_plan_text(second, three), false).notes,
               Catch::Matchers::VectorContains(std::string("plan.stages[1]: ep 8 changes nothing there: the stage holds only the model's leading dense blocks (block 2), so no experts")));
    CHECK_THAT(estimate(three, parse_plan_text(second, three), false).notes,
               Catch::Matchers::VectorContains(std::string("plan.stages[0]: ep 8 changes nothing there: the stage holds only the model's leading dense blocks (blocks 0-1), so no experts")));
}
