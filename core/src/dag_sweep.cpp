// The search's walk of the 1F1B DAG (docs/model.md, "The DAG"): the longest path of evaluate_dag
// without building the graph, with the early stop of dag_iteration_time_below, and the classic
// closed form it is compared with.
#include <algorithm>
#include <limits>

#include "poseidon/dag.hpp"

namespace poseidon {

// The same longest path as evaluate_dag, without a graph: the search calls this once per candidate
// split, and the generic walk spends most of its time decoding node ids. Each stage runs its 1F1B
// order; a stage advances while the cross-stage input of its next node (the activation send from
// stage s-1, the gradient send from stage s+1) is done, and a node's sends are finished as soon as
// the node is. Every node's finish is max(finish of its predecessors) + duration, the same
// expression evaluate_dag computes, so the two agree bit for bit (tests/unit/dag.tests.cpp).
double dag_iteration_time(std::span<const StageTimes> stages, std::int64_t m, DagWorkspace& ws) {
    return dag_iteration_time_below(stages, m, std::numeric_limits<double>::infinity(), ws);
}

double dag_iteration_time_below(std::span<const StageTimes> stages, std::int64_t m, double cutoff, DagWorkspace& ws) {
    const std::int64_t S = static_cast<std::int64_t>(stages.size());
    if (S == 0 || m <= 0) return 0;
    double opt_max = 0;
    for (const auto& t : stages) opt_max = std::max(opt_max, t.optimizer_s);
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
    // sf[s*m + j]: finish of the send of activation j from stage s to s+1; sb[s*m + j]: of gradient
    // j from stage s to s-1. Whether one is done is read from its stage's position, so the arrays
    // need no clearing: filling them cost as much as the nodes an early stop leaves unvisited.
    // bf[s*m + j]: finish of backward j on stage s (for the window bound below).
    const std::size_t need_doubles = static_cast<std::size_t>(3 * S * m + 3 * S);
    if (ws.finish.size() < need_doubles) ws.finish.resize(need_doubles);
    double* sf = ws.finish.data();
    double* sb = sf + S * m;
    double* bf = sb + S * m;
    double* clock = bf + S * m;  // finish of the stage's last node so far
    double* drain = clock + S;
    double* trip = drain + S;
    drain[0] = stages[0].dp_sync_s;
    for (std::int64_t s = 1; s < S; ++s) drain[s] = std::max(stages[s].dp_sync_s, stages[s].send_backward_s + stages[s - 1].backward_s + drain[s - 1]);
    trip[S - 1] = 0;
    for (std::int64_t s = S - 2; s >= 0; --s)
        trip[s] = stages[s].send_forward_s + stages[s + 1].forward_s + trip[s + 1] + stages[s + 1].backward_s + stages[s + 1].send_backward_s;
    for (std::int64_t s = 0; s < S; ++s) clock[s] = 0;
    ws.pending.assign(static_cast<std::size_t>(S), 0);  // position in the stage's 1F1B order
    std::uint32_t* pos = ws.pending.data();
    const std::int64_t ops = 2 * m;
    std::int64_t done = 0;
    double best = 0, barrier = 0;
    bool aborted = false;
    // forwards among stage s's first p nodes: its first w are the warm-up, then one per two nodes,
    // then none
    auto forwards_in = [&](std::int64_t s, std::int64_t p) -> std::int64_t {
        const std::int64_t w = std::min<std::int64_t>(S - s - 1, m);
        return p <= w ? p : p <= 2 * m - w ? w + (p - w + 1) / 2 : m;
    };
    auto forwards_done = [&](std::int64_t s) { return forwards_in(s, pos[s]); };
    // The partial estimate of stage s once it has run p nodes and the last ended at clk.
    auto end_at_least = [&](std::int64_t s, std::int64_t p, double clk) {
        const StageTimes& t = stages[s];
        const std::int64_t w = std::min<std::int64_t>(S - s - 1, m);
        const std::int64_t fdone = forwards_in(s, p);
        const std::int64_t bdone = p - fdone;
        double need = static_cast<double>(m - fdone) * t.forward_s + static_cast<double>(m - bdone) * t.backward_s;
        // the last forward is node 2m - w - 2 (m - 1 when every forward warms up)
        const std::int64_t last_f = w >= m ? m - 1 : 2 * m - w - 2;
        if (p <= last_f) {
            const std::int64_t b_by = last_f + 1 - m;  // backwards before the last forward
            const double to_f = static_cast<double>(m - fdone) * t.forward_s + static_cast<double>(b_by - bdone) * t.backward_s;
            need = std::max(need, to_f + trip[s] + t.backward_s);
        }
        return clk + need + drain[s] + opt_max;
    };
    // The window bound (docs/search.md, "Early stopping in the DAG"): after round r, in which
    // every stage has run F(w_s + r) and B(r), the cycles below give each stage's backward of a
    // later round a lower bound, and the partial estimate from there bounds the iteration. It
    // needs the B finishes by round (bf) and steady rounds 0..R = m - S ahead.
    const std::int64_t R = m - S;
    const bool windows_on = early && S >= 2 && R >= 4;
    std::int64_t round_checked = -1;  // the last round the bound was applied after
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
        ws.windows.resize(static_cast<std::size_t>(6 * S + 3 * (S + 1)));
        double* pre = ws.windows.data();  // prefix sums of f + b, sf and sb
        double* psf = pre + S + 1;
        double* psb = psf + S + 1;
        win_w = psb + S + 1;
        pre[0] = psf[0] = psb[0] = 0;
        for (std::int64_t k = 0; k < S; ++k) {
            pre[k + 1] = pre[k] + stages[k].forward_s + stages[k].backward_s;
            psf[k + 1] = psf[k] + stages[k].send_forward_s;
            psb[k + 1] = psb[k] + stages[k].send_backward_s;
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
    // b_r[s * stride]: stage s's B(r) finish, or a lower bound of it
    auto window_bound = [&](std::int64_t r, const double* b_r, std::int64_t stride) {
        double lb = 0;
        for (std::int64_t k = 0; k < 2 * S; ++k) {
            const std::int64_t s = k % S, n = win_n[k], Q = (R - r) / n;
            lb = std::max(lb, end_at_least(s, (S - s - 1) + 2 * (r + n * Q + 1), b_r[s * stride] + static_cast<double>(Q) * win_w[k]));
        }
        return lb;
    };
    if (windows_on) {
        // Before any node: B_s(0) comes after micro-batch 0's forward through every stage and its
        // backward back to s, and after stage s's warm-up forwards; from there the window bound
        // of round 0. On long pipelines it saves the warm-up's S(S-1)/2 nodes.
        double* b0 = ws.windows.data() + 4 * S + 3 * (S + 1);
        double fill = 0;
        for (std::int64_t k = 0; k < S; ++k) fill += stages[k].forward_s + (k + 1 < S ? stages[k].send_forward_s : 0.0);
        double into = fill, up = fill;
        for (std::int64_t k = S - 1; k >= 0; --k) {
            const StageTimes& t = stages[k];
            up += t.backward_s;
            into -= t.forward_s + (k + 1 < S ? t.send_forward_s : 0.0);  // sum over l < k of f_l + sf_l
            b0[k] = std::max(up, into + static_cast<double>(std::min<std::int64_t>(S - k, m)) * t.forward_s + t.backward_s);
            up += t.send_backward_s;
        }
        if (window_bound(0, b0, 1) >= stop_at) return cutoff;
    }
    auto advance = [&](std::int64_t s) {
        const StageTimes& t = stages[s];
        const std::int64_t w = std::min<std::int64_t>(S - s - 1, m);
        bool moved = false;
        while (pos[s] < ops) {
            const std::int64_t k = pos[s];
            bool fwd;
            std::int64_t j;
            if (k < w) {
                fwd = true;
                j = k;
            } else if (k < 2 * m - w) {
                fwd = ((k - w) & 1) == 0;
                j = fwd ? w + (k - w) / 2 : (k - w) / 2;
            } else {
                fwd = false;
                j = k - m;
            }
            double start = clock[s];
            if (fwd) {
                if (s > 0) {
                    if (forwards_done(s - 1) <= j) break;
                    start = std::max(start, sf[(s - 1) * m + j]);
                }
                // the first forward waits for the first parameter bucket and is slowed by the
                // rest (overlap_param_gather; both 0 without it)
                const double fin = j == 0 ? std::max(start, t.param_gather_bucket_s) + (t.forward_s + t.first_forward_extra_s) : start + t.forward_s;
                clock[s] = fin;
                best = std::max(best, fin);
                if (s < S - 1) {
                    const double prev = j > 0 ? sf[s * m + j - 1] : 0.0;
                    const double sfin = std::max(fin, prev) + t.send_forward_s;
                    sf[s * m + j] = sfin;
                    best = std::max(best, sfin);
                }
            } else {
                if (s < S - 1) {
                    if (pos[s + 1] - forwards_done(s + 1) <= j) break;
                    start = std::max(start, sb[(s + 1) * m + j]);
                }
                // the last backward is slowed by the gradient buckets beside it (0 without overlap)
                const double fin = start + (j == m - 1 ? t.backward_s + t.last_backward_extra_s : t.backward_s);
                clock[s] = fin;
                bf[s * m + j] = fin;
                best = std::max(best, fin);
                if (s > 0) {
                    const double prev = j > 0 ? sb[s * m + j - 1] : 0.0;
                    const double sfin = std::max(fin, prev) + t.send_backward_s;
                    sb[s * m + j] = sfin;
                    best = std::max(best, sfin);
                }
            }
            ++pos[s];
            moved = true;
            if (early && end_at_least(s, pos[s], clock[s]) >= stop_at) {
                aborted = true;
                return false;
            }
        }
        if (moved && pos[s] == ops) {
            const double dp = clock[s] + t.dp_sync_s;
            best = std::max(best, dp);
            barrier = std::max(barrier, dp);
            ++done;
        }
        return moved;
    };
    // Forward inputs flow down the pipeline and gradients up it: alternate the sweep direction.
    // One sweep; false when the early stop fired. 1F1B never deadlocks, so every sweep moves; a
    // sweep that moved nothing would be a bug, reported as NaN rather than a hang.
    bool down = true, stuck = false;
    auto sweep = [&]() {
        bool moved = false;
        for (std::int64_t i = 0; i < S && !aborted; ++i) moved = advance(down ? i : S - 1 - i) || moved;
        down = !down;
        stuck = !aborted && !moved;
        return !aborted && !stuck;
    };
    // The drain bound: where the window bound falls short, its remaining gap is mostly the drain
    // that the partial estimate only approximates. The nodes after round R read only the state
    // after it (each stage's B(R) finish, its forward send of F(w_s + R) and its gradient send of
    // B(R)), and every finish is a max of sums of them, so the drain run from lower bounds of that
    // state, node by node, ends no later than the real one: a lower bound of the iteration. The
    // lower bounds: B_s(R) and B_s(R - 1) from the window cycles anchored after round r (the
    // remainder of the rounds at the stage's own f + b), the sends after them. Tried once per
    // evaluation, it costs the drain's ~1.5 S^2 nodes; on the sweep's near-equal splits it is
    // within 0.06 % of the time where the window bound is 0.15-0.55 % under it. The arrays need
    // no restoring afterwards: the sweep rewrites every entry before reading it.
    // once every stage is done: the last finish, or the barrier and the slowest optimizer step
    auto iteration_end = [&] { return std::max(best, barrier + opt_max); };
    bool drain_tried = false;
    double* saved_clock = windows_on ? ws.windows.data() + 5 * S + 3 * (S + 1) : nullptr;
    auto b_at_least = [&](std::int64_t s, std::int64_t r, std::int64_t q) {  // of B_s(q), from round r
        const double c = stages[s].forward_s + stages[s].backward_s;
        double v = bf[s * m + r] + static_cast<double>(q - r) * c;
        for (std::int64_t k : {s, S + s}) {
            const std::int64_t n = win_n[k], Q = (q - r) / n;
            v = std::max(v, bf[s * m + r] + static_cast<double>(Q) * win_w[k] + static_cast<double>(q - r - n * Q) * c);
        }
        return v;
    };
    auto drain_reaches_cutoff = [&](std::int64_t r) {
        drain_tried = true;
        for (std::int64_t s = 0; s < S; ++s)  // a stage past round R - 1 leaves no room for the state
            if (static_cast<std::int64_t>(pos[s]) > (S - s - 1) + 2 * R) return false;
        std::vector<std::uint32_t>& saved_pos = ws.ready;
        saved_pos.assign(pos, pos + S);
        std::copy(clock, clock + S, saved_clock);
        const double saved_best = best;
        for (std::int64_t s = 0; s < S; ++s) {
            const StageTimes& t = stages[s];
            const std::int64_t w = S - s - 1;
            clock[s] = b_at_least(s, r, R);
            if (s > 0) sb[s * m + R] = clock[s] + t.send_backward_s;
            if (s < S - 1) sf[s * m + w + R] = b_at_least(s, r, R - 1) + t.forward_s + t.send_forward_s;
            pos[s] = static_cast<std::uint32_t>(w + 2 * (R + 1));
        }
        best = 0;
        while (done < S)
            if (!sweep()) return true;  // stopped early (or stuck: the caller reports NaN)
        if (iteration_end() >= stop_at) return true;
        std::copy(saved_pos.begin(), saved_pos.end(), pos);
        std::copy(saved_clock, saved_clock + S, clock);
        best = saved_best;
        barrier = 0;
        done = 0;
        return false;
    };
    while (done < S) {
        if (!sweep()) return stuck ? std::numeric_limits<double>::quiet_NaN() : cutoff;
        if (!windows_on) continue;
        std::int64_t r = R;  // the last round every stage has completed
        for (std::int64_t s = 0; s < S; ++s) r = std::min<std::int64_t>(r, (static_cast<std::int64_t>(pos[s]) - (S - s - 1)) / 2 - 1);
        if (r > round_checked && r < R - 1) {
            round_checked = r;
            if (window_bound(r, bf + r, m) >= stop_at) return cutoff;
            if (!drain_tried && drain_reaches_cutoff(r)) return stuck ? std::numeric_limits<double>::quiet_NaN() : cutoff;
        }
    }
    return iteration_end();
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
