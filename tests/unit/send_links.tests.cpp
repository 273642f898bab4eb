#include <catch2/catch.hpp>

#include "poseidon/estimate.hpp"
#include "poseidon/scenario.hpp"

using namespace poseidon;

namespace {

// llama2-7b over one A100 node (collective latency 6 us) and one A10 node (12 us), one stage on
// each, TP 1 x DP 1, b = 2: a send moves 2 x 4096 x 4096 x 2 B across the nodes' NICs.
Estimate two_groups(const std::string& inter_node_link_a10) {
    const std::string text = R"({"model": "llama2-7b", "training": {"global_batch_size": 8},
        "cluster": {"name": "c", "groups": [
            {"device": "a100-sxm4-80gb", "nodes": 1, "gpus_per_node": 8, "inter_node_bw_GBps": 25},
            {"device": "a10-24gb", "nodes": 1, "gpus_per_node": 8, "inter_node_bw_GBps": 12.5, "inter_node_link": ")" +
                             inter_node_link_a10 + R"("}]}})";
    const Scenario sc = parse_scenario_text(text);
    const std::string plan = R"({"micro_batch_size": 2, "num_micro_batches": 4, "stages": [
        {"group": 0, "num_layers": 16, "tp": 1, "dp": 1}, {"group": 1, "num_layers": 16, "tp": 1, "dp": 1}]})";
    return estimate(sc, parse_plan_text(plan, sc));
}

}  // namespace

TEST_CASE("a send between groups pays the larger of the two groups' latencies, both ways", "[model][links][sends]") {
    const double bytes = 2.0 * 4096 * 4096 * 2;
    // The A10 node's NIC (12.5 x 0.85 GB/s) is the narrower side; the A10's 12 us, not the
    // sending A100's 6 us, is the step's latency, whichever way the send goes.
    const Estimate e = two_groups("infiniband");
    const double expected = bytes / (12.5 * 0.85 * 1e9) + 12e-6;
    CHECK(e.stages[0].times.send_forward_s == Approx(expected).epsilon(1e-12));
    CHECK(e.stages[1].times.send_backward_s == Approx(expected).epsilon(1e-12));
    // Over TCP sockets the A10 side adds the socket path's 20 us to its own 12 us, and its NIC
    // reaches 0.45 of the line rate (docs/model.md, "Links"); the A100 side pays it too.
    const Estimate tcp = two_groups("ethernet");
    const double tcp_expected = bytes / (12.5 * 0.45 * 1e9) + 32e-6;
    CHECK(tcp.stages[0].times.send_forward_s == Approx(tcp_expected).epsilon(1e-12));
    CHECK(tcp.stages[1].times.send_backward_s == Approx(tcp_expected).epsilon(1e-12));
}
