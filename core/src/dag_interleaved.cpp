// The interleaved 1F1B schedule on the DAG (Narayanan et al. 2021, sec. 2.2; Megatron-LM's
// forward_backward_pipelining_with_interleaving): each of the p stages holds V model chunks, chunk
// c of stage s being virtual stage v = c p + s, and runs Megatron's order of (chunk, micro-batch)
// passes (interleaved_order.cpp). Nodes: F(v,j), B(v,j), the sends between consecutive virtual
// stages, DP(s), the gradient-norm barrier and OPT(s); edges: data, each stage's order, the order of
// the sends on each stage's link. docs/model.md, "Interleaved 1F1B".
#include <algorithm>
#include <limits>

#include "interleaved_sweep.hpp"
#include "poseidon/dag.hpp"

namespace poseidon {

using detail::Sweep;

double interleaved_iteration_time(std::span<const StageTimes> chunks, std::span<const StageTimes> stages, int V, std::int64_t m, int group) {
    return interleaved_iteration_time_below(chunks, stages, V, m, std::numeric_limits<double>::infinity(), group);
}

double interleaved_iteration_time_below(std::span<const StageTimes> chunks, std::span<const StageTimes> stages, int V, std::int64_t m,
                                        double cutoff, int group) {
    // one walk per thread, its arrays reused: the search times one split after another (a walk of
    // over a million passes gets its own arrays, freed after it, so that none stays held)
    thread_local Sweep kept;
    Sweep large;
    Sweep& sw = static_cast<std::int64_t>(stages.size()) * V * m > (1 << 20) ? large : kept;
    sw.chunks = chunks;
    sw.stages = stages;
    sw.p = static_cast<int>(stages.size());
    sw.V = V;
    sw.m = m;
    sw.group = group;
    sw.detailed = false;
    sw.cutoff = cutoff;
    return sw.run();
}

DagResult evaluate_interleaved_dag(std::span<const StageTimes> chunks, std::span<const StageTimes> stages, int V, std::int64_t m, bool detailed,
                                   int group) {
    const int p = static_cast<int>(stages.size());
    Sweep sw{chunks, stages, p, V, m, group};
    DagResult r;
    r.iteration_time_s = sw.run();
    if (!detailed) return r;
    const std::int64_t PV = static_cast<std::int64_t>(p) * V;
    double barrier = 0;
    for (int s = 0; s < p; ++s) barrier = std::max(barrier, sw.sync_end(s));
    // what the stream made each stage's passes last beyond their work (contention, waits for gathers)
    std::vector<double> stretch(p, 0.0);
    for (int s = 0; s < p; ++s) {
        for (const ChunkPass& u : sw.order(s)) {
            const std::int64_t v = static_cast<std::int64_t>(u.chunk) * p + s, j = u.micro_batch;
            const StageTimes& t = chunks[v];
            const int mb = static_cast<int>(j);
            if (u.forward) {
                const double f = sw.fwd_fin[v * m + j], a = sw.has_stream[s] || sw.merged ? sw.fwd_start[v * m + j] : f - t.forward_s;
                if (sw.has_stream[s] && !sw.merged) stretch[s] += (f - a) - t.forward_s;
                r.timeline.push_back({s, NodeKind::forward, mb, a, f, u.chunk});
                if (v < PV - 1 && t.send_forward_s > 0) {
                    const double e = sw.send_f_fin[v * m + j];
                    r.timeline.push_back({s, NodeKind::send_forward, mb, e - t.send_forward_s, e, u.chunk});
                }
            } else {
                const double f = sw.bwd_fin[v * m + j], a = sw.has_stream[s] || sw.merged ? sw.bwd_start[v * m + j] : f - t.backward_s;
                if (sw.has_stream[s] && !sw.merged) stretch[s] += (f - a) - t.backward_s;
                // the stage's last pass is drawn with the deferred head weight gradients' flush
                // after it, as the 1F1B DAG draws its last backward (sw.finish_stage)
                const bool flush = &u == &sw.order(s).back() && sw.last_end[s] > f;
                r.timeline.push_back({s, NodeKind::backward, mb, a, flush ? sw.last_end[s] : f, u.chunk});
                if (v > 0 && t.send_backward_s > 0) {
                    const double e = sw.send_b_fin[v * m + j];
                    r.timeline.push_back({s, NodeKind::send_backward, mb, e - t.send_backward_s, e, u.chunk});
                }
            }
        }
        // the tied embeddings' all-reduce: one collective of the first and last stage, from when
        // the later of them has synchronised its own gradients (as in dag.cpp)
        const double emb = (s == 0 || s == p - 1) && p > 1 ? stages[s].embedding_sync_s : 0.0;
        if (!sw.sync_on_stream[s] && stages[s].dp_sync_s - emb > 0)
            r.timeline.push_back({s, NodeKind::dp_sync, -1, sw.last_end[s], sw.last_end[s] + stages[s].dp_sync_s - emb, 0});
        if (emb > 0) {
            const double start = std::max(sw.sync_end(0), sw.sync_end(p - 1)) - emb;
            r.timeline.push_back({s, NodeKind::embedding_sync, -1, start, start + emb, 0});
        }
        r.timeline.push_back({s, NodeKind::optimizer, -1, barrier, barrier + stages[s].optimizer_s, 0});
    }
    for (const auto& k : sw.buckets)
        r.timeline.push_back({k.stage, k.grad ? NodeKind::grad_bucket : NodeKind::param_gather, -1, k.start_s, k.end_s, k.chunk, k.bucket});
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
        const double tpf = std::min(t.forward_s, t.forward_tp_comm_s), tpb = std::min(t.backward_s, t.backward_tp_comm_s);
        const double tp = mm * (tpf + tpb);
        const double send = mm * (t.forward_send_blocking_s + t.backward_send_blocking_s);
        // the token exchange (MoE), at most what the pass holds beside TP and its blocking sends
        const double ep = mm * (std::clamp(t.forward_ep_comm_s, 0.0, std::max(0.0, t.forward_s - tpf - t.forward_send_blocking_s)) +
                                std::clamp(t.backward_ep_comm_s, 0.0, std::max(0.0, t.backward_s - tpb - t.backward_send_blocking_s)));
        bd.tp_comm_s += tp;
        bd.pp_comm_s += send;
        bd.ep_comm_s += ep;
        bd.compute_s += mm * (t.forward_s + t.backward_s) - tp - send - ep;
    }
    bd.compute_s += chunks[static_cast<std::int64_t>(V - 1) * p + b].deferred_wgrad_s;
    const double total = r.iteration_time_s;
    const double tail = std::max(0.0, total - sw.last_end[b]);
    double opt = 0;
    for (int s = 0; s < p; ++s) opt = std::max(opt, stages[s].optimizer_s);
    bd.optimizer_s = std::min(tail, opt);
    // b's passes slowed by the buckets beside them and waiting for gathered ones: the overlapped
    // communication's cost (dp_comm_s).
    bd.dp_comm_s = stretch[b];
    // The gradient sync that sets the barrier; the rest of the tail is other stages' drain.
    int last = 0;
    for (int s = 1; s < p; ++s)
        if (sw.sync_end(s) > sw.sync_end(last)) last = s;
    bd.dp_comm_s += std::min({tail - bd.optimizer_s, sw.sync_end(last) - sw.last_end[last], std::max(0.0, barrier - sw.last_end[b])});
    bd.bubble_s = std::max(0.0, total - (bd.compute_s + bd.tp_comm_s + bd.pp_comm_s + bd.optimizer_s + bd.dp_comm_s + bd.ep_comm_s));
    return r;
}

}  // namespace poseidon
