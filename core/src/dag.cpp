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
        case NodeKind::grad_bucket: return "grad_bucket";
        case NodeKind::param_gather: return "param_gather";
        case NodeKind::embedding_sync: return "embedding_sync";
        default: return "optimizer";
    }
}

const char* resource_of(NodeKind k) {
    switch (k) {
        case NodeKind::send_forward:
        case NodeKind::send_backward: return "p2p";
        case NodeKind::dp_sync:
        case NodeKind::grad_bucket:
        case NodeKind::param_gather:
        case NodeKind::embedding_sync: return "dp";
        default: return "compute";
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
            case NodeKind::optimizer:
            case NodeKind::grad_bucket:  // drawn from their chains, never nodes of the layout
            case NodeKind::param_gather:
            case NodeKind::embedding_sync: break;
        }
    }

    double duration(std::int64_t id, std::span<const StageTimes> st) const {
        Decoded d = decode(id);
        if (d.barrier) return 0;
        const StageTimes& t = st[d.stage];
        switch (d.kind) {
            case NodeKind::forward: return d.mb == 0 ? t.forward_s + t.first_forward_extra_s : t.forward_s;
            case NodeKind::backward: return d.mb == m - 1 ? t.backward_s + t.last_backward_extra_s : t.backward_s;
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
    // stage, so that ties (equal stages) resolve the same way every time; -1 at the graph's sources;
    // kGather for a first forward that waits for its parameter bucket 0 (overlap_param_gather),
    // which runs from time 0 and is not a node of the layout.
    constexpr std::int64_t kGather = -2;
    auto tight_pred = [&](std::int64_t u) {
        const auto d = L.decode(u);
        const double st = start_of(u);
        if (!d.barrier && d.kind == NodeKind::forward && d.mb == 0 && st > eps && st <= stages[d.stage].param_gather_bucket_s + eps) return kGather;
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
        if (u == kGather) bd.dp_comm_s += std::max(0.0, hi - lo);
        for (; u >= 0; u = tight_pred(u)) {
            const auto d = L.decode(u);
            const double st = start_of(u);
            const double part = std::max(0.0, std::min(hi, finish[u]) - std::max(lo, st));
            if (!d.barrier) switch (d.kind) {
                    case NodeKind::forward:
                    case NodeKind::backward: bd.bubble_s += part; break;  // never b's: b is idle here
                    case NodeKind::send_forward:
                    case NodeKind::send_backward: bd.pp_comm_s += part; break;
                    case NodeKind::dp_sync:
                    case NodeKind::grad_bucket:
                    case NodeKind::param_gather:
                    case NodeKind::embedding_sync: bd.dp_comm_s += part; break;
                    case NodeKind::optimizer: bd.optimizer_s += part; break;
                }
            if (st <= lo + eps) break;
            if (tight_pred(u) == kGather) bd.dp_comm_s += std::max(0.0, std::min(hi, st) - lo);  // [lo, st]: the gather's
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
        // The last backward's slowdown by the gradient buckets beside it is the overlapped
        // reduction's cost: dp_comm_s, as the exposed bucket time after it.
        // (Both extras also carry a single stage's pair reserve, combined_1f1b.hpp: compute of
        // its unmerged first forward and last backward.)
        const bool first = fwd && e == 0, last = !fwd && e == -L.m;
        // (and the deferred head weight gradients at the flush: compute)
        if (last) bd.dp_comm_s += t.last_backward_extra_s - t.pair_reserve_s - t.deferred_wgrad_s;
        if (last) bd.compute_s += t.deferred_wgrad_s;
        if (first) bd.dp_comm_s += t.first_forward_extra_s - t.pair_reserve_s;  // the same for the parameter all-gather
        if (first || last) bd.compute_s += t.pair_reserve_s;
        // the token exchange of an MoE stage (merged pairs hide part of it: at most what is left)
        const double ep = std::min(dur - tp - send, fwd ? t.forward_ep_comm_s : t.backward_ep_comm_s);
        bd.tp_comm_s += tp;
        bd.pp_comm_s += send;
        bd.ep_comm_s += ep;
        bd.compute_s += dur - tp - send - ep;
        clock = finish[v];
    }
    // The tail, from the optimizer step that finishes last (b's when it ties).
    std::int64_t last = L.OPT(bn);
    for (std::int64_t s = 0; s < S; ++s)
        if (finish[L.OPT(s)] > finish[last] + eps) last = L.OPT(s);
    if (finish[last] > clock + eps) cover(last, clock, finish[last]);
    // Whatever rounding left unattributed goes to the bubble, so that the parts sum exactly.
    const double parts = bd.compute_s + bd.bubble_s + bd.tp_comm_s + bd.pp_comm_s + bd.dp_comm_s + bd.optimizer_s + bd.ep_comm_s;
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
    // overlap_param_gather: a stage's first forward waits for its bucket 0 (from time 0).
    for (std::int64_t s = 0; s < S; ++s) ws.finish[L.F(s, 0)] = stages[s].param_gather_bucket_s;
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
    // The tied embeddings' all-reduce ends both first- and last-stage dp_sync nodes. It is one
    // collective of the two stages: drawn on both from when the later of them has synchronised its
    // own gradients. That is also when the graph's later node ends, so the barrier is the same.
    const double emb = S > 1 ? stages[0].embedding_sync_s : 0.0;
    const double emb_start = emb > 0 ? std::max(ws.finish[L.DP(0)], ws.finish[L.DP(S - 1)]) - emb : 0.0;
    for (std::int64_t u = 0; u < N; ++u) {
        auto d = L.decode(u);
        if (d.barrier) continue;
        if (d.kind == NodeKind::forward && d.mb == 0 && stages[d.stage].param_gather_buckets > 0)
            append_param_gathers(static_cast<int>(d.stage), stages[d.stage], ws.finish[u] - L.duration(u, stages), result.timeline);
        const bool emb_here = d.kind == NodeKind::dp_sync && emb > 0 && (d.stage == 0 || d.stage == S - 1);
        if (emb_here) result.timeline.push_back({static_cast<int>(d.stage), NodeKind::embedding_sync, -1, emb_start, emb_start + emb});
        if (d.kind == NodeKind::dp_sync && stages[d.stage].grad_buckets > 0) {
            // The bucket chain replaces the one node that stands for its longest path.
            append_grad_buckets(static_cast<int>(d.stage), stages[d.stage], ws.finish[L.B(d.stage, m - 1)], result.timeline);
            continue;
        }
        double dur = L.duration(u, stages);
        const double end = ws.finish[u] - (emb_here ? emb : 0.0);
        if (emb_here && dur - emb <= 0) continue;  // (no gradients of its own to synchronise)
        result.timeline.push_back({static_cast<int>(d.stage), d.kind, static_cast<int>(d.mb), ws.finish[u] - dur, end});
    }
    std::stable_sort(result.timeline.begin(), result.timeline.end(), [](const TimelineEvent& a, const TimelineEvent& b) {
        if (a.stage != b.stage) return a.stage < b.stage;
        return a.start_s < b.start_s;
    });

    result.breakdown = bottleneck_breakdown(L, stages, ws.finish, result.iteration_time_s);
    return result;
}

}  // namespace poseidon
