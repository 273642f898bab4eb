// The interleaved 1F1B schedule on the DAG (Narayanan et al. 2021, sec. 2.2; Megatron-LM's
// forward_backward_pipelining_with_interleaving): each of the p stages holds V model chunks, chunk
// c of stage s being virtual stage v = c p + s, and runs Megatron's order of (chunk, micro-batch)
// passes (interleaved_order.cpp). Nodes: F(v,j), B(v,j), the sends between consecutive virtual
// stages, DP(s), the gradient-norm barrier and OPT(s); edges: data, each stage's order, the order of
// the sends on each stage's link. docs/model.md, "Interleaved 1F1B".
#include <algorithm>
#include <limits>

#include "dag_stream.hpp"
#include "poseidon/dag.hpp"

namespace poseidon {

namespace {

// Every stage's order for (p, V, m): the same for all the layer splits of a configuration, which the
// search times one after the other, so the last one is kept (per thread).
const std::vector<std::vector<ChunkPass>>& stage_orders(int p, int V, std::int64_t m, int group) {
    struct Orders {
        int p = -1, V = -1, group = -1;
        std::int64_t m = -1;
        std::vector<std::vector<ChunkPass>> of;
    };
    thread_local Orders last;
    if (last.p != p || last.V != V || last.m != m || last.group != group) {
        last.of.resize(p);
        for (int s = 0; s < p; ++s) interleaved_order(s, p, V, m, last.of[s], group);
        last.p = p;
        last.V = V;
        last.m = m;
        last.group = group;
    }
    return last.of;
}

// Runs every stage's order as far as its cross-stage inputs allow (the graph-free walk of
// dag_iteration_time, generalised to chunks), keeping every pass's start and finish.
// With overlap (chunk times with buckets) each stage also has a dp stream (dag_stream.hpp): the
// parameter all-gather of chunks 0 and 1 is dispatched at the start and that of chunk c >= 2 as
// chunk c - 1's first forward begins (Megatron-Core's param_sync_func in the interleaved schedule);
// chunk c's first forward waits, sub-step by sub-step, for its buckets; chunk c's gradient buckets
// leave the sub-steps of its last backward. Every pass runs at rate 1 - kappa beside a bucket.
struct Sweep {
    Sweep() = default;
    Sweep(std::span<const StageTimes> chunks_, std::span<const StageTimes> stages_, int p_, int V_, std::int64_t m_, int group_)
        : chunks(chunks_), stages(stages_), p(p_), V(V_), m(m_), group(group_) {}
    std::span<const StageTimes> chunks, stages;
    int p = 0, V = 1;
    std::int64_t m = 0;
    int group = 0;  // the order's micro-batch group (0: p)
    // detailed: keep every pass's start and finish for the timeline; cutoff: stop as soon as a
    // stage's clock, its passes left and the slowest optimizer step reach it (the search's early
    // stop; run() then returns the cutoff)
    bool detailed = true;
    double cutoff = std::numeric_limits<double>::infinity();
    std::vector<double> rest;  // per stage: the work of its passes not run yet
    const std::vector<std::vector<ChunkPass>>* orders_ = nullptr;
    const std::vector<ChunkPass>& order(int s) const { return (*orders_)[s]; }
    std::vector<double> sf, sb, fwd_fin, bwd_fin, send_f_fin, send_b_fin, fwd_start, bwd_start;
    std::vector<double> clock, link_f, link_b, last_end;
    std::vector<std::size_t> pos;
    // overlap: per stage its stream and whether it has one (and carries the gradient sync), per
    // chunk its gathered buckets' ends, and every bucket for the timeline
    std::vector<detail::DpStream> streams;
    std::vector<char> has_stream, sync_on_stream;
    std::vector<std::vector<double>> gather_end;
    struct Bucket {
        int stage, chunk, bucket;
        double start_s, end_s;
        bool grad;
    };
    std::vector<Bucket> buckets;

    void dispatch_gathers(int s, int c, double at) {
        const std::int64_t v = static_cast<std::int64_t>(c) * p + s;
        const StageTimes& t = chunks[v];
        for (int k = 0; k < t.param_gather_buckets; ++k) {
            const auto [a, b] = streams[s].enqueue(at, t.param_gather_bucket_s);
            gather_end[v].push_back(b);
            buckets.push_back({s, c, k, a, b, false});
        }
    }

    // A pass of virtual stage v from `start` on stage s: with a stream, in sub-steps that wait for
    // the chunk's gathered buckets (first forward) or release its gradient buckets (last backward);
    // a blocking stack's folded send follows the compute.
    double run_pass(int s, std::int64_t v, double start, bool fwd, std::int64_t j) {
        const StageTimes& t = chunks[v];
        const double work = fwd ? t.forward_s : t.backward_s;
        if (!has_stream[s]) return start + work;
        detail::DpStream& st = streams[s];
        const double kappa = t.stream_slowdown;
        const int c = static_cast<int>(v / p);
        const double send = fwd ? t.forward_send_blocking_s : t.backward_send_blocking_s;
        double x = start;
        if (fwd && j == 0 && t.param_gather_buckets > 0) {
            const auto& ends = gather_end[v];
            const double r = (work - send) / t.param_gather_buckets;
            for (int k = 0; k < t.param_gather_buckets; ++k) x = st.advance(std::max(x, ends[k]), r, kappa);
        } else if (!fwd && j == m - 1 && t.grad_buckets > 0) {
            const double r = (work - send) / t.grad_buckets;
            for (int k = 0; k < t.grad_buckets; ++k) {
                x = st.advance(x, r, kappa);
                const auto [a, b] = st.enqueue(x, t.grad_bucket_s);
                buckets.push_back({s, c, k, a, b, true});
            }
        } else {
            return st.advance(x, work, kappa);
        }
        return st.advance(x, send, kappa);
    }

    // When stage s's gradients are synchronised: its stream's last bucket (then the tied-embedding
    // all-reduce), or dp_sync_s after its last pass without overlap.
    double sync_end(int s) const {
        return sync_on_stream[s] ? std::max(last_end[s], streams[s].tail_s()) + stages[s].embedding_sync_s : last_end[s] + stages[s].dp_sync_s;
    }

    double run() {
        const std::int64_t PV = static_cast<std::int64_t>(p) * V;
        orders_ = &stage_orders(p, V, m, group);
        sf.assign(PV * m, -1.0);
        sb.assign(PV * m, -1.0);
        const std::int64_t kept = detailed ? PV * m : 0;
        fwd_fin.assign(kept, 0.0);
        bwd_fin.assign(kept, 0.0);
        send_f_fin.assign(kept, 0.0);
        send_b_fin.assign(kept, 0.0);
        fwd_start.assign(kept, 0.0);
        bwd_start.assign(kept, 0.0);
        clock.assign(p, 0.0);
        link_f.assign(p, 0.0);
        link_b.assign(p, 0.0);
        last_end.assign(p, 0.0);
        pos.assign(p, 0);
        streams.assign(p, detail::DpStream{});
        has_stream.assign(p, 0);
        sync_on_stream.assign(p, 0);
        gather_end.assign(PV, {});
        buckets.clear();
        for (int s = 0; s < p; ++s)
            for (int c = 0; c < V; ++c) {
                const StageTimes& t = chunks[static_cast<std::int64_t>(c) * p + s];
                if (t.grad_buckets > 0) sync_on_stream[s] = 1;
                if (t.grad_buckets > 0 || t.param_gather_buckets > 0) has_stream[s] = 1;
            }
        for (int s = 0; s < p; ++s)
            for (int c = 0; c < std::min(V, 2); ++c) dispatch_gathers(s, c, 0.0);
        const bool early = cutoff < std::numeric_limits<double>::infinity();
        // the margin covers rounding of these sums against the walk's pass by pass ones
        const double stop_at = cutoff / (1 - 1e-9);
        double opt_max = 0;
        rest.assign(p, 0.0);
        for (int s = 0; s < p; ++s) {
            opt_max = std::max(opt_max, stages[s].optimizer_s);
            for (int c = 0; c < V; ++c) {
                const StageTimes& t = chunks[static_cast<std::int64_t>(c) * p + s];
                rest[s] += static_cast<double>(m) * (t.forward_s + t.backward_s);
            }
        }
        bool aborted = false;
        int done = 0;
        double best = 0;
        auto advance = [&](int s) {
            bool moved = false;
            const auto& ord = order(s);
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
                    if (j == 0 && u.chunk + 1 >= 2 && u.chunk + 1 < V) dispatch_gathers(s, u.chunk + 1, start);
                    const double f = run_pass(s, v, start, true, j);
                    clock[s] = f;
                    if (detailed) fwd_start[v * m + j] = start, fwd_fin[v * m + j] = f;
                    best = std::max(best, f);
                    if (v < PV - 1) {
                        const double sfin = std::max(f, link_f[s]) + t.send_forward_s;
                        link_f[s] = sf[v * m + j] = sfin;
                        if (detailed) send_f_fin[v * m + j] = sfin;
                        best = std::max(best, sfin);
                    }
                } else {
                    if (v < PV - 1) {
                        const double in = sb[(v + 1) * m + j];
                        if (in < 0) break;
                        start = std::max(start, in);
                    }
                    const double f = run_pass(s, v, start, false, j);
                    clock[s] = f;
                    if (detailed) bwd_start[v * m + j] = start, bwd_fin[v * m + j] = f;
                    best = std::max(best, f);
                    if (v > 0) {
                        const double sfin = std::max(f, link_b[s]) + t.send_backward_s;
                        link_b[s] = sb[v * m + j] = sfin;
                        if (detailed) send_b_fin[v * m + j] = sfin;
                        best = std::max(best, sfin);
                    }
                }
                ++pos[s];
                moved = true;
                // a pass lasts at least its work (beside a bucket it runs slower), and the stage's
                // last pass precedes its gradient sync, the barrier and every optimizer step
                if (early) {
                    rest[s] -= u.forward ? t.forward_s : t.backward_s;
                    if (clock[s] + rest[s] + opt_max >= stop_at) {
                        aborted = true;
                        return false;
                    }
                }
            }
            if (moved && pos[s] == ord.size()) {
                last_end[s] = clock[s];
                ++done;
            }
            return moved;
        };
        for (bool down = true; done < p; down = !down) {
            bool moved = false;
            for (int i = 0; i < p && !aborted; ++i) moved = advance(down ? i : p - 1 - i) || moved;
            if (aborted) return cutoff;
            if (!moved) return std::numeric_limits<double>::quiet_NaN();  // unreachable: Megatron's order never deadlocks
        }
        double barrier = 0;
        for (int s = 0; s < p; ++s) barrier = std::max(barrier, sync_end(s));
        best = std::max(best, barrier);
        for (int s = 0; s < p; ++s) best = std::max(best, barrier + stages[s].optimizer_s);
        return best;
    }
};

}  // namespace

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
                const double f = sw.fwd_fin[v * m + j], a = sw.has_stream[s] ? sw.fwd_start[v * m + j] : f - t.forward_s;
                if (sw.has_stream[s]) stretch[s] += (f - a) - t.forward_s;
                r.timeline.push_back({s, NodeKind::forward, mb, a, f, u.chunk});
                if (v < PV - 1 && t.send_forward_s > 0) {
                    const double e = sw.send_f_fin[v * m + j];
                    r.timeline.push_back({s, NodeKind::send_forward, mb, e - t.send_forward_s, e, u.chunk});
                }
            } else {
                const double f = sw.bwd_fin[v * m + j], a = sw.has_stream[s] ? sw.bwd_start[v * m + j] : f - t.backward_s;
                if (sw.has_stream[s]) stretch[s] += (f - a) - t.backward_s;
                r.timeline.push_back({s, NodeKind::backward, mb, a, f, u.chunk});
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
    // b's passes slowed by the buckets beside them and waiting for gathered ones: the overlapped
    // communication's cost (dp_comm_s).
    bd.dp_comm_s = stretch[b];
    // The gradient sync that sets the barrier; the rest of the tail is other stages' drain.
    int last = 0;
    for (int s = 1; s < p; ++s)
        if (sw.sync_end(s) > sw.sync_end(last)) last = s;
    bd.dp_comm_s += std::min({tail - bd.optimizer_s, sw.sync_end(last) - sw.last_end[last], std::max(0.0, barrier - sw.last_end[b])});
    bd.bubble_s = std::max(0.0, total - (bd.compute_s + bd.tp_comm_s + bd.pp_comm_s + bd.optimizer_s + bd.dp_comm_s));
    return r;
}

}  // namespace poseidon
