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

}  // namespace

DagResult evaluate_dag(std::span<const StageTimes> stages, std::int64_t m, bool detailed, DagWorkspace& ws) {
    DagResult result;
    const std::int64_t S = static_cast<std::int64_t>(stages.size());
    if (S == 0 || m <= 0) return result;
    Layout L{S, m, 2 * S * m + 2 * (S - 1) * m};
    const std::int64_t N = L.size();
    ws.finish.assign(N, 0.0);  // holds the start time until the node is processed
    ws.pending.assign(N, 0);
    if (detailed) ws.critical_pred.assign(N, -1);
    for (std::int64_t u = 0; u < N; ++u) L.successors(u, [&](std::int64_t v) { ++ws.pending[v]; });
    ws.ready.clear();
    for (std::int64_t u = 0; u < N; ++u)
        if (ws.pending[u] == 0) ws.ready.push_back(static_cast<std::uint32_t>(u));
    std::size_t head = 0;
    double best = 0;
    std::int64_t last = -1;
    while (head < ws.ready.size()) {
        const std::int64_t u = ws.ready[head++];
        const double finish = ws.finish[u] + L.duration(u, stages);
        ws.finish[u] = finish;
        if (finish >= best) {
            best = finish;
            last = u;
        }
        L.successors(u, [&](std::int64_t v) {
            if (finish > ws.finish[v]) {
                ws.finish[v] = finish;
                if (detailed) ws.critical_pred[v] = static_cast<std::int32_t>(u);
            } else if (detailed && ws.critical_pred[v] < 0) {
                ws.critical_pred[v] = static_cast<std::int32_t>(u);
            }
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

    Breakdown& bd = result.breakdown;
    double worst = -1;
    for (std::int64_t s = 0; s < S; ++s) {
        double busy = static_cast<double>(m) * (stages[s].forward_s + stages[s].backward_s);
        if (busy > worst) {
            worst = busy;
            bd.bottleneck_stage = static_cast<int>(s);
        }
    }
    for (std::int64_t u = last; u >= 0; u = ws.critical_pred[u]) {
        auto d = L.decode(u);
        if (d.barrier) continue;
        double dur = L.duration(u, stages);
        const StageTimes& t = stages[d.stage];
        switch (d.kind) {
            case NodeKind::forward:
            case NodeKind::backward: {
                double tp = d.kind == NodeKind::forward ? t.forward_tp_comm_s : t.backward_tp_comm_s;
                bd.tp_comm_s += tp;
                (d.stage == bd.bottleneck_stage ? bd.compute_s : bd.bubble_s) += dur - tp;
                break;
            }
            case NodeKind::send_forward:
            case NodeKind::send_backward: bd.pp_comm_s += dur; break;
            case NodeKind::dp_sync: bd.dp_comm_s += dur; break;
            case NodeKind::optimizer: bd.optimizer_s += dur; break;
        }
    }
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
