// The tied-embedding gradient all-reduce between a pipeline's first and last stage
// (docs/model.md, "Data parallelism"): a hand-computed case inside one node, where it is charged,
// where not, and how the search and estimate agree on it.
#include <catch2/catch.hpp>

#include <string>

#include <algorithm>
#include <vector>

#include "poseidon/dag.hpp"
#include "poseidon/estimate.hpp"
#include "poseidon/json_util.hpp"
#include "poseidon/scenario.hpp"
#include "poseidon/search.hpp"

using namespace poseidon;

namespace {

Scenario scenario(bool tied) {
    return parse_scenario_text(std::string(R"({"model": {"base": "gpt3-1.7b", "tied_embeddings": )") + (tied ? "true" : "false") +
                               R"(}, "training": {"global_batch_size": 64}, "cluster": "dgx-a100-1"})");
}

Plan two_stages(const Scenario& sc) {
    return parse_plan_text(R"({"micro_batch_size": 4, "num_micro_batches": 16, "stages": [
        {"group": 0, "num_layers": 12, "tp": 1, "dp": 4}, {"group": 0, "num_layers": 12, "tp": 1, "dp": 4}]})",
                           sc);
}

}  // namespace

TEST_CASE("tied embeddings: the first and last stage all-reduce the embedding gradient, by hand inside one node", "[model][embedding_sync]") {
    const Scenario sc = scenario(true);
    const Estimate e = estimate(sc, two_stages(sc), false);
    REQUIRE(e.stages.size() == 2);
    // Each of the 4 GPUs of stage 0 all-reduces its V h fp32 gradients (megatron-core keeps fp32
    // main grads) with its peer on stage 1: a ring of two sends the whole buffer once each way, the
    // 4 pairs at once over NVLink at 300 GB/s x 0.8, in two steps of the 6 us latency.
    const double bytes = 4.0 * 51200 * 2304 * 4;
    const double expected = bytes / (4 * 300e9 * 0.8) + 2 * 6e-6;
    for (const auto& st : e.stages) {
        CHECK(st.times.embedding_sync_s == Approx(expected).epsilon(1e-12));
        CHECK(st.times.dp_sync_s > st.times.embedding_sync_s);
    }
    // untied: the same plan pays exactly that less on both stages
    const Scenario untied = scenario(false);
    const Estimate u = estimate(untied, two_stages(untied), false);
    for (std::size_t s = 0; s < 2; ++s) {
        CHECK(u.stages[s].times.embedding_sync_s == 0);
        CHECK(u.stages[s].times.dp_sync_s == Approx(e.stages[s].times.dp_sync_s - expected).epsilon(1e-12));
    }
    // one stage holds both: nothing to synchronise
    const Plan one = parse_plan_text(R"({"micro_batch_size": 8, "num_micro_batches": 8, "stages": [{"group": 0, "num_layers": 24, "tp": 1, "dp": 8}]})", sc);
    CHECK(estimate(sc, one, false).stages[0].times.embedding_sync_s == 0);
    // the JSON names it on both stages
    const Json j = to_json(sc, e, false);
    CHECK(j["stages"][0]["embedding_sync_s"].get<double>() == Approx(expected).epsilon(1e-9));
    CHECK(j["stages"][1]["embedding_sync_s"].get<double>() == Approx(expected).epsilon(1e-9));
}

TEST_CASE("tied embeddings: the search's plans carry the all-reduce and re-estimate to the same time", "[search][embedding_sync]") {
    const Scenario sc = parse_scenario_text(R"({"model": "gpt3-1.7b", "training": {"global_batch_size": 64}, "cluster": "mixed-a100-a10-t4"})");
    SearchOptions o;
    o.top_k = 5;
    o.threads = 1;
    const SearchResult r = search(sc, o);
    REQUIRE(r.stats.complete);
    REQUIRE(!r.plans.empty());
    int multi = 0;
    for (std::size_t i = 0; i < r.plans.size(); ++i) {
        const Estimate e = estimate(sc, r.plans[i].plan, false);
        CHECK(e.iteration_time_s == r.plans[i].iteration_time_s);
        if (e.stages.size() > 1) {
            ++multi;
            CHECK(e.stages.front().times.embedding_sync_s > 0);
            CHECK(e.stages.back().times.embedding_sync_s == e.stages.front().times.embedding_sync_s);
        }
    }
    CHECK(multi > 0);
}

TEST_CASE("tied embeddings: the timeline draws one all-reduce on both stages, after both have synchronised", "[dag][embedding_sync]") {
    for (const char* overlap : {"false", "true"})
        for (const char* schedule : {"", R"("schedule": "interleaved-1f1b", "virtual_stages": 2, )"}) {
            INFO(overlap << " " << schedule);
            const Scenario sc = parse_scenario_text(std::string(R"({"model": "gpt3-1.7b", "training": {"global_batch_size": 64, "overlap_grad_reduce": )") +
                                                    overlap + R"(}, "cluster": "demo-mixed-16"})");
            const Plan plan = parse_plan_text(std::string(R"({"micro_batch_size": 8, "num_micro_batches": 8, )") + schedule +
                                                  R"("stages": [{"group": 0, "num_layers": 16, "tp": 1, "dp": 4}, {"group": 1, "num_layers": 8, "tp": 1, "dp": 4}]})",
                                              sc);
            const Estimate e = estimate(sc, plan, true);
            const double emb = e.stages[0].times.embedding_sync_s;
            REQUIRE(emb > 0);
            std::vector<TimelineEvent> syncs;
            double last_backward[2] = {0, 0}, optimizer_start[2] = {0, 0};
            for (const auto& ev : e.dag.timeline) {
                if (ev.kind == NodeKind::embedding_sync) syncs.push_back(ev);
                if (ev.kind == NodeKind::backward) last_backward[ev.stage] = std::max(last_backward[ev.stage], ev.end_s);
                if (ev.kind == NodeKind::optimizer) optimizer_start[ev.stage] = ev.start_s;
            }
            REQUIRE(syncs.size() == 2);
            CHECK(syncs[0].stage != syncs[1].stage);
            CHECK(syncs[0].start_s == syncs[1].start_s);
            CHECK(syncs[0].end_s - syncs[0].start_s == Approx(emb).epsilon(1e-12));
            for (int s = 0; s < 2; ++s) {
                CHECK(syncs[0].start_s >= last_backward[s]);
                CHECK(syncs[0].end_s <= optimizer_start[s] + 1e-12);
            }
            // the same iteration as the graph's per-stage dp_sync nodes: one of the two ends there
            CHECK(syncs[0].end_s <= e.iteration_time_s);
        }
}
