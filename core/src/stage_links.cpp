// Links between GPUs (docs/model.md, "Links", "Pipeline sends", "Data parallelism"): collectives
// per link type, the nodes a placed stage spans, sends between stages and gradient
// synchronisation. The costs of whole stages that use them are in stage_costs.cpp.
#include "stage_links.hpp"

#include <algorithm>
#include <cmath>
#include <string>
#include <tuple>

namespace poseidon {

namespace {

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

}  // namespace

double intra_link_factor(const std::string& link, int ring_gpus, int gpus_per_node) {
    if (link == "pcie_host") return host_staged_bw_factor;
    if (link == "nvlink_mesh") {
        // GPUs wired directly in pairs, no switch (GH200 4-superchip nodes: 6 of each GPU's 18
        // NVLinks to each of its 3 peers). A ring of r GPUs sends over edge-disjoint directed rings
        // among them: r - 1 of them, except that the complete directed graph on 4 or 6 vertices
        // has no such decomposition (Tillson 1980), so r - 2 there; a pair has its one link pair.
        // Each ring runs at one peer's share of the GPU's links (rings that split a pair's links
        // could do better for r = 4: docs/model.md, "Links").
        const int n = gpus_per_node > 1 ? gpus_per_node : std::max(2, ring_gpus);
        const int r = ring_gpus > 0 ? std::min(ring_gpus, n) : n;
        const int rings = r <= 2 ? 1 : (r == 4 || r == 6) ? r - 2 : r - 1;
        return static_cast<double>(rings) / (n - 1);
    }
    if (link == "nvlink_cube_mesh") {
        // DGX-1-style hybrid cube-mesh (each GPU has 6 NVLinks: 4 into its quad, 2 to its peer in
        // the other quad): a ring over consecutive GPUs uses only the links among them. A pair
        // (GPUs 0-1) shares 1 link, a quad 4 of each GPU's 6, all eight every link.
        if (ring_gpus > 0 && ring_gpus <= 2) return 1.0 / 6.0;
        if (ring_gpus > 0 && ring_gpus <= 4) return 4.0 / 6.0;
    }
    return 1.0;
}

double nvls_allreduce_bus_bw_GBps(const Device& d, const std::string& link, int ring_gpus, const Stack& stack) {
    // Every GPU pushes its buffer into the switch once (multimem reductions) and loads the reduced
    // result once, whatever the number of GPUs: the algorithm bandwidth is the device's, and the
    // ring formula's 2 (n - 1) / n turns it into a bus bandwidth (nccl-tests' busbw convention).
    // Only an NVSwitch node has the multicast objects ("nvlink"; not a mesh, PCIe or a ring that
    // crosses NICs, which callers pass as another link).
    if (!stack.nccl_nvls || link != "nvlink" || d.nvls_bw_GBps <= 0 || ring_gpus < 2) return 0;
    return d.nvls_bw_GBps * 2.0 * (ring_gpus - 1) / ring_gpus;
}

double intra_link_extra_latency_us(const std::string& link) { return link == "pcie_host" ? host_staged_latency_us : 0.0; }

double intra_node_bw_eff_GBps(const Group& g, int ring_gpus) {
    return g.intra_node_bw_GBps * g.device.intra_node_link_efficiency * intra_link_factor(g.intra_node_link, ring_gpus, g.gpus_per_node);
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

namespace {

// A sorted, de-duplicated vector rather than a std::set: this runs for every candidate the search
// scores, and the set's node allocations were a tenth of the search time (wasm profile).
using NodeSpan = std::vector<std::pair<int, int>>;  // (group, node), sorted, unique

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
        // the unit of the links is the NVLink domain (the node unless the group says otherwise)
        const int gpn = sc.cluster.groups[g].domain_gpus();
        for (int n = first / gpn; n <= (end - 1) / gpn; ++n)
            if (ns.empty() || ns.back() != std::pair<int, int>(g, n)) ns.emplace_back(g, n);
        i = j;
    }
    if (!std::is_sorted(ns.begin(), ns.end())) {
        std::sort(ns.begin(), ns.end());
        ns.erase(std::unique(ns.begin(), ns.end()), ns.end());
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

namespace {

// One node of group g exchanging with nodes of group other: its NIC, and the inter-group cap when
// the two are different groups of the cluster.
double node_bw_towards(const Scenario& sc, int g, int other) {
    const Group& A = sc.cluster.groups[g];
    const Group& B = sc.cluster.groups[other];
    double bw = nic_bw_per_node_eff_GBps(A);
    const auto& origin = sc.cluster.group_origin;
    const bool across = origin.empty() ? g != other : origin[g] != origin[other];
    if (across && sc.cluster.inter_group_bw_GBps)
        bw = std::min(bw, *sc.cluster.inter_group_bw_GBps * std::min(A.device.inter_node_link_efficiency, B.device.inter_node_link_efficiency));
    return bw;
}

}  // namespace

// Bandwidth a node can push to nodes of another group, per node, in a ring between the two
// groups: the slower side's rate.
double cross_group_node_bw(const Scenario& sc, int ga, int gb) {
    return std::min(node_bw_towards(sc, ga, gb), node_bw_towards(sc, gb, ga));
}

}  // namespace

namespace {

// The communication costs given the stages' node spans, which evaluate_stages computes once per
// stage (a stage of many small replicas spans many nodes; three calls per stage need them).
// `bytes` in all from the GPUs of `from` to those of `to`, in `steps` latencies.
double transfer_spans(const Scenario& sc, const StagePlacement& from, const StagePlacement& to, const NodeSpan& a, const NodeSpan& b, double bytes,
                      int steps) {
    double latency = 0;
    const bool one_node = a.size() == 1 && b.size() == 1 && same_machine(sc, a.front(), b.front());
    // Both ends' software path is on the critical path of a step: the larger of the two groups'
    // latencies (an A10 group's 12 us, not the A100 sender's 6 us).
    // (the spans hold every group of the stages' replicas, sorted: one look per group, where a
    // stage of a thousand replicas made a walk over them a sixth of a small search's time)
    for (const NodeSpan* side : {&a, &b})
        for (std::size_t k = 0; k < side->size(); ++k)
            if (k == 0 || (*side)[k].first != (*side)[k - 1].first)
                latency = std::max(latency, group_latency_s(sc.cluster.groups[(*side)[k].first], !one_node));
    latency *= steps;
    // Both stages inside one node: NVLink/PCIe between GPU pairs, every sender in parallel
    // (Megatron's scatter-gather sends 1/tp of the activation from each TP rank).
    if (one_node) {
        const Group& g = sc.cluster.groups[a.begin()->first];
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
    // Each node sends (or receives) at its own NIC's rate, capped by inter_group_bw_GBps when the
    // traffic crosses groups: a fast node can feed several slower ones at once, so the cap is on
    // each side's sum, not on each node at the slower group's rate.
    // A span entry is an NVLink domain: its nodes' NICs together.
    for (const auto& [g, n] : a) {
        if (g != last) node_bw = node_bw_towards(sc, last = g, gb);
        send_bw += node_bw * sc.cluster.groups[g].domain_nodes(n);
    }
    last = -1;
    for (const auto& [g, n] : b) {
        if (g != last) node_bw = node_bw_towards(sc, last = g, ga);
        recv_bw += node_bw * sc.cluster.groups[g].domain_nodes(n);
    }
    double bw = std::min(send_bw, recv_bw);
    return bytes / (bw * GB) + latency;
}

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
    return transfer_spans(sc, from, to, a, b, bytes, 1);
}

// Tied embeddings (docs/model.md, "Data parallelism", tied embeddings over several stages): every GPU of the first stage
// all-reduces its V h / t shard of the word-embedding gradient with its peer on the last stage.
// A ring of two ranks sends each rank's whole buffer once (half in the reduce-scatter, half in
// the all-gather) in two steps, so d replicas move d V h gradient bytes each way, all GPUs at
// once over the links between the two stages; with unequal DP the larger side sets the volume.
double embedding_sync_spans(const Scenario& sc, const Plan& plan, const StagePlacement& first, const StagePlacement& last, const NodeSpan& a,
                            const NodeSpan& b) {
    const ModelSpec& m = sc.model;
    const int d = std::max(plan.stages.front().dp(), plan.stages.back().dp());
    const double bytes = static_cast<double>(d) * m.vocab_size * m.hidden_size * grad_bytes_per_param(sc.training);
    return transfer_spans(sc, first, last, a, b, bytes, 2);
}

}  // namespace

namespace detail {

namespace {

// The ring of a stage's gradient synchronisation over the nodes it spans: bus bandwidth and
// per-step latency, which do not depend on its layers (d <= 1: none, zeros).
struct DpRing {
    double bw_GBps = 0, latency_s = 0;
    bool nvls = false;  // NVLink SHARP's bus bandwidth beat the ring's
};

DpRing dp_ring(const Scenario& sc, const StagePlan& stage, const StagePlacement& placement, const NodeSpan& ns) {
    const int d = stage.dp() * stage.cp;  // gradients are reduced over the dp x cp ranks
    if (d <= 1) return {};
    bool nvls = false;
    int tp = stage.replicas.front().tp;
    for (const auto& r : stage.replicas) tp = std::min(tp, r.tp);
    double bw = 1e300, lat = 0;
    std::vector<int> groups;
    for (const auto& r : placement.replicas)
        if (groups.empty() || groups.back() != r.group) groups.push_back(r.group);  // runs of one group once
    std::sort(groups.begin(), groups.end());
    groups.erase(std::unique(groups.begin(), groups.end()), groups.end());
    for (int g : groups) lat = std::max(lat, group_latency_s(sc.cluster.groups[g], ns.size() > 1));
    if (ns.size() == 1) {
        const Group& g = sc.cluster.groups[ns.begin()->first];
        bw = intra_node_bw_eff_GBps(g, d);
        // an all-reduce inside an NVSwitch node may run over NVLink SHARP; the distributed
        // optimizer's reduce-scatter stays a ring
        if (!sc.training.distributed_optimizer) {
            const double nvls_bw = nvls_allreduce_bus_bw_GBps(g.device, g.intra_node_link, d, sc.training.stack);
            nvls = nvls_bw > bw;
            bw = std::max(bw, nvls_bw);
        }
    } else {
        // One ring per TP rank (tp rings share each node's NICs), capped by the intra-node hop
        // (NCCL's hierarchical rings; Narayanan et al. 2021, sec. 3.2).
        // Across NVLink domains (docs/model.md, "NVLink domains"), a domain's nodes share the
        // rings leaving it: the ring is as fast as its smallest domain's NICs, tp rings per domain.
        for (int ga : groups)
            for (int gb : groups) {
                const Group& A = sc.cluster.groups[ga];
                int nodes = A.nodes;
                for (const auto& [g, k] : ns)
                    if (g == ga) nodes = std::min(nodes, A.domain_nodes(k));
                const int unit = A.domain_gpus();
                double per_ring = cross_group_node_bw(sc, ga, gb) * nodes / std::min(tp, unit);
                // a ring with one GPU per node (TP fills the node) takes no intra-node hop
                const int per_node = unit / tp;
                bw = std::min(bw, per_node > 1 ? std::min(per_ring, intra_node_bw_eff_GBps(A, per_node)) : per_ring);
            }
    }
    return {bw, lat, nvls};
}

}  // namespace

double dp_sync_cached(const Scenario& sc, const StagePlan& stage, const PlacementLinks& links, int s, double grad_bytes_per_gpu) {
    const int d = stage.dp() * stage.cp;
    if (d <= 1) return 0;
    const double bw = links.dp_bw_GBps[s], lat = links.dp_latency_s[s];
    if (sc.training.distributed_optimizer) return ring_reduce_scatter_s(grad_bytes_per_gpu, d, bw, lat);
    return ring_allreduce_s(grad_bytes_per_gpu, d, bw, lat);
}

// The layer-free part of evaluate_stages: spans and sends (PlacementLinks).
void fill_links(const Scenario& sc, const Plan& plan, const std::vector<StagePlacement>& placement, PlacementLinks& links) {
    const int S = static_cast<int>(placement.size());
    // A stage placed and shaped as the one before it has its spans, ring and sends: the search's
    // cost-table probes are a hundred such stages on the same GPUs (one per layer count), whose
    // links were a third of a small search's time. Only the layers may differ, which no link reads.
    std::vector<char> as_prev(S, 0);
    for (int s = 1; s < S; ++s) {
        const StagePlan& a = plan.stages[s];
        const StagePlan& b = plan.stages[s - 1];
        as_prev[s] = a.replicas == b.replicas && a.cp == b.cp && a.ep == b.ep && a.etp == b.etp && placement[s].replicas == placement[s - 1].replicas;
    }
    links.spans.resize(S);
    for (int s = 0; s < S; ++s) links.spans[s] = as_prev[s] ? links.spans[s - 1] : span_of(sc, placement[s]);
    links.send_forward_s.assign(S, 0.0);
    links.send_backward_s.assign(S, 0.0);
    links.dp_bw_GBps.assign(S, 0.0);
    links.dp_latency_s.assign(S, 0.0);
    links.dp_nvls.assign(S, false);
    for (int s = 0; s < S; ++s) {
        if (as_prev[s]) {
            links.dp_bw_GBps[s] = links.dp_bw_GBps[s - 1], links.dp_latency_s[s] = links.dp_latency_s[s - 1], links.dp_nvls[s] = links.dp_nvls[s - 1];
            continue;
        }
        const DpRing r = dp_ring(sc, plan.stages[s], placement[s], links.spans[s]);
        links.dp_bw_GBps[s] = r.bw_GBps, links.dp_latency_s[s] = r.latency_s, links.dp_nvls[s] = r.nvls;
    }
    // the send between s and s+1 is the one between s-1 and s when both ends are as before
    for (int s = 0; s + 1 < S; ++s)
        links.send_forward_s[s] = s >= 1 && as_prev[s] && as_prev[s + 1]
                                      ? links.send_forward_s[s - 1]
                                      : p2p_send_spans(sc, plan, placement[s], placement[s + 1], links.spans[s], links.spans[s + 1]);
    for (int s = 1; s < S; ++s)
        links.send_backward_s[s] = s >= 2 && as_prev[s] && as_prev[s - 1]
                                       ? links.send_backward_s[s - 1]
                                       : p2p_send_spans(sc, plan, placement[s], placement[s - 1], links.spans[s], links.spans[s - 1]);
    links.embedding_sync_s = sc.model.tied_embeddings && S > 1
                                 ? embedding_sync_spans(sc, plan, placement[0], placement[S - 1], links.spans[0], links.spans[S - 1])
                                 : 0.0;
    links.wrap_forward_s = links.wrap_backward_s = 0;
    if (plan.virtual_stages > 1 && S > 0) {
        links.wrap_forward_s = p2p_send_spans(sc, plan, placement[S - 1], placement[0], links.spans[S - 1], links.spans[0]);
        links.wrap_backward_s = p2p_send_spans(sc, plan, placement[0], placement[S - 1], links.spans[0], links.spans[S - 1]);
    }
}

}  // namespace detail

double p2p_send_s(const Scenario& sc, const Plan& plan, const StagePlacement& from, const StagePlacement& to) {
    return p2p_send_spans(sc, plan, from, to, span_of(sc, from), span_of(sc, to));
}

double dp_sync_s(const Scenario& sc, const StagePlan& stage, const StagePlacement& placement, double grad_bytes_per_gpu) {
    PlacementLinks one;
    one.dp_bw_GBps.resize(1);
    one.dp_latency_s.resize(1);
    const auto r = detail::dp_ring(sc, stage, placement, span_of(sc, placement));
    one.dp_bw_GBps[0] = r.bw_GBps, one.dp_latency_s[0] = r.latency_s;
    return detail::dp_sync_cached(sc, stage, one, 0, grad_bytes_per_gpu);
}

}  // namespace poseidon
