// Links, placement and the costs of whole stages (docs/model.md, "Links", "Pipeline sends", "Data
// parallelism"): collectives per link type, GPU placement, sends between stages, gradient
// synchronisation, and evaluate_stages, which puts replica_cost (cost_model.cpp) together per stage.
#include <algorithm>
#include <cmath>
#include <string>

#include "poseidon/cost_model.hpp"
#include "poseidon/error.hpp"
#include "poseidon/profile.hpp"

namespace poseidon {

namespace {

constexpr double GB = 1e9;
// Collectives between GPUs of one node without peer-to-peer (NCCL's SHM transport): every byte is
// copied through a host-memory buffer by the proxy, across the CPU sockets' link, which halves the
// achievable bus bandwidth and adds a host round trip to every ring step (docs/model.md, "Links").
constexpr double host_staged_bw_factor = 0.5;
constexpr double host_staged_latency_us = 10;
// NCCL over TCP sockets (no RDMA): a few streams per peer reach under half the line rate on cloud
// Ethernet (docs/model.md, "Links"), and each ring step pays the socket path's latency.
constexpr double ethernet_link_efficiency = 0.45;
constexpr double ethernet_latency_us = 20;
// An RDMA NIC that the GPUs cannot reach peer-to-peer (no GPUDirect RDMA, e.g. one HCA per node
// behind another PCIe switch than most GPUs): NCCL bounces every chunk through host memory,
// reaching about 0.7 of what GPUDirect reaches (docs/model.md, "Links").
constexpr double host_staged_nic_factor = 0.7;

double effective_memory_bw(const Device& d) { return d.memory_bw_GBps * GB * d.memory_bw_efficiency; }

}  // namespace

double intra_link_factor(const std::string& link, int ring_gpus) {
    if (link == "pcie_host") return host_staged_bw_factor;
    if (link == "nvlink_cube_mesh") {
        // DGX-1-style hybrid cube-mesh (each GPU has 6 NVLinks: 4 into its quad, 2 to its peer in
        // the other quad): a ring over consecutive GPUs uses only the links among them. A pair
        // (GPUs 0-1) shares 1 link, a quad 4 of each GPU's 6, all eight every link.
        if (ring_gpus > 0 && ring_gpus <= 2) return 1.0 / 6.0;
        if (ring_gpus > 0 && ring_gpus <= 4) return 4.0 / 6.0;
    }
    return 1.0;
}

double intra_link_extra_latency_us(const std::string& link) { return link == "pcie_host" ? host_staged_latency_us : 0.0; }

double intra_node_bw_eff_GBps(const Group& g, int ring_gpus) {
    return g.intra_node_bw_GBps * g.device.intra_node_link_efficiency * intra_link_factor(g.intra_node_link, ring_gpus);
}
double nic_bw_per_node_eff_GBps(const Group& g) {
    if (g.inter_node_link == "ethernet") return g.inter_node_bw_GBps * ethernet_link_efficiency;
    const double staged = g.inter_node_link == "infiniband_host" ? host_staged_nic_factor : 1.0;
    return g.inter_node_bw_GBps * g.device.inter_node_link_efficiency * staged;
}
double group_latency_s(const Group& g, bool across_nodes) {
    double us = g.device.collective_latency_us;
    if (g.intra_node_link == "pcie_host") us += host_staged_latency_us;
    if (across_nodes && g.inter_node_link == "ethernet") us += ethernet_latency_us;
    return us * 1e-6;
}

double ring_allreduce_s(double bytes, int n, double bw_GBps, double latency_s) {
    if (n <= 1 || bytes <= 0) return 0;
    return 2.0 * (n - 1) / n * bytes / (bw_GBps * GB) + 2.0 * (n - 1) * latency_s;
}

double ring_reduce_scatter_s(double bytes, int n, double bw_GBps, double latency_s) {
    if (n <= 1 || bytes <= 0) return 0;
    return 1.0 * (n - 1) / n * bytes / (bw_GBps * GB) + 1.0 * (n - 1) * latency_s;
}

int ReplicaPlacement::first_node() const { return 0; }

std::vector<StagePlacement> place_plan(const Scenario& sc, const Plan& plan) {
    std::vector<int> cursor(sc.cluster.groups.size(), 0);
    std::vector<StagePlacement> out(plan.stages.size());
    Problems problems;
    for (std::size_t s = 0; s < plan.stages.size(); ++s) {
        std::string sp = "plan.stages[" + std::to_string(s) + "]";
        for (const auto& rs : plan.stages[s].replicas) {
            if (rs.group < 0 || rs.group >= static_cast<int>(cursor.size())) continue;
            const Group& g = sc.cluster.groups[rs.group];
            for (int k = 0; k < rs.count; ++k) {
                ReplicaPlacement rp{rs.group, cursor[rs.group], rs.tp};
                int first_node = rp.first_gpu / g.gpus_per_node;
                int last_node = rp.last_node(g.gpus_per_node);
                // A TP group spanning nodes must take them whole (its collectives then run at NIC speed).
                const bool whole_nodes = rp.first_gpu % g.gpus_per_node == 0 && rs.tp % g.gpus_per_node == 0;
                if (first_node != last_node && !whole_nodes && problems.size() < 10)
                    problems.add(sp, "a tensor-parallel group of " + std::to_string(rs.tp) + " GPUs would take GPUs " + std::to_string(rp.first_gpu) + ".." +
                                         std::to_string(rp.first_gpu + rs.tp - 1) + " of group " + std::to_string(rs.group) + ", straddling nodes " +
                                         std::to_string(first_node) + " and " + std::to_string(last_node) +
                                         "; GPUs are taken in stage order, node by node, and a TP group must fit in one node or take whole nodes");
                cursor[rs.group] += rs.tp;
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

// A sorted, de-duplicated vector rather than a std::set: this runs for every candidate the search
// scores, and the set's node allocations were a tenth of the search time (wasm profile).
struct NodeSpan {
    std::vector<std::pair<int, int>> nodes;  // (group, node), sorted, unique
};

NodeSpan span_of(const Scenario& sc, const StagePlacement& p) {
    NodeSpan ns;
    // Replicas are usually placed in GPU order, so neighbours share nodes and the list comes out
    // sorted: drop repeats as they come and sort only when the placement is not in order (hot in
    // the search: three calls per stage evaluation).
    // A run of replicas placed back to back in one group covers the nodes of its whole GPU range,
    // so it is walked once (a stage of 2,048 one-GPU replicas is one run of 256 nodes).
    const auto& reps = p.replicas;
    for (std::size_t i = 0; i < reps.size();) {
        const int g = reps[i].group, first = reps[i].first_gpu;
        int end = first + reps[i].num_gpus;
        std::size_t j = i + 1;
        for (; j < reps.size() && reps[j].group == g && reps[j].first_gpu == end; ++j) end += reps[j].num_gpus;
        const int gpn = sc.cluster.groups[g].gpus_per_node;
        for (int n = first / gpn; n <= (end - 1) / gpn; ++n)
            if (ns.nodes.empty() || ns.nodes.back() != std::pair<int, int>(g, n)) ns.nodes.emplace_back(g, n);
        i = j;
    }
    if (!std::is_sorted(ns.nodes.begin(), ns.nodes.end())) {
        std::sort(ns.nodes.begin(), ns.nodes.end());
        ns.nodes.erase(std::unique(ns.nodes.begin(), ns.nodes.end()), ns.nodes.end());
    }
    return ns;
}

// Whether two (group, node) entries of spans are one machine: a split group's parts are apart
// unless they are the two halves of one node (Cluster::group_first_node, options.split_nodes).
bool same_machine(const Scenario& sc, std::pair<int, int> a, std::pair<int, int> b) {
    if (a == b) return true;
    const auto& first = sc.cluster.group_first_node;
    if (first.empty()) return false;
    const auto& origin = sc.cluster.group_origin;
    return origin[a.first] == origin[b.first] && first[a.first] + a.second == first[b.first] + b.second;
}

// Bandwidth a node can push to nodes of another group, per node.
double cross_group_node_bw(const Scenario& sc, int ga, int gb) {
    const Group& A = sc.cluster.groups[ga];
    const Group& B = sc.cluster.groups[gb];
    double bw = std::min(nic_bw_per_node_eff_GBps(A), nic_bw_per_node_eff_GBps(B));
    const auto& origin = sc.cluster.group_origin;
    const bool across = origin.empty() ? ga != gb : origin[ga] != origin[gb];
    if (across && sc.cluster.inter_group_bw_GBps)
        bw = std::min(bw, *sc.cluster.inter_group_bw_GBps * std::min(A.device.inter_node_link_efficiency, B.device.inter_node_link_efficiency));
    return bw;
}

}  // namespace

namespace {

// The two communication costs given the stages' node spans, which evaluate_stages computes once
// per stage (a stage of many small replicas spans many nodes; three calls per stage need them).
double p2p_send_spans(const Scenario& sc, const Plan& plan, const StagePlacement& from, const StagePlacement& to, const NodeSpan& a, const NodeSpan& b) {
    const ModelSpec& m = sc.model;
    double bytes = static_cast<double>(plan.micro_batch_size) * m.seq_length * m.hidden_size * bytes_per_element(sc.training.precision);
    if (!sc.training.stack.p2p_scatter_gather) {
        // Without Megatron's scatter-gather (Narayanan et al. 2021, sec. 4.1) every TP rank sends
        // its replica's whole activation, so t copies cross the links.
        int tp = 1;
        for (const auto& r : from.replicas) tp = std::max(tp, r.num_gpus);
        bytes *= tp;
    }
    double latency = 0;
    const bool one_node = a.nodes.size() == 1 && b.nodes.size() == 1 && same_machine(sc, a.nodes.front(), b.nodes.front());
    for (std::size_t k = 0; k < from.replicas.size(); ++k)  // once per run of one group's replicas
        if (k == 0 || from.replicas[k].group != from.replicas[k - 1].group)
            latency = std::max(latency, group_latency_s(sc.cluster.groups[from.replicas[k].group], !one_node));
    // Both stages inside one node: NVLink/PCIe between GPU pairs, every sender in parallel
    // (Megatron's scatter-gather sends 1/tp of the activation from each TP rank).
    if (one_node) {
        const Group& g = sc.cluster.groups[a.nodes.begin()->first];
        int senders = 0, receivers = 0;
        for (const auto& r : from.replicas) senders += r.num_gpus;
        for (const auto& r : to.replicas) receivers += r.num_gpus;
        double bw = intra_node_bw_eff_GBps(g, 2) * std::max(1, std::min(senders, receivers));
        return bytes / (bw * GB) + latency;
    }
    // Across nodes: the NICs of the sending nodes and of the receiving nodes, whichever side has
    // less aggregate bandwidth, limits the transfer.
    double send_bw = 0, recv_bw = 0;
    int gb = to.replicas.empty() ? 0 : to.replicas.front().group;
    int ga = from.replicas.empty() ? 0 : from.replicas.front().group;
    // the spans are sorted by group: one bandwidth per run of a group's nodes, added node by node
    int last = -1;
    double node_bw = 0;
    for (const auto& [g, n] : a.nodes) {
        if (g != last) node_bw = cross_group_node_bw(sc, last = g, gb);
        send_bw += node_bw;
    }
    last = -1;
    for (const auto& [g, n] : b.nodes) {
        if (g != last) node_bw = cross_group_node_bw(sc, ga, last = g);
        recv_bw += node_bw;
    }
    double bw = std::min(send_bw, recv_bw);
    return bytes / (bw * GB) + latency;
}

double dp_sync_span(const Scenario& sc, const StagePlan& stage, const StagePlacement& placement, double grad_bytes_per_gpu, const NodeSpan& ns) {
    int d = stage.dp();
    if (d <= 1) return 0;
    int tp = stage.replicas.front().tp;
    for (const auto& r : stage.replicas) tp = std::min(tp, r.tp);
    double bw = 1e300, lat = 0;
    std::vector<int> groups;
    for (const auto& r : placement.replicas)
        if (groups.empty() || groups.back() != r.group) groups.push_back(r.group);  // runs of one group once
    std::sort(groups.begin(), groups.end());
    groups.erase(std::unique(groups.begin(), groups.end()), groups.end());
    for (int g : groups) lat = std::max(lat, group_latency_s(sc.cluster.groups[g], ns.nodes.size() > 1));
    if (ns.nodes.size() == 1) {
        bw = intra_node_bw_eff_GBps(sc.cluster.groups[ns.nodes.begin()->first], d);
    } else {
        // One ring per TP rank (tp rings share each node's NICs), capped by the intra-node hop
        // (NCCL's hierarchical rings; Narayanan et al. 2021, sec. 3.2).
        for (int ga : groups)
            for (int gb : groups) {
                const Group& A = sc.cluster.groups[ga];
                double per_ring = cross_group_node_bw(sc, ga, gb) / std::min(tp, A.gpus_per_node);
                bw = std::min({bw, per_ring, intra_node_bw_eff_GBps(A, std::max(1, A.gpus_per_node / tp))});
            }
    }
    if (sc.training.distributed_optimizer) return ring_reduce_scatter_s(grad_bytes_per_gpu, d, bw, lat);
    return ring_allreduce_s(grad_bytes_per_gpu, d, bw, lat);
}

}  // namespace

double p2p_send_s(const Scenario& sc, const Plan& plan, const StagePlacement& from, const StagePlacement& to) {
    return p2p_send_spans(sc, plan, from, to, span_of(sc, from), span_of(sc, to));
}

double dp_sync_s(const Scenario& sc, const StagePlan& stage, const StagePlacement& placement, double grad_bytes_per_gpu) {
    return dp_sync_span(sc, stage, placement, grad_bytes_per_gpu, span_of(sc, placement));
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
            g.intra_node_bw_GBps = *dp->intra_node_bw_GBps;
            g.device.intra_node_link_efficiency = 1.0;
        }
        if (dp->inter_node_bw_GBps) {
            g.inter_node_bw_GBps = *dp->inter_node_bw_GBps;
            g.device.inter_node_link_efficiency = 1.0;
        }
    }
    return out;
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
    if (tp > g.gpus_per_node) {
        // TP over whole nodes: the ring crosses the nodes' NICs, which bound its bus bandwidth
        // (NCCL's busbw for a multi-node all-reduce is about the per-node NIC rate).
        if (device != &buffer) buffer = g.device;
        buffer.intra_node_bw_GBps = std::min(intra_node_bw_eff_GBps(g, g.gpus_per_node), nic_bw_per_node_eff_GBps(g));
        buffer.intra_node_link_efficiency = 1;
        buffer.intra_node_link = "nvlink";  // the factor is already in the bandwidth
        buffer.collective_latency_us = group_latency_s(g, true) * 1e6;
        device = &buffer;
    }
    return *device;
}

std::vector<StageEval> evaluate_stages(const Scenario& sc_in, const Plan& plan, const std::vector<StagePlacement>& placement) {
    const bool measured_links = profile_has_links(sc_in);
    const Scenario measured_sc = measured_links ? with_measured_links(sc_in) : Scenario{};
    const Scenario& sc = measured_links ? measured_sc : sc_in;
    const Profile* profile = sc.profile ? &*sc.profile : nullptr;
    const int S = static_cast<int>(plan.stages.size());
    std::vector<StageEval> out(S);
    std::vector<NodeSpan> spans;
    spans.reserve(S);
    for (int s = 0; s < S; ++s) spans.push_back(span_of(sc, placement[s]));
    for (int s = 0; s < S; ++s) {
        const StagePlan& st = plan.stages[s];
        StageEval& ev = out[s];
        StagePosition pos{s, S, plan.num_micro_batches, st.dp()};
        double worst_headroom = 1e300;
        double max_params = 0;
        double opt_s = 0;
        for (std::size_t k = 0; k < st.replicas.size(); ++k) {
            const ReplicaSet& rs = st.replicas[k];
            const Group& g = sc.cluster.groups[rs.group];
            Device overridden;
            const Device& d = replica_device(g, rs.tp, overridden);
            ReplicaCost rc = replica_cost(sc, d, rs.tp, rs.samples, st.num_layers, pos);
            if (k == 0 || rc.forward_s + rc.backward_s > ev.times.forward_s + ev.times.backward_s) {
                ev.times.take_compute(rc);
                ev.slowest_replica = static_cast<int>(k);
            }
            ev.keep_tightest(rc.memory, d.memory_GiB, worst_headroom);
            max_params = std::max(max_params, rc.params_per_gpu);
            double local = rc.params_per_gpu / (sc.training.distributed_optimizer ? st.dp() : 1);
            const DeviceProfile* dprof = find_device_profile(profile, d);
            if (dprof && (dprof->intra_node_bw_GBps || dprof->inter_node_bw_GBps)) rc.sources.links = CostSource::profile;
            if (dprof && dprof->optimizer_s_per_billion_params) {
                opt_s = std::max(opt_s, local / 1e9 * *dprof->optimizer_s_per_billion_params);
                rc.sources.optimizer = CostSource::profile;
            } else {
                opt_s = std::max(opt_s, local * sc.training.stack.optimizer_step_bytes_per_param / effective_memory_bw(d) + 10 * d.kernel_overhead_us * 1e-6);
            }
            ev.replica_costs.push_back(rc);
        }
        ev.fits = worst_headroom >= 0;
        ev.sources = ev.replica_costs[ev.slowest_replica].sources;
        for (const auto& rc : ev.replica_costs) {
            ev.sources.optimizer = std::min(ev.sources.optimizer, rc.sources.optimizer);
            ev.sources.links = std::min(ev.sources.links, rc.sources.links);
        }
        double grad_bytes = max_params * grad_bytes_per_param(sc.training);
        const double sync_s = dp_sync_span(sc, st, placement[s], grad_bytes, spans[s]);
        const double kappa = sc.cluster.groups[st.replicas[ev.slowest_replica].group].device.comm_compute_slowdown;
        // overlap_grad_reduce: the buckets reduce during the last micro-batch's backward (with
        // interleaving, each chunk's during its own last backward: evaluate_chunks).
        if (sc.training.overlap_grad_reduce && plan.virtual_stages == 1)
            set_grad_buckets(ev.times, sync_s, ev.times.backward_s, max_params, kappa, st.dp());
        else
            ev.times.dp_sync_s = sync_s;
        if (sc.training.distributed_optimizer && st.dp() > 1) {
            // The updated bf16 parameters are all-gathered after the sharded step; with
            // overlap_param_gather, bucket by bucket during the next iteration's first forwards:
            // a chain in the DAG under 1F1B, each chunk's buckets on the dp stream under
            // interleaving (evaluate_chunks).
            const double ag_bytes = max_params * bytes_per_element(sc.training.precision);
            const double ag_s = grad_bytes > 0 ? sync_s * ag_bytes / grad_bytes : 0.0;
            if (!sc.training.overlap_param_gather)
                opt_s += ag_s;
            else if (plan.virtual_stages == 1)
                set_param_gather(ev.times, ag_s, ev.times.forward_s, max_params, kappa, st.dp());  // the DAG draws it
            else
                ev.param_gather_s = ag_s;
        }
        ev.times.optimizer_s = opt_s;
        if (s + 1 < S) ev.times.send_forward_s = p2p_send_spans(sc, plan, placement[s], placement[s + 1], spans[s], spans[s + 1]);
        if (s > 0) ev.times.send_backward_s = p2p_send_spans(sc, plan, placement[s], placement[s - 1], spans[s], spans[s - 1]);
    }
    if (plan.virtual_stages > 1) evaluate_chunks(sc, plan, placement, out);
    return out;
}

}  // namespace poseidon
