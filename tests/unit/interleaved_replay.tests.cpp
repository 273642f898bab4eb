// The interleaved DAG's walk replayed in the order it runs its passes (interleaved_replay.cpp):
// the same passes in the same order, so the same finishes, the same time, the same early stop and
// the same path it leaves, bit for bit, whatever the times. A replay that ran a pass before its
// input would give a shorter time, and the search would keep a split the walk cuts or cut one it
// keeps.
#include <catch2/catch.hpp>

#include <cmath>
#include <random>
#include <vector>

#include "../../core/src/interleaved_certificate.hpp"
#include "poseidon/dag.hpp"

using namespace poseidon;
using poseidon::detail::certificate_of;
using poseidon::detail::PathCertificate;
using poseidon::detail::Sweep;

namespace {

struct Shape {
    int p = 2, V = 2, group = 0;
    std::int64_t m = 2;
};

// Chunk times of any kind but merged pairs and buckets (which the walk runs itself): forwards,
// backwards, sends, the pair reserve, a deferred head weight gradient on the last chunk.
void random_times(std::mt19937_64& rng, const Shape& x, std::vector<StageTimes>& chunks, std::vector<StageTimes>& stages) {
    auto uni = [&](double lo, double hi) { return std::uniform_real_distribution<double>(lo, hi)(rng); };
    const int PV = x.p * x.V;
    chunks.assign(PV, StageTimes{});
    for (int v = 0; v < PV; ++v) {
        StageTimes& t = chunks[v];
        t.forward_s = uni(0.1, 2);
        t.backward_s = t.forward_s * uni(1, 3);
        t.send_forward_s = v + 1 < PV && rng() % 3 ? uni(0, 0.3) : 0;
        t.send_backward_s = v > 0 && rng() % 3 ? uni(0, 0.3) : 0;
        t.pair_reserve_s = rng() % 4 == 0 ? uni(0, 0.05) : 0;
    }
    if (rng() % 3 == 0) chunks[PV - 1].deferred_wgrad_s = uni(0, 0.5);
    stages.assign(x.p, StageTimes{});
    for (auto& t : stages) {
        t.dp_sync_s = uni(0, 1);
        t.optimizer_s = uni(0, 0.5);
    }
}

Sweep sweep_of(const Shape& x, const std::vector<StageTimes>& chunks, const std::vector<StageTimes>& stages, bool replay) {
    Sweep sw{chunks, stages, x.p, x.V, x.m, x.group};
    sw.replay_allowed = replay;
    return sw;
}

}  // namespace

TEST_CASE("the replayed interleaved walk gives the walk's finishes, time, early stop and path, bit for bit", "[interleaved][dag][search]") {
    std::mt19937_64 rng(20261207);
    std::vector<StageTimes> chunks, stages;
    int stopped = 0, complete = 0, groups = 0;
    for (int n = 0; n < 400; ++n) {
        Shape x;
        x.p = 2 + static_cast<int>(rng() % 7);
        x.V = 2 + static_cast<int>(rng() % 3);
        x.m = x.p * (1 + static_cast<std::int64_t>(rng() % 4));
        // Megatron's micro-batch group per virtual stage, where the order has one
        if (rng() % 4 == 0) x.group = x.p + static_cast<int>(rng() % 3);
        random_times(rng, x, chunks, stages);
        INFO("instance " << n << ": p " << x.p << ", V " << x.V << ", m " << x.m << ", group " << x.group);

        // every pass's start and finish, as the timeline shows them
        Sweep walk = sweep_of(x, chunks, stages, false), replay = sweep_of(x, chunks, stages, true);
        const double T = walk.run();
        if (std::isnan(T)) {
            // an order that deadlocks (some groups do): neither runs it
            REQUIRE(std::isnan(replay.run()));
            continue;
        }
        groups += x.group > 0;
        REQUIRE(replay.run() == T);
        REQUIRE(replay.fwd_start == walk.fwd_start);
        REQUIRE(replay.fwd_fin == walk.fwd_fin);
        REQUIRE(replay.bwd_start == walk.bwd_start);
        REQUIRE(replay.bwd_fin == walk.bwd_fin);
        REQUIRE(replay.send_f_fin == walk.send_f_fin);
        REQUIRE(replay.send_b_fin == walk.send_b_fin);
        REQUIRE(replay.last_end == walk.last_end);

        // the search's lower DAG: traced, stopped at a cut near the time
        for (const double below : {1e-3, 3e-2, -1e-2}) {
            Sweep tw = sweep_of(x, chunks, stages, false), tr = sweep_of(x, chunks, stages, true);
            for (Sweep* sw : {&tw, &tr}) sw->detailed = false, sw->trace = true, sw->cutoff = T * (1 - below);
            const double a = tw.run(), b = tr.run();
            REQUIRE(b == a);
            REQUIRE(tr.stop_stage == tw.stop_stage);
            REQUIRE(tr.stop_before == tw.stop_before);
            PathCertificate cw, cr;
            const bool has = certificate_of(tw, cw);
            REQUIRE(certificate_of(tr, cr) == has);
            REQUIRE(tr.ran_to_end == tw.ran_to_end);
            if (has) {
                REQUIRE(cr.count == cw.count);
                REQUIRE(cr.sync_stage == cw.sync_stage);
            }
            if (tw.ran_to_end) ++complete;
            else stopped += has;
        }
    }
    // both kinds of runs, and the groups, are exercised (794 stopped with a path, 397 ran to the
    // end, 99 instances with a group)
    CHECK(stopped >= 600);
    CHECK(complete >= 300);
    CHECK(groups >= 60);
}
