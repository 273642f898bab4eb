// Scenario and plan types. Units are in every identifier (Calculon's rule).
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <utility>
#include <optional>
#include <string>
#include <vector>

#include "poseidon/device.hpp"

namespace poseidon {

// The units of the keys: bandwidths in GB/s (10^9 bytes), memory in GiB (2^30 bytes).
inline constexpr double GB = 1e9;
inline constexpr double GiB = 1024.0 * 1024.0 * 1024.0;

struct ModelSpec {
    std::string id;
    std::string name;
    int num_layers = 0;
    int hidden_size = 0;
    int num_attention_heads = 0;
    int num_kv_heads = 0;
    int ffn_hidden_size = 0;
    int vocab_size = 0;
    int seq_length = 0;
    bool gated_mlp = false;
    bool tied_embeddings = false;
    bool bias = true;
    bool learned_position_embedding = true;
    // RMSNorm of each head's queries and keys before RoPE (Qwen3; Megatron-LM --qk-layernorm):
    // two more memory-bound kernels per block (docs/model.md, "Memory-bound work").
    bool qk_layernorm = false;
    // Dropout probabilities as Megatron-LM's --hidden-dropout (after the embedding and each
    // residual branch) and --attention-dropout (on the attention probabilities); 0 runs no dropout
    // kernel and keeps no mask, as in Llama-style pre-training.
    double hidden_dropout = 0.1;
    double attention_dropout = 0.1;
    // RoPE's base (Hugging Face rope_theta, Megatron's --rotary-base): not in the cost, kept for the
    // training command the page writes; absent = not given.
    std::optional<double> rope_theta;
    // Attention shape (docs/formats.md, "model"): head_dim 0 = hidden_size / heads. Multi-latent
    // attention (DeepSeek-V2/V3) replaces the Q, K, V projections by low-rank ones; q_lora_rank 0
    // projects the queries at full rank.
    int head_dim = 0;
    bool mla = false;
    int q_lora_rank = 0, kv_lora_rank = 0, qk_nope_head_dim = 0, qk_rope_head_dim = 0, v_head_dim = 0;
    // Sliding-window attention: window in tokens (0 = none) and which blocks use it (1 = windowed),
    // one flag per block; empty with a window = every block.
    int sliding_window = 0;
    std::vector<char> sliding_window_blocks;
    // Mixture of experts: num_experts 0 = dense. moe_blocks has one flag per block (1 = MoE);
    // the blocks without one use ffn_hidden_size. moe_shared_expert_ffn_hidden_size is the sum
    // over the shared experts (Megatron's --moe-shared-expert-intermediate-size).
    int num_experts = 0;
    int moe_top_k = 0;
    int moe_ffn_hidden_size = 0;
    int num_shared_experts = 0;
    int moe_shared_expert_ffn_hidden_size = 0;
    std::vector<char> moe_blocks;
    // Multi-token prediction modules (DeepSeek-V3), each one more block after the last, trained.
    int mtp_layers = 0;
    bool is_moe() const { return num_experts > 0; }
    // The heads of the keys and values: multi-latent attention up-projects them for every head,
    // so its num_kv_heads plays no part (docs/formats.md, "model")
    int kv_heads() const { return mla ? num_attention_heads : num_kv_heads; }
    // any key beyond the dense transformer's: the arithmetic takes the per-block path (model_size.cpp)
    bool has_block_variants() const { return is_moe() || mla || head_dim > 0 || sliding_window > 0 || mtp_layers > 0; }
    std::string source;
    std::string notes;
};

// The software stack (presets/stacks/): what the framework fuses, overlaps and pays per call.
// Every number is a rate, an overhead, a byte count or a yes/no (docs/model.md, "Software stacks").
struct Stack {
    std::string id;
    std::string name;
    bool fused_elementwise = true;        // fused norm, bias-GeLU, bias-dropout-add, scale-mask-softmax
    bool softmax_fp32 = false;            // unfused attention softmax cast to fp32 and back (no effect when fused)
    double host_us_per_kernel = 0;        // CPU time to dispatch one kernel (framework + launch)
    double pass_overhead_us = 0;          // per forward or backward pass of a micro-batch on a stage
    double layer_overhead_us = 0;         // per block forward (twice per backward) that the GPU waits through
    // The host's time for a dropless MoE layer's expert section in the forward (docs/model.md, "Host
    // time of a dropless MoE layer"): the dispatcher copies the token counts to the host and waits
    // for them, so the host cannot run ahead and the GPU waits while it issues what follows. A fixed
    // part and one per local expert (TE's grouped linear issues each expert's GEMMs and quantisation).
    double moe_sync_host_us = 0;
    double moe_sync_host_us_per_expert = 0;
    bool p2p_blocking = false;            // a pipeline send occupies the sending GPU until it completes
    bool p2p_scatter_gather = true;       // each TP rank sends 1/t of the activation (false: all of it)
    bool grad_fp32 = true;                // fp32 gradient buffer and reduction; false: the model dtype
    bool tp_async_backward = false;       // the backward's TP all-reduce overlaps the weight-gradient GEMM
    bool nccl_nvls = false;               // NCCL all-reduces over NVLink SHARP where the node has it (NCCL >= 2.17)
    double tp_comm_overlap_fraction = 0;  // with training.tp_comm_overlap: share of TP traffic hidden behind GEMMs
    double optimizer_step_bytes_per_param = 30;  // memory traffic of one optimizer step
    double optimizer_state_bytes_per_param = 12; // master weights, moments (and master gradients) held
    // Its composition where the stack states it (docs/model.md, "Memory per GPU"): master weights
    // 4 (fp32), 2 (bf16 remainders beside the bf16 weights: Megatron-Core's precision-aware
    // optimizer) or 0 B (none: Apex's bf16 DistributedFusedAdam), and each Adam moment 4, 2 or 1 B;
    // optimizer_state_bytes_per_param is then their sum. 0 = not stated.
    double master_weight_bytes_per_param = 0;
    double moment_bytes_per_param = 0;
    double loss_bytes_per_logit = 4;      // live bytes per logit while the loss runs
    double allocator_reserve_fraction = 0;  // caching-allocator reserve/fragmentation, of dynamic memory
    bool stage_needs_parameters = false;  // a pipeline stage without parameters cannot be built (one optimizer per stage)
    // The low-precision recipes the stack can train with (Transformer Engine's, by training.precision
    // name); absent from JSON = all of them, [] = none (a stack before Transformer Engine).
    std::vector<std::string> low_precision_recipes = {"fp8", "fp8-delayed", "fp8-blockwise", "mxfp8", "nvfp4"};
    std::optional<DeviceCalibration> calibration;  // when overheads were fitted to measured runs
    std::string source;
    std::string notes;
};

// bf16/fp16/fp32: the GEMMs' operand type. The low-precision recipes (docs/model.md, "Low
// precision") keep bf16 parameters and activations and run the linear layers' GEMMs (forward,
// dgrad, wgrad) at a quantised rate: fp8 = Transformer Engine's per-tensor current scaling
// (Megatron-Core --fp8-recipe tensorwise), fp8_delayed = delayed scaling from an amax history,
// fp8_blockwise = DeepSeek-V3's 1x128 / 128x128 blocks, mxfp8 = 1x32 blocks with E8M0 scales,
// nvfp4 = E2M1 with 16-element E4M3 scales and a per-tensor scale.
enum class Precision { bf16, fp16, fp32, fp8, fp8_delayed, fp8_blockwise, mxfp8, nvfp4 };
inline bool is_low_precision(Precision p) { return p >= Precision::fp8; }
enum class Recompute { none, selective, full };
// Megatron-Core's --recompute-modules under selective recompute (transformer_config.py
// recompute_modules; docs/model.md, "Recomputing named modules"): which parts of a block drop
// what they saved in the forward and run again in the backward. The default is core_attn alone.
struct RecomputeModules {
    bool core_attn = true;       // the attention core (Korthikanti et al. 2022's selective recompute)
    bool layernorm = false;      // the two norms' outputs
    bool mla_up_proj = false;    // MLA's up projections: Q, K and V
    bool mlp = false;            // the dense blocks' MLP
    bool moe_act = false;        // the routed experts' activation function
    bool shared_experts = false; // a MoE block's shared experts
    bool moe = false;            // the whole MoE layer, token exchanges included
    bool only_core_attn() const { return core_attn && !layernorm && !mla_up_proj && !mlp && !moe_act && !shared_experts && !moe; }
    bool operator==(const RecomputeModules&) const = default;
};

struct Training {
    std::int64_t global_batch_size = 0;
    // Plans may train any global batch within this fraction of global_batch_size, 0 to 0.5
    // (docs/formats.md, "training"); the search then ranks plans by tokens/s.
    double global_batch_tolerance = 0;
    Precision precision = Precision::bf16;
    Recompute recompute = Recompute::none;
    RecomputeModules recompute_modules;  // read only when recompute is selective
    // With recompute full: Megatron-Core's --recompute-method block --recompute-num-layers N, the
    // first N blocks of each pipeline stage (of each model chunk under interleaving) recomputed
    // and the others keeping their activations; 0 = every block (--recompute-method uniform
    // --recompute-num-layers 1, the default). docs/model.md, "Recomputing some blocks".
    int recompute_num_layers = 0;
    bool sequence_parallel = false;
    bool distributed_optimizer = false;
    bool flash_attention = true;
    bool tf32 = false;            // fp32 matmuls on TF32 tensor cores (PyTorch's default: off)
    // Megatron-Core's overlap switches (same names and defaults; docs/model.md, "Overlap").
    bool overlap_grad_reduce = false;   // gradient buckets reduced during the last backward
    bool overlap_param_gather = false;  // with the distributed optimizer: parameter all-gather behind the next forwards
    bool tp_comm_overlap = false;       // Transformer Engine userbuffers: TP traffic pipelined with its GEMMs
    std::string grad_reduce_dtype;      // "fp32", "bf16", "fp16"; "" = the stack's choice
    // Low precision only: the compute copy of the parameters is the quantised one, all-gathered in
    // low precision, with no bf16 copy (Megatron-Core --fp8-param-gather / --fp4-param-gather;
    // needs the distributed optimizer).
    bool fp8_param_gather = false;
    // the setting as given: it applies (fp8_param_gather) where the precision is a low one and the
    // states are sharded; a plan of a searched precision takes it from here (scenario_for_plan)
    bool fp8_param_gather_asked = false;
    // Megatron-FSDP (ZeRO-3, --use-megatron-fsdp with sharding strategy optim_grads_params):
    // parameters, gradients and optimizer states sharded over the stage's data-parallel replicas,
    // each block's parameters all-gathered before its forward and again before its backward, its
    // gradients reduce-scattered after every backward (docs/model.md, "FSDP").
    bool fsdp = false;
    // With fsdp, Megatron-FSDP's --data-parallel-sharding-strategy: "optim_grads_params" (ZeRO-3,
    // above) or "optim_grads" (ZeRO-2: the parameters stay whole on every replica, gradients and
    // optimizer states are sharded at rest; each block's gradients are reduce-scattered after every
    // backward, the updated parameters all-gathered after the step).
    std::string fsdp_sharding = "optim_grads_params";
    bool fsdp_shards_params() const { return fsdp && fsdp_sharding == "optim_grads_params"; }
    // How context-parallel ranks exchange keys and values (Megatron-Core --cp-comm-type): "p2p"
    // (a ring overlapped with the attention), "all_gather" or "a2a" (Ulysses).
    std::string cp_comm_type = "p2p";
    // Mixture of experts (docs/model.md, "Expert parallelism"): the busiest expert-parallel rank's
    // routed tokens over the mean (1 = balanced, as Megatron-Bridge's benchmarks force with
    // --moe-router-force-load-balancing), and the token dispatcher (--moe-token-dispatcher-type):
    // "alltoall" permutes tokens in their own kernels, "flex" (DeepEP / HybridEP) fuses the
    // permutation into the dispatch and combine.
    double moe_imbalance = 1.0;
    std::string moe_token_dispatcher = "alltoall";
    // --moe-shared-expert-overlap: the shared experts computed beside the dispatch and combine
    // (alltoall dispatcher; Megatron-Bridge turns it off with flex).
    bool moe_shared_expert_overlap = false;
    // --overlap-moe-expert-parallel-comm with --delay-wgrad-compute (Megatron-Core's combined
    // 1F1B): in the steady state each forward runs merged with the backward of another
    // micro-batch, the token exchange of one beside the compute of the other, after one more
    // warm-up forward (docs/model.md, "Expert-parallel overlap across micro-batches"). Needs one
    // stage or the interleaved schedule.
    bool overlap_moe_expert_parallel_comm = false;
    // Megatron-Core's --cuda-graph-impl: "full_iteration" captures the whole iteration, which
    // replays without the host (no host dispatch, no synchronisation the host waits through);
    // "local" / "transformer_engine" graph modules (attention, router, preprocess) outside the
    // dropless MoE layer's synchronised section and change nothing here (docs/model.md).
    std::string cuda_graph_impl = "none";
    // Megatron-Core's --defer-embedding-wgrad-compute with --wgrad-deferral-limit (0: every
    // micro-batch): the LM head's weight gradient of the first `limit` micro-batches waits for the
    // pipeline flush, its input and output gradient kept until then on the last stage
    // (docs/model.md, "Memory per GPU").
    bool defer_embedding_wgrad_compute = false;
    int wgrad_deferral_limit = 0;
    Stack stack;                  // default: the megatron-core stack preset
};

// The global batches a plan may train: ceil(B (1 - tol)) .. floor(B (1 + tol)) (B itself when tol = 0).
inline std::pair<std::int64_t, std::int64_t> global_batch_range(const Training& t) {
    const double b = static_cast<double>(t.global_batch_size), tol = t.global_batch_tolerance;
    if (tol <= 0) return {t.global_batch_size, t.global_batch_size};
    return {std::max<std::int64_t>(1, static_cast<std::int64_t>(std::ceil(b * (1 - tol)))), static_cast<std::int64_t>(std::floor(b * (1 + tol)))};
}

struct Group {
    Device device;
    int nodes = 0;
    int gpus_per_node = 0;
    double inter_node_bw_GBps = 0;  // the whole node's NIC bandwidth, one direction
    double intra_node_bw_GBps = 0;  // per GPU; defaults from the device
    std::string intra_node_link;    // defaults from the device
    std::string inter_node_link = "infiniband";  // "infiniband" (GPUDirect RDMA), "infiniband_host" (RDMA, no GPUDirect), "ethernet" (TCP)
    // GPUs that share one NVLink domain, a whole number of nodes (72 on a GB200 NVL72 rack of
    // 4-GPU trays); 0 = gpus_per_node. Consecutive GPUs form the domains, the last one may be
    // partial; inside a domain every collective and send runs at intra_node_bw_GBps, across
    // domains over the nodes' NICs (docs/model.md, "NVLink domains").
    int nvlink_domain_gpus = 0;
    int num_gpus() const { return nodes * gpus_per_node; }
    int domain_gpus() const { return nvlink_domain_gpus > 0 ? nvlink_domain_gpus : gpus_per_node; }
    // The nodes of domain `k` (the last domain of the group may hold fewer).
    int domain_nodes(int k) const {
        const int per = domain_gpus() / gpus_per_node;
        return std::max(0, std::min(per, nodes - k * per));
    }
};

struct Cluster {
    std::string id;
    std::string name;
    std::vector<Group> groups;
    std::optional<double> inter_group_bw_GBps;  // per node, one direction, for traffic across groups
    // The search's split of a group into blocks (options.group_blocks, search_group_blocks.cpp):
    // per group, the index of the group it is part of, so that its parts stay one group for the
    // inter-group link; empty: every group is its own.
    std::vector<int> group_origin;
    // With group_origin: per group, the index within its origin group of the node its part starts
    // at, so that the two halves of one node (options.split_nodes) are one node for the links;
    // empty: parts never share a node.
    std::vector<int> group_first_node;
    std::string source;
    std::string notes;
    int num_gpus() const {
        int n = 0;
        for (const auto& g : groups) n += g.num_gpus();
        return n;
    }
};

// Measured per-layer timings (docs/formats.md, "Profile"), like those Metis, Sailor and AMP
// collect. Where a point is present it replaces the analytic estimate.
struct ProfilePoint {
    int tp = 1;
    int samples = 1;                             // samples per replica (this replica's micro-batch)
    double layer_forward_s = 0;                  // one transformer block
    double layer_backward_s = 0;                 // including recomputation as the scenario configures it
    std::optional<double> embedding_forward_s;   // the embedding (first stage)
    std::optional<double> embedding_backward_s;
    std::optional<double> head_forward_s;        // final norm, LM head and loss (last stage)
    std::optional<double> head_backward_s;
};

struct DeviceProfile {
    std::string device;                          // device preset id or inline device name
    std::vector<ProfilePoint> points;
    std::optional<double> optimizer_s_per_billion_params;  // optimizer step per 1e9 local parameters
    std::optional<double> intra_node_bw_GBps;    // measured collective bus bandwidth inside a node
    std::optional<double> inter_node_bw_GBps;    // measured per-node bandwidth across nodes
};

struct Profile {
    std::string name;
    std::string source;
    std::string notes;
    std::vector<DeviceProfile> devices;
};

struct Scenario {
    ModelSpec model;
    Training training;
    Cluster cluster;
    std::string model_ref;    // preset id when the scenario named one
    std::string cluster_ref;
    std::optional<Profile> profile;  // measured timings, when the scenario carries them
    // The expert grid and the context-parallel size the search gives every stage it builds
    // (core/src/search_grids.cpp runs one search per grid); not read from JSON: a plan carries
    // its own per stage.
    int search_ep = 1, search_etp = 1, search_cp = 1;
};

// A set of identical data-parallel replicas of one stage: `count` replicas, each with `tp` GPUs of
// group `group`, each processing `samples` of the micro-batch.
struct ReplicaSet {
    int group = 0;
    int tp = 1;
    int count = 1;
    int samples = 1;
    bool operator==(const ReplicaSet&) const = default;
};

struct StagePlan {
    int num_layers = 0;
    std::vector<ReplicaSet> replicas;   // one entry for a homogeneous stage ({group, tp, dp})
    bool homogeneous_form = true;       // printed back as {group, tp, dp} rather than replicas
    // Context parallelism (Megatron-Core --context-parallel-size): each replica is tp x cp GPUs, and
    // every sequence is split over its cp ranks (docs/model.md, "Context parallelism").
    int cp = 1;
    // Expert parallelism (Megatron-Core's MoE parallel folding): the routed experts of the stage's
    // blocks are split over ep ranks, each expert's matrices over etp, on the same tp x cp x dp GPUs
    // (ep x etp divides them; the rest, edp, replicate the experts). 1 and 1 for a dense model.
    int ep = 1;
    int etp = 1;
    std::vector<int> chunk_layers;      // interleaved: blocks per model chunk (Megatron's layout); empty: num_layers / V each
    int dp() const {
        int n = 0;
        for (const auto& r : replicas) n += r.count;
        return n;
    }
    int gpus() const {
        int n = 0;
        for (const auto& r : replicas) n += r.count * r.tp;
        return n * cp;
    }
    // Megatron-Core's MoE parallel folding: the stage's GPUs hold a whole number of expert grids
    // (ep x etp), repeated edp times
    bool expert_grid_divides() const { return gpus() % (ep * etp) == 0; }
    int expert_dp() const { return std::max(1, gpus() / (ep * etp)); }
    bool operator==(const StagePlan&) const = default;
};

struct Plan {
    std::int64_t micro_batch_size = 0;
    std::int64_t num_micro_batches = 0;
    std::string schedule = "1f1b";      // or "interleaved-1f1b"
    int virtual_stages = 1;             // model chunks per stage (Megatron's virtual pipeline size); 1 for "1f1b"
    int microbatch_group_size = 0;      // interleaved order's micro-batches per chunk in a row; 0: the stage count (Megatron's default)
    std::vector<StagePlan> stages;
    // What a search that freed them chose (options.precisions, options.fsdp, options.recompute;
    // docs/search.md, "Training choices"): the plan trains in this precision, with or without
    // Megatron-FSDP and with this recomputation in place of training.precision, training.fsdp and
    // training.recompute. Empty: the scenario's. recompute_num_layers goes with recompute full
    // only (Megatron-Core's block method); with recompute set and it empty, every block.
    std::optional<Precision> precision;
    std::optional<bool> fsdp;
    std::optional<Recompute> recompute;
    std::optional<int> recompute_num_layers;
    bool has_training_choice() const { return precision || fsdp || recompute; }
    bool operator==(const Plan&) const = default;
};

}  // namespace poseidon
