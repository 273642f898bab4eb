// The scenario's "training" object (docs/formats.md, "training"): every key read with its range,
// and the rules between keys that Megatron-LM enforces, each named by its JSON path.
#include "poseidon/combined_1f1b.hpp"
#include "poseidon/json_util.hpp"
#include "poseidon/scenario.hpp"

namespace poseidon {

namespace {
constexpr const char* default_stack_id = "megatron-core";
}  // namespace

void read_training(const Json& t, Scenario& sc, Problems& problems) {
    ObjectReader tr(t, "scenario.training", problems);
    if (!tr.ok()) return;
    tr.reject_unknown({"global_batch_size", "global_batch_tolerance", "precision", "recompute", "sequence_parallel", "distributed_optimizer", "flash_attention", "tf32", "stack",
                       "overlap_grad_reduce", "overlap_param_gather", "tp_comm_overlap", "grad_reduce_dtype", "fp8_param_gather", "fsdp", "cp_comm_type",
                       "moe_imbalance", "moe_token_dispatcher", "cuda_graph_impl", "recompute_modules", "recompute_num_layers", "fsdp_sharding", "moe_shared_expert_overlap",
                       "overlap_moe_expert_parallel_comm", "defer_embedding_wgrad_compute", "wgrad_deferral_limit"});
    if (auto v = tr.integer("global_batch_size", true, 1, max_global_batch_size)) sc.training.global_batch_size = *v;
    if (auto v = tr.number("global_batch_tolerance", false, 0, true, 0.5)) sc.training.global_batch_tolerance = *v;
    if (auto v = tr.choice("precision", false, {"bf16", "fp16", "fp32", "fp8", "fp8-delayed", "fp8-blockwise", "mxfp8", "nvfp4"}))
        sc.training.precision = *precision_from_string(*v);
    if (auto v = tr.choice("recompute", false, {"none", "selective", "full"}))
        sc.training.recompute = *v == "none" ? Recompute::none : *v == "selective" ? Recompute::selective : Recompute::full;
    // more than the model's blocks would recompute no more than all of them: refused, not clamped
    if (auto v = tr.integer("recompute_num_layers", false, 1, sc.model.num_layers > 0 ? sc.model.num_layers : max_num_layers)) {
        if (sc.training.recompute == Recompute::full)
            sc.training.recompute_num_layers = static_cast<int>(*v);
        else
            problems.add(tr.path_of("recompute_num_layers"), std::to_string(*v) + " needs recompute \"full\" (Megatron-Core's --recompute-num-layers with --recompute-method block recomputes whole blocks); recompute is " + to_string(sc.training.recompute));
    }
    if (const Json* v = tr.get("recompute_modules")) {
        if (sc.training.recompute == Recompute::selective)
            read_recompute_modules(*v, tr.path_of("recompute_modules"), problems, sc.training.recompute_modules);
        else
            problems.add(tr.path_of("recompute_modules"), show(*v) + " needs recompute \"selective\" (Megatron-Core reads --recompute-modules only with --recompute-granularity selective); recompute is " + to_string(sc.training.recompute));
    }
    if (auto v = tr.boolean("sequence_parallel", false)) sc.training.sequence_parallel = *v;
    if (auto v = tr.boolean("distributed_optimizer", false)) sc.training.distributed_optimizer = *v;
    if (auto v = tr.boolean("flash_attention", false)) sc.training.flash_attention = *v;
    if (auto v = tr.boolean("tf32", false)) sc.training.tf32 = *v;
    if (auto v = tr.boolean("overlap_grad_reduce", false)) sc.training.overlap_grad_reduce = *v;
    if (auto v = tr.boolean("overlap_param_gather", false)) sc.training.overlap_param_gather = *v;
    if (auto v = tr.boolean("tp_comm_overlap", false)) sc.training.tp_comm_overlap = *v;
    if (auto v = tr.boolean("fp8_param_gather", false)) sc.training.fp8_param_gather = sc.training.fp8_param_gather_asked = *v;
    if (auto v = tr.boolean("fsdp", false)) sc.training.fsdp = *v;
    if (auto v = tr.boolean("defer_embedding_wgrad_compute", false)) sc.training.defer_embedding_wgrad_compute = *v;
    if (auto v = tr.integer("wgrad_deferral_limit", false, 0, max_num_micro_batches)) {
        sc.training.wgrad_deferral_limit = static_cast<int>(*v);
        if (!sc.training.defer_embedding_wgrad_compute)
            problems.add(tr.path_of("wgrad_deferral_limit"), std::to_string(*v) + " needs defer_embedding_wgrad_compute true (Megatron-LM reads --wgrad-deferral-limit only with --defer-embedding-wgrad-compute)");
    }
    if (auto v = tr.choice("fsdp_sharding", false, {"optim_grads_params", "optim_grads"})) {
        sc.training.fsdp_sharding = *v;
        if (!sc.training.fsdp)
            problems.add(tr.path_of("fsdp_sharding"), "\"" + *v + "\" needs fsdp true (Megatron-LM's --data-parallel-sharding-strategy belongs to --use-megatron-fsdp)");
    }
    if (auto v = tr.choice("cp_comm_type", false, {"p2p", "all_gather", "a2a"})) sc.training.cp_comm_type = *v;
    if (auto v = tr.number("moe_imbalance", false, 1, true, 64)) sc.training.moe_imbalance = *v;
    if (auto v = tr.choice("moe_token_dispatcher", false, {"alltoall", "flex"})) sc.training.moe_token_dispatcher = *v;
    if (auto v = tr.boolean("moe_shared_expert_overlap", false)) sc.training.moe_shared_expert_overlap = *v;
    if (auto v = tr.boolean("overlap_moe_expert_parallel_comm", false)) sc.training.overlap_moe_expert_parallel_comm = *v;
    check_combined_1f1b(sc.training, tr.path_of("overlap_moe_expert_parallel_comm"), problems);
    if (auto v = tr.choice("cuda_graph_impl", false, {"none", "local", "transformer_engine", "full_iteration"})) sc.training.cuda_graph_impl = *v;
    // With a precision that is not a low one it applies to the plans of a searched low precision
    // only (scenario_for_plan; a note says so); with a low one the states must be sharded
    if (sc.training.fp8_param_gather && !is_low_precision(sc.training.precision))
        sc.training.fp8_param_gather = false;
    else if (sc.training.fp8_param_gather && !sc.training.distributed_optimizer && !sc.training.fsdp)
        problems.add(tr.path_of("fp8_param_gather"), "true needs distributed_optimizer or fsdp true (Megatron-Core gathers low-precision parameters only from sharded states)");
    if (auto v = tr.choice("grad_reduce_dtype", false, {"fp32", "bf16", "fp16"})) sc.training.grad_reduce_dtype = *v;
    if (sc.training.tp_comm_overlap && !sc.training.sequence_parallel)
        problems.add(tr.path_of("tp_comm_overlap"), "true needs sequence_parallel true (Megatron-LM's arguments.py refuses --tp-comm-overlap without --sequence-parallel: the userbuffers overlap the all-gather and reduce-scatter of sequence parallelism)");
    if (sc.training.overlap_param_gather && !sc.training.distributed_optimizer)
        problems.add(tr.path_of("overlap_param_gather"), "true needs distributed_optimizer true (the parameter all-gather exists only with the distributed optimizer)");
    sc.training.stack = parse_stack(tr.has("stack") ? *tr.get("stack") : Json(default_stack_id), tr.path_of("stack"), problems);
}

}  // namespace poseidon
