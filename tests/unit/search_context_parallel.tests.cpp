// Context parallelism as a search dimension (docs/search.md, "Context parallelism"): from 8,192
// tokens a sequence the search runs once per context-parallel size, every stage of a plan with the
// same cp; pruned = exhaustive over the sizes, slices walk them too, plans carry their cp and are
// estimated as listed, and shorter sequences are searched exactly as before.
#include <catch2/catch.hpp>

#include <random>
#include <string>

#include "poseidon/estimate.hpp"
#include "poseidon/scenario.hpp"
#include "poseidon/search.hpp"
#include "../../core/src/search_driver.hpp"
#include "search_random.hpp"

using namespace poseidon;

using search_test::quiet;
using search_test::random_scenario;
using search_test::require_pruned_equals_exhaustive;

namespace {

// A random scenario of search_random.hpp with a long sequence: 8,192 or 16,384 tokens (cp 2, or
// cp 2 and 4), a small model so that the exhaustive search stays short.
Scenario long_sequence(std::uint64_t seed) {
    std::mt19937_64 rng(seed);
    Json j = random_scenario(rng);
    j["model"]["seq_length"] = seed % 2 ? 8192 : 16384;
    j["model"]["num_layers"] = std::min(j["model"]["num_layers"].get<int>(), 6);
    j["training"]["flash_attention"] = true;
    if (seed % 5 == 0) j["training"]["cp_comm_type"] = "a2a";
    return parse_scenario(j);
}

}  // namespace

TEST_CASE("with long sequences the pruned search returns the exhaustive top-K over every context-parallel size", "[search][differential][cp]") {
    int checked = 0, with_cp = 0, a2a_split = 0;
    std::int64_t pruned_evals = 0, exhaustive_evals = 0;
    const SearchOptions pruned = quiet(3), exhaustive = quiet(3, true);
    for (std::uint64_t seed = 9000; checked < 40; ++seed) {
        const Scenario sc = long_sequence(seed);
        if (search_space_size(sc, false).plans > 3e4) continue;
        INFO("seed " << seed << ": " << to_json(sc).dump());
        const SearchResult pr = require_pruned_equals_exhaustive(sc, pruned, exhaustive, pruned_evals, exhaustive_evals);
        for (const auto& e : pr.plans) {
            const int cp = e.plan.stages[0].cp;
            for (const auto& st : e.plan.stages) {
                REQUIRE(st.cp == cp);
                REQUIRE(sc.model.seq_length % (2 * cp) == 0);
                REQUIRE(st.gpus() == st.replicas[0].tp * st.replicas[0].count * cp);
            }
            // the plan as listed is the plan estimate scores
            REQUIRE(estimate(sc, e.plan).iteration_time_s == e.iteration_time_s);
            with_cp += cp > 1;
        }
        // (a2a scenarios whose KV heads no cp above 1 splits search cp 1 alone, without the note)
        bool noted = false;
        for (const auto& n : pr.stats.notes) noted = noted || n.rfind("context parallelism: cp ", 0) == 0;
        REQUIRE(noted == (detail::context_parallel_sizes(sc).size() > 1));
        a2a_split += sc.training.cp_comm_type == "a2a" && noted;
        ++checked;
    }
    // (65 of the 120 listed plans have cp > 1, 5 of the scenarios are a2a with cp above 1; 843
    // pruned evaluations against 115,329. Before a2a needed the KV heads split as well: 98, 1,011
    // against 217,576)
    CHECK(with_cp >= 20);
    CHECK(a2a_split >= 3);
    CHECK(pruned_evals * 20 < exhaustive_evals);
}

TEST_CASE("merged slices of a long-sequence search equal the whole search: each slice walks every context-parallel size", "[search][shards][cp]") {
    int checked = 0;
    for (std::uint64_t seed = 9000; checked < 10; ++seed) {
        const Scenario sc = long_sequence(seed);
        if (search_space_size(sc, false).plans > 3e4) continue;
        INFO("seed " << seed << ": " << to_json(sc).dump());
        const SearchOptions o = quiet(3, false, 1);
        const SearchResult whole = search(sc, o);
        REQUIRE(whole.stats.complete);
        for (int count : {1, 3}) {
            std::vector<ShardResult> shards;
            SearchOptions so = o;
            so.shard_count = count;
            for (int i = 0; i < count; ++i) {
                so.shard_index = i;
                shards.push_back(search_shard(sc, so));
            }
            const SearchResult m = merge_shards(sc, shards, o);
            REQUIRE(m.plans.size() == whole.plans.size());
            for (std::size_t k = 0; k < m.plans.size(); ++k) {
                REQUIRE(m.plans[k].plan == whole.plans[k].plan);
                REQUIRE(m.scores[k] == whole.scores[k]);
            }
        }
        ++checked;
    }
}

TEST_CASE("at 65,536 tokens the best plan splits the sequence: faster than TP alone, and it fits where data parallelism alone does not", "[search][cp]") {
    // GPT-3 1.7B at 65,536 tokens on 8 A100-80GB (one node)
    const Scenario sc = parse_scenario_text(
        R"({"model": {"preset": "gpt3-1.7b", "seq_length": 65536}, "training": {"global_batch_size": 8, "flash_attention": true, "recompute": "selective"},)"
        R"( "cluster": {"name": "8 A100", "groups": [{"device": "a100-sxm4-80gb", "nodes": 1, "gpus_per_node": 8, "inter_node_bw_GBps": 25}]}})");
    const SearchResult r = search(sc, quiet(3, false, 1));
    REQUIRE(r.stats.complete);
    REQUIRE(!r.plans.empty());
    CHECK(r.plans[0].plan.stages[0].cp > 1);
    // the same GPUs without CP: TP 8 fits and is slower (its all-reduces carry the whole
    // sequence); data parallelism alone holds a whole sequence's activations per GPU and does not fit
    const Estimate tp8 = estimate(sc, parse_plan_text(R"({"micro_batch_size":1,"num_micro_batches":8,"stages":[{"group":0,"num_layers":24,"tp":8,"dp":1}]})", sc));
    CHECK(tp8.memory_fits);
    CHECK(tp8.iteration_time_s > r.plans[0].iteration_time_s);
    const Estimate dp8 = estimate(sc, parse_plan_text(R"({"micro_batch_size":8,"num_micro_batches":1,"stages":[{"group":0,"num_layers":24,"tp":1,"dp":8}]})", sc));
    CHECK_FALSE(dp8.memory_fits);
}

TEST_CASE("search_space_size counts every context-parallel size and expert grid the exhaustive search walks", "[search][space][cp][ep]") {
    // models that fit anywhere (no option dropped for memory), at 16,384 tokens: cp 4, 2 and 1;
    // the MoE one also over its expert grids
    for (const char* model : {R"({"preset": "tiny-8l", "seq_length": 16384})",
                              R"({"preset": "tiny-8l", "seq_length": 16384, "num_experts": 4, "moe_top_k": 1, "moe_ffn_hidden_size": 128})"}) {
        // (not demo-mixed-16: its V100s run attention unfused, whose s x s scores do not fit here)
        const Scenario sc = parse_scenario_text(std::string(R"({"model": )") + model + R"(, "training": {"global_batch_size": 8}, "cluster": {"name": "8 A100-80GB + 8 A100-40GB", "groups": [)"
                                                R"({"device": "a100-sxm4-80gb", "nodes": 1, "gpus_per_node": 8, "inter_node_bw_GBps": 25}, {"device": "a100-sxm4-40gb", "nodes": 1, "gpus_per_node": 8, "inter_node_bw_GBps": 25}]}})");
        INFO(model);
        const SearchResult r = search(sc, quiet(1, true));
        REQUIRE(r.stats.complete);
        CHECK(r.stats.infeasible.count("memory") == 0);
        CHECK(static_cast<double>(r.stats.configurations) == search_space_size(sc).configurations);
        Scenario one = sc;
        one.model.seq_length = 4096;  // one size
        CHECK(search_space_size(sc).configurations > search_space_size(one).configurations);
    }
}

TEST_CASE("below 8,192 tokens the search runs one context-parallel size, as before", "[search][cp]") {
    const Scenario sc = parse_scenario_text(R"({"model": "gpt3-1.7b", "training": {"global_batch_size": 64}, "cluster": "demo-mixed-16"})");
    const SearchResult r = search(sc, quiet(3, false, 1));
    for (const auto& n : r.stats.notes) CHECK(n.find("context parallelism") == std::string::npos);
    for (const auto& e : r.plans) CHECK(e.plan.stages[0].cp == 1);
}

TEST_CASE("a sliding-window model splits its sequence only over a2a or all_gather: TE's p2p ring runs no window", "[search][cp][window]") {
    // GPT-OSS 120B's alternate 128-token windows at 16,384 tokens (frontier-facts.md section 4:
    // sliding-window attention only with a2a or all_gather)
    auto gpt_oss = [](const char* comm) {
        return parse_scenario_text(std::string(R"({"model": {"preset": "gpt-oss-120b", "seq_length": 16384}, "cluster": "dgx-h100-16",)") +
                                   R"( "training": {"global_batch_size": 64, "cp_comm_type": ")" + comm + R"("}})");
    };
    const Scenario p2p = gpt_oss("p2p"), a2a = gpt_oss("a2a");
    CHECK(detail::context_parallel_sizes(p2p) == std::vector<int>{1});
    CHECK(detail::context_parallel_sizes(a2a) == std::vector<int>{4, 2, 1});
    const std::string plan = R"({"micro_batch_size": 8, "num_micro_batches": 8, "stages": [{"group": 0, "num_layers": 36, "tp": 1, "dp": 8, "cp": 2, "ep": 8}]})";
    CHECK_THROWS_WITH(parse_plan_text(plan, p2p), Catch::Matchers::Contains("cp: 2 with the model's sliding-window attention needs training.cp_comm_type \"a2a\" or \"all_gather\""));
    CHECK_NOTHROW(parse_plan_text(plan, a2a));
    // a window on no block (a pattern that windows none; the note says it changes nothing) leaves
    // the ring free
    const Scenario none = parse_scenario_text(
        R"({"model": {"preset": "llama3-8b", "seq_length": 16384, "sliding_window": 128, "sliding_window_pattern": 1}, "cluster": "dgx-h100-16", "training": {"global_batch_size": 64}})");
    CHECK(scenario_notes(none) == std::vector<std::string>{"model.sliding_window changes nothing: sliding_window_pattern gives no block the window"});
    CHECK(detail::context_parallel_sizes(none) == std::vector<int>{4, 2, 1});
    CHECK_NOTHROW(parse_plan_text(R"({"micro_batch_size": 8, "num_micro_batches": 8, "stages": [{"group": 0, "num_layers": 32, "tp": 1, "dp": 8, "cp": 2}]})", none));
}

TEST_CASE("Ulysses (a2a) splits the KV heads of each TP rank over cp as well: no replication to make up a share", "[search][cp][a2a]") {
    // Llama 3 8B: 32 heads, 8 KV heads. Transformer Engine's all-to-all reshapes the keys' and
    // values' heads into cp parts like the queries' (grid_rules.hpp, a2a_heads_problem)
    const Scenario sc = parse_scenario_text(R"({"model":{"preset":"llama3-8b","seq_length":65536},"cluster":"dgx-h100-16","training":{"global_batch_size":16,"cp_comm_type":"a2a"}})");
    const auto plan = [](int tp, int cp) {
        return std::string(R"({"micro_batch_size":1,"num_micro_batches":16,"stages":[{"group":0,"num_layers":32,"tp":)") + std::to_string(tp) + R"(,"dp":1,"cp":)" +
               std::to_string(cp) + "}]}";
    };
    CHECK_NOTHROW(parse_plan_text(plan(2, 4), sc));  // 16 heads and 4 KV heads per rank over 4
    CHECK_THROWS_WITH(parse_plan_text(plan(2, 8), sc),
                      Catch::Matchers::Contains("plan.stages[0].cp: 8 does not divide the 4 key-value heads per TP rank (tp 2) (num_kv_heads); cp_comm_type \"a2a\""));
    CHECK_THROWS_WITH(parse_plan_text(plan(1, 16), sc), Catch::Matchers::Contains("16 does not divide the model's 8 key-value heads"));
    // the search: cp 16 splits no TP rank's KV heads, so it is not a size; fixed, it is refused
    CHECK(detail::context_parallel_sizes(sc) == std::vector<int>{8, 4, 2, 1});
    SearchOptions o;
    o.cp_sizes = {16};
    CHECK_THROWS_WITH(detail::check_grid_options(sc, o), Catch::Matchers::Contains("options.cp_sizes[0]: 16 does not divide the model's 8 key-value heads"));
    o.cp_sizes = {8};
    o.top_k = 3;
    o.baselines = false;
    for (const auto& p : search(sc, o).plans) CHECK(8 / p.plan.stages[0].replicas[0].tp % 8 == 0);  // tp 1: 8 KV heads over 8
}

TEST_CASE("context parallelism only on GPUs that run fused attention: a V100 stage with cp > 1 is refused and never searched", "[search][cp][flash]") {
    // 8 A100 + 8 V100 at 16,384 tokens: cp 2 and 4 are searched, on the A100s only (Transformer
    // Engine's context parallelism runs on its flash / cuDNN attention, which a V100 lacks)
    const Scenario sc = parse_scenario_text(R"({"model": {"preset": "tiny-8l", "seq_length": 16384}, "training": {"global_batch_size": 8}, "cluster": "demo-mixed-16"})");
    std::int64_t pruned_evals = 0, exhaustive_evals = 0;
    const SearchResult r = require_pruned_equals_exhaustive(sc, quiet(3, false, 1), quiet(3, true, 1), pruned_evals, exhaustive_evals);
    const SearchResult all = search(sc, quiet(1000, true, 1));
    REQUIRE(all.stats.complete);
    CHECK(all.stats.infeasible.count("cp without fused attention") == 1);
    // the space count leaves the V100s' cp options out too (the same GPUs said to fuse attention count more)
    Scenario fused = sc;
    fused.cluster.groups[1].device.flash_attention = true;
    CHECK(search_space_size(sc).configurations < search_space_size(fused).configurations);
    bool cp_seen = false;
    for (const auto& e : all.plans)
        for (const auto& st : e.plan.stages)
            if (st.cp > 1) {
                cp_seen = true;
                for (const auto& rep : st.replicas) CHECK(rep.group == 0);
            }
    CHECK(cp_seen);
    // estimate refuses it by name, and takes the same stage on the A100s
    const auto plan_on = [&](int group) {
        return R"({"micro_batch_size": 4, "num_micro_batches": 2, "stages": [{"group": )" + std::to_string(group) + R"(, "num_layers": 8, "tp": 1, "dp": 4, "cp": 2}]})";
    };
    CHECK_THROWS_WITH(parse_plan_text(plan_on(1), sc), Catch::Matchers::Contains("plan.stages[0].cp: 2 on v100-sxm2-32gb, which runs no fused attention (device flash_attention false)"));
    CHECK_NOTHROW(estimate(sc, parse_plan_text(plan_on(0), sc), false));
}
