// Placement and the costs of whole stages (docs/model.md, "Data parallelism", "Measured
// profiles"): GPU placement, and evaluate_stages, which puts replica_cost (cost_model.cpp) and the
// links of stage_links.cpp together per stage.
#include <algorithm>
#include <cmath>
#include <optional>
#include <stdexcept>
#include <string>

#include "poseidon/combined_1f1b.hpp"
#include "poseidon/cost_model.hpp"
#include "poseidon/expert_parallel.hpp"
#include "poseidon/error.hpp"
#include "poseidon/profile.hpp"
#include "block_cost.hpp"
#include "stage_links.hpp"

namespace poseidon {

int ReplicaPlacement::first_node() const { return 0; }

std::vector<StagePlacement> place_plan(const Scenario& sc, const Plan& plan) {
    std::vector<int> cursor(sc.cluster.groups.size(), 0);
    std::vector<StagePlacement> out(plan.stages.size());
    Problems problems;
    for (std::size_t s = 0; s < plan.stages.size(); ++s) {
        out[s].replicas.reserve(static_cast<std::size_t>(plan.stages[s].dp()));
        for (const auto& rs : plan.stages[s].replicas) {
            if (rs.group < 0 || rs.group >= static_cast<int>(cursor.size())) continue;
            const Group& g = sc.cluster.groups[rs.group];
            for (int k = 0; k < rs.count; ++k) {
                // A replica is its cp TP groups side by side (Megatron's tp-cp rank order); each TP
                // group must sit in one node or take whole nodes (its collectives then run at NIC speed).
                const int cp = plan.stages[s].cp;
                ReplicaPlacement rp{rs.group, cursor[rs.group], rs.tp * cp};
                for (int j = 0; j < cp; ++j) {
                    const int first = rp.first_gpu + j * rs.tp;
                    const int first_node = first / g.gpus_per_node, last_node = (first + rs.tp - 1) / g.gpus_per_node;
                    const bool whole_nodes = first % g.gpus_per_node == 0 && rs.tp % g.gpus_per_node == 0;
                    if (first_node != last_node && !whole_nodes && problems.size() < 10)
                        problems.add("plan.stages[" + std::to_string(s) + "]", "a tensor-parallel group of " + std::to_string(rs.tp) + " GPUs would take GPUs " + std::to_string(first) + ".." +
                                             std::to_string(first + rs.tp - 1) + " of group " + std::to_string(rs.group) + ", straddling nodes " +
                                             std::to_string(first_node) + " and " + std::to_string(last_node) +
                                             "; GPUs are taken in stage order, node by node, and a TP group must fit in one node or take whole nodes");
                }
                cursor[rs.group] += rs.tp * cp;
                out[s].replicas.push_back(rp);
            }
        }
    }
    for (std::size_t gi = 0; gi < cursor.size(); ++gi)
        if (cursor[gi] > sc.cluster.groups[gi].num_gpus())
            problems.add("plan.stages", "use " + std::to_string(cursor[gi]) + " GPUs of group " + std::to_string(gi) + " but it has " +
                                            std::to_string(sc.cluster.groups[gi].num_gpus()));
    problems.throw_if_any();
    return out;
}

namespace {

// Measured bandwidths of a profile replace the nominal link rate x efficiency of the groups whose
// device they name (docs/model.md, "Measured profiles").
bool profile_has_links(const Scenario& sc) {
    if (!sc.profile) return false;
    for (const auto& d : sc.profile->devices)
        if (d.intra_node_bw_GBps || d.inter_node_bw_GBps) return true;
    return false;
}

Scenario with_measured_links(const Scenario& sc) {
    Scenario out = sc;
    for (auto& g : out.cluster.groups) {
        const DeviceProfile* dp = find_device_profile(&*sc.profile, g.device);
        if (!dp) continue;
        if (dp->intra_node_bw_GBps) {
            // measured over all the node's GPUs (nccl-tests): a ring of them gets exactly that, a
            // smaller ring the link type's share of it
            g.intra_node_bw_GBps = *dp->intra_node_bw_GBps / intra_link_factor(g.intra_node_link, g.gpus_per_node, g.gpus_per_node);
            g.device.intra_node_link_efficiency = 1.0;
            g.device.nvls_bw_GBps = 0;  // the measured all-reduce already used what NCCL chose
        }
        if (dp->inter_node_bw_GBps) {
            g.inter_node_bw_GBps = *dp->inter_node_bw_GBps;
            g.device.inter_node_link_efficiency = 1.0;
        }
    }
    return out;
}

}  // namespace

namespace {

// Bytes a parameter all-gather moves for `params` parameters of which `linear` are linear-layer
// weights: the model's element size, the linear ones at the recipe's quantised size under
// fp8_param_gather (their row-wise copy). The distributed optimizer's and FSDP's gathers alike.
double gathered_bytes(const Scenario& sc, const Device& d, double params, double linear) {
    const double e = bytes_per_element(sc.training.precision);
    if (!sc.training.fp8_param_gather) return params * e;
    return (params - linear) * e + linear * quant_recipe(d, sc.training.precision).operand_bytes;
}

}  // namespace

const Device& replica_device(const Group& g, int tp, Device& buffer) {
    // Copy the device (six strings) only when the group overrides it: this runs for every
    // candidate the search scores.
    const Device* device = &g.device;
    if (g.intra_node_bw_GBps != g.device.intra_node_bw_GBps || (!g.intra_node_link.empty() && g.intra_node_link != g.device.intra_node_link)) {
        buffer = g.device;
        buffer.intra_node_bw_GBps = g.intra_node_bw_GBps;
        buffer.intra_node_link = g.intra_node_link;
        device = &buffer;
    }
    if (g.intra_node_link == "nvlink_mesh" && tp <= g.gpus_per_node) {
        // The TP ring's share of a mesh node's links depends on the node's size, which the
        // device does not know: fold it into the bandwidth.
        if (device != &buffer) buffer = g.device;
        buffer.intra_node_bw_GBps = g.intra_node_bw_GBps * intra_link_factor(g.intra_node_link, tp, g.gpus_per_node);
        buffer.intra_node_link = "nvlink";
        buffer.nvls_bw_GBps = 0;  // no switch, no NVLink SHARP
        device = &buffer;
    }
    // TP over whole nodes of one NVLink domain stays on NVLink: the domain holds a whole number
    // of such groups, so an aligned one never leaves it (docs/model.md, "NVLink domains").
    if (tp > g.gpus_per_node && !(tp <= g.domain_gpus() && g.domain_gpus() % tp == 0)) {
        // TP over whole nodes: the ring crosses the nodes' NICs, which bound its bus bandwidth
        // (NCCL's busbw for a multi-node all-reduce is about the per-node NIC rate).
        if (device != &buffer) buffer = g.device;
        buffer.intra_node_bw_GBps = std::min(intra_node_bw_eff_GBps(g, g.gpus_per_node), nic_bw_per_node_eff_GBps(g));
        buffer.intra_node_link_efficiency = 1;
        buffer.intra_node_link = "nvlink";  // the factor is already in the bandwidth
        buffer.nvls_bw_GBps = 0;             // the ring's bound is the NICs
        buffer.collective_latency_us = group_latency_s(g, true) * 1e6;
        device = &buffer;
    }
    return *device;
}

namespace {

// Stage s's share of the model's leading dense blocks (`leading`: leading_blocks_per_chunk).
double stage_prefix_share(const Plan& plan, const std::vector<int>& leading, int s) {
    const int S = static_cast<int>(plan.stages.size());
    int k = 0;
    for (int c = 0; c < std::max(1, plan.virtual_stages); ++c) k += leading[static_cast<std::size_t>(c) * S + s];
    return prefix_share_of(k, plan.stages[s].num_layers);
}

// Stage s's position as its replicas' costs read it; `share`: stage_prefix_share, or -1.
StagePosition stage_position(const Plan& plan, int s, double share) {
    const StagePlan& st = plan.stages[s];
    // the gradients and the sharded states of a stage span its dp x cp ranks (Megatron's dp_cp group)
    StagePosition pos{s, static_cast<int>(plan.stages.size()), plan.num_micro_batches, st.dp() * st.cp};
    pos.cp = st.cp;
    pos.prefix_share = share;
    return pos;
}

// Replica set k of stage st: the device it runs on (replica_device, into `buffer`), with the
// fields of `pos` that it sets: its CP link, its expert grid.
const Device& replica_at(const Scenario& sc, const StagePlan& st, std::size_t k, StagePosition& pos, Device& buffer) {
    const ReplicaSet& rs = st.replicas[k];
    const Group& g = sc.cluster.groups[rs.group];
    const CpLink cpl = cp_link(g, rs.tp, st.cp);
    pos.cp_bw_GBps = cpl.bw_GBps, pos.cp_latency_s = cpl.latency_s;
    set_expert_grid(pos, g, st);
    return replica_device(g, rs.tp, buffer);
}

}  // namespace

void stage_fits_into(const Scenario& sc, const Plan& plan, std::vector<StageFit>& fits, LeadingBlocks rule, const std::vector<std::uint8_t>* only) {
    if (plan.virtual_stages > 1) throw std::logic_error("stage_fits_into: a plan of one model chunk per stage");
    // (a profile's measured links change no memory: no with_measured_links copy here)
    const int S = static_cast<int>(plan.stages.size());
    fits.assign(S, StageFit{});
    const bool prefix = leading_dense_blocks(sc.model) > 0;
    const std::vector<int> leading = prefix ? leading_blocks_per_chunk(sc.model, plan, rule) : std::vector<int>{};
    for (int s = 0; s < S; ++s) {
        if (only && !(*only)[static_cast<std::size_t>(s)]) continue;
        const StagePlan& st = plan.stages[s];
        StagePosition pos = stage_position(plan, s, prefix ? stage_prefix_share(plan, leading, s) : -1);
        double worst = 1e300;  // as evaluate_stages_into's worst_headroom
        for (std::size_t k = 0; k < st.replicas.size(); ++k) {
            const ReplicaSet& rs = st.replicas[k];
            Device overridden;
            const Device& d = replica_at(sc, st, k, pos, overridden);
            ReplicaCost rc;
            replica_memory(sc, d, rs.tp, rs.samples, st.num_layers, pos, rc);
            worst = std::min(worst, d.memory_GiB - rc.memory.total_GiB());
        }
        fits[s] = {worst, worst >= 0 && st.expert_grid_divides()};
    }
}

std::vector<StageEval> evaluate_stages(const Scenario& sc, const Plan& plan, const std::vector<StagePlacement>& placement, PlacementLinks* links,
                                       bool whole_pipeline) {
    std::vector<StageEval> out;
    evaluate_stages_into(sc, plan, placement, links, whole_pipeline, out);
    return out;
}

void evaluate_stages_into(const Scenario& sc_in, const Plan& plan, const std::vector<StagePlacement>& placement, PlacementLinks* links_in,
                          bool whole_pipeline, std::vector<StageEval>& out, LeadingBlocks rule) {
    const bool measured_links = profile_has_links(sc_in);
    std::optional<Scenario> measured_sc;
    if (measured_links) measured_sc = with_measured_links(sc_in);
    const Scenario& sc = measured_links ? *measured_sc : sc_in;
    const Profile* profile = sc.profile ? &*sc.profile : nullptr;
    const int S = static_cast<int>(plan.stages.size());
    // The search's probes call this a hundred stages at a time: every stage's vectors keep their
    // storage from the call before (allocating them was a quarter of a small search's time).
    out.resize(S);
    for (StageEval& ev : out) {
        std::vector<ReplicaCost> rcs = std::move(ev.replica_costs);
        std::vector<StageTimes> chunks = std::move(ev.chunk_times);
        rcs.clear(), chunks.clear();
        ev = StageEval{};
        ev.replica_costs = std::move(rcs);
        ev.chunk_times = std::move(chunks);
    }
    PlacementLinks local;
    PlacementLinks& links = links_in ? *links_in : local;
    if (!links.filled()) detail::fill_links(sc, plan, placement, links);
    // the combined 1F1B (merges_passes): the times keep a reserve of each pass's saving, which
    // a single 1F1B stage's first forward and last backward take back (after their chains)
    const bool merged = merges_passes(sc), only_stage = S == 1 && plan.virtual_stages == 1;
    // A stage of the same replicas and grids as the one before has its blocks (block_cost.hpp):
    // the cost tables' probes are a hundred such stages, one per layer count.
    std::vector<detail::BlockCost> blocks;
    // a model with leading dense blocks: each stage's share of them (stage_blocks.cpp)
    const bool prefix = leading_dense_blocks(sc.model) > 0;
    const std::vector<int> leading = prefix ? leading_blocks_per_chunk(sc.model, plan, rule) : std::vector<int>{};
    double share_before = -1;
    for (int s = 0; s < S; ++s) {
        const StagePlan& st = plan.stages[s];
        const double share = prefix ? stage_prefix_share(plan, leading, s) : -1;
        const bool same_blocks = s > 0 && st.replicas == plan.stages[s - 1].replicas && st.cp == plan.stages[s - 1].cp &&
                                 st.ep == plan.stages[s - 1].ep && st.etp == plan.stages[s - 1].etp && share == share_before;
        share_before = share;
        if (!same_blocks) blocks.clear();
        StageEval& ev = out[s];
        StagePosition pos = stage_position(plan, s, share);
        double worst_headroom = 1e300;
        double max_params = 0;
        double opt_s = 0;
        for (std::size_t k = 0; k < st.replicas.size(); ++k) {
            const ReplicaSet& rs = st.replicas[k];
            Device overridden;
            const Device& d = replica_at(sc, st, k, pos, overridden);
            if (k == blocks.size()) blocks.push_back(detail::block_cost(sc, d, rs.tp, rs.samples, pos));
            ReplicaCost rc = detail::replica_cost_of(sc, d, rs.tp, rs.samples, st.num_layers, pos, blocks[k]);
            if (k == 0 || rc.forward_s + rc.backward_s > ev.times.forward_s + ev.times.backward_s) {
                ev.times.take_compute(rc);
                ev.slowest_replica = static_cast<int>(k);
            }
            ev.keep_tightest(rc.memory, d.memory_GiB, worst_headroom);
            max_params = std::max(max_params, rc.params_per_gpu);
            double local = sc.training.distributed_optimizer || sc.training.fsdp ? rc.sharded_params_per_gpu : rc.params_per_gpu;
            const DeviceProfile* dprof = find_device_profile(profile, d);
            if (dprof && (dprof->intra_node_bw_GBps || dprof->inter_node_bw_GBps)) rc.sources.links = CostSource::profile;
            if (dprof && dprof->optimizer_s_per_billion_params) {
                opt_s = std::max(opt_s, local / 1e9 * *dprof->optimizer_s_per_billion_params);
                rc.sources.optimizer = CostSource::profile;
            } else {
                // Low precision re-quantises the updated linear weights once per iteration: the
                // bf16 weights read, the compute copies written (docs/model.md, "Low precision").
                const double copies = compute_weight_bytes_per_param(d, sc.training);
                const double requant = rc.linear_params_per_gpu * (copies > 0 ? 2.0 + copies : 0.0);
                opt_s = std::max(opt_s, (local * sc.training.stack.optimizer_step_bytes_per_param + requant) / effective_memory_bw(d) + 10 * d.kernel_overhead_us * 1e-6);
            }
            ev.replica_costs.push_back(rc);
        }
        // a stage the search built whose GPUs the expert grid does not divide cannot be run
        // (a plan's is refused by validate_plan): a candidate that does not fit
        ev.fits = worst_headroom >= 0 && st.expert_grid_divides();
        ev.sources = ev.replica_costs[ev.slowest_replica].sources;
        for (const auto& rc : ev.replica_costs) {
            ev.sources.optimizer = std::min(ev.sources.optimizer, rc.sources.optimizer);
            ev.sources.links = std::min(ev.sources.links, rc.sources.links);
        }
        // the deferred head weight gradients (docs/model.md, "Deferred head weight gradient"):
        // out of every backward of the last stage, all at the flush after its last one
        const bool defer = s == S - 1 && defers_every_head_wgrad(sc.training, plan);
        const double head_w = defer ? ev.replica_costs[ev.slowest_replica].head_wgrad_s : 0.0;
        const double flush_s = static_cast<double>(plan.num_micro_batches) * head_w;
        ev.times.backward_s -= head_w;
        double grad_bytes = max_params * grad_bytes_per_param(sc.training);
        // MoE: the experts' gradients reduce over the expert data-parallel ranks after the dense
        // ones over dp x cp, on the same stream (docs/model.md, "Expert parallelism").
        const ReplicaCost& slowest = ev.replica_costs[ev.slowest_replica];
        const double expert_bytes = slowest.expert_params_per_gpu * grad_bytes_per_param(sc.training);
        const double sync_s = detail::dp_sync_cached(sc, st, links, s, grad_bytes - expert_bytes) +
                              (expert_bytes > 0 ? expert_sync_s(sc, sc.cluster.groups[st.replicas[ev.slowest_replica].group], st, expert_bytes) : 0.0);
        if (st.dp() > 1) ev.dp_bus_bw_GBps = links.dp_bw_GBps[s], ev.dp_nvls = links.dp_nvls[s];
        const double kappa = sc.cluster.groups[st.replicas[ev.slowest_replica].group].device.comm_compute_slowdown;
        if (sc.training.fsdp && st.dp() * st.cp > 1) {
            // Megatron-FSDP: the gradients leave block by block in every backward and (ZeRO-3)
            // the parameters arrive block by block in every pass, over the stage's data-parallel
            // ring (fsdp.cpp); nothing is left to synchronise after the last backward, and the
            // step updates only the local shard. ZeRO-2 (optim_grads) gathers no block: it
            // all-gathers the updated parameters once after the step instead.
            const ReplicaCost& rc = ev.replica_costs[ev.slowest_replica];
            const Device& dev = sc.cluster.groups[st.replicas[ev.slowest_replica].group].device;
            const double unit = rc.layer_params_per_gpu;
            const double lin = st.num_layers > 0 ? rc.linear_params_per_gpu / st.num_layers : 0.0;
            const double bw = links.dp_bw_GBps[s], lat = links.dp_latency_s[s];
            const int ranks = st.dp() * st.cp;
            // an all-gather moves what a reduce-scatter does
            const double gather_s = sc.training.fsdp_shards_params() ? ring_reduce_scatter_s(gathered_bytes(sc, dev, unit, lin), ranks, bw, lat) : 0.0;
            const double rs_s = ring_reduce_scatter_s(unit * grad_bytes_per_param(sc.training), ranks, bw, lat);
            const FsdpExtra x = fsdp_extra(rc.layer_forward_s, rc.layer_backward_s, st.num_layers, gather_s, rs_s, kappa);
            ev.times.forward_s += x.forward_s;
            ev.times.backward_s += x.backward_s;
            if (!sc.training.fsdp_shards_params()) opt_s += ring_reduce_scatter_s(gathered_bytes(sc, dev, max_params, rc.linear_params_per_gpu), ranks, bw, lat);
            ev.times.optimizer_s = opt_s;
            ev.times.send_forward_s = links.send_forward_s[s];
            ev.times.send_backward_s = links.send_backward_s[s];
            if (defer) defer_head_wgrad(ev.times, flush_s);
            if (merged) reserve_pair_savings(ev.times, only_stage);
            continue;
        }
        // overlap_grad_reduce: the buckets reduce during the last micro-batch's backward (with
        // interleaving, each chunk's during its own last backward: evaluate_chunks).
        if (sc.training.overlap_grad_reduce && plan.virtual_stages == 1)
            set_grad_buckets(ev.times, sync_s, ev.times.backward_s, max_params, kappa, st.dp());
        else
            ev.times.dp_sync_s = sync_s;
        if (defer) defer_head_wgrad(ev.times, flush_s);
        if (sc.training.distributed_optimizer && st.dp() * st.cp > 1) {
            // The updated bf16 parameters are all-gathered after the sharded step; with
            // overlap_param_gather, bucket by bucket during the next iteration's first forwards:
            // a chain in the DAG under 1F1B, each chunk's buckets on the dp stream under
            // interleaving (evaluate_chunks).
            // With fp8_param_gather the linear weights travel quantised (their row-wise copy).
            const ReplicaCost& widest = *std::max_element(ev.replica_costs.begin(), ev.replica_costs.end(), [](const ReplicaCost& a, const ReplicaCost& b) { return a.params_per_gpu < b.params_per_gpu; });
            const double ag_bytes = gathered_bytes(sc, sc.cluster.groups[st.replicas[ev.slowest_replica].group].device, max_params, widest.linear_params_per_gpu);
            const double ag_s = grad_bytes > 0 ? sync_s * ag_bytes / grad_bytes : 0.0;
            if (!sc.training.overlap_param_gather)
                opt_s += ag_s;
            else if (plan.virtual_stages == 1)
                set_param_gather(ev.times, ag_s, ev.times.forward_s, max_params, kappa, st.dp());  // the DAG draws it
            else
                ev.param_gather_s = ag_s;
        }
        ev.times.optimizer_s = opt_s;
        ev.times.send_forward_s = links.send_forward_s[s];
        ev.times.send_backward_s = links.send_backward_s[s];
        if (merged) reserve_pair_savings(ev.times, only_stage);
    }
    if (plan.virtual_stages > 1) evaluate_chunks(sc, plan, out, links, leading);
    // After the chunks' buckets were cut from dp_sync_s: the tied-embedding all-reduce follows
    // the whole gradient synchronisation.
    if (whole_pipeline && links.embedding_sync_s > 0) add_embedding_sync(out.front().times, out.back().times, links.embedding_sync_s);
}

void add_embedding_sync(StageTimes& first, StageTimes& last, double s) {
    for (StageTimes* t : {&first, &last}) {
        t->embedding_sync_s = s;
        t->dp_sync_s += s;
    }
}

}  // namespace poseidon
