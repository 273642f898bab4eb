// A scenario written back as JSON (scenario.hpp, `to_json`): every field, defaults filled in, so
// that parse_scenario(to_json(sc)) gives sc back (docs/formats.md, "Scenario").
#include "poseidon/calibrate.hpp"
#include "poseidon/cost_model.hpp"
#include "model_keys.hpp"
#include "poseidon/json_util.hpp"
#include "poseidon/profile.hpp"
#include "poseidon/scenario.hpp"

namespace poseidon {

Json to_json(const Device& d) {
    Json j = {{"name", d.name},
              {"peak_tflops", d.peak_tflops},
              {"fp32_tflops", fp32_tflops_of(d)},  // the effective rate, so that a round trip keeps it
              {"tf32_tflops", d.tf32_tflops},
              {"sustained_clock_ratio", d.sustained_clock_ratio},
              {"low_precision_efficiency_ratio", d.low_precision_efficiency_ratio},
              {"comm_compute_slowdown", d.comm_compute_slowdown},
              {"attention_efficiency", d.attention_efficiency},
              {"attention_flops_per_exp", d.attention_flops_per_exp},
              {"memory_GiB", d.memory_GiB},
              {"memory_bw_GBps", d.memory_bw_GBps},
              {"intra_node_bw_GBps", d.intra_node_bw_GBps},
              {"intra_node_link", d.intra_node_link},
              {"matmul_efficiency", d.matmul_efficiency},
              {"memory_bw_efficiency", d.memory_bw_efficiency},
              {"kernel_overhead_us", d.kernel_overhead_us},
              {"intra_node_link_efficiency", d.intra_node_link_efficiency},
              {"nvls_bw_GBps", d.nvls_bw_GBps},
              {"inter_node_link_efficiency", d.inter_node_link_efficiency},
              {"collective_latency_us", d.collective_latency_us},
              {"framework_overhead_GiB", d.framework_overhead_GiB}};
    // a low-precision rate left out is "none"
    for (auto [key, v] : {std::pair{"fp8_tflops", d.fp8_tflops}, {"mxfp8_tflops", d.mxfp8_tflops}, {"nvfp4_tflops", d.nvfp4_tflops}})
        if (v > 0) j[key] = v;
    if (!d.vendor.empty()) j["vendor"] = d.vendor;
    if (!d.flash_attention) j["flash_attention"] = false;
    if (!d.id.empty()) j["id"] = d.id;
    if (d.calibration) j["calibration"] = to_json(*d.calibration);
    if (d.price_usd_per_gpu_hour) j["price_usd_per_gpu_hour"] = *d.price_usd_per_gpu_hour;
    for (const auto& [key, text] : {std::pair{"price_source", &d.price_source}, {"price_as_of", &d.price_as_of}, {"source", &d.source}, {"notes", &d.notes}})
        if (!text->empty()) j[key] = *text;
    return j;
}

Json to_json(const Stack& st) {
    Json j = {{"name", st.name},
              {"fused_elementwise", st.fused_elementwise},
              {"softmax_fp32", st.softmax_fp32},
              {"host_us_per_kernel", st.host_us_per_kernel},
              {"pass_overhead_us", st.pass_overhead_us},
              {"layer_overhead_us", st.layer_overhead_us},
              {"p2p_blocking", st.p2p_blocking},
              {"p2p_scatter_gather", st.p2p_scatter_gather},
              {"grad_fp32", st.grad_fp32},
              {"tp_async_backward", st.tp_async_backward},
              {"nccl_nvls", st.nccl_nvls},
              {"tp_comm_overlap_fraction", st.tp_comm_overlap_fraction},
              {"optimizer_step_bytes_per_param", st.optimizer_step_bytes_per_param},
              {"optimizer_state_bytes_per_param", st.optimizer_state_bytes_per_param},
              {"loss_bytes_per_logit", st.loss_bytes_per_logit},
              {"allocator_reserve_fraction", st.allocator_reserve_fraction},
              {"stage_needs_parameters", st.stage_needs_parameters},
              {"low_precision_recipes", st.low_precision_recipes}};
    if (st.moe_sync_host_us > 0 || st.moe_sync_host_us_per_expert > 0) {  // stated by the MoE-era stacks only
        j["moe_sync_host_us"] = st.moe_sync_host_us;
        j["moe_sync_host_us_per_expert"] = st.moe_sync_host_us_per_expert;
    }
    if (st.moment_bytes_per_param > 0) {  // the composition was stated (a moment is never 0 bytes)
        j["master_weight_bytes_per_param"] = st.master_weight_bytes_per_param;
        j["moment_bytes_per_param"] = st.moment_bytes_per_param;
    }
    if (!st.id.empty()) j["id"] = st.id;
    if (st.calibration) j["calibration"] = to_json(*st.calibration);
    return j;
}

Json to_json(const ModelSpec& m) {
    Json j = {{"name", m.name},
            {"num_layers", m.num_layers},
            {"hidden_size", m.hidden_size},
            {"num_attention_heads", m.num_attention_heads},
            {"num_kv_heads", m.num_kv_heads},
            {"ffn_hidden_size", m.ffn_hidden_size},
            {"vocab_size", m.vocab_size},
            {"seq_length", m.seq_length},
            {"gated_mlp", m.gated_mlp},
            {"tied_embeddings", m.tied_embeddings},
            {"bias", m.bias},
            {"position_embedding", m.learned_position_embedding ? "learned" : "rope"},
            {"hidden_dropout", m.hidden_dropout},
            {"attention_dropout", m.attention_dropout}};
    if (m.rope_theta) j["rope_theta"] = *m.rope_theta;
    if (m.qk_layernorm) j["qk_layernorm"] = true;  // (absent where false: the outputs of other models as before)
    model_variants_to_json(m, j);
    return j;
}

Json to_json(const Cluster& c) {
    Json groups = Json::array();
    for (const auto& g : c.groups)
        groups.push_back({{"device", to_json(g.device)},
                          {"nodes", g.nodes},
                          {"gpus_per_node", g.gpus_per_node},
                          {"inter_node_bw_GBps", g.inter_node_bw_GBps},
                          {"intra_node_bw_GBps", g.intra_node_bw_GBps},
                          {"intra_node_link", g.intra_node_link},
                          {"inter_node_link", g.inter_node_link}});
    for (std::size_t i = 0; i < c.groups.size(); ++i)
        if (c.groups[i].nvlink_domain_gpus > 0) groups[i]["nvlink_domain_gpus"] = c.groups[i].nvlink_domain_gpus;
    Json j = {{"name", c.name}, {"groups", groups}};
    if (c.inter_group_bw_GBps) j["inter_group_bw_GBps"] = *c.inter_group_bw_GBps;
    return j;
}

Json to_json(const Scenario& sc) {
    Json j = {{"model", to_json(sc.model)},
            {"cluster", to_json(sc.cluster)},
            {"training",
             {{"global_batch_size", sc.training.global_batch_size},
              {"precision", to_string(sc.training.precision)},
              {"recompute", to_string(sc.training.recompute)},
              {"sequence_parallel", sc.training.sequence_parallel},
              {"distributed_optimizer", sc.training.distributed_optimizer},
              {"flash_attention", sc.training.flash_attention},
              {"tf32", sc.training.tf32},
              {"overlap_grad_reduce", sc.training.overlap_grad_reduce},
              {"overlap_param_gather", sc.training.overlap_param_gather},
              {"tp_comm_overlap", sc.training.tp_comm_overlap},
              {"stack", to_json(sc.training.stack)}}}};
    if (!sc.training.grad_reduce_dtype.empty()) j["training"]["grad_reduce_dtype"] = sc.training.grad_reduce_dtype;
    if (sc.training.recompute == Recompute::selective && !sc.training.recompute_modules.only_core_attn())
        j["training"]["recompute_modules"] = to_json(sc.training.recompute_modules);
    if (sc.training.recompute_num_layers > 0) j["training"]["recompute_num_layers"] = sc.training.recompute_num_layers;
    if (sc.training.fp8_param_gather_asked) j["training"]["fp8_param_gather"] = true;
    if (sc.training.fsdp) j["training"]["fsdp"] = true;
    if (sc.training.defer_embedding_wgrad_compute) j["training"]["defer_embedding_wgrad_compute"] = true;
    if (sc.training.wgrad_deferral_limit > 0) j["training"]["wgrad_deferral_limit"] = sc.training.wgrad_deferral_limit;
    if (sc.training.fsdp && sc.training.fsdp_sharding != "optim_grads_params") j["training"]["fsdp_sharding"] = sc.training.fsdp_sharding;
    if (sc.training.cp_comm_type != "p2p") j["training"]["cp_comm_type"] = sc.training.cp_comm_type;
    if (sc.training.moe_imbalance != 1.0) j["training"]["moe_imbalance"] = sc.training.moe_imbalance;
    if (sc.training.moe_token_dispatcher != "alltoall") j["training"]["moe_token_dispatcher"] = sc.training.moe_token_dispatcher;
    if (sc.training.moe_shared_expert_overlap) j["training"]["moe_shared_expert_overlap"] = true;
    if (sc.training.overlap_moe_expert_parallel_comm) j["training"]["overlap_moe_expert_parallel_comm"] = true;
    if (sc.training.cuda_graph_impl != "none") j["training"]["cuda_graph_impl"] = sc.training.cuda_graph_impl;
    if (sc.training.global_batch_tolerance > 0) j["training"]["global_batch_tolerance"] = sc.training.global_batch_tolerance;
    if (sc.profile) j["profile"] = to_json(*sc.profile);
    return j;
}

}  // namespace poseidon
