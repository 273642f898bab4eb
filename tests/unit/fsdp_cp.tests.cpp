// Megatron-FSDP and context parallelism (docs/model.md, "FSDP", "Context parallelism").
#include <catch2/catch.hpp>

#include "poseidon/cost_model.hpp"
#include "poseidon/error.hpp"
#include "poseidon/estimate.hpp"
#include "poseidon/json_util.hpp"
#include "poseidon/scenario.hpp"

using namespace poseidon;

namespace {

Scenario h100s(int nodes, const std::string& training_extra) {
    return parse_scenario_text(R"({"model": "llama3-8b", "training": {"global_batch_size": 64)" + training_extra +
                               R"(}, "cluster": {"name": "c", "groups": [{"device": "h100-sxm5-80gb", "nodes": )" + std::to_string(nodes) +
                               R"(, "gpus_per_node": 8, "inter_node_bw_GBps": 400}]}})");
}

Estimate one_stage(const Scenario& sc, int tp, int dp, int cp, std::int64_t samples_per_replica) {
    const std::int64_t mbs = samples_per_replica * dp;
    const std::string plan = R"({"micro_batch_size": )" + std::to_string(mbs) + R"(, "num_micro_batches": )" + std::to_string(64 / mbs) +
                             R"(, "stages": [{"group": 0, "num_layers": 32, "tp": )" + std::to_string(tp) + R"(, "dp": )" + std::to_string(dp) +
                             R"(, "cp": )" + std::to_string(cp) + "}]}";
    return estimate(sc, parse_plan_text(plan, sc));
}

}  // namespace

TEST_CASE("FSDP's per-block gathers and reduce-scatters: the two-stream chain, hand-computed", "[fsdp][model]") {
    // 3 blocks of 1 s forward and 2 s backward; gathers of 0.5 s, reduce-scatters of 0.25 s: all
    // hidden but the first gather (and, backward, the last reduce-scatter).
    FsdpExtra x = fsdp_extra(1, 2, 3, 0.5, 0.25, 0);
    CHECK(x.forward_s == Approx(0.5));
    CHECK(x.backward_s == Approx(0.75));
    // Gathers of 2 s bind: 2 + 2 x 2 + 1 = 7 s forward for 3 s of compute.
    x = fsdp_extra(1, 2, 3, 2, 0.25, 0);
    CHECK(x.forward_s == Approx(4));
    CHECK(x.backward_s == Approx(2 + 2 * 2.25 + 2 + 0.25 - 6));
    // Contention: compute beside a gather runs kappa slower.
    CHECK(fsdp_extra(1, 2, 3, 0.5, 0.25, 0.1).forward_s == Approx(0.5 + 2 * 0.05));
}

TEST_CASE("FSDP shards weights, gradients and states over DP and leaves no gradient sync after the last backward", "[fsdp][memory]") {
    const Scenario ddp = h100s(1, R"(, "distributed_optimizer": true)");
    const Scenario fsdp = h100s(1, R"(, "distributed_optimizer": true, "fsdp": true)");
    const Estimate a = one_stage(ddp, 1, 8, 1, 1), b = one_stage(fsdp, 1, 8, 1, 1);
    const ReplicaCost& ra = a.stages[0].replica_costs[0];
    const double P = ra.params_per_gpu, unit = ra.layer_params_per_gpu;
    CHECK(b.stages[0].memory.weights_GiB == Approx(2 * (P / 8 + 2 * unit) / GiB));
    CHECK(b.stages[0].memory.gradients_GiB == Approx(4 * (P / 8 + 2 * unit) / GiB));
    CHECK(b.stages[0].memory.optimizer_GiB == Approx(a.stages[0].memory.optimizer_GiB));
    CHECK(b.stages[0].times.dp_sync_s == 0);
    CHECK(a.stages[0].times.dp_sync_s > 0);
    // every pass pays at least the first gather
    CHECK(b.stages[0].times.forward_s > a.stages[0].times.forward_s);
    // FSDP is costed for 1F1B stages only
    const std::string interleaved = R"({"micro_batch_size": 8, "num_micro_batches": 8, "schedule": "interleaved-1f1b", "virtual_stages": 2, "stages": [
        {"group": 0, "num_layers": 16, "tp": 1, "dp": 4}, {"group": 0, "num_layers": 16, "tp": 1, "dp": 4}]})";
    CHECK_THROWS_WITH(parse_plan_text(interleaved, fsdp), Catch::Matchers::Contains("with training.fsdp is not modelled"));
}

TEST_CASE("FSDP's optim_grads (ZeRO-2) shards gradients and states, keeps the weights whole and gathers them once after the step", "[fsdp][memory][zero2]") {
    const Scenario ddp = h100s(1, R"(, "distributed_optimizer": true)");
    const Scenario zero3 = h100s(1, R"(, "distributed_optimizer": true, "fsdp": true)");
    const Scenario zero2 = h100s(1, R"(, "distributed_optimizer": true, "fsdp": true, "fsdp_sharding": "optim_grads")");
    const Estimate a = one_stage(ddp, 1, 8, 1, 1), b = one_stage(zero3, 1, 8, 1, 1), c = one_stage(zero2, 1, 8, 1, 1);
    const ReplicaCost& ra = a.stages[0].replica_costs[0];
    const double P = ra.params_per_gpu, unit = ra.layer_params_per_gpu;
    // the weights whole (as without FSDP), the gradients as ZeRO-3's: a shard and two blocks
    CHECK(c.stages[0].memory.weights_GiB == Approx(a.stages[0].memory.weights_GiB));
    CHECK(c.stages[0].memory.gradients_GiB == Approx(4 * (P / 8 + 2 * unit) / GiB));
    CHECK(c.stages[0].memory.optimizer_GiB == Approx(a.stages[0].memory.optimizer_GiB));
    CHECK(c.stages[0].times.dp_sync_s == 0);
    // no gathers in the passes: the forward is the plain one; the backward's reduce-scatters are ZeRO-3's
    const ReplicaCost& rc = c.stages[0].replica_costs[0];
    CHECK(c.stages[0].times.forward_s == Approx(rc.forward_s).epsilon(1e-12));
    CHECK(c.stages[0].times.forward_s < b.stages[0].times.forward_s);
    // after the step, the updated bf16 weights all-gathered over the 8 ranks of one node:
    // 7/8 of 2 P bytes at the ring's bandwidth, on top of ZeRO-3's step
    CHECK(c.stages[0].times.optimizer_s > b.stages[0].times.optimizer_s);
    CHECK(to_json(zero2)["training"]["fsdp_sharding"] == "optim_grads");
    CHECK_FALSE(to_json(zero3)["training"].contains("fsdp_sharding"));
    CHECK_THROWS_WITH(h100s(1, R"(, "fsdp_sharding": "optim_grads")"), Catch::Matchers::Contains("scenario.training.fsdp_sharding: \"optim_grads\" needs fsdp true"));
    CHECK_THROWS_WITH(h100s(1, R"(, "fsdp": true, "fsdp_sharding": "optim")"), Catch::Matchers::Contains("scenario.training.fsdp_sharding"));
}

TEST_CASE("context parallelism: a rank of cp ranks over a free link does the work of samples / cp sequences", "[cp][model][identity]") {
    const Scenario sc = h100s(1, "");
    const Device& d = sc.cluster.groups[0].device;
    StagePosition one{1, 3, 8, 1};
    StagePosition two = one;
    two.cp = 2, two.cp_bw_GBps = 1e6, two.cp_latency_s = 0;
    const ReplicaCost a = replica_cost(sc, d, 1, 1, 4, one), b = replica_cost(sc, d, 1, 2, 4, two);
    CHECK(b.forward_s == Approx(a.forward_s).epsilon(1e-6));
    CHECK(b.backward_s == Approx(a.backward_s).epsilon(1e-6));
    CHECK(b.memory.activations_GiB == Approx(a.memory.activations_GiB));
}

TEST_CASE("context parallelism's exchanges: ring, all-gather and all-to-all, hand-computed", "[cp][model]") {
    const CpLink link{1.0, 0};  // 1 GB/s, no latency: 1e9 bytes take 1 s
    // p2p, cp 4: steps of 1 s of attention beside 2 s transfers: 1 + 3 x 2 - 4 = 3 s; backward
    // steps of 2 s beside 4 s: 2 + 3 x 4 - 8 = 6 s.
    CpExtra x = cp_extra("p2p", 4, 4, 8, 2e9, 0, 0, link, 0);
    CHECK(x.forward_s == Approx(3));
    CHECK(x.backward_s == Approx(6));
    // fast transfers hide entirely
    CHECK(cp_extra("p2p", 4, 4, 8, 1e8, 0, 0, link, 0).forward_s == Approx(0));
    // all_gather: the 3 other ranks' 1 GB each, exposed; twice backward
    x = cp_extra("all_gather", 4, 4, 8, 1e9, 0, 0, link, 0);
    CHECK(x.forward_s == Approx(3));
    CHECK(x.backward_s == Approx(6));
    // a2a: 3/4 of the 4 GB of Q, K, V and of the 2 GB output
    x = cp_extra("a2a", 4, 4, 8, 0, 4e9, 2e9, link, 0);
    CHECK(x.forward_s == Approx(4.5));
    CHECK(x.backward_s == Approx(4.5));
}

TEST_CASE("context parallelism exchanges the heads' own keys and values: MLA's up-projected, head_dim where it is not h / heads", "[cp][model][mla]") {
    auto widths = [](const char* model) { return attention_widths(parse_scenario_text(std::string(R"({"model": ")") + model +
                                                                                    R"(", "cluster": "dgx-h100-16", "training": {"global_batch_size": 8}})").model); };
    // DeepSeek-V3: 128 heads of 128 + 64 for queries and keys, 128 for values (frontier-facts.md
    // section 4: 128 x 192 + 128 x 128 = 40,960 elements of K and V per token)
    const AttentionWidths ds = widths("deepseek-v3");
    CHECK(ds.q == 128 * 192);
    CHECK(ds.k + ds.v == 40960);
    CHECK(ds.out == 128 * 128);
    // GPT-OSS 120B: 64 query heads and 8 key/value heads of 64 (hidden 2,880)
    const AttentionWidths oss = widths("gpt-oss-120b");
    CHECK(oss.q == 4096);
    CHECK(oss.k == 512);
    CHECK(oss.v == 512);
    CHECK(oss.out == 4096);
    // Llama 3 8B: 32 heads of 128, 8 key/value heads
    const AttentionWidths llama = widths("llama3-8b");
    CHECK(llama.q == 4096);
    CHECK(llama.k + llama.v == 2048);
    // through the cost model: all_gather on a 100 GB/s ring moves (cp - 1) x K and V of the rank's
    // 4,096 tokens before each block's attention, exposed (one block, cp 2, two sequences)
    const Scenario sc = parse_scenario_text(R"({"model": {"preset": "deepseek-v3", "mtp_layers": 0}, "cluster": "dgx-h100-16",)"
                                            R"( "training": {"global_batch_size": 8, "cp_comm_type": "all_gather"}})");
    const Device& d = sc.cluster.groups[0].device;
    StagePosition slow{1, 3, 8, 1}, fast;
    slow.cp = 2, slow.cp_bw_GBps = 100, slow.cp_latency_s = 0;
    fast = slow, fast.cp_bw_GBps = 1e9;
    const double extra = replica_cost(sc, d, 1, 2, 1, slow).forward_s - replica_cost(sc, d, 1, 2, 1, fast).forward_s;
    CHECK(extra == Approx(4096.0 * 40960 * 2 / 100e9).epsilon(1e-6));
}

TEST_CASE("context parallelism in a plan: tp x cp GPUs per replica, gradients over dp x cp, links by placement", "[cp][plan]") {
    const Scenario sc = h100s(2, R"(, "distributed_optimizer": true)");
    // TP 4 x CP 2 inside one node, DP 2: 16 GPUs; the states shard over dp x cp = 4
    const Estimate e = one_stage(sc, 4, 2, 2, 2);
    CHECK(e.num_gpus == 16);
    const Estimate no_cp = one_stage(sc, 4, 4, 1, 1);
    CHECK(e.stages[0].memory.optimizer_GiB == Approx(no_cp.stages[0].memory.optimizer_GiB));
    // the same ranks in the gradient ring: the same synchronisation
    CHECK(e.stages[0].times.dp_sync_s == Approx(no_cp.stages[0].times.dp_sync_s));
    // a CP ring inside a node runs on NVLink, one across nodes on the NICs
    const Group& g = sc.cluster.groups[0];
    CHECK(cp_link(g, 4, 2).bw_GBps == Approx(450 * 0.8));
    CHECK(cp_link(g, 8, 2).bw_GBps == Approx(400 * 0.85 / 8));
    // the sequence splits into 2 cp chunks
    const std::string bad = R"({"micro_batch_size": 2, "num_micro_batches": 32, "stages": [{"group": 0, "num_layers": 32, "tp": 1, "dp": 2, "cp": 3}]})";
    CHECK_THROWS_WITH(parse_plan_text(bad, sc), Catch::Matchers::Contains("cp: 3 does not split seq_length 8192 into 2 x cp equal chunks"));
    // the normalised plan keeps cp
    CHECK(to_json(e.plan)["stages"][0]["cp"] == 2);
}
