// The search's walk of the 1F1B DAG (docs/model.md, "The DAG"): the longest path of evaluate_dag
// without building the graph, with the early stop of dag_iteration_time_below, and the classic
// closed form it is compared with.
#include <algorithm>
#include <limits>

#include "poseidon/dag.hpp"

namespace poseidon {

// The same longest path as evaluate_dag, without a graph: the search calls this once per candidate
// split. The nodes run in a fixed order that respects every edge, so no readiness is tested: first
// the warm-up forwards, stage by stage down the pipeline; then round r = 0..m-1, stage by stage up
// the pipeline, each stage's steady forward F(w_s + r) (if any) and backward B(r). That order is
// topological: F(w_s + r) needs F(w_{s-1} + r - 1) of the stage before (w_{s-1} = w_s + 1), run
// in round r - 1 (or in its warm-up when w is capped at m), and B(r) needs B(r) of the stage
// after, run just before it in the same round. Every node's finish is max(finish of its
// predecessors) + duration, the same expression evaluate_dag computes, so the two agree bit for
// bit (tests/unit/dag.tests.cpp). The walk it replaced ran each stage as far as its inputs
// allowed and tested them node by node; this order is 2.5-4x faster on the sweep's evaluations
// (docs/performance.md, "The DAG in rounds").
double dag_iteration_time(std::span<const StageTimes> stages, std::int64_t m, DagWorkspace& ws) {
    return dag_iteration_time_below(stages, m, std::numeric_limits<double>::infinity(), ws);
}

double dag_iteration_time_below(std::span<const StageTimes> stages, std::int64_t m, double cutoff, DagWorkspace& ws) {
    const std::int64_t S = static_cast<std::int64_t>(stages.size());
    if (S == 0 || m <= 0) return 0;
    double opt_max = 0;
    for (const auto& t : stages) opt_max = std::max(opt_max, t.optimizer_s);
    // sfa[s*m + j]: finish of the send of activation j from stage s to s+1 (a forward reads the one
    // of the round before, or of the warm-up when w is capped at m). Per stage: clock, the finish
    // of its last node (after round r: B(r)); sbl, of its last gradient send; the rest constants.
    const std::size_t need_doubles = static_cast<std::size_t>(S * m + 13 * S);
    if (ws.finish.size() < need_doubles) ws.finish.resize(need_doubles);
    double* sfa = ws.finish.data();
    double* clock = sfa + S * m;
    double* sbl = clock + S;
    double* drain = sbl + S;
    double* trip = drain + S;
    double* fw = trip + S;  // forward_s, backward_s and the sends, contiguous for the rounds
    double* bw = fw + S;
    double* sfs = bw + S;
    double* sbs = sfs + S;
    double* k1 = sbs + S;  // drain + slowest optimizer step
    double* k2 = k1 + S;   // the last forward's round trip, the last backward, drain, step
    double* saved_clock = k2 + S;
    double* saved_sbl = saved_clock + S;
    double* b0 = saved_sbl + S;
    for (std::int64_t s = 0; s < S; ++s) {
        const StageTimes& t = stages[s];
        fw[s] = t.forward_s, bw[s] = t.backward_s, sfs[s] = t.send_forward_s, sbs[s] = t.send_backward_s;
        clock[s] = 0, sbl[s] = 0;
    }
    // Early stop (the partial estimate): a stage that has run its first k nodes still has to run
    // the rest; its last backward then feeds the last backward of every stage before it (gradient
    // send + backward per stage), any of which ends in that stage's gradient sync, and the slowest
    // optimizer step follows the barrier. So the iteration takes at least
    //   clock_s + rest_s + drain_s + max optimizer,  drain_s = max(dp_s, sb_s + b_{s-1} + drain_{s-1}).
    // Before the stage's last forward has run, its last backward also waits for that micro-batch's
    // round trip through the stages after it (the pipeline's drain), so then also
    //   clock_s + (its nodes up to that forward) + trip_s + b_s + drain_s + max optimizer,
    //   trip_s = sf_s + f_{s+1} + trip_{s+1} + b_{s+1} + sb_{s+1} (0 for the last stage),
    // the wait from the last forward's end to the last backward's start.
    // Once either reaches the cutoff the candidate cannot enter the top K; the margin covers
    // rounding of these sums against the DAG's node-by-node ones.
    const bool early = cutoff < std::numeric_limits<double>::infinity();
    const double stop_at = cutoff / (1 - 1e-9);
    drain[0] = stages[0].dp_sync_s;
    for (std::int64_t s = 1; s < S; ++s) drain[s] = std::max(stages[s].dp_sync_s, sbs[s] + bw[s - 1] + drain[s - 1]);
    trip[S - 1] = 0;
    for (std::int64_t s = S - 2; s >= 0; --s) trip[s] = sfs[s] + fw[s + 1] + trip[s + 1] + bw[s + 1] + sbs[s + 1];
    for (std::int64_t s = 0; s < S; ++s) k1[s] = drain[s] + opt_max, k2[s] = trip[s] + bw[s] + drain[s] + opt_max;
    auto warmup = [&](std::int64_t s) { return std::min<std::int64_t>(S - s - 1, m); };
    // forwards among stage s's first p nodes: its first w are the warm-up, then one per two nodes,
    // then none
    auto forwards_in = [&](std::int64_t s, std::int64_t p) -> std::int64_t {
        const std::int64_t w = warmup(s);
        return p <= w ? p : p <= 2 * m - w ? w + (p - w + 1) / 2 : m;
    };
    // The partial estimate of stage s once it has run p nodes and the last ended at clk.
    auto end_at_least = [&](std::int64_t s, std::int64_t p, double clk) {
        const std::int64_t w = warmup(s);
        const std::int64_t fdone = forwards_in(s, p);
        const std::int64_t bdone = p - fdone;
        double need = static_cast<double>(m - fdone) * fw[s] + static_cast<double>(m - bdone) * bw[s];
        // the last forward is node 2m - w - 2 (m - 1 when every forward warms up)
        const std::int64_t last_f = w >= m ? m - 1 : 2 * m - w - 2;
        if (p <= last_f) {
            const std::int64_t b_by = last_f + 1 - m;  // backwards before the last forward
            const double to_f = static_cast<double>(m - fdone) * fw[s] + static_cast<double>(b_by - bdone) * bw[s];
            need = std::max(need, to_f + trip[s] + bw[s]);
        }
        return clk + need + drain[s] + opt_max;
    };
    // The same after round r of stage s (forwards min(m, w + r + 1), backwards r + 1), in the
    // rounds' inner loop: the last forward has not run while w + r + 1 < m, and b_by = m - w - 1.
    auto stops_after_round = [&](std::int64_t s, std::int64_t r) {
        const std::int64_t w = warmup(s);
        const std::int64_t fdone = std::min(m, w + r + 1);
        const double rest_f = static_cast<double>(m - fdone) * fw[s];
        if (clock[s] + rest_f + static_cast<double>(m - r - 1) * bw[s] + k1[s] >= stop_at) return true;
        return fdone < m && clock[s] + rest_f + static_cast<double>(m - w - r - 2) * bw[s] + k2[s] >= stop_at;
    };
    // The window bound (docs/search.md, "Early stopping in the DAG"): after round r, in which
    // every stage has run F(w_s + r) and B(r), the cycles below give each stage's backward of a
    // later round a lower bound, and the partial estimate from there bounds the iteration. It
    // needs steady rounds 0..R = m - S ahead.
    const std::int64_t R = m - S;
    const bool windows_on = early && S >= 2 && R >= 4;
    // Window cycles: micro-batch j's forward runs down stages a..b while backwards run up them,
    // so B_a(q) -> F_a(j) -> ... -> F_b(j) -> B_b(q+n) -> ... -> B_a(q+n) (j = w_a + q + 1,
    // n = b - a + 1) is a path of n rounds that pays every stage's forward and backward once
    // and the sends between them, W = sum(f + b) + sum(sf) + sum(sb) over the window. Through
    // B_a (and, rotated, through B_b) it repeats while the rounds stay steady, so
    // B_a(r + nQ) >= B_a(r) + Q W. For a window of one stage this is the stage's own work; a
    // longer window of near-equal stages adds the sends: on the search's near-equal splits its
    // mean W/n is the pipeline's rate, which no single stage shows (docs/search.md).
    constexpr std::int64_t max_window = 32;
    std::int64_t* win_n = nullptr;  // per anchor: the best window starting (a) and ending (b) there
    double* win_w = nullptr;
    if (windows_on) {
        ws.windows.resize(static_cast<std::size_t>(2 * S + 3 * (S + 1)));
        double* pre = ws.windows.data();  // prefix sums of f + b, sf and sb
        double* psf = pre + S + 1;
        double* psb = psf + S + 1;
        win_w = psb + S + 1;
        pre[0] = psf[0] = psb[0] = 0;
        for (std::int64_t k = 0; k < S; ++k) {
            pre[k + 1] = pre[k] + fw[k] + bw[k];
            psf[k + 1] = psf[k] + sfs[k];
            psb[k + 1] = psb[k] + sbs[k];
        }
        ws.window_rounds.resize(static_cast<std::size_t>(2 * S));
        win_n = ws.window_rounds.data();
        for (std::int64_t k = 0; k < 2 * S; ++k) win_n[k] = 1;
        for (std::int64_t k = 0; k < S; ++k) win_w[k] = win_w[S + k] = pre[k + 1] - pre[k];
        for (std::int64_t a = 0; a < S; ++a)
            for (std::int64_t b = a + 1; b < std::min(S, a + max_window); ++b) {
                const std::int64_t n = b - a + 1;
                const double W = pre[b + 1] - pre[a] + psf[b] - psf[a] + psb[b + 1] - psb[a + 1];
                if (W * static_cast<double>(win_n[a]) > win_w[a] * static_cast<double>(n)) win_n[a] = n, win_w[a] = W;
                if (W * static_cast<double>(win_n[S + b]) > win_w[S + b] * static_cast<double>(n)) win_n[S + b] = n, win_w[S + b] = W;
            }
    }
    // b_r[s]: stage s's B(r) finish, or a lower bound of it
    auto window_bound = [&](std::int64_t r, const double* b_r) {
        double lb = 0;
        for (std::int64_t k = 0; k < 2 * S; ++k) {
            const std::int64_t s = k % S, n = win_n[k], Q = (R - r) / n;
            lb = std::max(lb, end_at_least(s, (S - s - 1) + 2 * (r + n * Q + 1), b_r[s] + static_cast<double>(Q) * win_w[k]));
        }
        return lb;
    };
    if (windows_on) {
        // Before any node: B_s(0) comes after micro-batch 0's forward through every stage and its
        // backward back to s, and after stage s's warm-up forwards; from there the window bound
        // of round 0. On long pipelines it saves the warm-up's S(S-1)/2 nodes.
        double fill = 0;
        for (std::int64_t k = 0; k < S; ++k) fill += fw[k] + (k + 1 < S ? sfs[k] : 0.0);
        double into = fill, up = fill;
        for (std::int64_t k = S - 1; k >= 0; --k) {
            up += bw[k];
            into -= fw[k] + (k + 1 < S ? sfs[k] : 0.0);  // sum over l < k of f_l + sf_l
            b0[k] = std::max(up, into + static_cast<double>(std::min<std::int64_t>(S - k, m)) * fw[k] + bw[k]);
            up += sbs[k];
        }
        if (window_bound(0, b0) >= stop_at) return cutoff;
    }
    auto forward = [&](std::int64_t s, std::int64_t j) {
        double start = clock[s];
        if (s > 0) start = std::max(start, sfa[(s - 1) * m + j]);
        // the first forward waits for the first parameter bucket and is slowed by the rest
        // (overlap_param_gather; both 0 without it)
        const double fin = j == 0 ? std::max(start, stages[s].param_gather_bucket_s) + (fw[s] + stages[s].first_forward_extra_s) : start + fw[s];
        clock[s] = fin;
        if (s < S - 1) sfa[s * m + j] = std::max(fin, j > 0 ? sfa[s * m + j - 1] : 0.0) + sfs[s];
    };
    // Rounds r0..r1-1; true when the early stop fired.
    auto rounds = [&](std::int64_t r0, std::int64_t r1) {
        for (std::int64_t r = r0; r < r1; ++r)
            for (std::int64_t s = S - 1; s >= 0; --s) {
                const std::int64_t w = warmup(s);
                if (w + r < m) forward(s, w + r);
                double start = clock[s];
                if (s < S - 1) start = std::max(start, sbl[s + 1]);
                // the last backward is slowed by the gradient buckets beside it (0 without overlap)
                const double fin = start + (r == m - 1 ? bw[s] + stages[s].last_backward_extra_s : bw[s]);
                clock[s] = fin;
                if (s > 0) sbl[s] = std::max(fin, sbl[s]) + sbs[s];
                if (early && stops_after_round(s, r)) return true;
            }
        return false;
    };
    // Once every stage is done: finishes grow along each stage's order and each link's sends, so
    // the last finish is the largest of the stages' last nodes and last sends; each gradient sync
    // ends before the barrier, which the slowest optimizer step follows.
    auto iteration_end = [&] {
        double barrier = 0, last = 0;
        for (std::int64_t s = 0; s < S; ++s) {
            barrier = std::max(barrier, clock[s] + stages[s].dp_sync_s);
            last = std::max(last, clock[s]);
            if (s < S - 1) last = std::max(last, sfa[s * m + m - 1]);
            if (s > 0) last = std::max(last, sbl[s]);
        }
        return std::max(last, barrier + opt_max);
    };
    // The drain bound: where the window bound falls short, its remaining gap is mostly the drain
    // that the partial estimate only approximates. The nodes after round R read only the state
    // after it (each stage's B(R) finish, its forward send of F(w_s + R) and its gradient send of
    // B(R)), and every finish is a max of sums of them, so the drain run from lower bounds of that
    // state ends no later than the real one: a lower bound of the iteration. The lower bounds:
    // B_s(R) and B_s(R - 1) from the window cycles anchored after round r (the remainder of the
    // rounds at the stage's own f + b), the sends after them. Tried once per evaluation, it costs
    // the drain's ~S^2 nodes; on the sweep's near-equal splits it is within 0.06 % of the time
    // where the window bound is 0.15-0.55 % under it. The forward sends it writes lie beyond
    // round r, and the rounds rewrite them before reading them.
    auto b_at_least = [&](std::int64_t s, std::int64_t r, std::int64_t q) {  // of B_s(q), from B_s(r)
        const double c = fw[s] + bw[s];
        double v = saved_clock[s] + static_cast<double>(q - r) * c;
        for (std::int64_t k : {s, S + s}) {
            const std::int64_t n = win_n[k], Q = (q - r) / n;
            v = std::max(v, saved_clock[s] + static_cast<double>(Q) * win_w[k] + static_cast<double>(q - r - n * Q) * c);
        }
        return v;
    };
    auto drain_reaches_cutoff = [&](std::int64_t r) {
        std::copy(clock, clock + S, saved_clock);
        std::copy(sbl, sbl + S, saved_sbl);
        for (std::int64_t s = 0; s < S; ++s) {
            clock[s] = b_at_least(s, r, R);
            if (s > 0) sbl[s] = clock[s] + sbs[s];
            if (s < S - 1) sfa[s * m + (S - s - 1) + R] = b_at_least(s, r, R - 1) + fw[s] + sfs[s];
        }
        if (rounds(R + 1, m) || iteration_end() >= stop_at) return true;
        std::copy(saved_clock, saved_clock + S, clock);
        std::copy(saved_sbl, saved_sbl + S, sbl);
        return false;
    };
    for (std::int64_t s = 0; s < S; ++s)
        for (std::int64_t j = 0, w = warmup(s); j < w; ++j) {
            forward(s, j);
            if (early && end_at_least(s, j + 1, clock[s]) >= stop_at) return cutoff;
        }
    if (!windows_on) return rounds(0, m) ? cutoff : iteration_end();
    // After round r every stage has run B(r), so the window bound anchors there. It rarely cuts
    // after the drain bound failed, so it is tried at a few rounds only, spaced by a quarter of
    // the rounds left (every round cost 16 % of the sweep's evaluations and cut 4 of 400,000).
    std::int64_t ran = 0;  // rounds 0..ran-1 have run
    bool drain_tried = false;
    for (std::int64_t r = 0; r < R - 1; r += std::max<std::int64_t>(4, (R - r) / 4)) {
        if (rounds(ran, r + 1)) return cutoff;
        ran = r + 1;
        if (window_bound(r, clock) >= stop_at) return cutoff;
        if (!drain_tried) {
            drain_tried = true;
            if (drain_reaches_cutoff(r)) return cutoff;
        }
    }
    return rounds(ran, m) ? cutoff : iteration_end();
}

double closed_form_time_s(std::span<const StageTimes> stages, std::int64_t m, int V) {
    double sum = 0, mx = 0, comm = 0, tail = 0;
    for (const auto& t : stages) {
        double c = t.forward_s + t.backward_s;
        sum += c;
        mx = std::max(mx, c);
        comm += t.send_forward_s + t.send_backward_s;
        // with the overlap chains: the slowed last backward before the exposed buckets, and the
        // parameter all-gather's bucket 0 and slowdown of the first forward (0 without overlap)
        tail = std::max(tail, t.last_backward_extra_s + t.dp_sync_s + t.optimizer_s + (t.param_gather_bucket_s + t.first_forward_extra_s));
    }
    if (V == 1) return sum + static_cast<double>(m - 1) * mx + comm + tail;
    return sum / V + (static_cast<double>(m) - 1.0 / V) * mx + comm + tail;
}

}  // namespace poseidon
