#include "poseidon/dag.hpp"

#include <algorithm>

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

// The breakdown along one critical path (docs/model.md, "Breakdown"). Many paths are critical when
// stages are equal, and an arbitrary one zig-zags between stages, so the walk is made canonical:
// from the end, it steps to a tight predecessor (one that finishes when the node starts), preferring
// one on the candidate bottleneck stage, then one on the current node's stage. Each stage whose
// busy time m(f+b) is within 1e-9 of the largest is tried as the candidate, and the walk that keeps
// the most F/B time on its candidate wins; that candidate is the bottleneck stage. compute_s is the
// bottleneck's F/B time on the path (TP collectives excluded), bubble_s the other stages' F/B time
// on the path (the fill and drain the bottleneck waits through), and the communication and
// optimizer parts are the path's nodes of those kinds. The parts sum to the iteration time.
Breakdown critical_path_breakdown(const Layout& L, std::span<const StageTimes> stages, const std::vector<double>& finish, double total) {
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
    auto stage_of = [&](std::int64_t u) { return L.decode(u).stage; };
    auto start_of = [&](std::int64_t u) { return finish[u] - L.duration(u, stages); };

    auto walk = [&](std::int64_t cand) {
        Breakdown bd;
        bd.bottleneck_stage = static_cast<int>(cand);
        // End: the optimizer step that finishes last, the candidate's when it ties.
        std::int64_t u = -1;
        for (std::int64_t s = 0; s < S; ++s) {
            std::int64_t o = L.OPT(s);
            if (u < 0 || finish[o] > finish[u] + eps || (finish[o] >= finish[u] - eps && s == cand)) u = o;
        }
        while (u >= 0) {
            auto d = L.decode(u);
            if (!d.barrier) {
                const double dur = L.duration(u, stages);
                const StageTimes& t = stages[d.stage];
                switch (d.kind) {
                    case NodeKind::forward:
                    case NodeKind::backward: {
                        double tp = std::min(dur, d.kind == NodeKind::forward ? t.forward_tp_comm_s : t.backward_tp_comm_s);
                        bd.tp_comm_s += tp;
                        (d.stage == cand ? bd.compute_s : bd.bubble_s) += dur - tp;
                        break;
                    }
                    case NodeKind::send_forward:
                    case NodeKind::send_backward: bd.pp_comm_s += dur; break;
                    case NodeKind::dp_sync: bd.dp_comm_s += dur; break;
                    case NodeKind::optimizer: bd.optimizer_s += dur; break;
                }
            }
            const double st = start_of(u);
            std::int64_t best = -1;
            int best_rank = -1;
            for (std::uint32_t k = begin[u]; k < begin[u + 1]; ++k) {
                std::int64_t p = preds[k];
                if (finish[p] < st - eps) continue;  // not tight
                const std::int64_t ps = stage_of(p);
                int rank = ps == cand ? 2 : (!d.barrier && ps == d.stage) ? 1 : 0;
                if (rank > best_rank || (rank == best_rank && finish[p] > finish[best])) {
                    best = p;
                    best_rank = rank;
                }
            }
            if (best < 0 && st > eps) {
                // No tight predecessor although the node starts late: only rounding can cause this;
                // take the latest-finishing predecessor.
                for (std::uint32_t k = begin[u]; k < begin[u + 1]; ++k)
                    if (best < 0 || finish[preds[k]] > finish[best]) best = preds[k];
            }
            u = best;
        }
        // Whatever rounding left unattributed goes to the bubble, so that the parts sum exactly.
        double parts = bd.compute_s + bd.bubble_s + bd.tp_comm_s + bd.pp_comm_s + bd.dp_comm_s + bd.optimizer_s;
        bd.bubble_s = std::max(0.0, bd.bubble_s + (total - parts));
        return bd;
    };

    double max_busy = 0;
    for (const auto& t : stages) max_busy = std::max(max_busy, t.forward_s + t.backward_s);
    Breakdown best;
    double best_compute = -1;
    for (std::int64_t s = 0; s < S; ++s) {
        if (stages[s].forward_s + stages[s].backward_s < max_busy * (1 - 1e-9)) continue;
        Breakdown bd = walk(s);
        double on_stage = bd.compute_s;
        if (on_stage > best_compute + eps) {
            best_compute = on_stage;
            best = bd;
        }
    }
    return best;
}

}  // namespace

DagResult evaluate_dag(std::span<const StageTimes> stages, std::int64_t m, bool detailed, DagWorkspace& ws) {
    DagResult result;
    const std::int64_t S = static_cast<std::int64_t>(stages.size());
    if (S == 0 || m <= 0) return result;
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
    if (!detailed) return result;

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

    result.breakdown = critical_path_breakdown(L, stages, ws.finish, result.iteration_time_s);
    return result;
}

double dag_iteration_time(std::span<const StageTimes> stages, std::int64_t m, DagWorkspace& ws) {
    return evaluate_dag(stages, m, false, ws).iteration_time_s;
}

double closed_form_time_s(std::span<const StageTimes> stages, std::int64_t m) {
    double sum = 0, mx = 0, comm = 0, tail = 0;
    for (const auto& t : stages) {
        double c = t.forward_s + t.backward_s;
        sum += c;
        mx = std::max(mx, c);
        comm += t.send_forward_s + t.send_backward_s;
        tail = std::max(tail, t.dp_sync_s + t.optimizer_s);
    }
    return sum + static_cast<double>(m - 1) * mx + comm + tail;
}

}  // namespace poseidon
