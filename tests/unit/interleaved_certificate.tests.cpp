// The path that stopped a walk of the interleaved DAG (interleaved_certificate.hpp; docs/search.md,
// "Paths that cut before"): as long as the stop it caused (a whole walk's: as its time, through the
// sync of the stage that sets the barrier), and a path of every DAG of the same
// (p, V, m), so never above the iteration time of any other chunk times. The search cuts the next
// splits with it; a certificate longer than some DAG would let it prune an interleaved optimum.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <limits>
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
    int p = 2, V = 2;
    std::int64_t m = 2;
};

// Chunk and stage times as the search's lower DAG has them: forward, backward and sends only
// (blocking sends folded in or not), each stage's gradient sync and optimizer step.
void random_times(std::mt19937_64& rng, const Shape& x, std::vector<StageTimes>& chunks, std::vector<StageTimes>& stages) {
    auto uni = [&](double lo, double hi) { return std::uniform_real_distribution<double>(lo, hi)(rng); };
    const int PV = x.p * x.V;
    chunks.assign(PV, StageTimes{});
    // stages of two speeds, as a mixed configuration has them, or of any
    const bool two = rng() % 2;
    const double fast = uni(0.1, 1), slow = fast * uni(1, 3);
    for (int v = 0; v < PV; ++v) {
        const int s = v % x.p;
        StageTimes& t = chunks[v];
        const double base = two ? (s < x.p / 2 ? fast : slow) : uni(0.1, 2);
        t.forward_s = base * uni(0.9, 1.1);
        t.backward_s = 2 * base * uni(0.9, 1.1);
        t.send_forward_s = v + 1 < PV && rng() % 3 ? uni(0, 0.2) : 0;
        t.send_backward_s = v > 0 && rng() % 3 ? uni(0, 0.2) : 0;
    }
    stages.assign(x.p, StageTimes{});
    for (auto& t : stages) {
        t.dp_sync_s = uni(0, 1);
        t.optimizer_s = uni(0, 0.5);
    }
}

}  // namespace

TEST_CASE("a stopped walk's path is as long as its stop, a whole walk's as its time, and neither longer than the DAG of any other times of its shape", "[interleaved][search][bounds]") {
    std::mt19937_64 rng(20261205);
    std::vector<StageTimes> chunks, stages, other, other_stages;
    Sweep sw;
    std::mt19937_64 rng_whole(20261207);
    int stopped = 0, before = 0, reused_cuts = 0, trials = 0, ran_out_not_0 = 0;
    for (int n = 0; n < 600; ++n) {
        Shape x;
        x.p = 2 + static_cast<int>(rng() % 7);
        x.V = 2 + static_cast<int>(rng() % 3);
        x.m = x.p * (1 + static_cast<std::int64_t>(rng() % 5));
        random_times(rng, x, chunks, stages);
        const double T = interleaved_iteration_time(chunks, stages, x.V, x.m);
        // a cut within 10 % of the time, as the search's near-ridge splits have it
        const double cutoff = T * (1 - std::pow(10.0, -std::uniform_real_distribution<double>(1, 3.5)(rng)));
        sw.chunks = chunks, sw.stages = stages;
        sw.p = x.p, sw.V = x.V, sw.m = x.m, sw.group = 0;
        sw.detailed = false, sw.trace = true, sw.cutoff = cutoff;
        // A walk that runs to its end gives its time exactly, and its longest path: through the
        // sync of the stage that sets the barrier, as long as the time (summed in another order),
        // and a path of the DAG of other times too (the search keeps it where the time reaches the
        // cut; its own random stream, so that the stops below see the instances they always saw)
        // (half of the time with one later stage's sync long enough to set the barrier)
        {
            std::vector<StageTimes> synced = stages;
            if (rng_whole() % 2) synced[1 + rng_whole() % (x.p - 1)].dp_sync_s += T * std::uniform_real_distribution<double>(0, 0.5)(rng_whole);
            const double Ts = interleaved_iteration_time(chunks, synced, x.V, x.m);
            Sweep whole = sw;
            whole.stages = synced;
            whole.cutoff = std::numeric_limits<double>::infinity();
            REQUIRE(whole.run() == Ts);
            PathCertificate path;
            REQUIRE(whole.ran_to_end);
            REQUIRE(certificate_of(whole, path));
            INFO("instance " << n << ": ran to its end, sync of stage " << path.sync_stage);
            REQUIRE(path.length(chunks, synced) == Approx(Ts).epsilon(1e-12));
            ran_out_not_0 += path.sync_stage != 0;
            for (int k = 0; k < 3; ++k) {
                random_times(rng_whole, x, other, other_stages);
                REQUIRE(path.length(other, other_stages) <= interleaved_iteration_time(other, other_stages, x.V, x.m) * (1 + 1e-12));
            }
        }
        const double r = sw.run();
        PathCertificate cert;
        REQUIRE(certificate_of(sw, cert));
        if (sw.ran_to_end) {
            CHECK(r == T);
            continue;
        }
        ++stopped;
        before += sw.stop_before;
        INFO("instance " << n << ": p " << x.p << ", V " << x.V << ", m " << x.m << ", stage " << sw.stop_stage);
        REQUIRE(r == cutoff);
        const double len = cert.length(chunks, stages);
        // the stop's own sum (clock, passes left, what follows), summed in another order
        REQUIRE(len >= cutoff * (1 - 1e-12));
        REQUIRE(len <= T * (1 + 1e-12));
        // the same path in the DAG of other times of the shape
        for (int k = 0; k < 10; ++k) {
            random_times(rng, x, other, other_stages);
            const double T2 = interleaved_iteration_time(other, other_stages, x.V, x.m);
            const double len2 = cert.length(other, other_stages);
            REQUIRE(len2 <= T2 * (1 + 1e-12));
            ++trials;
            reused_cuts += len2 >= cutoff;
        }
    }
    // 596 of 600 walks stop, 367 of them midway (a traced path) and 229 before any pass; on other
    // times the path reaches the first's cutoff in 1,814 of 5,960 trials: the test bites. Of the
    // 600 whole walks, 288 end with the sync of a stage other than stage 0.
    CHECK(stopped - before >= 300);
    CHECK(before >= 100);
    CHECK(ran_out_not_0 >= 200);
    CHECK(reused_cuts >= trials / 5);
}
