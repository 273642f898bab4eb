// Reading a scenario (scenario.hpp, parse_scenario): devices, stacks, models and clusters, inline
// or by preset id, every bad field named by its JSON path (docs/formats.md, "Scenario").
#include "poseidon/json_util.hpp"
#include "poseidon/scenario.hpp"

#include <algorithm>
#include <iterator>

#include "poseidon/calibrate.hpp"
#include "poseidon/combined_1f1b.hpp"
#include "poseidon/cost_model.hpp"
#include "poseidon/presets.hpp"
#include "poseidon/profile.hpp"
#include "model_keys.hpp"

namespace poseidon {

namespace {

std::string join_ids(const std::vector<std::string>& ids) {
    std::string s;
    for (std::size_t i = 0; i < ids.size() && i < 30; ++i) s += (i ? ", " : "") + ids[i];
    if (ids.size() > 30) s += ", ...";
    return s;
}

// Resolves a preset reference: a string id, or an object with an optional "base" id whose keys the
// object overrides. Returns the merged object, or null after reporting a problem.
Json resolve_ref(const Json& j, const char* kind, const std::string& path, Problems& problems, std::string* ref_id) {
    auto unknown = [&](const std::string& id, const std::string& where) {
        std::vector<std::string> ids = preset_ids(kind);
        std::string hint = did_you_mean(id, ids);
        problems.add(where, show(Json(id)) + " is not a " + std::string(kind).substr(0, std::string(kind).size() - 1) +
                                " preset" + (hint.empty() ? "" : " (did you mean \"" + hint + "\"?)") + "; known: " + join_ids(ids));
    };
    if (j.is_string()) {
        const auto& id = j.get_ref<const std::string&>();
        const Json* p = find_preset(kind, id);
        if (!p) {
            unknown(id, path);
            return Json();
        }
        if (ref_id) *ref_id = id;
        return *p;
    }
    // {"preset": id, ...} is the same as {"base": id, ...} (docs/formats.md, "Preset references with overrides")
    if (j.is_object() && j.contains("base") && j.contains("preset")) {
        problems.add(path + ".preset", show(j["preset"]) + " beside base " + show(j["base"]) + "; expected one of the two (they mean the same)");
        return Json();
    }
    if (j.is_object() && (j.contains("base") || j.contains("preset"))) {
        const std::string key = j.contains("base") ? "base" : "preset";
        const Json& b = j[key];
        if (!b.is_string()) {
            problems.add(path + "." + key, show(b) + " is not a string; expected a preset id");
            return Json();
        }
        const Json* p = find_preset(kind, b.get_ref<const std::string&>());
        if (!p) {
            unknown(b.get<std::string>(), path + "." + key);
            return Json();
        }
        Json merged = *p;
        // null removes the preset's key (as a JSON merge patch, RFC 7396): its default applies
        for (auto it = j.begin(); it != j.end(); ++it)
            if (it.key() == key) continue;
            else if (it.value().is_null()) merged.erase(it.key());
            else merged[it.key()] = it.value();
        merged.erase("id");
        return merged;
    }
    if (!j.is_object()) {
        problems.add(path, show(j) + " is neither a preset id nor an object; expected a string id or an object");
        return Json();
    }
    return j;
}

}  // namespace

std::string to_string(Recompute r) {
    switch (r) {
        case Recompute::none: return "none";
        case Recompute::selective: return "selective";
        default: return "full";
    }
}

Device parse_device(const Json& in, const std::string& path, Problems& problems) {
    Device d;
    Json j = resolve_ref(in, "devices", path, problems, &d.id);
    if (j.is_null()) return d;
    if (in.is_object() && (in.contains("base") || in.contains("preset")))  // a string: resolve_ref checked it
        d.base_id = in.contains("base") ? in["base"].get<std::string>() : in["preset"].get<std::string>();
    ObjectReader r(j, path, problems);
    if (!r.ok()) return d;
    r.reject_unknown({"id", "name", "vendor", "peak_tflops", "fp8_tflops", "mxfp8_tflops", "nvfp4_tflops", "fp32_tflops", "tf32_tflops", "sustained_clock_ratio", "low_precision_efficiency_ratio", "comm_compute_slowdown", "attention_efficiency", "attention_flops_per_exp", "flash_attention", "memory_GiB", "memory_bw_GBps", "intra_node_bw_GBps",
                      "intra_node_link", "matmul_efficiency", "memory_bw_efficiency", "kernel_overhead_us",
                      "intra_node_link_efficiency", "nvls_bw_GBps", "inter_node_link_efficiency", "collective_latency_us",
                      "framework_overhead_GiB", "calibration", "source", "notes",
                      "price_usd_per_gpu_hour", "price_source", "price_as_of"});
    if (auto v = r.string("name", true)) d.name = *v;
    // The price keys are the page's (time-to-train cost, docs/presets.md): checked, not used by the model.
    d.price_usd_per_gpu_hour = r.number("price_usd_per_gpu_hour", false, 0, true, 1e6);
    if (auto v = r.string("price_source", false)) d.price_source = *v;
    if (auto v = r.string("price_as_of", false)) d.price_as_of = *v;
    // An inline device may carry its id (to_json writes it), so a profile keyed by id still finds it.
    if (auto v = r.string("id", false); v && d.id.empty()) d.id = *v;
    if (auto v = r.string("vendor", false)) d.vendor = *v;
    if (auto v = r.string("source", false)) d.source = *v;
    if (auto v = r.string("notes", false)) d.notes = *v;
    if (auto v = r.number("peak_tflops", true, 0, false, 1e6)) d.peak_tflops = *v;
    if (auto v = r.number("fp32_tflops", false, 0, false, 1e6)) d.fp32_tflops = *v;
    // A low-precision rate is a number, or "none" (the same as leaving it out) where the GPU has
    // no such tensor-core format.
    for (auto [key, field] : {std::pair{"fp8_tflops", &d.fp8_tflops}, {"mxfp8_tflops", &d.mxfp8_tflops}, {"nvfp4_tflops", &d.nvfp4_tflops}}) {
        const Json* v = r.get(key);
        if (v && v->is_string() && v->get_ref<const std::string&>() == "none") continue;
        if (v && !v->is_number()) {
            problems.add(r.path_of(key), describe(*v) + "; expected a finite number > 0 and <= 1000000 (dense TFLOP/s), or \"none\" where the GPU has no such format");
            continue;
        }
        if (auto x = r.number(key, false, 0, false, 1e6)) *field = *x;
    }
    if (auto v = r.number("tf32_tflops", false, 0, true, 1e6)) d.tf32_tflops = *v;
    if (auto v = r.number("sustained_clock_ratio", false, 0, false, 1)) d.sustained_clock_ratio = *v;
    if (auto v = r.number("low_precision_efficiency_ratio", false, 0, false, 1)) d.low_precision_efficiency_ratio = *v;
    if (auto v = r.number("comm_compute_slowdown", false, 0, true, 1)) d.comm_compute_slowdown = *v;
    if (auto v = r.number("attention_efficiency", false, 0, true, 1)) d.attention_efficiency = *v;
    if (auto v = r.number("attention_flops_per_exp", false, 0, true, 1e5)) d.attention_flops_per_exp = *v;
    if (auto v = r.boolean("flash_attention", false)) d.flash_attention = *v;
    if (auto v = r.number("memory_GiB", true, 0, false, 1e6)) d.memory_GiB = *v;
    if (auto v = r.number("memory_bw_GBps", true, 0, false, 1e7)) d.memory_bw_GBps = *v;
    if (auto v = r.number("intra_node_bw_GBps", true, 0, false, 1e6)) d.intra_node_bw_GBps = *v;
    if (auto v = r.choice("intra_node_link", false, {"nvlink", "nvlink_cube_mesh", "nvlink_mesh", "pcie", "pcie_host", "infinity_fabric"})) d.intra_node_link = *v;
    if (auto v = r.number("matmul_efficiency", false, 0, false, 1)) d.matmul_efficiency = *v;
    if (auto v = r.number("memory_bw_efficiency", false, 0, false, 1)) d.memory_bw_efficiency = *v;
    if (auto v = r.number("kernel_overhead_us", false, 0, true, 1e6)) d.kernel_overhead_us = *v;
    if (auto v = r.number("intra_node_link_efficiency", false, 0, false, 1)) d.intra_node_link_efficiency = *v;
    if (auto v = r.number("nvls_bw_GBps", false, 0, true, 1e6)) d.nvls_bw_GBps = *v;
    if (auto v = r.number("inter_node_link_efficiency", false, 0, false, 1)) d.inter_node_link_efficiency = *v;
    if (auto v = r.number("collective_latency_us", false, 0, true, 1e6)) d.collective_latency_us = *v;
    if (auto v = r.number("framework_overhead_GiB", false, 0, true, 1e6)) {
        d.framework_overhead_GiB = *v;
        // The overhead comes out of the GPU's memory: more than all of it describes no GPU (equal
        // is what calibrate's bound can reach). Only a value given is checked: the default belongs
        // to no card, and a tiny test device without one simply fits no plan.
        if (d.memory_GiB > 0 && *v > d.memory_GiB)
            problems.add(r.path_of("framework_overhead_GiB"), show(*r.get("framework_overhead_GiB")) + " is more than memory_GiB " + show(*r.get("memory_GiB")) +
                                                                  "; expected at most the GPU's memory, which the CUDA context, NCCL buffers and workspaces come out of");
    }
    if (const Json* c = r.get("calibration")) d.calibration = parse_device_calibration(*c, r.path_of("calibration"), problems);
    return d;
}

Stack parse_stack(const Json& in, const std::string& path, Problems& problems) {
    Stack st;
    Json j = resolve_ref(in, "stacks", path, problems, &st.id);
    if (j.is_null()) return st;
    // Over a preset, the optimizer state given one way replaces the preset's other way: its total
    // where the override gives the composition, its composition where it gives the total (the
    // preset's own would contradict the override: docs/formats.md, "stack")
    if (in.is_object() && (in.contains("base") || in.contains("preset"))) {
        if (in.contains("master_weight_bytes_per_param") || in.contains("moment_bytes_per_param")) {
            if (!in.contains("optimizer_state_bytes_per_param")) j.erase("optimizer_state_bytes_per_param");
        } else if (in.contains("optimizer_state_bytes_per_param")) {
            j.erase("master_weight_bytes_per_param");
            j.erase("moment_bytes_per_param");
        }
    }
    ObjectReader r(j, path, problems);
    if (!r.ok()) return st;
    r.reject_unknown({"id", "name", "fused_elementwise", "softmax_fp32", "host_us_per_kernel", "pass_overhead_us", "layer_overhead_us", "p2p_blocking", "p2p_scatter_gather", "grad_fp32", "tp_async_backward", "nccl_nvls", "tp_comm_overlap_fraction", "moe_sync_host_us", "moe_sync_host_us_per_expert",
                      "optimizer_step_bytes_per_param", "optimizer_state_bytes_per_param", "master_weight_bytes_per_param", "moment_bytes_per_param", "loss_bytes_per_logit", "allocator_reserve_fraction", "stage_needs_parameters", "low_precision_recipes", "calibration", "source", "notes"});
    if (auto v = r.string("name", true)) st.name = *v;
    if (auto v = r.string("id", false); v && st.id.empty()) st.id = *v;
    if (auto v = r.string("source", false)) st.source = *v;
    if (auto v = r.string("notes", false)) st.notes = *v;
    if (auto v = r.boolean("fused_elementwise", true)) st.fused_elementwise = *v;
    if (auto v = r.boolean("softmax_fp32", false)) st.softmax_fp32 = *v;
    double* overheads[] = {&st.host_us_per_kernel, &st.pass_overhead_us, &st.layer_overhead_us};  // stack_overhead_keys' order
    for (std::size_t k = 0; k < std::size(stack_overhead_keys); ++k)
        if (auto v = r.number(stack_overhead_keys[k].key, true, 0, true, stack_overhead_keys[k].max_us)) *overheads[k] = *v;
    if (auto v = r.boolean("p2p_blocking", true)) st.p2p_blocking = *v;
    if (auto v = r.boolean("p2p_scatter_gather", true)) st.p2p_scatter_gather = *v;
    if (auto v = r.boolean("grad_fp32", true)) st.grad_fp32 = *v;
    if (auto v = r.boolean("tp_async_backward", false)) st.tp_async_backward = *v;
    if (auto v = r.boolean("nccl_nvls", false)) st.nccl_nvls = *v;
    if (auto v = r.number("tp_comm_overlap_fraction", false, 0, true, 1)) st.tp_comm_overlap_fraction = *v;
    if (auto v = r.number("moe_sync_host_us", false, 0, true, 1e6)) st.moe_sync_host_us = *v;
    if (auto v = r.number("moe_sync_host_us_per_expert", false, 0, true, 1e5)) st.moe_sync_host_us_per_expert = *v;
    if (auto v = r.number("optimizer_step_bytes_per_param", true, 0, false, 1e3)) st.optimizer_step_bytes_per_param = *v;
    if (auto v = r.number("optimizer_state_bytes_per_param", false, 0, true, 1e3)) st.optimizer_state_bytes_per_param = *v;
    // The composition: both keys or neither; it sets the total, which may not say otherwise.
    const Json* mw = r.get("master_weight_bytes_per_param");
    const Json* mo = r.get("moment_bytes_per_param");
    auto one_of = [&](const Json* v, const char* key, std::initializer_list<double> allowed, const char* what) -> double {
        if (v && v->is_number())
            for (double a : allowed)
                if (v->get<double>() == a) return a;
        problems.add(r.path_of(key), (v ? show(*v) : std::string("missing")) + " is not allowed; expected " + what);
        return -1;
    };
    if (mw || mo) {
        const double m1 = one_of(mw, "master_weight_bytes_per_param", {4, 2, 0},
                                 "4 (fp32 master weights), 2 (bf16 remainders: Megatron-Core's precision-aware optimizer) or 0 (no master copy), given with moment_bytes_per_param");
        const double m2 = one_of(mo, "moment_bytes_per_param", {4, 2, 1}, "4 (fp32), 2 (bf16 or fp16) or 1 (fp8) bytes per Adam moment, given with master_weight_bytes_per_param");
        if (m1 >= 0 && m2 >= 0) {
            const double total = m1 + 2 * m2;
            if (r.has("optimizer_state_bytes_per_param") && st.optimizer_state_bytes_per_param != total)
                problems.add(r.path_of("optimizer_state_bytes_per_param"), show(*r.get("optimizer_state_bytes_per_param")) + " contradicts master_weight_bytes_per_param " + number_text(m1) +
                                                                           " + 2 x moment_bytes_per_param " + number_text(m2) + " = " + number_text(total) + "; give one or the other");
            st.master_weight_bytes_per_param = m1;
            st.moment_bytes_per_param = m2;
            st.optimizer_state_bytes_per_param = total;
        }
    }
    if (auto v = r.number("loss_bytes_per_logit", true, 0, true, 1e3)) st.loss_bytes_per_logit = *v;
    if (auto v = r.number("allocator_reserve_fraction", true, 0, true, 1)) st.allocator_reserve_fraction = *v;
    if (auto v = r.boolean("stage_needs_parameters", false)) st.stage_needs_parameters = *v;
    if (const Json* lp = r.get("low_precision_recipes")) read_low_precision_recipes(*lp, r.path_of("low_precision_recipes"), problems, st.low_precision_recipes);
    if (const Json* c = r.get("calibration")) st.calibration = parse_stack_calibration(*c, r.path_of("calibration"), problems);
    return st;
}

ModelSpec parse_model(const Json& in, const std::string& path, Problems& problems) {
    ModelSpec m;
    Json j = resolve_ref(in, "models", path, problems, &m.id);
    if (j.is_null()) return m;
    ObjectReader r(j, path, problems);
    if (!r.ok()) return m;
    std::vector<std::string_view> keys = {"id", "name", "num_layers", "hidden_size", "num_attention_heads", "num_kv_heads", "ffn_hidden_size",
                                          "vocab_size", "seq_length", "gated_mlp", "tied_embeddings", "bias", "qk_layernorm", "position_embedding", "hidden_dropout", "attention_dropout", "rope_theta",
                                          "source", "notes"};
    keys.insert(keys.end(), std::begin(model_variant_keys), std::end(model_variant_keys));
    r.reject_unknown(keys);
    if (auto v = r.string("name", true)) m.name = *v;
    if (auto v = r.string("source", false)) m.source = *v;
    if (auto v = r.string("notes", false)) m.notes = *v;
    auto n_layers = r.integer("num_layers", true, 1, max_num_layers);
    auto h = r.integer("hidden_size", true, 1, max_model_dim);
    auto a = r.integer("num_attention_heads", true, 1, max_model_dim);
    auto kv = r.integer("num_kv_heads", false, 1, max_model_dim);
    auto f = r.integer("ffn_hidden_size", false, 1, 4 * max_model_dim);
    auto v = r.integer("vocab_size", true, 1, 100'000'000);
    auto s = r.integer("seq_length", true, 1, max_seq_length);
    if (n_layers) m.num_layers = static_cast<int>(*n_layers);
    if (h) m.hidden_size = static_cast<int>(*h);
    if (a) m.num_attention_heads = static_cast<int>(*a);
    m.num_kv_heads = kv ? static_cast<int>(*kv) : m.num_attention_heads;
    m.ffn_hidden_size = f ? static_cast<int>(*f) : 4 * m.hidden_size;
    if (v) m.vocab_size = static_cast<int>(*v);
    if (s) m.seq_length = static_cast<int>(*s);
    if (auto b = r.boolean("gated_mlp", false)) m.gated_mlp = *b;
    if (auto b = r.boolean("tied_embeddings", false)) m.tied_embeddings = *b;
    if (auto b = r.boolean("bias", false)) m.bias = *b;
    if (auto b = r.boolean("qk_layernorm", false)) m.qk_layernorm = *b;
    if (auto p = r.choice("position_embedding", false, {"learned", "rope"})) m.learned_position_embedding = (*p == "learned");
    if (auto p = r.number("hidden_dropout", false, 0, true, 1)) m.hidden_dropout = *p;
    if (auto p = r.number("attention_dropout", false, 0, true, 1)) m.attention_dropout = *p;
    if (auto p = r.number("rope_theta", false, 0, false, 1e12)) m.rope_theta = *p;
    parse_model_variants(r, m, problems);
    // an explicit head dimension (or MLA's) need not be hidden_size / heads
    if (h && a && *h % *a != 0 && m.head_dim == 0 && !m.mla)
        problems.add(r.path_of("num_attention_heads"), std::to_string(*a) + " does not divide hidden_size " + std::to_string(*h) + "; the head dimension must be an integer");
    if (a && kv && *a % *kv != 0 && !m.mla)
        problems.add(r.path_of("num_kv_heads"), std::to_string(*kv) + " does not divide num_attention_heads " + std::to_string(*a) + "; grouped-query attention needs heads to be a multiple of kv heads");
    return m;
}

Cluster parse_cluster(const Json& in, const std::string& path, Problems& problems) {
    Cluster c;
    Json j = resolve_ref(in, "clusters", path, problems, &c.id);
    if (j.is_null()) return c;
    ObjectReader r(j, path, problems);
    if (!r.ok()) return c;
    r.reject_unknown({"id", "name", "groups", "inter_group_bw_GBps", "source", "notes"});
    if (auto v = r.string("name", true)) c.name = *v;
    if (auto v = r.string("source", false)) c.source = *v;
    if (auto v = r.string("notes", false)) c.notes = *v;
    if (auto v = r.number("inter_group_bw_GBps", false, 0, false, 1e6)) c.inter_group_bw_GBps = *v;
    const Json* groups = r.get("groups");
    if (!groups) {
        problems.add(r.path_of("groups"), "is missing; expected an array of 1 to " + std::to_string(max_groups) + " groups");
        return c;
    }
    if (!groups->is_array() || groups->empty() || groups->size() > static_cast<std::size_t>(max_groups)) {
        problems.add(r.path_of("groups"), show(*groups) + " is not allowed; expected an array of 1 to " + std::to_string(max_groups) + " groups");
        return c;
    }
    std::int64_t total = 0;
    for (std::size_t i = 0; i < groups->size(); ++i) {
        std::string gp = r.path_of("groups") + "[" + std::to_string(i) + "]";
        const Json& gj = (*groups)[i];
        ObjectReader g(gj, gp, problems);
        Group grp;
        if (!g.ok()) {
            c.groups.push_back(grp);
            continue;
        }
        g.reject_unknown({"device", "nodes", "gpus_per_node", "nvlink_domain_gpus", "inter_node_bw_GBps", "intra_node_bw_GBps", "intra_node_link", "inter_node_link"});
        if (const Json* d = g.get("device"))
            grp.device = parse_device(*d, g.path_of("device"), problems);
        else
            problems.add(g.path_of("device"), "is missing; expected a device preset id or an inline device object");
        auto nodes = g.integer("nodes", true, 1, max_total_gpus);
        auto gpn = g.integer("gpus_per_node", true, 1, 1024);
        if (nodes) grp.nodes = static_cast<int>(*nodes);
        if (gpn) grp.gpus_per_node = static_cast<int>(*gpn);
        if (auto v = g.integer("nvlink_domain_gpus", false, 1, 100'000)) {
            if (gpn && *v % *gpn != 0)
                problems.add(g.path_of("nvlink_domain_gpus"), std::to_string(*v) + " is not a multiple of gpus_per_node " + std::to_string(*gpn) +
                                                                  "; an NVLink domain is a whole number of nodes (72 = 18 trays of 4 on an NVL72 rack)");
            else
                grp.nvlink_domain_gpus = static_cast<int>(*v);
        }
        if (auto v = g.number("inter_node_bw_GBps", true, 0, false, 1e6)) grp.inter_node_bw_GBps = *v;
        if (auto v = g.number("intra_node_bw_GBps", false, 0, false, 1e6))
            grp.intra_node_bw_GBps = *v;
        else
            grp.intra_node_bw_GBps = grp.device.intra_node_bw_GBps;
        if (auto v = g.choice("intra_node_link", false, {"nvlink", "nvlink_cube_mesh", "nvlink_mesh", "pcie", "pcie_host", "infinity_fabric"}))
            grp.intra_node_link = *v;
        else
            grp.intra_node_link = grp.device.intra_node_link;
        if (auto v = g.choice("inter_node_link", false, {"infiniband", "infiniband_host", "ethernet"})) grp.inter_node_link = *v;
        if (nodes && gpn) total += *nodes * *gpn;
        c.groups.push_back(grp);
    }
    if (total > max_total_gpus)
        problems.add(r.path_of("groups"), std::to_string(total) + " GPUs in all is too many; at most " + std::to_string(max_total_gpus));
    return c;
}

Scenario parse_scenario(const Json& j, bool precision_chosen) {
    Problems problems;
    Scenario sc;
    ObjectReader r(j, "scenario", problems);
    if (!r.ok()) problems.throw_if_any();
    r.reject_unknown({"model", "training", "cluster", "name", "notes", "profile"});
    r.string("name", false);
    r.string("notes", false);
    if (const Json* m = r.get("model")) {
        sc.model = parse_model(*m, "scenario.model", problems);
        sc.model_ref = sc.model.id;
    } else {
        problems.add("scenario.model", "is missing; expected a model preset id or an inline model object");
    }
    if (const Json* c = r.get("cluster")) {
        sc.cluster = parse_cluster(*c, "scenario.cluster", problems);
        sc.cluster_ref = sc.cluster.id;
    } else {
        problems.add("scenario.cluster", "is missing; expected a cluster preset id or an inline cluster object");
    }
    if (const Json* t = r.get("training"))
        read_training(*t, sc, problems);
    else
        problems.add("scenario.training", "is missing; expected an object with at least global_batch_size");
    if (!precision_chosen) check_precision_support(sc, problems);
    if (const Json* p = r.get("profile")) sc.profile = parse_profile(*p, "scenario.profile", sc.cluster, problems, problems.empty() ? &sc.model : nullptr);
    problems.throw_if_any();
    return sc;
}

Scenario parse_scenario_text(std::string_view text, bool precision_chosen) { return parse_scenario(parse_json(text, "scenario"), precision_chosen); }

}  // namespace poseidon
