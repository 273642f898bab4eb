// Expert parallelism: hand-computed memory of Mixtral 8x7B on an expert grid, the links of the
// token exchange, the dispatch volume, the identities of the expert grid (the per-GPU expert work
// does not depend on ep under balanced routing; ep x etp shards the experts alike) and the
// validation of ep / etp.
#include <catch2/catch.hpp>

#include <cmath>

#include "poseidon/cost_model.hpp"
#include "poseidon/recompute_modules.hpp"
#include "poseidon/estimate.hpp"
#include "poseidon/json_util.hpp"
#include "poseidon/scenario.hpp"
#include "problems_of.hpp"

using namespace poseidon;

namespace {

constexpr double GiB_bytes = 1024.0 * 1024 * 1024;

Scenario mixtral(const char* training_extra = "") {
    return parse_scenario_text(std::string(R"({"model": "mixtral-8x7b", "cluster": "dgx-h100-16",
        "training": {"global_batch_size": 8, "sequence_parallel": true, "distributed_optimizer": true)") +
                               training_extra + "}}");
}

Estimate one_stage(const Scenario& sc, int tp, int dp, int ep, int etp) {
    const std::string plan = R"({"micro_batch_size": )" + std::to_string(dp) + R"(, "num_micro_batches": )" + std::to_string(8 / dp) +
                             R"(, "stages": [{"group": 0, "num_layers": 32, "tp": )" + std::to_string(tp) + R"(, "dp": )" + std::to_string(dp) +
                             R"(, "ep": )" + std::to_string(ep) + R"(, "etp": )" + std::to_string(etp) + "}]}";
    return estimate(sc, parse_plan_text(plan, sc));
}

// Mixtral 8x7B's block by hand: attention 4096 x (4096 + 2 x 1024) + 4096 x 4096, eight SwiGLU
// experts of 3 x 4096 x 14336, a 4096 x 8 router and two RMSNorms of 4096.
constexpr double attention = 4096.0 * 6144 + 4096.0 * 4096, expert = 3.0 * 4096 * 14336, router = 4096.0 * 8, norms = 2 * 4096.0;
constexpr double embedding = 32000.0 * 4096;

}  // namespace

TEST_CASE("expert parallelism shards the routed experts over ep x etp and the rest over TP", "[moe][ep][memory]") {
    const Scenario sc = mixtral();
    // TP 8 with etp 1, ep 1 (Megatron-Core's folding with the issue's default): every GPU holds all
    // eight experts whole; the attention, router, embedding and head split over TP.
    const double per_gpu_ep1 = 32 * ((attention + router) / 8 + 8 * expert + norms) + 2 * embedding / 8 + 4096;
    const Estimate a = one_stage(sc, 8, 1, 1, 1);
    CHECK(a.stages[0].replica_costs[0].params_per_gpu == Approx(per_gpu_ep1).epsilon(1e-12));
    CHECK(a.stages[0].memory.weights_GiB == Approx(2 * per_gpu_ep1 / GiB_bytes).epsilon(1e-12));
    // ep 8: one expert per GPU
    const double per_gpu_ep8 = 32 * ((attention + router) / 8 + expert + norms) + 2 * embedding / 8 + 4096;
    const Estimate b = one_stage(sc, 8, 1, 8, 1);
    CHECK(b.stages[0].replica_costs[0].params_per_gpu == Approx(per_gpu_ep8).epsilon(1e-12));
    CHECK(b.stages[0].replica_costs[0].expert_params_per_gpu == Approx(32 * expert).epsilon(1e-12));
    // ep 2 x etp 4 shards the experts as ep 8 does
    const Estimate c = one_stage(sc, 8, 1, 2, 4);
    CHECK(c.stages[0].replica_costs[0].params_per_gpu == Approx(per_gpu_ep8).epsilon(1e-12));
}

TEST_CASE("the distributed optimizer shards dense states over dp x cp and expert states over edp", "[moe][ep][memory]") {
    const Scenario sc = mixtral();
    // TP 1, DP 8, EP 4: edp = 8 / 4 = 2. Dense: attention, router, norms, embedding and head.
    const Estimate e = one_stage(sc, 1, 8, 4, 1);
    const double experts = 32 * 2 * expert, dense = 32 * (attention + router + norms) + 2 * embedding + 4096;
    CHECK(e.stages[0].replica_costs[0].params_per_gpu == Approx(dense + experts).epsilon(1e-12));
    CHECK(e.stages[0].memory.optimizer_GiB == Approx(12 * (dense / 8 + experts / 2) / GiB_bytes).epsilon(1e-12));
}

TEST_CASE("the token exchange crosses NVLink inside the domain and the NICs beyond it", "[moe][ep][links]") {
    Group g;
    g.device.intra_node_link_efficiency = 0.8;
    g.device.inter_node_link_efficiency = 0.85;
    g.device.collective_latency_us = 10;
    g.nodes = 4, g.gpus_per_node = 8, g.intra_node_bw_GBps = 450, g.inter_node_bw_GBps = 400, g.intra_node_link = "nvlink";
    const EpLink in = ep_link(g, 8, 1);
    CHECK(in.frac_intra == Approx(7.0 / 8));
    CHECK(in.frac_inter == 0);
    CHECK(in.intra_bw_GBps == Approx(450 * 0.8));
    const EpLink across = ep_link(g, 32, 1);
    CHECK(across.frac_intra == Approx(7.0 / 32));
    CHECK(across.frac_inter == Approx(24.0 / 32));
    CHECK(across.inter_bw_GBps == Approx(400 * 0.85 / 8));
    // etp 2: an EP group of 16 ranks spans 32 GPUs; 4 of its ranks share this node
    const EpLink folded = ep_link(g, 16, 2);
    CHECK(folded.frac_intra == Approx(3.0 / 16));
    CHECK(folded.frac_inter == Approx(12.0 / 16));
    // an NVL72 domain keeps EP 64 on NVLink
    g.gpus_per_node = 4, g.nodes = 18, g.nvlink_domain_gpus = 72, g.intra_node_bw_GBps = 900;
    CHECK(ep_link(g, 64, 1).frac_inter == 0);
}

TEST_CASE("dispatch and combine move tokens x top_k x h bytes each way, hand-computed", "[moe][ep][time]") {
    MoeShape x;
    x.tokens = 4096, x.hidden = 2048, x.expert_ffn = 768, x.top_k = 8, x.experts = 128, x.ep = 8;
    const MoeRates r{1e15, 4e12, 5e-6, 2, 2, 0.1};
    EpLink l;
    l.intra_bw_GBps = 360, l.frac_intra = 7.0 / 8, l.latency_s = 10e-6;
    const MoeCost c = moe_cost(x, r, l);
    const double one = 4096.0 * 8 * 2048 * 2 * 7 / 8 / 360e9 + 10e-6;
    CHECK(c.comm_forward_s == Approx(2 * one).epsilon(1e-12));
    CHECK(c.comm_backward_s == Approx(2 * one).epsilon(1e-12));
    // the busiest rank under moe_imbalance 1.5 takes 1.5 x the copies
    x.imbalance = 1.5;
    const MoeCost d = moe_cost(x, r, l);
    CHECK(d.comm_forward_s == Approx(2 * (1.5 * (one - 10e-6) + 10e-6)).epsilon(1e-12));
    CHECK(d.forward_s > c.forward_s);
}

TEST_CASE("balanced routing gives every GPU the same expert work whatever ep", "[moe][ep][time]") {
    // Compute-bound experts (many tokens): the grouped GEMMs of ep = 1 (all 64 experts local, 1/64 of
    // the copies each) and ep = 8 (8 experts, 8x the rows each) do the same FLOPs on each GPU.
    MoeShape x;
    x.tokens = 65536, x.hidden = 4096, x.expert_ffn = 1024, x.top_k = 4, x.experts = 64;
    const MoeRates r{1e15, 1e18, 0, 2, 2, 0};  // no memory bound, no kernel cost
    const MoeCost one = moe_cost(x, r, EpLink{});
    x.ep = 8;
    const MoeCost eight = moe_cost(x, r, EpLink{});
    CHECK(eight.forward_s == Approx(one.forward_s).epsilon(1e-9));
    // 2 x copies x (3 h f) FLOPs (SwiGLU: up, gate, down)
    CHECK(one.forward_s == Approx(2 * 65536.0 * 4 * 3 * 4096 * 1024 / 1e15).epsilon(1e-5));  // the permutation and activation traffic is negligible here
}

TEST_CASE("a plan's ep and etp are checked against the model and the stage", "[moe][ep][validation]") {
    const Scenario moe = mixtral();
    auto problems = [&](const Scenario& sc, const char* stage) {
        return poseidon::testing::problems_of([&] { parse_plan_text(std::string(R"({"micro_batch_size": 8, "num_micro_batches": 1, "stages": [)") + stage + "]}", sc); });
    };
    CHECK(problems(moe, R"({"group": 0, "num_layers": 32, "tp": 1, "dp": 8, "ep": 3})").find("plan.stages[0].ep: 3 does not divide num_experts 8") != std::string::npos);
    CHECK(problems(moe, R"({"group": 0, "num_layers": 32, "tp": 1, "dp": 8, "ep": 8, "etp": 2})")
              .find("plan.stages[0].ep: ep x etp = 8 x 2 does not divide the stage's 8 GPUs") != std::string::npos);
    CHECK(problems(moe, R"({"group": 0, "num_layers": 32, "tp": 1, "dp": 8, "etp": 3})").find("plan.stages[0].etp: 3 does not divide moe_ffn_hidden_size 14336") !=
          std::string::npos);
    const Scenario dense = parse_scenario_text(R"({"model": "llama3-8b", "cluster": "dgx-h100-16", "training": {"global_batch_size": 8}})");
    CHECK(problems(dense, R"({"group": 0, "num_layers": 32, "tp": 1, "dp": 8, "ep": 2})").find("plan.stages[0].ep: 2 needs a mixture-of-experts model") != std::string::npos);
    CHECK(problems(moe, R"({"group": 0, "num_layers": 32, "tp": 1, "dp": 8, "ep": 8})").empty());
}

TEST_CASE("moe_imbalance and moe_token_dispatcher are read, checked and written back", "[moe][ep][scenario]") {
    const Scenario sc = mixtral(R"(, "moe_imbalance": 1.25, "moe_token_dispatcher": "flex")");
    CHECK(sc.training.moe_imbalance == 1.25);
    CHECK(sc.training.moe_token_dispatcher == "flex");
    const std::string bad = poseidon::testing::problems_of([] { mixtral(R"(, "moe_imbalance": 0.5)"); });
    CHECK(bad.find("scenario.training.moe_imbalance: 0.5") != std::string::npos);
    // a larger imbalance slows the plan; flex drops the permutation kernels' traffic
    const double base = one_stage(mixtral(), 1, 8, 8, 1).iteration_time_s;
    CHECK(one_stage(sc, 1, 8, 8, 1).iteration_time_s > one_stage(mixtral(R"(, "moe_token_dispatcher": "flex")"), 1, 8, 8, 1).iteration_time_s);
    CHECK(one_stage(mixtral(R"(, "moe_token_dispatcher": "flex")"), 1, 8, 8, 1).iteration_time_s < base);
}

TEST_CASE("the estimate shows each MoE stage's expert grid, expert weights and dispatch buffers", "[moe][ep][output]") {
    const Scenario sc = mixtral();
    const Estimate e = one_stage(sc, 1, 8, 8, 1);
    const Json j = to_json(sc, e, false);
    const Json& st = j["stages"][0];
    CHECK(st["ep"] == 8);
    CHECK(st["etp"] == 1);
    CHECK(st["edp"] == 1);
    // one sample of 4096 tokens per GPU, top-2 copies of h = 4096 in bf16, sent and received
    CHECK(st["dispatch_buffers_GiB"].get<double>() == Approx(2 * 4096.0 * 2 * 4096 * 2 / GiB_bytes).epsilon(1e-9));
    CHECK(st["expert_weights_GiB"].get<double>() == Approx(32 * expert * 2 / GiB_bytes).epsilon(1e-9));
    CHECK(st["forward_ep_comm_s"].get<double>() > 0);
    const Json dense = to_json(parse_scenario_text(R"({"model": "llama3-8b", "cluster": "dgx-h100-16", "training": {"global_batch_size": 8}})"),
                               estimate(parse_scenario_text(R"({"model": "llama3-8b", "cluster": "dgx-h100-16", "training": {"global_batch_size": 8}})"),
                                        parse_plan_text(R"({"micro_batch_size": 8, "num_micro_batches": 1, "stages": [{"group": 0, "num_layers": 32, "tp": 1, "dp": 8}]})",
                                                        parse_scenario_text(R"({"model": "llama3-8b", "cluster": "dgx-h100-16", "training": {"global_batch_size": 8}})"))),
                               false);
    CHECK(!dense["stages"][0].contains("ep"));
}

TEST_CASE("the breakdown names the bottleneck stage's token exchange apart from its compute", "[moe][ep][breakdown]") {
    // Qwen3 30B-A3B cut to 8 blocks: one stage of EP 8 (1F1B over m micro-batches: its passes are
    // the whole iteration but the sync and step), then two stages under interleaving
    const Scenario sc = parse_scenario_text(R"({"model": {"preset": "qwen3-30b-a3b", "num_layers": 8}, "training": {"global_batch_size": 64}, "cluster": "dgx-h100-16"})");
    const Estimate one = estimate(sc, parse_plan_text(R"({"micro_batch_size": 8, "num_micro_batches": 8, "stages": [{"group": 0, "num_layers": 8, "tp": 1, "dp": 8, "ep": 8}]})", sc));
    const Breakdown& b = one.dag.breakdown;
    const ReplicaCost& rc = one.stages[0].replica_costs[0];
    CHECK(b.ep_comm_s == Approx(8 * (rc.forward_ep_comm_s + rc.backward_ep_comm_s)).epsilon(1e-12));
    CHECK(b.compute_s == Approx(8 * (one.stages[0].times.forward_s + one.stages[0].times.backward_s) - b.ep_comm_s - b.tp_comm_s).epsilon(1e-12));
    CHECK(b.compute_s + b.bubble_s + b.tp_comm_s + b.pp_comm_s + b.dp_comm_s + b.optimizer_s + b.ep_comm_s == Approx(one.iteration_time_s).epsilon(1e-12));
    const Estimate two = estimate(sc, parse_plan_text(R"({"micro_batch_size": 8, "num_micro_batches": 8, "schedule": "interleaved-1f1b", "virtual_stages": 2,
        "stages": [{"group": 0, "num_layers": 4, "tp": 1, "dp": 8, "ep": 8}, {"group": 0, "num_layers": 4, "tp": 1, "dp": 8, "ep": 8}]})", sc));
    const Breakdown& i = two.dag.breakdown;
    CHECK(i.ep_comm_s > 0);
    CHECK(i.compute_s + i.bubble_s + i.tp_comm_s + i.pp_comm_s + i.dp_comm_s + i.optimizer_s + i.ep_comm_s == Approx(two.iteration_time_s).epsilon(1e-9));
    // a dense model has none
    const Scenario dense = parse_scenario_text(R"({"model": "llama3-8b", "cluster": "dgx-h100-16", "training": {"global_batch_size": 8}})");
    CHECK(estimate(dense, parse_plan_text(R"({"micro_batch_size": 8, "num_micro_batches": 1, "stages": [{"group": 0, "num_layers": 32, "tp": 1, "dp": 8}]})", dense)).dag.breakdown.ep_comm_s == 0);
}

TEST_CASE("the host's issue of a dropless MoE layer's expert section counts where it outlasts the GPU's", "[moe][ep][time][host]") {
    // One stage of Mixtral's 32 MoE blocks, 4 micro-batches: the forward's expert section takes
    // max(GPU, host) with host = moe_sync_host_us + moe_sync_host_us_per_expert x local experts.
    auto with = [](double fixed_us, double per_expert_us, const char* graph = "none") {
        return mixtral((std::string(R"(, "cuda_graph_impl": ")") + graph + R"(", "stack": {"preset": "megatron-core", "moe_sync_host_us": )" +
                        std::to_string(fixed_us) + R"(, "moe_sync_host_us_per_expert": )" + std::to_string(per_expert_us) + "}")
                           .c_str());
    };
    auto time = [](const Scenario& sc, int ep) { return one_stage(sc, 1, 2, ep, 1).iteration_time_s; };  // 4 micro-batches of 2
    const double none = time(with(0, 0), 2);
    // a host faster than the GPU's section changes nothing
    CHECK(time(with(1, 0), 2) == Approx(none).epsilon(1e-12));
    // both host-bound: 10 ms more per block forward is 4 x 32 x 10 ms more per iteration
    CHECK(time(with(60000, 0), 2) - time(with(50000, 0), 2) == Approx(4 * 32 * 0.010).epsilon(1e-9));
    // per local expert: ep 2 leaves 4 of Mixtral's 8 experts on each GPU, ep 1 all 8
    CHECK(time(with(50000, 1000), 2) - time(with(50000, 0), 2) == Approx(4 * 32 * 4 * 0.001).epsilon(1e-9));
    CHECK(time(with(50000, 1000), 1) - time(with(50000, 0), 1) == Approx(4 * 32 * 8 * 0.001).epsilon(1e-9));
    // a full-iteration CUDA graph replays without the host: no such term, no pass or dispatch overhead
    CHECK(time(with(50000, 1000, "full_iteration"), 2) == Approx(time(with(0, 0, "full_iteration"), 2)).epsilon(1e-12));
    CHECK(time(with(0, 0, "full_iteration"), 2) < none);
    // the wait beyond the GPU's section is reported per stage, and named in a note where it is a
    // tenth of the forward or more
    const Estimate bound = one_stage(with(60000, 0), 1, 2, 2, 1), free = one_stage(with(60000, 0, "full_iteration"), 1, 2, 2, 1);
    const double wait = bound.stages[0].replica_costs[0].forward_moe_host_wait_s;
    CHECK(wait > 32 * 0.050);  // 60 ms per block against a GPU section of under 10 ms
    CHECK(wait < 32 * 0.060);
    CHECK(bound.stages[0].times.forward_s == Approx(free.stages[0].times.forward_s + wait).epsilon(0.05));
    CHECK(std::any_of(bound.notes.begin(), bound.notes.end(), [](const std::string& n) { return n.rfind("MoE host wait: per micro-batch stage 0 ", 0) == 0; }));
    CHECK(free.stages[0].replica_costs[0].forward_moe_host_wait_s == 0);
    CHECK(std::none_of(free.notes.begin(), free.notes.end(), [](const std::string& n) { return n.rfind("MoE host wait", 0) == 0; }));
    // the graph modules of "local" / "transformer_engine" lie outside the synchronised section
    CHECK(time(with(50000, 0, "transformer_engine"), 2) == Approx(time(with(50000, 0), 2)).epsilon(1e-12));
    // read, checked and written back
    CHECK(with(0, 0, "full_iteration").training.cuda_graph_impl == "full_iteration");
    const std::string bad = poseidon::testing::problems_of([] { mixtral(R"(, "cuda_graph_impl": "full")"); });
    CHECK(bad.find("scenario.training.cuda_graph_impl") != std::string::npos);
    CHECK(bad.find("full_iteration") != std::string::npos);
    CHECK(to_json(with(0, 0, "full_iteration"))["training"]["cuda_graph_impl"] == "full_iteration");
    const std::string bad_stack = poseidon::testing::problems_of([] { mixtral(R"(, "stack": {"preset": "megatron-core", "moe_sync_host_us": -1})"); });
    CHECK(bad_stack.find("scenario.training.stack.moe_sync_host_us: -1") != std::string::npos);
}

TEST_CASE("the shared-expert overlap hides the token exchange behind the shared experts, two streams by hand", "[moe][ep][time][shared]") {
    // Megatron-Core --moe-shared-expert-overlap: each pair takes the longer of its GEMM and its half of the exchange
    CHECK(shared_expert_hidden_s(2, 1, 10) == Approx(3));    // exchange-bound: both GEMMs hidden
    CHECK(shared_expert_hidden_s(8, 4, 4) == Approx(4));     // compute-bound: the whole exchange hidden
    CHECK(shared_expert_hidden_s(1, 3, 4) == Approx(1 + 2));
    // DeepSeek-V3 (one shared expert of 2,048) with the alltoall dispatcher on 8 H100s of a node, EP 8:
    // one block's forward loses (1 - kappa) x the MoE share x what its shared experts hide
    auto dsv3 = [](const char* extra) {
        return parse_scenario_text(std::string(R"({"model": {"preset": "deepseek-v3", "mtp_layers": 0}, "cluster": "dgx-h100-16",)") +
                                   R"( "training": {"global_batch_size": 8)" + extra + "}}");
    };
    const Scenario off = dsv3(""), on = dsv3(R"(, "moe_shared_expert_overlap": true)");
    const Device& d = off.cluster.groups[0].device;
    StagePosition pos{1, 3, 8, 8};
    set_expert_grid(pos, off.cluster.groups[0], [] { StagePlan s; s.ep = 8; s.replicas.push_back({0, 1, 8, 8}); return s; }());
    const ReplicaCost a = replica_cost(off, d, 1, 1, 1, pos), b = replica_cost(on, d, 1, 1, 1, pos);
    // the shared expert's GEMMs on 4,096 tokens, bf16 on the roofline
    const GemmTimer g{d.peak_tflops * 1e12 * d.sustained_clock_ratio * d.matmul_efficiency, 0, effective_memory_bw(d), d.kernel_overhead_us * 1e-6, 2, 2, false};
    const double fc1 = g.linear_s(4096, 2 * 2048, 7168), fc2 = g.linear_s(4096, 7168, 2048);
    const double share = 58.0 / 61, kappa = d.comm_compute_slowdown;
    const double comm_f = a.forward_ep_comm_s / share, comm_b = a.backward_ep_comm_s / share;
    CHECK(a.forward_s - b.forward_s == Approx((1 - kappa) * share * shared_expert_hidden_s(fc1, fc2, comm_f)).epsilon(1e-9));
    CHECK(a.backward_s - b.backward_s == Approx((1 - kappa) * share * shared_expert_hidden_s(2 * fc1, 2 * fc2, comm_b)).epsilon(1e-9));
    CHECK(b.forward_s < a.forward_s);
    // with the flex dispatcher it changes nothing, and the estimate says so
    const Scenario flex = dsv3(R"(, "moe_shared_expert_overlap": true, "moe_token_dispatcher": "flex")");
    const Scenario flex_off = dsv3(R"(, "moe_token_dispatcher": "flex")");
    CHECK(replica_cost(flex, d, 1, 1, 1, pos).forward_s == replica_cost(flex_off, d, 1, 1, 1, pos).forward_s);
    CHECK(to_json(on)["training"]["moe_shared_expert_overlap"] == true);
    CHECK_FALSE(to_json(off)["training"].contains("moe_shared_expert_overlap"));
}
