// The text form of an estimate (poseidon estimate without --json; docs/formats.md, "Text output"):
// for reading, the JSON of estimate.cpp is the stable format.
#include <algorithm>
#include <cstdio>
#include <sstream>
#include <string>
#include <vector>

#include "poseidon/cost_model.hpp"
#include "poseidon/estimate.hpp"
#include "poseidon/json_util.hpp"
#include "poseidon/profile.hpp"
#include "poseidon/scenario.hpp"

namespace poseidon {

std::string tp_degrees_text(const StagePlan& stage) {
    std::string tps;
    for (const auto& r : stage.replicas) {
        const std::string tp = std::to_string(r.tp);
        if (("/" + tps + "/").find("/" + tp + "/") == std::string::npos) tps += (tps.empty() ? "" : "/") + tp;
    }
    return tps;
}

std::string to_text(const Scenario& sc, const Estimate& e) {
    std::ostringstream o;
    const std::int64_t trained = e.plan.micro_batch_size * e.plan.num_micro_batches;
    o << "model        " << printable(sc.model.name, 80) << " (" << fixed_text(model_params(sc.model) / 1e9, 2) << " B parameters";
    if (sc.model.is_moe()) o << ", " << fixed_text(model_param_counts(sc.model).active / 1e9, 2) << " B active";
    o << "), global batch " << trained;
    if (trained != sc.training.global_batch_size)
        o << " (training.global_batch_size " << sc.training.global_batch_size << ", within global_batch_tolerance " << fixed_text(sc.training.global_batch_tolerance, 3) << ")";
    o << "\n";
    o << "cluster      " << printable(sc.cluster.name, 120) << ", " << e.num_gpus << " of " << sc.cluster.num_gpus() << " GPUs used\n";
    o << "plan         " << e.plan.stages.size() << (e.plan.stages.size() == 1 ? " stage" : " stages") << ", micro-batch " << e.plan.micro_batch_size << " x " << e.plan.num_micro_batches;
    if (e.plan.virtual_stages > 1) o << ", interleaved 1F1B with " << e.plan.virtual_stages << " chunks per stage";
    if (e.plan.microbatch_group_size > 0) o << ", micro-batch group " << e.plan.microbatch_group_size;
    // the training choices a search made (plan.precision, plan.fsdp, plan.recompute)
    if (e.plan.precision) o << ", " << to_string(*e.plan.precision) << (*e.plan.precision == sc.training.precision ? "" : " (training.precision " + to_string(sc.training.precision) + ")");
    if (e.plan.fsdp) o << ", " << (*e.plan.fsdp ? "Megatron-FSDP" : "no FSDP") << (*e.plan.fsdp == sc.training.fsdp ? "" : std::string(" (training.fsdp ") + (sc.training.fsdp ? "true" : "false") + ")");
    if (e.plan.recompute) {
        const int n = e.plan.recompute_num_layers.value_or(0);
        o << ", recompute " << to_string(*e.plan.recompute) << (n > 0 ? " of " + std::to_string(n) + (n == 1 ? " block" : " blocks") + (e.plan.virtual_stages > 1 ? " per model chunk" : " per stage") : "");
        if (*e.plan.recompute != sc.training.recompute || (sc.training.recompute == Recompute::full && n != sc.training.recompute_num_layers))
            o << " (training.recompute " << to_string(sc.training.recompute) << (sc.training.recompute == Recompute::full && sc.training.recompute_num_layers > 0 ? " of " + std::to_string(sc.training.recompute_num_layers) : "") << ")";
    }
    o << "\n";
    // the plan's own chunk layout (blocks per chunk, stage by stage), as Megatron-Core's layout runs it
    bool layout = false;
    for (const auto& st : e.plan.stages) layout = layout || !st.chunk_layers.empty();
    if (layout) {
        o << "layout       blocks per chunk";
        for (std::size_t s = 0; s < e.plan.stages.size(); ++s) {
            o << (s == 0 ? " " : " | ");
            const std::vector<int> b = chunk_blocks(e.plan.stages[s], e.plan.virtual_stages);
            for (std::size_t c = 0; c < b.size(); ++c) o << (c ? "," : "") << b[c];
        }
        o << "\n";
    }
    o << "iteration    " << fixed_text(e.iteration_time_s, 4) << " s (closed form " << (e.plan.virtual_stages > 1 ? "sum/V+(m-1/V)max" : "(m-1)max+sum") << ": "
      << fixed_text(e.closed_form_time_s, 4) << " s)\n";
    o << "throughput   " << fixed_text(e.tokens_per_s, 0) << " tokens/s, " << fixed_text(e.samples_per_s, 3) << " samples/s\n";
    o << "MFU          " << fixed_text(100 * e.mfu, 1) << " %  (" << fixed_text(e.model_tflops_per_gpu, 1) << " model TFLOP/s per GPU)\n";
    o << "memory       " << (e.memory_fits ? "fits" : "DOES NOT FIT") << (e.memory_fits && !e.feasible ? "; the stack cannot build this plan" : "") << "\n";
    for (const auto& p : e.problems) o << "             " << p << "\n";
    for (const auto& n : e.notes) o << "note         " << n << "\n";
    if (sc.profile) {
        // where each stage's pass times come from: the least measured of its forward and backward
        o << "profile      " << printable(sc.profile->name, 60) << ":";
        for (std::size_t s = 0; s < e.stages.size(); ++s) {
            const CostSources& src = e.stages[s].sources;
            o << (s == 0 ? " " : ", ") << "stage " << s << " " << to_string(std::min(src.forward(), src.backward()));
        }
        o << " (profile: measured points; interpolated: between them; analytic: the model)\n";
    }
    const auto& b = e.dag.breakdown;
    o << "breakdown    compute " << fixed_text(b.compute_s, 4) << " s, bubble " << fixed_text(b.bubble_s, 4) << " s, TP " << fixed_text(b.tp_comm_s, 4) << " s, PP " << fixed_text(b.pp_comm_s, 4)
      << " s, DP " << fixed_text(b.dp_comm_s, 4) << " s, optimizer " << fixed_text(b.optimizer_s, 4) << " s"
      << (b.ep_comm_s > 0 ? ", EP all-to-all " + fixed_text(b.ep_comm_s, 4) + " s" : std::string()) << "; bottleneck stage " << b.bottleneck_stage << "\n\n";
    // A stage of mixed replicas lists every device and TP degree, and names the device whose
    // memory the column shows (the one with the least headroom). send_ms is the forward send of the
    // activations to the next stage, send_bwd_ms the backward send of their gradients to the previous.
    struct Row {
        std::string dev, tps, tight;
    };
    std::vector<Row> rows;
    std::size_t width = 20;  // the device column: as wide as the longest name, within 48
    for (std::size_t s = 0; s < e.stages.size(); ++s) {
        const auto& ev = e.stages[s];
        const auto& sp = e.plan.stages[s];
        auto id_of = [&](const ReplicaSet& r) {
            const auto& d = sc.cluster.groups[r.group].device;
            return printable(device_key(d), 48);
        };
        Row row;
        double least = 1e300;
        for (std::size_t k = 0; k < sp.replicas.size(); ++k) {
            const auto& r = sp.replicas[k];
            const std::string id = id_of(r);
            if (("+" + row.dev + "+").find("+" + id + "+") == std::string::npos) row.dev += (row.dev.empty() ? "" : "+") + id;
            const double headroom = sc.cluster.groups[r.group].device.memory_GiB - ev.replica_costs[k].memory.total_GiB();
            if (headroom < least) {
                least = headroom;
                row.tight = id;
            }
        }
        row.tps = tp_degrees_text(sp);
        if (row.dev.size() > 48) row.dev = row.dev.substr(0, 45) + "...";
        width = std::max(width, row.dev.size());
        rows.push_back(std::move(row));
    }
    o << "stage  " << std::string("device") + std::string(width - 5, ' ') << "gpus  tp  dp  layers  fwd_ms   bwd_ms   send_ms  send_bwd_ms  dp_ms    mem_GiB / cap\n";
    for (std::size_t s = 0; s < e.stages.size(); ++s) {
        const auto& ev = e.stages[s];
        const auto& sp = e.plan.stages[s];
        const Row& row = rows[s];
        const bool mixed = row.dev.find('+') != std::string::npos;
        char line[400];
        std::snprintf(line, sizeof line, "%-6zu %-*s %5d %3s %3d %7d %8.2f %8.2f %8.3f %12.3f %8.2f %7.2f / %.2f%s%s\n", s, static_cast<int>(width), row.dev.c_str(), sp.gpus(),
                      row.tps.c_str(), sp.dp(), sp.num_layers, 1e3 * ev.times.forward_s, 1e3 * ev.times.backward_s, 1e3 * ev.times.send_forward_s,
                      1e3 * ev.times.send_backward_s, 1e3 * ev.times.dp_sync_s, ev.memory.total_GiB(), ev.memory_capacity_GiB, mixed ? (" (" + row.tight + ")").c_str() : "",
                      ev.fits ? "" : "  OOM");
        o << line;
    }
    // Which all-reduces NCCL would run over NVLink SHARP rather than the ring (docs/model.md, "Links").
    std::string nvls;
    for (std::size_t s = 0; s < e.stages.size(); ++s) {
        const auto& ev = e.stages[s];
        const auto& rc = ev.replica_costs[ev.slowest_replica];
        if (rc.tp_nvls) nvls += (nvls.empty() ? "" : ", ") + ("stage " + std::to_string(s) + " TP " + fixed_text(rc.tp_bus_bw_GBps, 0) + " GB/s");
        if (ev.dp_nvls) nvls += (nvls.empty() ? "" : ", ") + ("stage " + std::to_string(s) + " DP " + fixed_text(ev.dp_bus_bw_GBps, 0) + " GB/s");
    }
    if (!nvls.empty()) o << "\nNVLink SHARP all-reduces (bus bandwidth): " << nvls << "\n";
    // Context parallelism: the table's dp counts replicas of tp x cp GPUs (docs/model.md)
    bool cp = false;
    for (const auto& sp : e.plan.stages) cp = cp || sp.cp > 1;
    if (cp) {
        o << "\ncontext parallelism (cp ranks per replica, " << sc.training.cp_comm_type << " exchange; a replica is tp x cp GPUs):";
        for (std::size_t s = 0; s < e.plan.stages.size(); ++s) o << (s ? "; " : " ") << "stage " << s << " cp " << e.plan.stages[s].cp;
        o << "\n";
    }
    // MoE: each stage's expert grid and its token exchange (docs/model.md, "Expert parallelism")
    if (sc.model.is_moe()) {
        o << "\nexperts (ep x etp, edp; dispatch + combine per micro-batch):";
        for (std::size_t s = 0; s < e.stages.size(); ++s) {
            const auto& sp = e.plan.stages[s];
            const auto& rc = e.stages[s].replica_costs[e.stages[s].slowest_replica];
            o << (s ? "; " : " ") << "stage " << s << " " << sp.ep << "x" << sp.etp << ", " << sp.gpus() / (sp.ep * sp.etp) << " ("
              << fixed_text(1e3 * (rc.forward_ep_comm_s + rc.backward_ep_comm_s), 2) << " ms)";
        }
        o << "\n";
    }
    return o.str();
}

}  // namespace poseidon
