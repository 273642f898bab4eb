// The path families of the split walk that turn through a window of neighbouring stages (R, W, D
// and D from a later stage; docs/search.md, "Bounds") against the 1F1B DAG on seeded random
// pipelines: each is the length of a path of the DAG, so never above its longest path, and equal
// to it where it binds. Split from search_bounds.tests.cpp.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cstdint>
#include <random>
#include <vector>

#include "../../core/src/search_bounds.hpp"
#include "poseidon/dag.hpp"

namespace {

// Random stage times for the path families, with free links at times. near_equal: stages of one
// or two layers (f 1 or 2, b = 2 f) with small sends, the search's plateaus.
std::vector<poseidon::StageTimes> random_pipeline(std::mt19937_64& rng, int S, bool near_equal) {
    auto uni = [&](double lo, double hi) { return std::uniform_real_distribution<double>(lo, hi)(rng); };
    const double max_send = near_equal ? 0.2 : 1.5;
    std::vector<poseidon::StageTimes> t(S);
    for (auto& x : t) {
        x.forward_s = near_equal ? 1.0 + static_cast<double>(rng() % 2) : uni(0, 2);
        x.backward_s = near_equal ? 2 * x.forward_s : uni(0, 4);
        x.send_forward_s = rng() % 3 ? uni(0, max_send) : 0;
        x.send_backward_s = rng() % 3 ? uni(0, max_send) : 0;
        x.dp_sync_s = uni(0, 1);
        x.optimizer_s = uni(0, 0.5);
    }
    t.back().send_forward_s = 0;
    t.front().send_backward_s = 0;
    return t;
}

}  // namespace

TEST_CASE("family R: the round trip of two neighbouring stages is a path of the 1F1B DAG, and its length where it binds", "[search][bounds][dag]") {
    // every neighbouring pair of random pipelines: the bound (plus stage 0's sync and the slowest
    // optimizer step, as the search adds them) never exceeds the DAG's longest path
    std::mt19937_64 rng(2026);
    poseidon::DagWorkspace ws;
    int binding = 0;
    for (int n = 0; n < 3000; ++n) {
        const int S = 2 + static_cast<int>(rng() % 7);
        const std::int64_t m = 1 + static_cast<std::int64_t>(rng() % 40);
        const std::vector<poseidon::StageTimes> t = random_pipeline(rng, S, false);
        const double T = poseidon::dag_iteration_time(t, m, ws);
        double opt = 0;
        for (const auto& x : t) opt = std::max(opt, x.optimizer_s);
        double into = 0, down = 0;
        for (int k = 1; k < S; ++k) {
            into += t[k - 1].forward_s + t[k - 1].send_forward_s;
            down += t[k - 1].backward_s + t[k].send_backward_s;
            const std::int64_t wp = std::min<std::int64_t>(S - k, m), wk = std::min<std::int64_t>(S - 1 - k, m);
            const double r = poseidon::detail::round_trip_path(into, down, t[k - 1].forward_s, t[k - 1].backward_s, t[k].forward_s, t[k].backward_s,
                                                               t[k - 1].send_forward_s, t[k].send_backward_s, wp, wk, m) +
                             t[0].dp_sync_s + opt;
            INFO("instance " << n << ", S " << S << ", m " << m << ", pair " << k - 1 << "-" << k);
            CHECK(r <= T * (1 + 1e-12));
            binding += r >= T * (1 - 1e-12);
        }
    }
    CHECK(binding > 0);  // it is exact where the round trip is the critical path
    // the cycle of docs/model.md, "Neighbouring stages": (1 + 2) x 2 + 0.5 + 0.5 per two
    // micro-batches, the whole iteration on two stages with 40 micro-batches
    poseidon::StageTimes a, b;
    a.forward_s = b.forward_s = 1;
    a.backward_s = b.backward_s = 2;
    a.send_forward_s = 0.5;
    b.send_backward_s = 0.5;
    const std::vector<poseidon::StageTimes> two{a, b};
    const double r = poseidon::detail::round_trip_path(1.5, 2.5, 1, 2, 1, 2, 0.5, 0.5, 1, 0, 40);
    // enter 1.5 + 1 + 2 (into stage 1, its forward and first backward), turns for i = 0, 2, ..,
    // 36 (F_0(i + 2) must exist): 19 of 7, then stage 1's F(39) and B(39), down 2.5
    CHECK(r == Approx(4.5 + 19 * 7 + 3 + 2.5).epsilon(1e-12));
    const double T = poseidon::dag_iteration_time(two, 40, ws);
    CHECK(r == Approx(T).epsilon(1e-12));  // families A, C and E give at most 125
}

TEST_CASE("family W: every window of stages is a cycle of the 1F1B DAG, and on equal stages it is within one turn's sends of the iteration", "[search][bounds][dag]") {
    std::mt19937_64 rng(7);
    poseidon::DagWorkspace ws;
    int binding = 0;
    for (int n = 0; n < 2000; ++n) {
        const int S = 1 + static_cast<int>(rng() % 10);
        const std::int64_t m = 1 + static_cast<std::int64_t>(rng() % 60);
        const bool near_equal = rng() % 2;
        const std::vector<poseidon::StageTimes> t = random_pipeline(rng, S, near_equal);
        const double T = poseidon::dag_iteration_time(t, m, ws);
        double opt = 0;
        for (const auto& x : t) opt = std::max(opt, x.optimizer_s);
        double into = 0, down = 0;
        for (int k = 0; k < S; ++k) {
            if (k > 0) into += t[k - 1].forward_s + t[k - 1].send_forward_s, down += t[k - 1].backward_s + t[k].send_backward_s;
            // micro-batch 0 through every stage and back to k: the split walk's other entry
            double fill = 0;
            for (int l = 0; l < S; ++l) fill += t[l].forward_s + t[l].send_forward_s + (l >= k ? t[l].backward_s : 0) + (l > k ? t[l].send_backward_s : 0);
            double W = 0;
            for (int a = k; a >= 0; --a) {
                W += t[a].forward_s + t[a].backward_s + (a < k ? t[a].send_forward_s + t[a + 1].send_backward_s : 0);
                const std::int64_t wa = std::min<std::int64_t>(S - 1 - a, m), wk = std::min<std::int64_t>(S - 1 - k, m);
                const double w = poseidon::detail::window_path(into, down, t[k].forward_s, t[k].backward_s, W, wa, wk, k - a + 1, m, (a + k) % 2 ? fill : 0.0) +
                                 t[0].dp_sync_s + opt;
                INFO("instance " << n << ", S " << S << ", m " << m << ", window " << a << ".." << k);
                CHECK(w <= T * (1 + 1e-12));
                binding += w >= T * (1 - 1e-12);
            }
        }
    }
    CHECK(binding > 100);
    // S equal stages (f 1, b 2, sends 0.1) and 60 micro-batches: the window of all stages turns
    // every S rounds with weight 3 S + 0.2 (S - 1), the pipeline's rate, which the closed form
    // (m - 1) 3 + 3 S + 0.2 (S - 1) misses: within one turn's sends of the iteration.
    for (int S : {3, 5, 8}) {
        std::vector<poseidon::StageTimes> t(S);
        for (int k = 0; k < S; ++k) t[k].forward_s = 1, t[k].backward_s = 2, t[k].send_forward_s = k + 1 < S ? 0.1 : 0, t[k].send_backward_s = k > 0 ? 0.1 : 0;
        const std::int64_t m = 60;
        const double T = poseidon::dag_iteration_time(t, m, ws);
        const double w = poseidon::detail::window_path(1.1 * (S - 1), 2.1 * (S - 1), 1, 2, 3.0 * S + 0.2 * (S - 1), S - 1, 0, S, m);
        INFO("S " << S);
        CHECK(w <= T);
        CHECK(w > T - 0.2 * (S - 1));
        CHECK(T > poseidon::closed_form_time_s(t, m) + 0.1 * (m / S - 1));
    }
}

TEST_CASE("family D: two round trips around the turns of windows from stage 0 are a path of the 1F1B DAG, exact on a slow run at the front", "[search][bounds][dag]") {
    std::mt19937_64 rng(11);
    poseidon::DagWorkspace ws;
    int binding = 0;
    for (int n = 0; n < 2000; ++n) {
        const int S = 1 + static_cast<int>(rng() % 12);
        const std::int64_t m = S + 1 + static_cast<std::int64_t>(rng() % 60);  // every warm-up below m
        const std::vector<poseidon::StageTimes> t = random_pipeline(rng, S, rng() % 2);
        const double T = poseidon::dag_iteration_time(t, m, ws);
        double opt = 0, R = 0;
        for (const auto& x : t) opt = std::max(opt, x.optimizer_s), R += x.forward_s + x.backward_s + x.send_forward_s + x.send_backward_s;
        const double c0 = t[0].forward_s + t[0].backward_s;
        double w1 = 0, w2 = 0;
        for (int k = 0; k < S; ++k) {
            w2 = w1;
            w1 += t[k].forward_s + t[k].backward_s + (k > 0 ? t[k - 1].send_forward_s + t[k].send_backward_s : 0);
            const double d = 2 * R + poseidon::detail::window_turns_d(m - 2 - (S - 1), k + 1, w1, w2, c0) + t[0].dp_sync_s + opt;
            INFO("instance " << n << ", S " << S << ", m " << m << ", window 0.." << k);
            CHECK(d <= T * (1 + 1e-12));
            binding += d >= T * (1 - 1e-12);
        }
    }
    CHECK(binding > 20);
    // issue 11's 3x4096x48 optimum in miniature: four slow stages (f 1, b 3, sends 0.4) before two
    // fast ones (f 0.3, b 0.9, sends 0.05), 40 micro-batches. Turns around stages 0..3 (n 4) and
    // 0..2 (n 3) cover D = 40 - 2 - 5 = 33 = 6 x 4 + 3 x 3 exactly: within 2 % of the DAG, where
    // the closed form (m - 1) max c + sum c + sends misses the sends every turn pays.
    std::vector<poseidon::StageTimes> t(6);
    for (int k = 0; k < 6; ++k) {
        const bool slow = k < 4;
        t[k].forward_s = slow ? 1 : 0.3;
        t[k].backward_s = slow ? 3 : 0.9;
        t[k].send_forward_s = k + 1 < 6 ? (k < 3 ? 0.4 : 0.05) : 0;
        t[k].send_backward_s = k > 0 ? (k <= 3 ? 0.4 : 0.05) : 0;
    }
    const double T = poseidon::dag_iteration_time(t, 40, ws);
    const double R = 4 * 4 + 2 * 1.2 + 3 * 0.8 + 2 * 0.1;       // 21
    const double w1 = 4 * 4 + 3 * 0.8, w2 = 3 * 4 + 2 * 0.8;      // 18.4, 13.6
    const double turns = poseidon::detail::window_turns_d(33, 4, w1, w2, 4);
    CHECK(turns == Approx(6 * 18.4 + 3 * 13.6));
    CHECK(2 * R + turns <= T * (1 + 1e-12));
    CHECK(2 * R + turns >= 0.98 * T);
    CHECK(poseidon::closed_form_time_s(t, 40) < 0.95 * T);
}

TEST_CASE("family D from a later stage a: the turns of windows a..i between the two round trips, ended at any stage's sync, are a path of the 1F1B DAG", "[search][bounds][dag]") {
    // D_a: micro-batch 0 through every stage and back to B_a(0), turns of a..i and a..i-1 and
    // stage a's own pairs over D_a = m - 2 - w_a micro-batches, then micro-batch m-1 from F_a
    // through every stage and down to the last backward of any stage j, then j's sync. The stages
    // before a and the sends up to a are paid once: 2 (sum c + sends) + turns - pa_a + x, with
    // x = max_j (dp_j - the way down to j). Stages before a may hold m or more warm-ups.
    std::mt19937_64 rng(37);
    poseidon::DagWorkspace ws;
    int binding = 0, binding_later = 0, binding_exit = 0;
    for (int n = 0; n < 3000; ++n) {
        const int S = 1 + static_cast<int>(rng() % 12);
        const std::int64_t m = 2 + static_cast<std::int64_t>(rng() % (n % 3 ? 60 : 12));  // a third with few micro-batches
        const std::vector<poseidon::StageTimes> t = random_pipeline(rng, S, rng() % 2);
        const double T = poseidon::dag_iteration_time(t, m, ws);
        double opt = 0, R = 0;
        for (const auto& x : t) opt = std::max(opt, x.optimizer_s), R += x.forward_s + x.backward_s + x.send_forward_s + x.send_backward_s;
        std::vector<double> c(S), pa(S + 1, 0.0), down(S + 1, 0.0);
        double x = -1e300;
        for (int j = 0; j < S; ++j) {
            c[j] = t[j].forward_s + t[j].backward_s;
            const double sb_next = j + 1 < S ? t[j + 1].send_backward_s : 0;
            pa[j + 1] = pa[j] + c[j] + t[j].send_forward_s + sb_next;
            down[j + 1] = down[j] + t[j].backward_s + sb_next;
            x = std::max(x, t[j].dp_sync_s - down[j]);
        }
        for (int a = 0; a < S; ++a) {
            const std::int64_t wa = std::min<std::int64_t>(S - 1 - a, m);
            if (wa + 2 > m) continue;
            for (int i = a; i < S; ++i) {
                const double w1 = pa[i + 1] - pa[a] - (i + 1 < S ? t[i + 1].send_backward_s : 0) - t[i].send_forward_s;  // window a..i
                const double w2 = i > a ? pa[i] - pa[a] - t[i].send_backward_s - t[i - 1].send_forward_s : 0;       // window a..i-1
                const double turns = poseidon::detail::window_turns_d(m - 2 - wa, i - a + 1, w1, w2, c[a]);
                const double d = 2 * R + turns - pa[a] + x + opt;
                INFO("instance " << n << ", S " << S << ", m " << m << ", window " << a << ".." << i);
                CHECK(d <= T * (1 + 1e-12));
                if (d >= T * (1 - 1e-12)) {
                    ++binding;
                    binding_later += a > 0;
                    binding_exit += x > t[0].dp_sync_s;
                }
            }
        }
    }
    CHECK(binding_later > 50);
    CHECK(binding_exit > 20);
    // a slow pair in the middle of a long pipeline (stages 2 and 3 of 8, c 4 against 3, sends
    // 0.1), 30 micro-batches, and stage 1 with the longest sync: the DAG turns around 2..3 between
    // the round trips and ends at stage 1's sync, which D_2 gives exactly, where the windows from
    // stage 0 and stage 0's sync fall short
    std::vector<poseidon::StageTimes> t(8);
    for (int k = 0; k < 8; ++k) {
        const bool slow = k == 2 || k == 3;
        t[k].forward_s = slow ? 1.5 : 1;
        t[k].backward_s = slow ? 2.5 : 2;
        t[k].send_forward_s = k + 1 < 8 ? 0.1 : 0;
        t[k].send_backward_s = k > 0 ? 0.1 : 0;
        t[k].dp_sync_s = k == 1 ? 5 : 1;
    }
    const double T = poseidon::dag_iteration_time(t, 30, ws);
    const double R = 2 * 4 + 6 * 3 + 14 * 0.1;                       // 27.4
    const double pa2 = 2 * 3 + 4 * 0.1;                               // 6.4: stages 0, 1 and the sends up to stage 2
    const double turns = poseidon::detail::window_turns_d(30 - 2 - 5, 2, 8.2, 4, 4);  // 11 turns of 8.2 and a pair
    const double x = 5 - (2 + 0.1);                                    // stage 1's sync less the way down to it
    CHECK(2 * R + turns - pa2 + x == Approx(T).epsilon(1e-12));
    const double from_0 = 2 * R + poseidon::detail::window_turns_d(30 - 2 - 7, 4, 14.6, 10.4, 3) + 1;
    CHECK(from_0 < 0.95 * T);
}

