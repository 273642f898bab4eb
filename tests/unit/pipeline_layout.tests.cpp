// Pipeline layouts as Megatron-Core runs them (docs/model.md, "Interleaved 1F1B"; docs/formats.md,
// "Plan"): blocks per model chunk (chunk_layers, a chunk may hold only the embedding or only the
// head) and the interleaved order's micro-batch group (microbatch_group_size).
#include <catch2/catch.hpp>

#include <vector>

#include "poseidon/dag.hpp"
#include "poseidon/estimate.hpp"
#include "poseidon/json_util.hpp"
#include "poseidon/scenario.hpp"

using namespace poseidon;

namespace {

// The order before micro-batch groups were tunable: groups of p (Megatron-Core's default).
std::vector<ChunkPass> order_in_groups_of_p(int s, int p, int V, std::int64_t m) {
    const std::int64_t group = static_cast<std::int64_t>(p) * V, total = m * V;
    auto unit = [&](std::int64_t k, bool fwd) {
        const int c = static_cast<int>((k % group) / p);
        return ChunkPass{fwd ? c : V - 1 - c, (k / group) * p + k % p, fwd};
    };
    const std::int64_t warmup = std::min<std::int64_t>(2 * static_cast<std::int64_t>(p - s - 1) + static_cast<std::int64_t>(V - 1) * p, total);
    std::vector<ChunkPass> o;
    for (std::int64_t k = 0; k < warmup; ++k) o.push_back(unit(k, true));
    for (std::int64_t i = 0; i < total - warmup; ++i) {
        o.push_back(unit(warmup + i, true));
        o.push_back(unit(i, false));
    }
    for (std::int64_t i = std::max<std::int64_t>(0, total - warmup); i < total; ++i) o.push_back(unit(i, false));
    return o;
}

bool same(const std::vector<ChunkPass>& a, const std::vector<ChunkPass>& b) {
    if (a.size() != b.size()) return false;
    for (std::size_t i = 0; i < a.size(); ++i)
        if (a[i].chunk != b[i].chunk || a[i].micro_batch != b[i].micro_batch || a[i].forward != b[i].forward) return false;
    return true;
}

// llama2-7b on one DGX A100, TP 4 without SP, full recompute, 2 stages of 16 blocks, V = 2, m = 4
// (the numbers of interleaved.tests.cpp's full-recompute case).
const char* kScenario = R"({"model":"llama2-7b","training":{"global_batch_size":4,"recompute":"full"},"cluster":"dgx-a100-1"})";

std::string plan_text(const char* layout0, const char* layout1, const char* extra = "") {
    return std::string(R"({"micro_batch_size": 1, "num_micro_batches": 4, "schedule": "interleaved-1f1b", "virtual_stages": 2)") + extra +
           R"(, "stages": [{"group": 0, "num_layers": 16, "tp": 4, "dp": 1)" + layout0 + R"(}, {"group": 0, "num_layers": 16, "tp": 4, "dp": 1)" + layout1 +
           "}]}";
}

Json without_plan(const Scenario& sc, const Estimate& e) {
    Json j = to_json(sc, e);
    j.erase("plan");
    return j;
}

}  // namespace

TEST_CASE("interleaved order: micro-batch groups of p are the order of before, groups of G Megatron's schedule table", "[interleaved][layout]") {
    for (int p : {2, 3, 4, 8})
        for (int V : {2, 3, 4})
            for (std::int64_t k : {1, 2, 5})
                for (int s = 0; s < p; ++s) {
                    const std::int64_t m = k * p;
                    std::vector<ChunkPass> by_default, by_p;
                    interleaved_order(s, p, V, m, by_default);
                    interleaved_order(s, p, V, m, by_p, p);
                    INFO("p=" << p << " V=" << V << " m=" << m << " s=" << s);
                    CHECK(same(by_default, order_in_groups_of_p(s, p, V, m)));
                    CHECK(same(by_p, by_default));
                    CHECK(interleaved_in_flight(s, p, V, m, p) == interleaved_in_flight(s, p, V, m));
                }
    // p = 2, V = 2, m = 6, G = 3, stage 1: 2 (p - s - 1) + (V - 1) G = 3 warm-up forwards; forwards
    // run micro-batches 0-2 through chunk 0, then chunk 1, then 3-5; backwards the chunks reversed.
    std::vector<ChunkPass> o;
    interleaved_order(1, 2, 2, 6, o, 3);
    const std::vector<ChunkPass> head = {{0, 0, true}, {0, 1, true},  {0, 2, true}, {1, 0, true},  {1, 0, false}, {1, 1, true},
                                         {1, 1, false}, {1, 2, true}, {1, 2, false}, {0, 3, true}, {0, 0, false}};
    CHECK(same(std::vector<ChunkPass>(o.begin(), o.begin() + head.size()), head));
    CHECK(interleaved_in_flight(1, 2, 2, 6, 3) == 4);
    CHECK(interleaved_in_flight(0, 2, 2, 6, 3) == 6);
    // m = 5, G = 3: the last group holds the 2 micro-batches left (get_schedule_table)
    interleaved_order(1, 2, 2, 5, o, 3);
    std::vector<ChunkPass> forwards;
    for (const auto& u : o)
        if (u.forward) forwards.push_back(u);
    const std::vector<ChunkPass> expect = {{0, 0, true}, {0, 1, true}, {0, 2, true}, {1, 0, true}, {1, 1, true},
                                           {1, 2, true}, {0, 3, true}, {0, 4, true}, {1, 3, true}, {1, 4, true}};
    CHECK(same(forwards, expect));
}

TEST_CASE("activation peak of unequal chunks: the passes Megatron's order holds where their bytes peak", "[interleaved][layout][memory]") {
    // p = 2, V = 2, m = 4. Stage 0 warms up 2 + 2 = 4 forwards; after each forward it holds
    // (chunk 0, chunk 1) = (1,0) (2,0) (2,1) (2,2) (3,2) (4,1) (4,1) (3,2) micro-batches.
    const std::vector<double> heavy0 = {2, 1}, heavy1 = {1, 2}, equal = {1, 1};
    CHECK(interleaved_peak_passes(0, 2, 4, heavy0) == std::vector<std::int64_t>{4, 1});
    CHECK(interleaved_peak_passes(0, 2, 4, heavy1) == std::vector<std::int64_t>{3, 2});
    const auto e = interleaved_peak_passes(0, 2, 4, equal);
    CHECK(e[0] + e[1] == interleaved_in_flight(0, 2, 2, 4));
    // stage 1 warms up 2: (1,0) (2,0) (2,1) (2,1) (3,0) (3,0) (2,1) (2,1)
    CHECK(interleaved_peak_passes(1, 2, 4, std::vector<double>{1, 0}) == std::vector<std::int64_t>{3, 0});
    CHECK(interleaved_peak_passes(1, 2, 4, std::vector<double>{0, 1}) == std::vector<std::int64_t>{2, 1});
}

TEST_CASE("plan chunk_layers and microbatch_group_size: parsed, checked, printed back", "[interleaved][layout][validation]") {
    const Scenario sc = parse_scenario_text(kScenario);
    const Plan p = parse_plan_text(plan_text(R"(, "chunk_layers": [0, 16])", R"(, "chunk_layers": [16, 0])", R"(, "microbatch_group_size": 4)"), sc);
    CHECK(p.stages[0].chunk_layers == std::vector<int>{0, 16});
    CHECK(p.microbatch_group_size == 4);
    const Json j = to_json(p);
    CHECK(j["stages"][1]["chunk_layers"] == Json::array({16, 0}));
    CHECK(j["microbatch_group_size"] == 4);
    CHECK(parse_plan(j, sc) == p);
    const Json plain = to_json(parse_plan_text(plan_text("", ""), sc));
    CHECK(!plain.contains("microbatch_group_size"));
    CHECK(!plain["stages"][0].contains("chunk_layers"));

    auto fails = [&](const std::string& text, const char* message) {
        INFO(text);
        CHECK_THROWS_WITH(parse_plan_text(text, sc), Catch::Contains(message));
    };
    fails(plan_text(R"(, "chunk_layers": [4, 4, 8])", ""), "plan.stages[0].chunk_layers: 3 entries; expected virtual_stages 2 entries");
    fails(plan_text(R"(, "chunk_layers": [4, 10])", ""), "plan.stages[0].chunk_layers: sum to 14 blocks, not the stage's num_layers 16");
    fails(plan_text("", R"(, "chunk_layers": [-1, 17])"), "plan.stages[1].chunk_layers[0]: -1 is not allowed; expected an integer in [0, ");
    fails(plan_text("", R"(, "chunk_layers": 16)"), "plan.stages[1].chunk_layers: 16 is not allowed; expected an array of 1 to 128 block counts");
    fails(plan_text("", "", R"(, "microbatch_group_size": 5)"), "plan.microbatch_group_size: 5 is out of range; expected 2 (the stage count) to 4 (num_micro_batches)");
    fails(plan_text("", "", R"(, "microbatch_group_size": 1)"), "plan.microbatch_group_size: 1 is out of range; expected 2 (the stage count) to 4");
    // without chunk_layers a stage still splits evenly, and the message names the way out
    fails(R"({"micro_batch_size": 1, "num_micro_batches": 4, "schedule": "interleaved-1f1b", "virtual_stages": 3,
              "stages": [{"group": 0, "num_layers": 16, "tp": 4, "dp": 1}, {"group": 0, "num_layers": 16, "tp": 4, "dp": 1}]})",
          "plan.stages[0].num_layers: 16 blocks do not split into 3 chunks of equal size (at least one block each); expected a multiple of virtual_stages, or the blocks of each chunk in chunk_layers");
    fails(R"({"micro_batch_size": 1, "num_micro_batches": 4, "microbatch_group_size": 2, "stages": [{"group": 0, "num_layers": 16, "tp": 4, "dp": 1}, {"group": 0, "num_layers": 16, "tp": 4, "dp": 1}]})",
          "plan.microbatch_group_size: 2 is not allowed with schedule \"1f1b\"");
    fails(R"({"micro_batch_size": 1, "num_micro_batches": 4, "stages": [{"group": 0, "num_layers": 16, "tp": 4, "dp": 1, "chunk_layers": [16]}, {"group": 0, "num_layers": 16, "tp": 4, "dp": 1}]})",
          "plan.stages[0].chunk_layers: [16] is not allowed with schedule \"1f1b\"");
}

TEST_CASE("an even layout or a group of p written out gives exactly today's estimate", "[interleaved][layout]") {
    const Scenario sc = parse_scenario_text(kScenario);
    const Json today = without_plan(sc, estimate(sc, parse_plan_text(plan_text("", ""), sc)));
    CHECK(without_plan(sc, estimate(sc, parse_plan_text(plan_text(R"(, "chunk_layers": [8, 8])", R"(, "chunk_layers": [8, 8])"), sc))) == today);
    CHECK(without_plan(sc, estimate(sc, parse_plan_text(plan_text("", "", R"(, "microbatch_group_size": 2)"), sc))) == today);
    // a larger group warms up more: the same work, more activations held on every stage
    const Estimate g4 = estimate(sc, parse_plan_text(plan_text("", "", R"(, "microbatch_group_size": 4)"), sc));
    const Estimate g2 = estimate(sc, parse_plan_text(plan_text("", ""), sc));
    CHECK(g4.stages[1].memory.activations_GiB > g2.stages[1].memory.activations_GiB);
}

TEST_CASE("uneven chunks: each chunk timed from its own blocks, activations where the order peaks", "[interleaved][layout][memory]") {
    const Scenario sc = parse_scenario_text(kScenario);
    // Llama 3.1 405B's layout in small: chunk 0 of stage 0 holds only the embedding, the last chunk
    // of the last stage only the head and the loss.
    const Plan el = parse_plan_text(plan_text(R"(, "chunk_layers": [0, 16])", R"(, "chunk_layers": [16, 0])"), sc);
    const Plan even = parse_plan_text(plan_text("", ""), sc);
    const Estimate a = estimate(sc, el), b = estimate(sc, even);
    // A chunk's time is linear in its blocks (plus the stack's per-pass cost and the embedding or
    // head where they are): a stage's passes cost the same however its blocks split.
    for (int s = 0; s < 2; ++s) {
        CHECK(a.stages[s].times.forward_s == Approx(b.stages[s].times.forward_s).epsilon(1e-12));
        CHECK(a.stages[s].times.backward_s == Approx(b.stages[s].times.backward_s).epsilon(1e-12));
    }
    const auto& c0 = a.stages[0].chunk_times;
    const auto& e0 = b.stages[0].chunk_times;
    // chunk 1 gains the 8 blocks chunk 0 gives up (0 + 16 against 8 + 8)
    CHECK(c0[1].forward_s - e0[1].forward_s == Approx(e0[0].forward_s - c0[0].forward_s).epsilon(1e-9));
    CHECK(c0[0].forward_s < 0.05 * e0[0].forward_s);  // the embedding alone
    // Per micro-batch (interleaved.tests.cpp): a block's checkpoint 0.03125 GiB, the embedding's output
    // 0.03125 GiB (stage 0), the final norm's output 0.03125 GiB once (last stage), one block
    // re-materialised 235,536,384 B. Stage 0 of [0, 16]: a pass of chunk 1 (16 checkpoints) outweighs
    // one of chunk 0 (the embedding), so the peak holds (3, 2) micro-batches: 3 x 0.03125 + 2 x 16 x
    // 0.03125. Stage 1 of [16, 0]: the head-only chunk holds nothing per micro-batch: (3, 0).
    const double ck = 0.03125, block = 235536384.0 / 1073741824.0;
    CHECK(a.stages[0].replica_costs[0].memory.activations_GiB == Approx(3 * ck + 2 * 16 * ck + block).epsilon(1e-12));
    CHECK(a.stages[1].replica_costs[0].memory.activations_GiB == Approx(3 * 16 * ck + ck + block).epsilon(1e-12));
    // even [8, 8]: 5 and 3 passes in flight spread over the chunks (Korthikanti)
    CHECK(b.stages[0].replica_costs[0].memory.activations_GiB == Approx(2.5 * (16 * ck + ck) + block).epsilon(1e-12));
    CHECK(b.stages[1].replica_costs[0].memory.activations_GiB == Approx(1.5 * 16 * ck + ck + block).epsilon(1e-12));
    const std::string text = to_text(sc, estimate(sc, parse_plan_text(plan_text(R"(, "chunk_layers": [0, 16])", R"(, "chunk_layers": [16, 0])", R"(, "microbatch_group_size": 4)"), sc)));
    CHECK_THAT(text, Catch::Contains("layout       blocks per chunk 0,16 | 16,0"));
    CHECK_THAT(text, Catch::Contains("micro-batch group 4"));
}
