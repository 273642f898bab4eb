// Places where the time and memory parts of the cost model must agree with each other and with
// docs/model.md: the host-dispatch floor of a backward whose TP traffic is hidden, the fp32
// softmax of a stack that has one under fp32 training, flash attention's fp32 statistics, and
// evaluate_stages against replica_cost stage by stage (it costs a run of alike stages' block once),
// and stage_fits_into against evaluate_stages' fits (every stage, and some alone).
#include <catch2/catch.hpp>

#include "poseidon/context_parallel.hpp"
#include "poseidon/cost_model.hpp"
#include "poseidon/expert_parallel.hpp"
#include "poseidon/scenario.hpp"
#include "poseidon/search.hpp"
#include "search_random.hpp"

using namespace poseidon;

namespace {

Scenario one_a100_node(const std::string& training) {
    return parse_scenario_text(R"({"model": "gpt3-1.7b", "training": {"global_batch_size": 8)" + training + R"(},
        "cluster": {"name": "c", "groups": [{"device": "a100-sxm4-80gb", "nodes": 1, "gpus_per_node": 8, "inter_node_bw_GBps": 200}]}})");
}

// One middle stage of one block: no embedding, no head.
ReplicaCost one_block(const Scenario& sc, int tp) { return replica_cost(sc, sc.cluster.groups[0].device, tp, 1, 1, StagePosition{1, 3, 1, 1}); }


}  // namespace

TEST_CASE("a host-bound block's backward takes twice its forward's dispatch, whether its TP traffic is hidden or not", "[model][host]") {
    // 0.1 s per kernel: the host's dispatch dwarfs the GPU's work and the TP all-reduces, so the
    // forward is its kernels' dispatch, and the backward (two kernels per forward kernel) twice that.
    for (const char* async : {"true", "false"}) {
        INFO("tp_async_backward " << async);
        Scenario sc = one_a100_node("");
        sc.training.stack.host_us_per_kernel = 1e5;
        sc.training.stack.pass_overhead_us = 0;
        sc.training.stack.tp_async_backward = std::string(async) == "true";
        const ReplicaCost rc = one_block(sc, 2);
        CHECK(rc.backward_s == Approx(2 * rc.forward_s).epsilon(1e-12));
        CHECK(rc.forward_s > 1.0);  // at least 10 kernels of 0.1 s
    }
}

TEST_CASE("an fp32-softmax stack costs nothing extra under fp32 training: the scores are fp32 already", "[model][precision]") {
    for (const char* precision : {"fp32", "bf16"}) {
        INFO(precision);
        const std::string p = std::string(R"(, "precision": ")") + precision + R"(", "flash_attention": false)";
        Scenario sc = one_a100_node(p);
        sc.training.stack.fused_elementwise = false;
        sc.training.stack.softmax_fp32 = true;
        const ReplicaCost with = one_block(sc, 2);
        sc.training.stack.softmax_fp32 = false;
        const ReplicaCost without = one_block(sc, 2);
        if (std::string(precision) == "fp32") {
            CHECK(with.forward_s == without.forward_s);
            CHECK(with.backward_s == without.backward_s);
            CHECK(with.memory.activations_GiB == without.memory.activations_GiB);
        } else {  // the cast up and back: bytes, kernels, and the fp32 copy kept for the backward
            CHECK(with.forward_s > without.forward_s);
            CHECK(with.backward_s > without.backward_s);
            CHECK(with.memory.activations_GiB > without.memory.activations_GiB);
        }
    }
}

TEST_CASE("flash attention's log-sum-exp statistics are 4 B per head and token whatever the precision", "[model][memory]") {
    // Full recompute keeps the one block being re-materialised: its activations scale with the
    // element size, its fp32 statistics 4 a s b / t do not. Without hidden dropout there are no
    // 1-byte masks, so working(fp32) = 2 (working(bf16) - stats) + stats.
    const std::string common = R"(, "recompute": "full", "flash_attention": true)";
    auto working_GiB = [&](const char* precision) {
        Scenario sc = one_a100_node(common + R"(, "precision": ")" + precision + "\"");
        sc.model.hidden_dropout = 0;
        return one_block(sc, 2).recompute_working_GiB;
    };
    const Scenario sc = one_a100_node("");
    const double stats_GiB = 4.0 * sc.model.num_attention_heads * sc.model.seq_length * 1 / 2 / (1024.0 * 1024 * 1024);
    CHECK(working_GiB("fp32") == Approx(2 * (working_GiB("bf16") - stats_GiB) + stats_GiB).epsilon(1e-12));
}

TEST_CASE("evaluate_stages costs every stage as replica_cost does, though alike stages share their block, whatever its output held before", "[model][stages]") {
    // Mixtral 8x7B on an expert grid with selective recompute: three alike stages (one block
    // costed for all three), then a stage of two replicas, then one like the first three again.
    const Scenario sc = parse_scenario_text(R"({"model": "mixtral-8x7b", "cluster": "dgx-h100-16",
        "training": {"global_batch_size": 16, "sequence_parallel": true, "distributed_optimizer": true, "recompute": "selective"}})");
    const Plan plan = parse_plan_text(R"({"micro_batch_size": 2, "num_micro_batches": 8, "stages": [
        {"group": 0, "num_layers": 7, "tp": 2, "dp": 1, "ep": 2}, {"group": 0, "num_layers": 6, "tp": 2, "dp": 1, "ep": 2},
        {"group": 0, "num_layers": 6, "tp": 2, "dp": 1, "ep": 2}, {"group": 0, "num_layers": 8, "tp": 1, "dp": 2, "ep": 2},
        {"group": 0, "num_layers": 5, "tp": 2, "dp": 1, "ep": 2}]})",
                                      sc);
    const auto placement = place_plan(sc, plan);
    // what the output held: an interleaved plan's stages, with chunk times and more replicas
    const Plan other = parse_plan_text(R"({"micro_batch_size": 4, "num_micro_batches": 4, "schedule": "interleaved-1f1b", "virtual_stages": 2,
        "stages": [{"group": 0, "num_layers": 16, "tp": 2, "dp": 4, "ep": 8}, {"group": 0, "num_layers": 16, "tp": 2, "dp": 4, "ep": 8}]})",
                                       sc);
    std::vector<StageEval> reused;
    evaluate_stages_into(sc, other, place_plan(sc, other), nullptr, true, reused);
    REQUIRE(!reused.front().chunk_times.empty());
    evaluate_stages_into(sc, plan, placement, nullptr, true, reused);
    const std::vector<StageEval> fresh = evaluate_stages(sc, plan, placement);
    REQUIRE(reused.size() == plan.stages.size());
    for (std::size_t s = 0; s < plan.stages.size(); ++s) {
        INFO("stage " << s);
        const StagePlan& st = plan.stages[s];
        const Group& g = sc.cluster.groups[0];
        StagePosition pos{static_cast<int>(s), static_cast<int>(plan.stages.size()), plan.num_micro_batches, st.dp() * st.cp};
        const CpLink cpl = cp_link(g, st.replicas[0].tp, st.cp);
        pos.cp = st.cp, pos.cp_bw_GBps = cpl.bw_GBps, pos.cp_latency_s = cpl.latency_s;
        set_expert_grid(pos, g, st);
        const ReplicaCost alone = replica_cost(sc, g.device, st.replicas[0].tp, st.replicas[0].samples, st.num_layers, pos);
        const StageEval* both[] = {&fresh[s], &reused[s]};
        for (const StageEval* ev : both) {
            REQUIRE(ev->replica_costs.size() == 1);
            CHECK(ev->replica_costs[0].forward_s == alone.forward_s);
            CHECK(ev->replica_costs[0].backward_s == alone.backward_s);
            CHECK(ev->replica_costs[0].forward_ep_comm_s == alone.forward_ep_comm_s);
            CHECK(ev->replica_costs[0].memory.total_GiB() == alone.memory.total_GiB());
            CHECK(ev->chunk_times.empty());
        }
        CHECK(reused[s].times.forward_s == fresh[s].times.forward_s);
        CHECK(reused[s].times.backward_s == fresh[s].times.backward_s);
        CHECK(reused[s].times.dp_sync_s == fresh[s].times.dp_sync_s);
        CHECK(reused[s].times.optimizer_s == fresh[s].times.optimizer_s);
        CHECK(reused[s].times.send_forward_s == fresh[s].times.send_forward_s);
        CHECK(reused[s].memory.total_GiB() == fresh[s].memory.total_GiB());
        CHECK(reused[s].fits == fresh[s].fits);
    }
}

TEST_CASE("stage_fits_into says of every stage what evaluate_stages says of its fit and headroom, over random plans and capacities", "[model][stages][memory]") {
    // The search's memory-cap probes read the fits alone (Costs::probe_fits): the plans of random
    // scenarios (dense and MoE with leading dense blocks and MTP, recomputation, the distributed
    // optimizer and FSDP drawn), each also on GPUs of 0.8, 0.6 and 0.4 of their memory, so that
    // some stages stop fitting; both placements of the leading dense blocks.
    int fit = 0, misfit = 0, plans = 0;
    for (std::uint64_t seed = 1; seed <= 60; ++seed) {
        std::mt19937_64 rng(seed);
        auto pick = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
        Json j = seed % 2 ? search_test::random_moe_scenario(rng, seed) : search_test::random_scenario(rng);
        if (seed % 2 && j["model"]["num_layers"].get<int>() > 2) {
            j["model"]["first_dense_layers"] = 1;
            j["model"]["mtp_layers"] = pick(0, 1);
        }
        if (pick(0, 2) == 0) j["training"]["recompute"] = "selective";
        if (pick(0, 3) == 0) j["training"]["fsdp"] = true;
        const Scenario sc = parse_scenario(j);
        SearchOptions o = search_test::quiet(4, false, 1);
        o.schedule = "1f1b";
        o.tp_per_stage = pick(0, 1) == 1;
        const SearchResult r = search(sc, o);
        for (const Estimate& e : r.plans) {
            const Plan& plan = e.plan;
            ++plans;
            for (double share : {1.0, 0.8, 0.6, 0.4}) {
                Scenario small = sc;
                for (Group& g : small.cluster.groups) g.device.memory_GiB *= share;
                for (LeadingBlocks rule : {LeadingBlocks::by_layers, LeadingBlocks::on_first_stage}) {
                    INFO("seed " << seed << ", memory x " << share << ", rule " << static_cast<int>(rule) << ": " << to_json(sc).dump());
                    std::vector<StageEval> full;
                    evaluate_stages_into(small, plan, place_plan(small, plan), nullptr, true, full, rule);
                    std::vector<StageFit> fits;
                    stage_fits_into(small, plan, fits, rule);
                    REQUIRE(fits.size() == full.size());
                    // the memory caps' probes ask for some stages alone (`only`)
                    std::vector<std::uint8_t> only(full.size());
                    for (auto& o : only) o = static_cast<std::uint8_t>(pick(0, 1));
                    std::vector<StageFit> some;
                    stage_fits_into(small, plan, some, rule, &only);
                    REQUIRE(some.size() == full.size());
                    for (std::size_t s = 0; s < full.size(); ++s) {
                        CHECK(fits[s].fits == full[s].fits);
                        CHECK(fits[s].headroom_GiB == full[s].memory_capacity_GiB - full[s].memory.total_GiB());
                        if (only[s]) {
                            CHECK(some[s].fits == fits[s].fits);
                            CHECK(some[s].headroom_GiB == fits[s].headroom_GiB);
                        }
                        (full[s].fits ? fit : misfit) += 1;
                    }
                }
            }
        }
    }
    CHECK(plans >= 100);
    CHECK(fit >= 200);
    CHECK(misfit >= 200);
    Plan interleaved;
    interleaved.virtual_stages = 2;
    std::vector<StageFit> fits;
    CHECK_THROWS_AS(stage_fits_into(search_test::two_types(), interleaved, fits), std::logic_error);
}
