// Overlap of communication with computation (docs/model.md, "Overlap"): Megatron-Core's switches,
// each a bound the hidden part can never exceed, with the contention slowdown of the compute.
#include <catch2/catch.hpp>

#include <cmath>
#include <string>

#include "overlap_helpers.hpp"
#include "poseidon/cost_model.hpp"
#include "poseidon/error.hpp"
#include "poseidon/estimate.hpp"
#include "poseidon/scenario.hpp"

using namespace poseidon;

TEST_CASE("bucketed gradient reduction behind the last backward, computed by hand", "[overlap]") {
    // 80 M parameters: 2 buckets of 40 M. Sync 1 s, backward 1 s, slowdown 0.1: the first bucket
    // is ready half-way and its 0.5 s hides behind the second half; the second bucket's 0.5 s is
    // exposed. Exposed max(0.5, 1 - 0.5) = 0.5, plus 0.1 x 0.5 of contention.
    CHECK(overlapped_bucket_sync_s(1.0, 1.0, 80e6, 0.1) == Approx(0.55));
    // Communication-bound: sync 4 s: only (K-1)/K of the backward hides: 4 - 0.5 = 3.5 + 0.05.
    CHECK(overlapped_bucket_sync_s(4.0, 1.0, 80e6, 0.1) == Approx(3.55));
    // One bucket (small stage): nothing can start before the backward ends.
    CHECK(overlapped_bucket_sync_s(1.0, 5.0, 10e6, 0.1) == Approx(1.0));
    CHECK(overlapped_bucket_sync_s(0.0, 5.0, 10e6, 0.1) == 0.0);
}

namespace {
Plan plan(const Scenario& sc) {
    return parse_plan_text(R"({"micro_batch_size": 32, "num_micro_batches": 16,
        "stages": [{"group": 0, "num_layers": 18, "tp": 4, "dp": 32}, {"group": 0, "num_layers": 18, "tp": 4, "dp": 32}]})", sc);
}
}  // namespace

TEST_CASE("overlap switches only ever shorten the exposed communication", "[overlap]") {
    const Scenario base = overlap_test::scenario(R"("distributed_optimizer": true)");
    const Estimate e0 = estimate(base, plan(base));
    const Scenario grad = overlap_test::scenario(R"("distributed_optimizer": true, "overlap_grad_reduce": true)");
    const Estimate e1 = estimate(grad, plan(grad));
    CHECK(e1.stages[0].times.dp_sync_s < e0.stages[0].times.dp_sync_s);
    CHECK(e1.iteration_time_s < e0.iteration_time_s);
    const Scenario gather = overlap_test::scenario(R"("distributed_optimizer": true, "overlap_param_gather": true)");
    const Estimate e2 = estimate(gather, plan(gather));
    CHECK(e2.stages[0].times.optimizer_s < e0.stages[0].times.optimizer_s);
    // the userbuffers need sequence parallelism (Megatron refuses them without): compared with it alone
    const Scenario sp = overlap_test::scenario(R"("distributed_optimizer": true, "sequence_parallel": true)");
    const Estimate e_sp = estimate(sp, plan(sp));
    const Scenario ub = overlap_test::scenario(R"("distributed_optimizer": true, "sequence_parallel": true, "tp_comm_overlap": true)");
    const Estimate e3 = estimate(ub, plan(ub));
    CHECK(e3.stages[0].times.forward_tp_comm_s < e_sp.stages[0].times.forward_tp_comm_s);
    CHECK(e3.stages[0].times.forward_s < e_sp.stages[0].times.forward_s);
    // The hidden part never exceeds the GEMMs: the exposed forward TP share stays positive.
    CHECK(e3.stages[0].times.forward_tp_comm_s > 0);
}

TEST_CASE("the async backward TP all-reduce is the stack's: megatron-core has it, megatron-lm-2021 not", "[overlap]") {
    const Scenario core = overlap_test::scenario(R"("stack": "megatron-core")");
    const Scenario old = overlap_test::scenario(R"("stack": {"base": "megatron-core", "tp_async_backward": false})");
    const Estimate a = estimate(core, plan(core)), b = estimate(old, plan(old));
    CHECK(a.stages[0].times.backward_tp_comm_s < b.stages[0].times.backward_tp_comm_s);
    CHECK(a.stages[0].times.forward_tp_comm_s == b.stages[0].times.forward_tp_comm_s);
}

TEST_CASE("grad_reduce_dtype bf16 halves the gradient bytes of an fp32-gradient stack", "[overlap]") {
    const Scenario fp32 = overlap_test::scenario(R"("grad_reduce_dtype": "fp32")"), bf16 = overlap_test::scenario(R"("grad_reduce_dtype": "bf16")");
    const Estimate a = estimate(fp32, plan(fp32)), b = estimate(bf16, plan(bf16));
    CHECK(b.stages[0].memory.gradients_GiB == Approx(a.stages[0].memory.gradients_GiB / 2));
    CHECK(b.stages[0].times.dp_sync_s < a.stages[0].times.dp_sync_s);
}

TEST_CASE("tp_comm_overlap needs sequence parallelism", "[overlap][validation]") {
    CHECK_THROWS_WITH(overlap_test::scenario(R"("tp_comm_overlap": true)"), Catch::Contains("scenario.training.tp_comm_overlap: true needs sequence_parallel true"));
    CHECK_NOTHROW(overlap_test::scenario(R"("tp_comm_overlap": true, "sequence_parallel": true)"));
}

TEST_CASE("overlap_param_gather needs the distributed optimizer", "[overlap][validation]") {
    CHECK_THROWS_WITH(overlap_test::scenario(R"("overlap_param_gather": true)"),
                      Catch::Contains("scenario.training.overlap_param_gather: true needs distributed_optimizer true"));
}
