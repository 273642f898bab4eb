// The interleaved 1F1B schedule on the DAG (Narayanan et al. 2021, sec. 2.2; Megatron-LM's
// forward_backward_pipelining_with_interleaving): each of the p stages holds V model chunks, chunk
// c of stage s being virtual stage v = c p + s, and runs Megatron's order of (chunk, micro-batch)
// passes. Nodes: F(v,j), B(v,j), the sends between consecutive virtual stages, DP(s), the
// gradient-norm barrier and OPT(s); edges: data, each stage's order, the order of the sends on
// each stage's link. docs/model.md, "Interleaved 1F1B".
#include <algorithm>
#include <limits>

#include "poseidon/dag.hpp"

namespace poseidon {

void interleaved_order(int s, int p, int V, std::int64_t m, std::vector<ChunkPass>& order) {
    order.clear();
    const std::int64_t group = static_cast<std::int64_t>(p) * V, total = m * V;
    auto unit = [&](std::int64_t k, bool fwd) {
        const int c = static_cast<int>((k % group) / p);
        return ChunkPass{fwd ? c : V - 1 - c, (k / group) * p + k % p, fwd};
    };
    // Megatron: all passes warm up when m == p; otherwise 2 (p - s - 1) + (V - 1) p forwards.
    const std::int64_t warmup =
        m == p ? total : std::min<std::int64_t>(2 * static_cast<std::int64_t>(p - s - 1) + static_cast<std::int64_t>(V - 1) * p, total);
    for (std::int64_t k = 0; k < warmup; ++k) order.push_back(unit(k, true));
    for (std::int64_t i = 0; i < total - warmup; ++i) {
        order.push_back(unit(warmup + i, true));
        order.push_back(unit(i, false));
    }
    for (std::int64_t i = std::max<std::int64_t>(0, total - warmup); i < total; ++i) order.push_back(unit(i, false));
}

std::int64_t interleaved_in_flight(int s, int p, int V, std::int64_t m) {
    const std::int64_t total = m * V;
    if (m == p) return total;
    return std::min<std::int64_t>(2 * static_cast<std::int64_t>(p - s - 1) + static_cast<std::int64_t>(V - 1) * p + 1, total);
}

namespace {

// Runs every stage's order as far as its cross-stage inputs allow (the graph-free walk of
// dag_iteration_time, generalised to chunks); finishes of F/B and sends go to `fin` when given.
struct Sweep {
    std::span<const StageTimes> chunks, stages;
    int p, V;
    std::int64_t m;
    std::vector<std::vector<ChunkPass>> orders;
    std::vector<double> sf, sb, fwd_fin, bwd_fin, send_f_fin, send_b_fin;
    std::vector<double> clock, link_f, link_b, last_end;
    std::vector<std::size_t> pos;

    // The stage's last pass, chunk 0's last backward, is slowed by the gradient buckets beside it
    // (training.overlap_grad_reduce; 0 otherwise).
    double backward_s(std::int64_t v, std::int64_t j) const {
        return v < p && j == m - 1 ? chunks[v].backward_s + stages[v].last_backward_extra_s : chunks[v].backward_s;
    }

    double run() {
        const std::int64_t PV = static_cast<std::int64_t>(p) * V;
        orders.resize(p);
        for (int s = 0; s < p; ++s) interleaved_order(s, p, V, m, orders[s]);
        sf.assign(PV * m, -1.0);
        sb.assign(PV * m, -1.0);
        fwd_fin.assign(PV * m, 0.0);
        bwd_fin.assign(PV * m, 0.0);
        send_f_fin.assign(PV * m, 0.0);
        send_b_fin.assign(PV * m, 0.0);
        clock.assign(p, 0.0);
        link_f.assign(p, 0.0);
        link_b.assign(p, 0.0);
        last_end.assign(p, 0.0);
        pos.assign(p, 0);
        int done = 0;
        double best = 0;
        auto advance = [&](int s) {
            bool moved = false;
            const auto& ord = orders[s];
            while (pos[s] < ord.size()) {
                const ChunkPass& u = ord[pos[s]];
                const std::int64_t v = static_cast<std::int64_t>(u.chunk) * p + s, j = u.micro_batch;
                const StageTimes& t = chunks[v];
                double start = clock[s];
                if (u.forward) {
                    if (v > 0) {
                        const double in = sf[(v - 1) * m + j];
                        if (in < 0) break;
                        start = std::max(start, in);
                    }
                    const double f = start + t.forward_s;
                    clock[s] = fwd_fin[v * m + j] = f;
                    best = std::max(best, f);
                    if (v < PV - 1) {
                        const double sfin = std::max(f, link_f[s]) + t.send_forward_s;
                        link_f[s] = sf[v * m + j] = send_f_fin[v * m + j] = sfin;
                        best = std::max(best, sfin);
                    }
                } else {
                    if (v < PV - 1) {
                        const double in = sb[(v + 1) * m + j];
                        if (in < 0) break;
                        start = std::max(start, in);
                    }
                    const double f = start + backward_s(v, j);
                    clock[s] = bwd_fin[v * m + j] = f;
                    best = std::max(best, f);
                    if (v > 0) {
                        const double sfin = std::max(f, link_b[s]) + t.send_backward_s;
                        link_b[s] = sb[v * m + j] = send_b_fin[v * m + j] = sfin;
                        best = std::max(best, sfin);
                    }
                }
                ++pos[s];
                moved = true;
            }
            if (moved && pos[s] == ord.size()) {
                last_end[s] = clock[s];
                ++done;
            }
            return moved;
        };
        for (bool down = true; done < p; down = !down) {
            bool moved = false;
            for (int i = 0; i < p; ++i) moved = advance(down ? i : p - 1 - i) || moved;
            if (!moved) return std::numeric_limits<double>::quiet_NaN();  // unreachable: Megatron's order never deadlocks
        }
        double barrier = 0;
        for (int s = 0; s < p; ++s) barrier = std::max(barrier, last_end[s] + stages[s].dp_sync_s);
        best = std::max(best, barrier);
        for (int s = 0; s < p; ++s) best = std::max(best, barrier + stages[s].optimizer_s);
        return best;
    }
};

}  // namespace

double interleaved_iteration_time(std::span<const StageTimes> chunks, std::span<const StageTimes> stages, int V, std::int64_t m) {
    Sweep sw{chunks, stages, static_cast<int>(stages.size()), V, m, {}, {}, {}, {}, {}, {}, {}, {}, {}, {}, {}, {}};
    return sw.run();
}

DagResult evaluate_interleaved_dag(std::span<const StageTimes> chunks, std::span<const StageTimes> stages, int V, std::int64_t m, bool detailed) {
    const int p = static_cast<int>(stages.size());
    Sweep sw{chunks, stages, p, V, m, {}, {}, {}, {}, {}, {}, {}, {}, {}, {}, {}, {}};
    DagResult r;
    r.iteration_time_s = sw.run();
    if (!detailed) return r;
    const std::int64_t PV = static_cast<std::int64_t>(p) * V;
    double barrier = 0;
    for (int s = 0; s < p; ++s) barrier = std::max(barrier, sw.last_end[s] + stages[s].dp_sync_s);
    for (int s = 0; s < p; ++s) {
        for (const ChunkPass& u : sw.orders[s]) {
            const std::int64_t v = static_cast<std::int64_t>(u.chunk) * p + s, j = u.micro_batch;
            const StageTimes& t = chunks[v];
            const int mb = static_cast<int>(j);
            if (u.forward) {
                const double f = sw.fwd_fin[v * m + j];
                r.timeline.push_back({s, NodeKind::forward, mb, f - t.forward_s, f, u.chunk});
                if (v < PV - 1 && t.send_forward_s > 0) {
                    const double e = sw.send_f_fin[v * m + j];
                    r.timeline.push_back({s, NodeKind::send_forward, mb, e - t.send_forward_s, e, u.chunk});
                }
            } else {
                const double f = sw.bwd_fin[v * m + j];
                r.timeline.push_back({s, NodeKind::backward, mb, f - sw.backward_s(v, j), f, u.chunk});
                if (v > 0 && t.send_backward_s > 0) {
                    const double e = sw.send_b_fin[v * m + j];
                    r.timeline.push_back({s, NodeKind::send_backward, mb, e - t.send_backward_s, e, u.chunk});
                }
            }
        }
        if (stages[s].grad_buckets > 0)
            append_grad_buckets(s, stages[s], sw.last_end[s], r.timeline);
        else
            r.timeline.push_back({s, NodeKind::dp_sync, -1, sw.last_end[s], sw.last_end[s] + stages[s].dp_sync_s, 0});
        r.timeline.push_back({s, NodeKind::optimizer, -1, barrier, barrier + stages[s].optimizer_s, 0});
    }
    std::stable_sort(r.timeline.begin(), r.timeline.end(), [](const TimelineEvent& a, const TimelineEvent& b) {
        if (a.stage != b.stage) return a.stage < b.stage;
        return a.start_s < b.start_s;
    });
    // Breakdown from the busiest stage b: its passes (compute, TP, its folded sends), the time it
    // waits before its last pass ends (bubble), and the tail: gradient sync, step, rest as bubble.
    Breakdown& bd = r.breakdown;
    double max_busy = -1;
    for (int s = 0; s < p; ++s) {
        double busy = 0;
        for (int c = 0; c < V; ++c) busy += static_cast<double>(m) * (chunks[c * p + s].forward_s + chunks[c * p + s].backward_s);
        if (busy > max_busy * (1 + 1e-9)) {
            max_busy = busy;
            bd.bottleneck_stage = s;
        }
    }
    const int b = bd.bottleneck_stage;
    for (int c = 0; c < V; ++c) {
        const StageTimes& t = chunks[c * p + b];
        const double mm = static_cast<double>(m);
        const double tp = mm * (std::min(t.forward_s, t.forward_tp_comm_s) + std::min(t.backward_s, t.backward_tp_comm_s));
        const double send = mm * (t.forward_send_blocking_s + t.backward_send_blocking_s);
        bd.tp_comm_s += tp;
        bd.pp_comm_s += send;
        bd.compute_s += mm * (t.forward_s + t.backward_s) - tp - send;
    }
    const double total = r.iteration_time_s;
    const double tail = std::max(0.0, total - sw.last_end[b]);
    double opt = 0;
    for (int s = 0; s < p; ++s) opt = std::max(opt, stages[s].optimizer_s);
    bd.optimizer_s = std::min(tail, opt);
    // b's last pass slowed by its gradient buckets: the overlapped reduction's cost (dp_comm_s).
    bd.dp_comm_s = stages[b].last_backward_extra_s;
    // The gradient sync that sets the barrier; the rest of the tail is other stages' drain.
    int last = 0;
    for (int s = 1; s < p; ++s)
        if (sw.last_end[s] + stages[s].dp_sync_s > sw.last_end[last] + stages[last].dp_sync_s) last = s;
    bd.dp_comm_s += std::min({tail - bd.optimizer_s, stages[last].dp_sync_s, std::max(0.0, barrier - sw.last_end[b])});
    bd.bubble_s = std::max(0.0, total - (bd.compute_s + bd.tp_comm_s + bd.pp_comm_s + bd.optimizer_s + bd.dp_comm_s));
    return r;
}

}  // namespace poseidon
