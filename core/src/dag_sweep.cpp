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
    // j from stage s to s-1; negative while not done.
    ws.finish.assign(static_cast<std::size_t>(2 * S * m + 3 * S), -1.0);
    double* sf = ws.finish.data();
    double* sb = sf + S * m;
    double* clock = sb + S * m;  // finish of the stage's last node so far
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
                    const double in = sf[(s - 1) * m + j];
                    if (in < 0) break;
                    start = std::max(start, in);
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
                    const double in = sb[(s + 1) * m + j];
                    if (in < 0) break;
                    start = std::max(start, in);
                }
                // the last backward is slowed by the gradient buckets beside it (0 without overlap)
                const double fin = start + (j == m - 1 ? t.backward_s + t.last_backward_extra_s : t.backward_s);
                clock[s] = fin;
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
            if (early) {
                const std::int64_t p = pos[s];
                const std::int64_t fdone = p <= w ? p : p <= 2 * m - w ? w + (p - w + 1) / 2 : m;
                const std::int64_t bdone = p - fdone;
                const double rest = static_cast<double>(m - fdone) * t.forward_s + static_cast<double>(m - bdone) * t.backward_s;
                double need = rest;
                // the last forward is node 2m - w - 2 (m - 1 when every forward warms up)
                const std::int64_t last_f = w >= m ? m - 1 : 2 * m - w - 2;
                if (p <= last_f) {
                    const std::int64_t b_by = last_f + 1 - m;  // backwards before the last forward
                    const double to_f = static_cast<double>(m - fdone) * t.forward_s + static_cast<double>(b_by - bdone) * t.backward_s;
                    need = std::max(need, to_f + trip[s] + t.backward_s);
                }
                if (clock[s] + need + drain[s] + opt_max >= stop_at) {
                    aborted = true;
                    return false;
                }
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
    for (bool down = true; done < S; down = !down) {
        bool moved = false;
        for (std::int64_t i = 0; i < S && !aborted; ++i) moved = advance(down ? i : S - 1 - i) || moved;
        if (aborted) return cutoff;
        if (!moved) return std::numeric_limits<double>::quiet_NaN();  // unreachable: 1F1B never deadlocks
    }
    best = std::max(best, barrier);
    for (const auto& t : stages) best = std::max(best, barrier + t.optimizer_s);
    return best;
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
