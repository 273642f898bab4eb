// Stage costs under the interleaved 1F1B schedule (docs/model.md, "Interleaved 1F1B"): evaluate_stages
// has costed each stage as a whole (parameters, gradient sync, optimizer, sends); here each of its V
// chunks is costed as a block range of its own (the plan's chunk_layers, Megatron-Core's pipeline
// layout, or an even split) and the activations follow the interleaved order.
#include <algorithm>
#include <optional>

#include "block_cost.hpp"
#include "poseidon/combined_1f1b.hpp"
#include "poseidon/cost_model.hpp"
#include "poseidon/expert_parallel.hpp"
#include "poseidon/dag.hpp"

namespace poseidon {

std::vector<int> chunk_blocks(const StagePlan& stage, int V) {
    if (static_cast<int>(stage.chunk_layers.size()) == V) return stage.chunk_layers;
    return std::vector<int>(V, stage.num_layers / V);
}

namespace {

// Micro-batches of each chunk the replica holds at the stage's activation peak. Equal chunks: the
// passes in flight spread evenly, in_flight / V of each (Korthikanti et al. 2022, sec. 4.2.3: the
// first stage holds 1 + (p-1)/(pV) times the non-interleaved activations). Unequal chunks (a
// layout): the passes the order holds where their bytes peak, a pass of chunk c holding what one
// more micro-batch in flight adds to that chunk's activations (docs/model.md, "Interleaved 1F1B").
std::vector<double> held_micro_batches(const Scenario& sc, const Plan& plan, int s, const std::vector<int>& blocks, const std::vector<double>& shares,
                                       const Device& d, const ReplicaSet& rs) {
    const int p = static_cast<int>(plan.stages.size()), V = plan.virtual_stages;
    const std::int64_t m = plan.num_micro_batches;
    const int G = plan.microbatch_group_size, extra = merges_passes(sc) ? 1 : 0;
    const bool alike = std::all_of(shares.begin(), shares.end(), [&](double x) { return x == shares[0]; });
    if (alike && std::all_of(blocks.begin(), blocks.end(), [&](int b) { return b == blocks[0]; }))
        return std::vector<double>(V, static_cast<double>(interleaved_in_flight(s, p, V, m, G, extra)) / V);
    std::vector<double> pass_bytes(V);
    for (int c = 0; c < V; ++c) {
        ReplicaCost one, none;
        StagePosition with{c * p + s, p * V, m, plan.stages[s].dp() * plan.stages[s].cp, 1.0};
        with.cp = plan.stages[s].cp, with.ep = plan.stages[s].ep, with.etp = plan.stages[s].etp;
        with.prefix_share = shares[c];
        StagePosition without = with;
        without.in_flight = 0.0;
        replica_memory(sc, d, rs.tp, rs.samples, blocks[c], with, one);
        replica_memory(sc, d, rs.tp, rs.samples, blocks[c], without, none);
        pass_bytes[c] = one.memory.activations_GiB - none.memory.activations_GiB;
    }
    const std::vector<std::int64_t> n = interleaved_peak_passes(s, p, m, pass_bytes, G, extra);
    return std::vector<double>(n.begin(), n.end());
}

}  // namespace

void evaluate_chunks(const Scenario& sc, const Plan& plan, std::vector<StageEval>& stages, const PlacementLinks& links, const std::vector<int>& leading) {
    const int p = static_cast<int>(plan.stages.size()), V = plan.virtual_stages;
    const std::int64_t m = plan.num_micro_batches;
    for (int s = 0; s < p; ++s) {
        const StagePlan& st = plan.stages[s];
        StageEval& ev = stages[s];
        const std::vector<int> blocks = chunk_blocks(st, V);
        // each chunk's share of the model's leading dense blocks (-1: a model without them; the
        // search times splits one after another, so the storage is kept)
        thread_local std::vector<double> shares;
        shares.assign(V, -1.0);
        if (!leading.empty())
            for (int c = 0; c < V; ++c) shares[c] = prefix_share_of(leading[static_cast<std::size_t>(c) * p + s], blocks[c]);
        const bool alike = std::all_of(shares.begin(), shares.end(), [&](double x) { return x == shares[0]; });
        ev.chunk_times.assign(V, StageTimes{});
        std::vector<double> chunk_cost(V, -1.0), chunk_params(V, 0.0);
        double head_wgrad_s = 0;  // the head chunk's weight GEMM, of the replica its times are
        double worst_headroom = 1e300;
        for (std::size_t k = 0; k < st.replicas.size(); ++k) {
            const ReplicaSet& rs = st.replicas[k];
            const Group& g = sc.cluster.groups[rs.group];
            Device buffer;
            const Device& d = replica_device(g, rs.tp, buffer);
            const std::vector<double> held = held_micro_batches(sc, plan, s, blocks, shares, d, rs);
            MemoryBreakdown dynamic;  // activations, temporaries and allocator over the chunks
            // the re-materialised block (full or named-module recompute): one per GPU, not per chunk
            double working_sum_GiB = 0, working_max_GiB = 0;
            // The loss's and the dispatcher's buffers live while one pass runs: the largest chunk's.
            double temporary_sum_GiB = 0;
            // chunks of alike blocks: one block costed for all of them (block_cost.hpp)
            std::optional<detail::BlockCost> blk;
            double blk_share = 0;
            for (int c = 0; c < V; ++c) {
                StagePosition pos{c * p + s, p * V, m, st.dp() * st.cp, held[c]};
                const CpLink cpl = cp_link(sc.cluster.groups[rs.group], rs.tp, st.cp);
                pos.cp = st.cp, pos.cp_bw_GBps = cpl.bw_GBps, pos.cp_latency_s = cpl.latency_s;
                set_expert_grid(pos, sc.cluster.groups[rs.group], st);
                pos.prefix_share = shares[c];
                if (!blk || blk_share != shares[c]) blk = detail::block_cost(sc, d, rs.tp, rs.samples, pos), blk_share = shares[c];
                const ReplicaCost rc = detail::replica_cost_of(sc, d, rs.tp, rs.samples, blocks[c], pos, *blk);
                chunk_params[c] = std::max(chunk_params[c], rc.params_per_gpu);
                working_sum_GiB += rc.recompute_working_GiB;
                working_max_GiB = std::max(working_max_GiB, rc.recompute_working_GiB);
                dynamic.activations_GiB += rc.memory.activations_GiB;
                temporary_sum_GiB += rc.memory.temporary_GiB;
                dynamic.temporary_GiB = std::max(dynamic.temporary_GiB, rc.memory.temporary_GiB);
                dynamic.allocator_GiB += rc.memory.allocator_GiB;
                if (rc.forward_s + rc.backward_s > chunk_cost[c]) {
                    chunk_cost[c] = rc.forward_s + rc.backward_s;
                    ev.chunk_times[c].take_compute(rc);
                    if (c == V - 1) head_wgrad_s = rc.head_wgrad_s;
                }
            }
            // Each chunk's cost counted the block it re-materialises; the GPU runs one pass at a time.
            const double extra_GiB = alike ? (V - 1) * working_max_GiB : working_sum_GiB - working_max_GiB;
            dynamic.activations_GiB -= extra_GiB;
            dynamic.allocator_GiB -= sc.training.stack.allocator_reserve_fraction * (extra_GiB + temporary_sum_GiB - dynamic.temporary_GiB);
            // The whole-stage cost of evaluate_stages holds the parameters; the dynamic part is the chunks'.
            MemoryBreakdown mem = ev.replica_costs[k].memory;
            mem.activations_GiB = dynamic.activations_GiB;
            mem.temporary_GiB = dynamic.temporary_GiB;
            mem.allocator_GiB = dynamic.allocator_GiB;
            ev.replica_costs[k].memory = mem;
            ev.keep_tightest(mem, d.memory_GiB, worst_headroom);
        }
        // (and the expert grid divides its GPUs, as evaluate_stages checked)
        ev.fits = worst_headroom >= 0 && st.expert_grid_divides();
        // the deferred head weight gradients (docs/model.md, "Deferred head weight gradient"): out
        // of every backward of the head's chunk, all at the flush after the stage's last pass
        // (evaluate_stages marked the stage; the sweep runs the flush and holds the head's bucket)
        if (ev.times.deferred_wgrad_s > 0) {
            StageTimes& head = ev.chunk_times[V - 1];
            head.backward_s -= head_wgrad_s;
            head.deferred_wgrad_s = ev.times.deferred_wgrad_s = static_cast<double>(m) * head_wgrad_s;
        }
        // Sends between consecutive virtual stages: chunk c of stage s feeds chunk c of s + 1, and
        // the last stage feeds chunk c + 1 of stage 0 (and gradients back the same links).
        // evaluate_stages has the sends to the stage's neighbours and the wrap-around ones (last
        // stage -> stage 0 and back).
        const double send_next = s + 1 < p ? ev.times.send_forward_s : links.wrap_forward_s;
        const double send_prev = s > 0 ? ev.times.send_backward_s : links.wrap_backward_s;
        ev.times.forward_s = ev.times.backward_s = ev.times.forward_tp_comm_s = ev.times.backward_tp_comm_s = 0;
        ev.times.forward_ep_comm_s = ev.times.backward_ep_comm_s = 0;
        for (int c = 0; c < V; ++c) {
            StageTimes& t = ev.chunk_times[c];
            if (merges_passes(sc)) reserve_pair_savings(t, false);
            const int v = c * p + s;
            t.send_forward_s = v < p * V - 1 ? send_next : 0.0;
            t.send_backward_s = v > 0 ? send_prev : 0.0;
            ev.times.forward_s += t.forward_s;
            ev.times.backward_s += t.backward_s;
            ev.times.forward_tp_comm_s += t.forward_tp_comm_s;
            ev.times.backward_tp_comm_s += t.backward_tp_comm_s;
            ev.times.forward_ep_comm_s += t.forward_ep_comm_s;
            ev.times.backward_ep_comm_s += t.backward_ep_comm_s;
        }
        // Overlap (docs/model.md, "Overlap under interleaving"): Megatron-Core keeps a bucket
        // set per model chunk, so the stage's gradient synchronisation and parameter all-gather
        // split over its chunks by parameters, each chunk in its own buckets; the DAG's walk puts
        // them on the stage's dp stream (dag_interleaved.cpp).
        double all_params = 0;
        for (double x : chunk_params) all_params += x;
        const double kappa = sc.cluster.groups[st.replicas[ev.slowest_replica].group].device.comm_compute_slowdown;
        for (int c = 0; c < V && all_params > 0; ++c) {
            StageTimes& t = ev.chunk_times[c];
            const double share = chunk_params[c] / all_params;
            t.stream_slowdown = kappa;
            if (sc.training.overlap_grad_reduce && ev.times.dp_sync_s > 0) {
                t.grad_buckets = grad_bucket_count(chunk_params[c], st.dp());
                t.grad_bucket_s = ev.times.dp_sync_s * share / t.grad_buckets;
            }
            if (ev.param_gather_s > 0) {
                t.param_gather_buckets = grad_bucket_count(chunk_params[c], st.dp());
                t.param_gather_bucket_s = ev.param_gather_s * share / t.param_gather_buckets;
            }
        }
        ev.times.send_forward_s = s + 1 < p || V > 1 ? send_next : 0.0;
        ev.times.send_backward_s = s > 0 || V > 1 ? send_prev : 0.0;
    }
}

}  // namespace poseidon
