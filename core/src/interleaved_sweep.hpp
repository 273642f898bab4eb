// The walk of the interleaved 1F1B DAG (dag_interleaved.cpp): every stage's order run as far as
// its cross-stage inputs allow. Internal to core/src.
#pragma once

#include <algorithm>
#include <cstdint>
#include <limits>
#include <span>
#include <vector>

#include "dag_stream.hpp"
#include "poseidon/combined_1f1b.hpp"
#include "poseidon/dag.hpp"

namespace poseidon::detail {

// Every stage's order for (p, V, m): the same for all the layer splits of a configuration, which the
// search times one after the other, so the last one is kept (per thread).
inline const std::vector<std::vector<ChunkPass>>& stage_orders(int p, int V, std::int64_t m, int group, int extra) {
    struct Orders {
        int p = -1, V = -1, group = -1, extra = -1;
        std::int64_t m = -1;
        std::vector<std::vector<ChunkPass>> of;
    };
    thread_local Orders last;
    if (last.p != p || last.V != V || last.m != m || last.group != group || last.extra != extra) {
        last.of.resize(p);
        for (int s = 0; s < p; ++s) interleaved_order(s, p, V, m, last.of[s], group, extra);
        last.p = p;
        last.V = V;
        last.m = m;
        last.group = group;
        last.extra = extra;
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
    // stage's clock, its passes left and what surely follows its last pass (`after`) reach it
    // (the search's early stop; run() then returns the cutoff)
    bool detailed = true;
    double cutoff = std::numeric_limits<double>::infinity();
    std::vector<double> rest;   // per stage: the work of its passes not run yet
    std::vector<double> after;  // per stage: what surely follows its last pass (early stop)
    const std::vector<std::vector<ChunkPass>>* orders_ = nullptr;
    const std::vector<ChunkPass>& order(int s) const { return (*orders_)[s]; }
    std::vector<double> sf, sb, fwd_fin, bwd_fin, send_f_fin, send_b_fin, fwd_start, bwd_start;
    std::vector<double> clock, link_f, link_b, last_end;
    std::vector<std::size_t> pos;
    // trace (the search's lower DAG: no stream, no merged pairs, no pair reserve): every node's
    // predecessor on its longest path, so that an early stop can hand back the path that crossed
    // the cutoff (interleaved_certificate.cpp). Node ids: kind (forward, backward, forward send,
    // backward send) * PV m + v m + j; -1: the start.
    bool trace = false;
    std::vector<std::int32_t> pred, clock_id, link_f_id, link_b_id;
    int stop_stage = -1;       // the stage whose bound reached the cutoff
    bool stop_before = false;  // ... before any pass ran
    bool ran_to_end = false;   // every pass ran (no early stop, no deadlock)
    std::int32_t node_id(int kind, std::int64_t v, std::int64_t j) const { return static_cast<std::int32_t>((kind * static_cast<std::int64_t>(p) * V + v) * m + j); }
    bool merged = false;  // the chunks' merged_pairs: the combined 1F1B
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
    // `work`: the pass's time (its own, or its share of a merged pair).
    [[gnu::always_inline]] double run_pass(int s, std::int64_t v, double start, bool fwd, std::int64_t j, double work) {
        const StageTimes& t = chunks[v];
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
            // the head's chunk with its weight gradients deferred: its first bucket (the head's
            // weights, the last parameters of the forward) waits for the flush (finish_stage)
            const int held = t.deferred_wgrad_s > 0 ? 1 : 0;
            for (int k = 0; k < t.grad_buckets; ++k) {
                x = st.advance(x, r, kappa);
                if (k < held) continue;
                const auto [a, b] = st.enqueue(x, t.grad_bucket_s);
                buckets.push_back({s, c, k, a, b, true});
            }
        } else {
            return st.advance(x, work, kappa);
        }
        return st.advance(x, send, kappa);
    }

    // The activation of virtual stage v for micro-batch j, sent from `at` on stage s's link.
    void send_forward(int s, std::int64_t v, std::int64_t j, double at, double& best, std::int32_t from = -1) {
        if (trace) {
            const std::int32_t id = node_id(2, v, j);
            pred[id] = at >= link_f[s] ? from : link_f_id[s];
            link_f_id[s] = id;
        }
        const double sfin = std::max(at, link_f[s]) + chunks[v].send_forward_s;
        link_f[s] = sf[v * m + j] = sfin;
        if (detailed) send_f_fin[v * m + j] = sfin;
        best = std::max(best, sfin);
    }
    // The gradient of virtual stage v for micro-batch j, sent back from `at`.
    void send_backward(int s, std::int64_t v, std::int64_t j, double at, double& best, std::int32_t from = -1) {
        if (trace) {
            const std::int32_t id = node_id(3, v, j);
            pred[id] = at >= link_b[s] ? from : link_b_id[s];
            link_b_id[s] = id;
        }
        const double sfin = std::max(at, link_b[s]) + chunks[v].send_backward_s;
        link_b[s] = sb[v * m + j] = sfin;
        if (detailed) send_b_fin[v * m + j] = sfin;
        best = std::max(best, sfin);
    }

    // A merged pair on stage s: forward pass uf, then backward pass ub, as one node from when both
    // inputs are there; false while one is missing. The forward's part runs first (a parameter
    // gather it waits for delays the pair), the pair's time beyond the two reduced passes split
    // evenly between them.
    bool run_pair(int s, const ChunkPass& uf, const ChunkPass& ub, double& best) {
        const std::int64_t PV = static_cast<std::int64_t>(p) * V;
        const std::int64_t vf = static_cast<std::int64_t>(uf.chunk) * p + s, jf = uf.micro_batch;
        const std::int64_t vb = static_cast<std::int64_t>(ub.chunk) * p + s, jb = ub.micro_batch;
        double start = clock[s];
        if (vf > 0) {
            const double in = sf[(vf - 1) * m + jf];
            if (in < 0) return false;
            start = std::max(start, in);
        }
        if (vb < PV - 1) {
            const double in = sb[(vb + 1) * m + jb];
            if (in < 0) return false;
            start = std::max(start, in);
        }
        const StageTimes &tf = chunks[vf], &tb = chunks[vb];
        const double half = pair_extra_s(tf, tb) / 2;
        if (jf == 0 && uf.chunk + 1 >= 2 && uf.chunk + 1 < V) dispatch_gathers(s, uf.chunk + 1, start);
        const double mid = run_pass(s, vf, start, true, jf, tf.forward_s + half);
        const double end = run_pass(s, vb, mid, false, jb, tb.backward_s + half);
        clock[s] = end;
        best = std::max(best, end);
        if (detailed) {
            fwd_start[vf * m + jf] = start, fwd_fin[vf * m + jf] = mid;
            bwd_start[vb * m + jb] = mid, bwd_fin[vb * m + jb] = end;
        }
        if (vf < PV - 1) send_forward(s, vf, jf, end, best);
        if (vb > 0) send_backward(s, vb, jb, end, best);
        return true;
    }

    // When stage s's compute ends: its last pass, then on the stage that holds the head with its
    // weight gradients deferred the flush (beside the buckets, at their rate) and the head's bucket
    // after it (docs/model.md, "Deferred head weight gradient").
    double finish_stage(int s) {
        const StageTimes& head = chunks[static_cast<std::int64_t>(V - 1) * p + s];
        if (head.deferred_wgrad_s <= 0) return clock[s];
        if (!has_stream[s]) return clock[s] + head.deferred_wgrad_s;
        const double end = streams[s].advance(clock[s], head.deferred_wgrad_s, head.stream_slowdown);
        if (head.grad_buckets > 0) {
            const auto [a, b] = streams[s].enqueue(end, head.grad_bucket_s);
            buckets.push_back({s, V - 1, 0, a, b, true});
        }
        return end;
    }

    // When stage s's gradients are synchronised: its stream's last bucket (then the tied-embedding
    // all-reduce), or dp_sync_s after its last pass without overlap.
    double sync_end(int s) const {
        return sync_on_stream[s] ? std::max(last_end[s], streams[s].tail_s()) + stages[s].embedding_sync_s : last_end[s] + stages[s].dp_sync_s;
    }

    // Without merged pairs and streams the walk runs its passes in one order, whatever their times
    // (interleaved_replay.cpp): that order replayed, with no test of whether a pass's input is there.
    bool replayed() const;
    bool replay_allowed = true;  // false: always the walk (the tests compare the two)
    double run_replayed(bool early, double stop_at);
    // After the last pass: the barrier of the gradient syncs, then every optimizer step.
    double finish_run(double best) const {
        double barrier = 0;
        for (int s = 0; s < p; ++s) barrier = std::max(barrier, sync_end(s));
        best = std::max(best, barrier);
        for (int s = 0; s < p; ++s) best = std::max(best, barrier + stages[s].optimizer_s);
        return best;
    }

    double run() {
        const std::int64_t PV = static_cast<std::int64_t>(p) * V;
        merged = chunks[0].merged_pairs;
        orders_ = &stage_orders(p, V, m, group, merged ? 1 : 0);
        has_stream.assign(p, 0);
        sync_on_stream.assign(p, 0);
        for (int s = 0; s < p; ++s)
            for (int c = 0; c < V; ++c) {
                const StageTimes& t = chunks[static_cast<std::int64_t>(c) * p + s];
                if (t.grad_buckets > 0) sync_on_stream[s] = 1;
                if (t.grad_buckets > 0 || t.param_gather_buckets > 0) has_stream[s] = 1;
            }
        const bool replay = replayed();
        // a replayed walk reads every input after it was written: no mark of "not yet"
        if (replay) {
            if (sf.size() < static_cast<std::size_t>(PV * m)) sf.resize(static_cast<std::size_t>(PV * m)), sb.resize(static_cast<std::size_t>(PV * m));
        } else {
            sf.assign(PV * m, -1.0);
            sb.assign(PV * m, -1.0);
        }
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
        gather_end.assign(PV, {});
        buckets.clear();
        stop_stage = -1;
        stop_before = false;
        ran_to_end = false;
        if (trace) {
            // every node a walk reaches gets its predecessor before the trace reads it: no fill
            if (pred.size() < static_cast<std::size_t>(4 * PV * m)) pred.resize(static_cast<std::size_t>(4 * PV * m));
            clock_id.assign(p, -1);
            link_f_id.assign(p, -1);
            link_b_id.assign(p, -1);
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
        // What surely follows stage s's last pass, the backward of chunk 0 for the last
        // micro-batch: that backward on every stage below it, each after the gradient's send, then
        // stage 0's gradient sync (its dp_sync_s, or with buckets the tied embeddings' all-reduce
        // after them) and an optimizer step. Added to the stage's clock and work left, it stops a
        // walk that cannot end below the cutoff sooner (docs/search.md, "Bounds of interleaved plans").
        after.assign(p, 0.0);
        if (early) {
            const double sync0 = sync_on_stream[0] ? stages[0].embedding_sync_s : stages[0].dp_sync_s;
            for (int s = 1; s < p; ++s) after[s] = after[s - 1] + chunks[s].send_backward_s + chunks[s - 1].backward_s;
            // before any pass: stage s's first pass, chunk 0's forward of the first micro-batch,
            // waits for that forward on every stage above it and its sends
            double before = 0;
            for (int s = 0; s < p; ++s) {
                after[s] += sync0 + opt_max;
                if (before + rest[s] + after[s] >= stop_at) {
                    stop_stage = s, stop_before = true;
                    return cutoff;
                }
                before += chunks[s].forward_s + chunks[s].send_forward_s;
            }
        }
        if (replay) return run_replayed(early, stop_at);
        bool aborted = false;
        int done = 0;
        double best = 0;
        auto advance = [&](int s) {
            bool moved = false;
            const auto& ord = order(s);
            while (pos[s] < ord.size()) {
                const ChunkPass& u = ord[pos[s]];
                // the combined 1F1B: a steady-state forward and the backward after it run as one
                // node, which waits for both inputs and sends both outputs at its end
                if (merged && u.steady) {
                    if (!run_pair(s, u, ord[pos[s] + 1], best)) break;
                    pos[s] += 2;
                    moved = true;
                    if (early) {
                        rest[s] -= chunks[static_cast<std::int64_t>(u.chunk) * p + s].forward_s +
                                   chunks[static_cast<std::int64_t>(ord[pos[s] - 1].chunk) * p + s].backward_s;
                        if (clock[s] + rest[s] + after[s] >= stop_at) {
                            aborted = true;
                            return false;
                        }
                    }
                    continue;
                }
                const std::int64_t v = static_cast<std::int64_t>(u.chunk) * p + s, j = u.micro_batch;
                const StageTimes& t = chunks[v];
                double start = clock[s];
                if (u.forward) {
                    std::int32_t from = trace ? clock_id[s] : -1;
                    if (v > 0) {
                        const double in = sf[(v - 1) * m + j];
                        if (in < 0) break;
                        if (trace && in > start) from = node_id(2, v - 1, j);
                        start = std::max(start, in);
                    }
                    if (j == 0 && u.chunk + 1 >= 2 && u.chunk + 1 < V) dispatch_gathers(s, u.chunk + 1, start);
                    const double f = run_pass(s, v, start, true, j, t.forward_s + t.pair_reserve_s);
                    clock[s] = f;
                    if (detailed) fwd_start[v * m + j] = start, fwd_fin[v * m + j] = f;
                    best = std::max(best, f);
                    if (trace) pred[clock_id[s] = node_id(0, v, j)] = from;
                    if (v < PV - 1) send_forward(s, v, j, f, best, trace ? clock_id[s] : -1);
                } else {
                    std::int32_t from = trace ? clock_id[s] : -1;
                    if (v < PV - 1) {
                        const double in = sb[(v + 1) * m + j];
                        if (in < 0) break;
                        if (trace && in > start) from = node_id(3, v + 1, j);
                        start = std::max(start, in);
                    }
                    const double f = run_pass(s, v, start, false, j, t.backward_s + t.pair_reserve_s);
                    clock[s] = f;
                    if (detailed) bwd_start[v * m + j] = start, bwd_fin[v * m + j] = f;
                    best = std::max(best, f);
                    if (trace) pred[clock_id[s] = node_id(1, v, j)] = from;
                    if (v > 0) send_backward(s, v, j, f, best, trace ? clock_id[s] : -1);
                }
                ++pos[s];
                moved = true;
                // a pass lasts at least its work (beside a bucket it runs slower), and the stage's
                // last pass precedes its gradient sync, the barrier and every optimizer step
                if (early) {
                    rest[s] -= u.forward ? t.forward_s : t.backward_s;
                    if (clock[s] + rest[s] + after[s] >= stop_at) {
                        aborted = true;
                        stop_stage = s;
                        return false;
                    }
                }
            }
            if (moved && pos[s] == ord.size()) {
                last_end[s] = finish_stage(s);
                best = std::max(best, last_end[s]);
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
        ran_to_end = true;
        return finish_run(best);
    }
};


}  // namespace poseidon::detail
