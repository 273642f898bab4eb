#include <catch2/catch.hpp>

#include "poseidon/cost_model.hpp"
#include "poseidon/estimate.hpp"
#include "poseidon/json_util.hpp"
#include "poseidon/scenario.hpp"

using namespace poseidon;

namespace {

// llama2-7b (s = h = 4096) on one 8 x H100 SXM node (NVSwitch), one stage of TP t x DP 8/t,
// one sample per replica: each forward TP all-reduce moves s h x 2 B; 65 of them (two per block,
// one for the embedding).
StageTimes h100_node(int tp, const std::string& training_extra, const std::string& stack = "\"megatron-core\"") {
    const std::string text = R"({"model": "llama2-7b", "training": {"global_batch_size": 64, "stack": )" + stack + training_extra + R"(},
        "cluster": {"name": "c", "groups": [{"device": "h100-sxm5-80gb", "nodes": 1, "gpus_per_node": 8, "inter_node_bw_GBps": 400}]}})";
    const Scenario sc = parse_scenario_text(text);
    const std::string plan = R"({"micro_batch_size": )" + std::to_string(8 / tp) + R"(, "num_micro_batches": )" + std::to_string(8 * tp) +
                             R"(, "stages": [{"group": 0, "num_layers": 32, "tp": )" + std::to_string(tp) + R"(, "dp": )" +
                             std::to_string(8 / tp) + "}]}";
    return estimate(sc, parse_plan_text(plan, sc)).stages[0].times;
}

constexpr double bytes = 4096.0 * 4096 * 2;
constexpr double ring_GBps = 450 * 0.8;  // NVLink4 x the ring's efficiency
constexpr double nvls_alg_GBps = 274;    // the preset's NVLink SHARP algorithm bandwidth
constexpr double lambda = 6e-6;

}  // namespace

TEST_CASE("NVLink SHARP all-reduces at its algorithm bandwidth where that beats the ring: TP 4 and 8, not TP 2", "[model][links][nvls]") {
    // NVLS: bytes / 274 GB/s whatever t (bus bandwidth 274 x 2 (t-1)/t: 479.5 GB/s at 8, 411 at 4);
    // the ring steps' latencies stay 2 (t - 1) lambda.
    CHECK(h100_node(8, "").forward_tp_comm_s == Approx(65 * (bytes / (nvls_alg_GBps * 1e9) + 14 * lambda)).epsilon(1e-9));
    CHECK(h100_node(4, "").forward_tp_comm_s == Approx(65 * (bytes / (nvls_alg_GBps * 1e9) + 6 * lambda)).epsilon(1e-9));
    // A pair's ring moves each byte once at 360 GB/s, faster than NVLS's 274: NCCL's tuner keeps it.
    CHECK(h100_node(2, "").forward_tp_comm_s == Approx(65 * (bytes / (ring_GBps * 1e9) + 2 * lambda)).epsilon(1e-9));
}

TEST_CASE("NVLS needs the stack's NCCL, an all-reduce and an NVSwitch node", "[model][links][nvls]") {
    const double ring8 = 65 * (1.75 * bytes / (ring_GBps * 1e9) + 14 * lambda);
    // A 2021 stack (NCCL before 2.17) rings.
    CHECK(h100_node(8, "", "\"megatron-lm-2021\"").forward_tp_comm_s == Approx(ring8).epsilon(1e-9));
    // Sequence parallelism's reduce-scatter and all-gather ring (same volume as the all-reduce).
    CHECK(h100_node(8, R"(, "sequence_parallel": true)").forward_tp_comm_s == Approx(ring8).epsilon(1e-9));
    Device h100;
    h100.nvls_bw_GBps = 274;
    Stack st;
    st.nccl_nvls = true;
    CHECK(nvls_allreduce_bus_bw_GBps(h100, "nvlink", 8, st) == Approx(274 * 1.75));
    CHECK(nvls_allreduce_bus_bw_GBps(h100, "nvlink_mesh", 4, st) == 0);  // no switch
    CHECK(nvls_allreduce_bus_bw_GBps(h100, "pcie", 4, st) == 0);
    CHECK(nvls_allreduce_bus_bw_GBps(h100, "nvlink", 1, st) == 0);
    st.nccl_nvls = false;
    CHECK(nvls_allreduce_bus_bw_GBps(h100, "nvlink", 8, st) == 0);
}

TEST_CASE("a data-parallel all-reduce inside an NVSwitch node runs at NVLS's bus bandwidth; the distributed optimizer's reduce-scatter rings", "[model][links][nvls]") {
    // TP 1 x DP 8: the gradient all-reduce over the node. Without NVLS it is the ring
    // 1.75 G / 360 GB/s + 14 lambda for G gradient bytes, which gives G.
    const double ring = h100_node(1, "", "\"megatron-lm-2021\"").dp_sync_s;
    const double G = (ring - 14 * lambda) * ring_GBps * 1e9 / 1.75;
    // megatron-lm-2021 and megatron-core hold the same fp32 gradients; NVLS: G / 274 GB/s + 14 lambda.
    CHECK(h100_node(1, "").dp_sync_s == Approx(G / (nvls_alg_GBps * 1e9) + 14 * lambda).epsilon(1e-9));
    // The distributed optimizer reduce-scatters: (7/8) G / 360 GB/s + 7 lambda, no NVLS.
    CHECK(h100_node(1, R"(, "distributed_optimizer": true)").dp_sync_s == Approx(0.875 * G / (ring_GBps * 1e9) + 7 * lambda).epsilon(1e-9));
}

TEST_CASE("estimate says which all-reduces run over NVLS and at what bus bandwidth", "[model][links][nvls][output]") {
    auto stage_json = [](int tp, const std::string& training_extra) {
        const std::string text = R"({"model": "llama2-7b", "training": {"global_batch_size": 64)" + training_extra + R"(},
            "cluster": {"name": "c", "groups": [{"device": "h100-sxm5-80gb", "nodes": 1, "gpus_per_node": 8, "inter_node_bw_GBps": 400}]}})";
        const Scenario sc = parse_scenario_text(text);
        const std::string plan = R"({"micro_batch_size": )" + std::to_string(8 / tp) + R"(, "num_micro_batches": )" + std::to_string(8 * tp) +
                                 R"(, "stages": [{"group": 0, "num_layers": 32, "tp": )" + std::to_string(tp) + R"(, "dp": )" + std::to_string(8 / tp) + "}]}";
        return to_json(sc, estimate(sc, parse_plan_text(plan, sc)), false)["stages"][0];
    };
    const Json tp8 = stage_json(8, "");
    CHECK(tp8["tp_algorithm"] == "nvls");
    CHECK(tp8["tp_bus_bw_GBps"].get<double>() == Approx(274 * 1.75));
    CHECK(tp8["replicas"][0]["tp_algorithm"] == "nvls");
    CHECK(tp8["dp_algorithm"] == "none");
    CHECK(tp8["dp_bus_bw_GBps"] == 0);
    const Json tp2 = stage_json(2, "");  // the pair's ring is faster; DP over 4 runs NVLS
    CHECK(tp2["tp_algorithm"] == "ring");
    CHECK(tp2["tp_bus_bw_GBps"].get<double>() == Approx(ring_GBps));
    CHECK(tp2["dp_algorithm"] == "nvls");
    CHECK(tp2["dp_bus_bw_GBps"].get<double>() == Approx(274 * 1.5));
    const Json sp = stage_json(8, R"(, "sequence_parallel": true)");
    CHECK(sp["tp_algorithm"] == "ring");
    CHECK(sp["tp_bus_bw_GBps"].get<double>() == Approx(ring_GBps));
    const Json dist = stage_json(1, R"(, "distributed_optimizer": true)");
    CHECK(dist["tp_algorithm"] == "none");
    CHECK(dist["tp_bus_bw_GBps"] == 0);
    CHECK(dist["dp_algorithm"] == "ring");
    CHECK(dist["dp_bus_bw_GBps"].get<double>() == Approx(ring_GBps));
}
