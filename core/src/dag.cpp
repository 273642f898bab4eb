#include "poseidon/dag.hpp"

#include <algorithm>
#include <limits>

namespace poseidon {

const char* to_string(NodeKind k) {
    switch (k) {
        case NodeKind::forward: return "forward";
        case NodeKind::backward: return "backward";
        case NodeKind::send_forward: return "send_forward";
        case NodeKind::send_backward: return "send_backward";
        case NodeKind::dp_sync: return "dp_sync";
        default: return "optimizer";
    }
}

void one_f_one_b_order(int s, int S, std::int64_t m, std::vector<std::int64_t>& order) {
    order.clear();
    const std::int64_t w = std::min<std::int64_t>(S - s - 1, m);
    for (std::int64_t j = 0; j < w; ++j) order.push_back(j);
    for (std::int64_t i = 0; i < m - w; ++i) {
        order.push_back(w + i);
        order.push_back(-(i + 1));
    }
    for (std::int64_t i = m - w; i < m; ++i) order.push_back(-(i + 1));
}

namespace {

// Node numbering, laid out so that every id is arithmetic and no adjacency list is stored:
//   F(s,j) = s*m + j                       B(s,j) = S*m + s*m + j
//   SF(s,j) = 2Sm + s*m + j   (s < S-1)    SB(s,j) = 2Sm + (S-1)m + (s-1)*m + j   (s >= 1)
//   DP(s) = base + s,  G = base + S (global gradient-norm barrier),  OPT(s) = base + S + 1 + s
// with base = 2Sm + 2(S-1)m.
struct Layout {
    std::int64_t S, m, base;
    std::int64_t F(std::int64_t s, std::int64_t j) const { return s * m + j; }
    std::int64_t B(std::int64_t s, std::int64_t j) const { return S * m + s * m + j; }
    std::int64_t SF(std::int64_t s, std::int64_t j) const { return 2 * S * m + s * m + j; }
    std::int64_t SB(std::int64_t s, std::int64_t j) const { return 2 * S * m + (S - 1) * m + (s - 1) * m + j; }
    std::int64_t DP(std::int64_t s) const { return base + s; }
    std::int64_t G() const { return base + S; }
    std::int64_t OPT(std::int64_t s) const { return base + S + 1 + s; }
    std::int64_t size() const { return base + 2 * S + 1; }

    struct Decoded {
        NodeKind kind;
        std::int64_t stage, mb;
        bool barrier;
    };
    Decoded decode(std::int64_t id) const {
        if (id < S * m) return {NodeKind::forward, id / m, id % m, false};
        id -= S * m;
        if (id < S * m) return {NodeKind::backward, id / m, id % m, false};
        id -= S * m;
        if (id < (S - 1) * m) return {NodeKind::send_forward, id / m, id % m, false};
        id -= (S - 1) * m;
        if (id < (S - 1) * m) return {NodeKind::send_backward, id / m + 1, id % m, false};
        id -= (S - 1) * m;
        if (id < S) return {NodeKind::dp_sync, id, -1, false};
        id -= S;
        if (id == 0) return {NodeKind::dp_sync, 0, -1, true};
        return {NodeKind::optimizer, id - 1, -1, false};
    }

    // Calls fn(successor) for every out-edge of `id`.
    template <class Fn>
    void successors(std::int64_t id, Fn&& fn) const {
        Decoded d = decode(id);
        const std::int64_t s = d.stage, j = d.mb;
        const std::int64_t w = std::min<std::int64_t>(S - s - 1, m);
        if (d.barrier) {
            for (std::int64_t t = 0; t < S; ++t) fn(OPT(t));
            return;
        }
        switch (d.kind) {
            case NodeKind::forward:
                // per-stage 1F1B order
                if (j < w)
                    fn(j + 1 < m ? F(s, j + 1) : B(s, 0));
                else
                    fn(B(s, j - w));
                // data
                if (s < S - 1)
                    fn(SF(s, j));
                else
                    fn(B(s, j));
                break;
            case NodeKind::backward:
                if (j < m - w - 1)
                    fn(F(s, w + j + 1));
                else if (j + 1 < m)
                    fn(B(s, j + 1));
                else
                    fn(DP(s));
                if (s > 0) fn(SB(s, j));
                break;
            case NodeKind::send_forward:
                fn(F(s + 1, j));
                if (j + 1 < m) fn(SF(s, j + 1));  // one link carries the sends in order
                break;
            case NodeKind::send_backward:
                fn(B(s - 1, j));
                if (j + 1 < m) fn(SB(s, j + 1));
                break;
            case NodeKind::dp_sync: fn(G()); break;
            case NodeKind::optimizer: break;
        }
    }

    double duration(std::int64_t id, std::span<const StageTimes> st) const {
        Decoded d = decode(id);
        if (d.barrier) return 0;
        const StageTimes& t = st[d.stage];
        switch (d.kind) {
            case NodeKind::forward: return t.forward_s;
            case NodeKind::backward: return t.backward_s;
            case NodeKind::send_forward: return t.send_forward_s;
            case NodeKind::send_backward: return t.send_backward_s;
            case NodeKind::dp_sync: return t.dp_sync_s;
            default: return t.optimizer_s;
        }
    }
};

// The breakdown (docs/model.md, "Breakdown"): each second of the iteration is attributed from the
// point of view of the bottleneck stage b, the stage with the largest busy time m(f+b) (TP
// included; the lowest index among those within 1e-9 of the largest). b's F/B nodes are its
// compute_s and tp_comm_s. Every other interval up to the end of b's last backward is a gap in
// which b waits; the gap is covered by the tight chain that ends it (walking back from the node b
// waits for through predecessors that finish when their successor starts), and each chain node's
// share of the gap counts by its kind: F/B of another stage is bubble_s, a send pp_comm_s. The
// tail after b's last backward is covered the same way from the optimizer step that ends the
// iteration (gradient sync dp_comm_s, step optimizer_s, and the drain of earlier stages as bubble).
// b's F/B nodes, its gaps and the tail partition [0, iteration end]: the parts sum to the time.
Breakdown bottleneck_breakdown(const Layout& L, std::span<const StageTimes> stages, const std::vector<double>& finish, double total) {
    const std::int64_t S = L.S, N = L.size();
    // Predecessor lists (CSR), built from the successor function.
    std::vector<std::uint32_t> begin(N + 1, 0), preds;
    for (std::int64_t u = 0; u < N; ++u) L.successors(u, [&](std::int64_t v) { ++begin[v + 1]; });
    for (std::int64_t v = 0; v < N; ++v) begin[v + 1] += begin[v];
    preds.resize(begin[N]);
    {
        std::vector<std::uint32_t> fill(begin.begin(), begin.end() - 1);
        for (std::int64_t u = 0; u < N; ++u) L.successors(u, [&](std::int64_t v) { preds[fill[v]++] = static_cast<std::uint32_t>(u); });
    }
    const double eps = 1e-12 * std::max(1.0, total);
    auto start_of = [&](std::int64_t u) { return finish[u] - L.duration(u, stages); };

    double max_busy = 0;
    for (const auto& t : stages) max_busy = std::max(max_busy, t.forward_s + t.backward_s);
    std::int64_t bn = 0;
    while (stages[bn].forward_s + stages[bn].backward_s < max_busy * (1 - 1e-9)) ++bn;
    Breakdown bd;
    bd.bottleneck_stage = static_cast<int>(bn);

    // A tight predecessor of u (one finishing when u starts), preferring one on b, then one on u's
    // stage, so that ties (equal stages) resolve the same way every time; -1 at the graph's sources.
    auto tight_pred = [&](std::int64_t u) {
        const auto d = L.decode(u);
        const double st = start_of(u);
        std::int64_t best = -1;
        int best_rank = -1;
        for (std::uint32_t k = begin[u]; k < begin[u + 1]; ++k) {
            const std::int64_t p = preds[k];
            if (finish[p] < st - eps) continue;
            const std::int64_t ps = L.decode(p).stage;
            const int rank = ps == bn ? 2 : (!d.barrier && ps == d.stage) ? 1 : 0;
            if (rank > best_rank || (rank == best_rank && finish[p] > finish[best])) {
                best = p;
                best_rank = rank;
            }
        }
        if (best < 0 && st > eps)  // only rounding leaves a late node without a tight predecessor
            for (std::uint32_t k = begin[u]; k < begin[u + 1]; ++k)
                if (best < 0 || finish[preds[k]] > finish[best]) best = preds[k];
        return best;
    };
    // Covers [lo, hi] (hi = finish of u) with the tight chain ending in u.
    auto cover = [&](std::int64_t u, double lo, double hi) {
        for (; u >= 0; u = tight_pred(u)) {
            const auto d = L.decode(u);
            const double st = start_of(u);
            const double part = std::max(0.0, std::min(hi, finish[u]) - std::max(lo, st));
            if (!d.barrier) switch (d.kind) {
                    case NodeKind::forward:
                    case NodeKind::backward: bd.bubble_s += part; break;  // never b's: b is idle here
                    case NodeKind::send_forward:
                    case NodeKind::send_backward: bd.pp_comm_s += part; break;
                    case NodeKind::dp_sync: bd.dp_comm_s += part; break;
                    case NodeKind::optimizer: bd.optimizer_s += part; break;
                }
            if (st <= lo + eps) break;
        }
    };

    std::vector<std::int64_t> order;
    one_f_one_b_order(static_cast<int>(bn), static_cast<int>(S), L.m, order);
    const StageTimes& t = stages[bn];
    double clock = 0;  // end of b's last F/B node so far
    for (const std::int64_t e : order) {
        const bool fwd = e >= 0;
        const std::int64_t v = fwd ? L.F(bn, e) : L.B(bn, -e - 1);
        const double st = start_of(v);
        if (st > clock + eps) cover(tight_pred(v), clock, st);
        const double dur = fwd ? t.forward_s : t.backward_s;
        const double tp = std::min(dur, fwd ? t.forward_tp_comm_s : t.backward_tp_comm_s);
        // A blocking stack's sends are folded into b's F/B nodes (fold_blocking_sends): that part
        // is point-to-point communication, not compute.
        const double send = std::min(dur - tp, fwd ? t.forward_send_blocking_s : t.backward_send_blocking_s);
        bd.tp_comm_s += tp;
        bd.pp_comm_s += send;
        bd.compute_s += dur - tp - send;
        clock = finish[v];
    }
    // The tail, from the optimizer step that finishes last (b's when it ties).
    std::int64_t last = L.OPT(bn);
    for (std::int64_t s = 0; s < S; ++s)
        if (finish[L.OPT(s)] > finish[last] + eps) last = L.OPT(s);
    if (finish[last] > clock + eps) cover(last, clock, finish[last]);
    // Whatever rounding left unattributed goes to the bubble, so that the parts sum exactly.
    const double parts = bd.compute_s + bd.bubble_s + bd.tp_comm_s + bd.pp_comm_s + bd.dp_comm_s + bd.optimizer_s;
    bd.bubble_s = std::max(0.0, bd.bubble_s + (total - parts));
    return bd;
}

}  // namespace

DagResult evaluate_dag(std::span<const StageTimes> stages, std::int64_t m, bool detailed, DagWorkspace& ws) {
    DagResult result;
    const std::int64_t S = static_cast<std::int64_t>(stages.size());
    if (S == 0 || m <= 0) return result;
    // Only the time: the graph-free sweep gives the same longest path bit for bit (tested against
    // the explicit walk below), several times faster (the baselines estimate many candidates).
    if (!detailed) {
        result.iteration_time_s = dag_iteration_time(stages, m, ws);
        return result;
    }
    Layout L{S, m, 2 * S * m + 2 * (S - 1) * m};
    const std::int64_t N = L.size();
    ws.finish.assign(N, 0.0);  // holds the start time until the node is processed
    ws.pending.assign(N, 0);
    for (std::int64_t u = 0; u < N; ++u) L.successors(u, [&](std::int64_t v) { ++ws.pending[v]; });
    ws.ready.clear();
    for (std::int64_t u = 0; u < N; ++u)
        if (ws.pending[u] == 0) ws.ready.push_back(static_cast<std::uint32_t>(u));
    std::size_t head = 0;
    double best = 0;
    while (head < ws.ready.size()) {
        const std::int64_t u = ws.ready[head++];
        const double finish = ws.finish[u] + L.duration(u, stages);
        ws.finish[u] = finish;
        best = std::max(best, finish);
        L.successors(u, [&](std::int64_t v) {
            if (finish > ws.finish[v]) ws.finish[v] = finish;
            if (--ws.pending[v] == 0) ws.ready.push_back(static_cast<std::uint32_t>(v));
        });
    }
    result.iteration_time_s = best;

    result.timeline.reserve(N);
    for (std::int64_t u = 0; u < N; ++u) {
        auto d = L.decode(u);
        if (d.barrier) continue;
        double dur = L.duration(u, stages);
        result.timeline.push_back({static_cast<int>(d.stage), d.kind, static_cast<int>(d.mb), ws.finish[u] - dur, ws.finish[u]});
    }
    std::stable_sort(result.timeline.begin(), result.timeline.end(), [](const TimelineEvent& a, const TimelineEvent& b) {
        if (a.stage != b.stage) return a.stage < b.stage;
        return a.start_s < b.start_s;
    });

    result.breakdown = bottleneck_breakdown(L, stages, ws.finish, result.iteration_time_s);
    return result;
}

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
    // Once that reaches the cutoff the candidate cannot enter the top K; the margin covers rounding
    // of these sums against the DAG's node-by-node ones.
    const bool early = cutoff < std::numeric_limits<double>::infinity();
    const double stop_at = cutoff / (1 - 1e-9);
    // sf[s*m + j]: finish of the send of activation j from stage s to s+1; sb[s*m + j]: of gradient
    // j from stage s to s-1; negative while not done.
    ws.finish.assign(static_cast<std::size_t>(2 * S * m + 2 * S), -1.0);
    double* sf = ws.finish.data();
    double* sb = sf + S * m;
    double* clock = sb + S * m;  // finish of the stage's last node so far
    double* drain = clock + S;
    drain[0] = stages[0].dp_sync_s;
    for (std::int64_t s = 1; s < S; ++s) drain[s] = std::max(stages[s].dp_sync_s, stages[s].send_backward_s + stages[s - 1].backward_s + drain[s - 1]);
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
                const double fin = start + t.forward_s;
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
                const double fin = start + t.backward_s;
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
                if (clock[s] + rest + drain[s] + opt_max >= stop_at) {
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
        tail = std::max(tail, t.dp_sync_s + t.optimizer_s);
    }
    if (V == 1) return sum + static_cast<double>(m - 1) * mx + comm + tail;
    return sum / V + (static_cast<double>(m) - 1.0 / V) * mx + comm + tail;
}

}  // namespace poseidon
