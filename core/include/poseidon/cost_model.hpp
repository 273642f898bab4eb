// The analytic per-stage cost model: FLOPs, bytes and memory of one pipeline stage, turned into
// seconds with the device's physical parameters. Every equation is given with its source in
// docs/model.md; the section names there match the function names here.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "poseidon/context_parallel.hpp"
#include "poseidon/fsdp.hpp"
#include "poseidon/low_precision.hpp"
#include "poseidon/model_size.hpp"
#include "poseidon/profile.hpp"
#include "poseidon/types.hpp"

namespace poseidon {

// ---- One data-parallel replica of a stage ----

struct MemoryBreakdown {
    double weights_GiB = 0;
    double gradients_GiB = 0;
    double optimizer_GiB = 0;
    double activations_GiB = 0;
    double temporary_GiB = 0;       // buffers that live while the loss runs (logits in fp32, softmax, gradient)
    double allocator_GiB = 0;       // caching-allocator reserve and fragmentation
    double overhead_GiB = 0;        // CUDA context, library workspaces (device)
    double total_GiB() const { return weights_GiB + gradients_GiB + optimizer_GiB + activations_GiB + temporary_GiB + allocator_GiB + overhead_GiB; }
};

// Which source each number of a replica came from (measured-profile mode). forward/backward are
// the least measured of the parts the stage runs (blocks; embedding on the first stage; LM head
// on the last): analytic < interpolated < profile.
struct CostSources {
    CostSource layer_forward = CostSource::analytic;
    CostSource layer_backward = CostSource::analytic;
    std::optional<CostSource> embedding_forward, embedding_backward;  // first stage only
    std::optional<CostSource> head_forward, head_backward;            // last stage only
    CostSource optimizer = CostSource::analytic;
    CostSource links = CostSource::analytic;  // measured bandwidths used for the collectives
    CostSource forward() const;
    CostSource backward() const;
};

// {"forward","backward","optimizer","links","layer_forward",...}: docs/formats.md, "Estimate output".
Json to_json(const CostSources& s);

struct ReplicaCost {
    double forward_s = 0;           // one micro-batch (this replica's samples), TP collectives included
    double backward_s = 0;          // including recomputation
    double forward_tp_comm_s = 0;   // the part of forward_s spent in TP collectives
    double backward_tp_comm_s = 0;
    double params_per_gpu = 0;      // parameters held by one GPU (sharded by TP)
    double linear_params_per_gpu = 0;
    double layer_params_per_gpu = 0;   // one block's parameters on one GPU (an FSDP unit)
    double layer_forward_s = 0;        // one block's forward (its TP collectives included)
    double layer_backward_s = 0;       // one block's backward (recomputation included)  // of which the blocks' linear-layer weights (the GEMMs low precision quantises)
    MemoryBreakdown memory;         // per GPU
    // With full recompute, the one block re-materialised at a time (part of memory.activations_GiB):
    // a GPU holding several model chunks re-materialises one block of one chunk at a time.
    double recompute_working_GiB = 0;
    // The TP all-reduce's bus bandwidth (0 without TP) and whether NVLink SHARP gave it, for the
    // output: NCCL takes the faster of NVLS and the ring.
    double tp_bus_bw_GBps = 0;
    bool tp_nvls = false;
    // Mixture of experts: the routed experts' parameters on one GPU (sharded over ep x etp, their
    // gradients reduced and their optimizer states sharded over the expert data-parallel ranks),
    // and the token dispatch and combine of one forward and one backward (included in forward_s
    // and backward_s).
    double expert_params_per_gpu = 0;
    // what the distributed optimizer (or FSDP) leaves on one GPU of params_per_gpu: the dense
    // parameters over the stage's dp x cp ranks, the experts' over its edp ranks
    double sharded_params_per_gpu = 0;
    double dispatch_buffers_GiB = 0;  // the token dispatch's send and receive buffers (within memory.temporary_GiB's peak)
    double forward_ep_comm_s = 0;
    double backward_ep_comm_s = 0;
    // of forward_s: the time the GPU waits for the host to issue the dropless MoE layers' expert
    // sections beyond their own GPU time (docs/model.md, "Host time of a dropless MoE layer")
    double forward_moe_host_wait_s = 0;
    double ep_pair_save_s = 0;  // one block's saving in a merged pair (combined_1f1b.hpp), and the pass's blocks
    int pair_layers = 0;
    double head_wgrad_s = 0;  // the LM head's weight-gradient GEMMs of one backward (last stage, its MTP passes included)
    CostSources sources;            // optimizer and links are filled by evaluate_stages
};

struct StagePosition {
    int index = 0;                  // 0-based stage index
    int num_stages = 1;
    std::int64_t num_micro_batches = 1;
    int dp_total = 1;               // replicas in the stage (for the distributed optimizer's sharding)
    double in_flight = -1;          // micro-batches whose activations are held; < 0: 1F1B's min(S - i, m)
    int cp = 1;                     // context-parallel ranks sharing each sequence
    double cp_bw_GBps = 0;          // the CP ring's bandwidth per GPU and its per-step latency (cp_link)
    double cp_latency_s = 0;
    int ep = 1, etp = 1;            // expert-parallel and expert tensor-parallel sizes of the stage
    int edp = 0;                    // the stage's expert data-parallel ranks, GPUs / (ep x etp); 0: tp x dp_total / (ep x etp)
    // Of the replica's blocks, the share that are the model's leading dense blocks (stage_blocks.cpp);
    // < 0: every block is the model's average block
    double prefix_share = -1;
    struct EpLinkRef {
        double intra_bw_GBps = 0, inter_bw_GBps = 0, latency_s = 0;  // per GPU, one direction
        double frac_intra = 0, frac_inter = 0;  // of the dispatched tokens: to GPUs of this NVLink domain, beyond it
        double etp_bw_GBps = 0;                 // the expert tensor-parallel group's ring
    } ep_link{};
    bool first() const { return index == 0; }
    bool last() const { return index == num_stages - 1; }
};

ReplicaCost replica_cost(const Scenario& sc, const Device& device, int tp, int samples, int num_layers, const StagePosition& pos);
// The memory part of replica_cost (core/src/memory_model.cpp): fills rc.params_per_gpu, rc.memory and
// rc.recompute_working_GiB.
void replica_memory(const Scenario& sc, const Device& device, int tp, int samples, int num_layers, const StagePosition& pos, ReplicaCost& rc);

// ---- Links and collectives ----

// Effective per-GPU bandwidths in GB/s for a group, after link efficiency.
// ring_gpus: the GPUs of one node in the collective's ring (topologies like the hybrid cube-mesh
// give a small ring fewer links); 0 = the whole node.
double intra_node_bw_eff_GBps(const Group& g, int ring_gpus = 0);
double nic_bw_per_node_eff_GBps(const Group& g);
// Latency of one ring step of a collective among the group's GPUs (within a node, or across nodes).
double group_latency_s(const Group& g, bool across_nodes);
// Bandwidth factor of an intra-node link type for a ring of ring_gpus GPUs ("pcie_host" stages
// every byte through host memory; "nvlink_mesh" splits each GPU's links over the node's
// gpus_per_node - 1 peers, 0 = the ring is the whole node).
double intra_link_factor(const std::string& link, int ring_gpus = 0, int gpus_per_node = 0);
// The bus bandwidth at which an all-reduce among ring_gpus GPUs of one node runs with NVLink SHARP,
// in the ring formula's terms (docs/model.md, "Links"); 0 where the stack, the link or the device
// has none. Callers take the larger of it and the ring's: NCCL's tuner picks the faster algorithm.
double nvls_allreduce_bus_bw_GBps(const Device& d, const std::string& link, int ring_gpus, const Stack& stack);
// Latency a link type adds to every ring step (host staging), in microseconds.
double intra_link_extra_latency_us(const std::string& link);
// Ring all-reduce, reduce-scatter and all-gather over n ranks (Thakur et al. 2005; NCCL's busbw model).
double ring_allreduce_s(double bytes, int n, double bw_GBps, double latency_s);
double ring_reduce_scatter_s(double bytes, int n, double bw_GBps, double latency_s);

// ---- GPU placement: GPUs are taken from each group in stage order, node by node ----

struct ReplicaPlacement {
    int group = 0;
    int first_gpu = 0;   // index within the group
    int num_gpus = 0;
    int first_node() const;
    int last_node(int gpus_per_node) const { return (first_gpu + num_gpus - 1) / gpus_per_node; }
    bool operator==(const ReplicaPlacement&) const = default;
};

struct StagePlacement {
    std::vector<ReplicaPlacement> replicas;  // one per replica (ReplicaSet counts expanded)
};

// Throws InputError (path plan.stages[i]) when a TP group would straddle nodes or a group runs out.
std::vector<StagePlacement> place_plan(const Scenario& sc, const Plan& plan);

// ---- Whole stages ----

struct StageTimes {
    double forward_s = 0;          // per micro-batch, slowest replica
    double backward_s = 0;
    double forward_tp_comm_s = 0;  // of the slowest replica, for the critical-path breakdown
    double backward_tp_comm_s = 0;
    double forward_ep_comm_s = 0;  // the same: the token dispatch and combine within forward_s / backward_s (MoE)
    double backward_ep_comm_s = 0;
    double send_forward_s = 0;     // activation to the next stage, per micro-batch (0 on the last)
    double send_backward_s = 0;    // gradient to the previous stage, per micro-batch (0 on the first)
    double dp_sync_s = 0;          // gradient all-reduce (or reduce-scatter with the distributed optimizer)
    double optimizer_s = 0;        // optimizer step (plus parameter all-gather with the distributed optimizer)
    // Tied embeddings over several stages: the word-embedding gradient all-reduce between the
    // first and the last stage after their gradient synchronisation (Megatron-LM
    // _allreduce_word_embedding_grads; DeepSpeed's tied-module reduce, in Megatron's order). Part
    // of dp_sync_s, kept apart for the output and for interleaving's synchronisation on the dp
    // stream (add_embedding_sync).
    double embedding_sync_s = 0;
    // With a blocking point-to-point stack the sends are folded into forward_s / backward_s (the
    // sender computes nothing until its send completes); these are the folded parts.
    double forward_send_blocking_s = 0;
    double backward_send_blocking_s = 0;
    // training.overlap_grad_reduce as graph structure (docs/model.md, "Overlap"): the compute part
    // of the stage's last backward is a chain of grad_buckets sub-steps, the first
    // grad_bucket_ready_s long and the others grad_bucket_step_s (slowed by the buckets beside
    // them); bucket k (grad_bucket_s on the dp stream) follows sub-step k and bucket k-1. The last
    // backward node lasts backward_s + last_backward_extra_s, and dp_sync_s is what the bucket
    // chain runs past that node's end (its longest path, so the DAG stays one node per stage).
    // grad_buckets 0: no overlap, dp_sync_s is the whole synchronisation after the last backward.
    int grad_buckets = 0;
    double grad_bucket_s = 0;
    double grad_bucket_ready_s = 0;
    double grad_bucket_step_s = 0;
    double last_backward_extra_s = 0;
    // training.overlap_param_gather (1F1B): the all-gather of the updated parameters in
    // param_gather_buckets buckets of param_gather_bucket_s on the dp stream. Bucket 0 starts with
    // the iteration and the stage's first forward waits for it; the forward prefetches bucket k+1
    // as it reaches bucket k (Megatron-Core), so its sub-steps follow every param_gather_step_s
    // and the first forward node lasts forward_s + first_forward_extra_s. 0: no overlap.
    int param_gather_buckets = 0;
    double param_gather_bucket_s = 0;
    double param_gather_step_s = 0;
    double first_forward_extra_s = 0;
    // Interleaved 1F1B (chunk times only): the chunk's grad_buckets / param_gather_buckets are
    // buckets of grad_bucket_s / param_gather_bucket_s on the stage's dp stream, walked as events
    // with compute at rate 1 - stream_slowdown beside them (docs/model.md, "Overlap under
    // interleaving"); the step and ready fields and the extras stay 0 there.
    double stream_slowdown = 0;
    // training.defer_embedding_wgrad_compute (every micro-batch deferred): the head's weight
    // gradients of all micro-batches at the flush, part of last_backward_extra_s (backward_s is
    // then without them; defer_head_wgrad). Under interleaving the head chunk's times carry it too:
    // the sweep runs the flush after the stage's last pass and its first bucket after that.
    double deferred_wgrad_s = 0;
    // combined_1f1b.hpp: merged pairs save pair_save_per_layer_s per block of the smaller pass;
    // forward_s and backward_s are less pair_reserve_s, which an unmerged pass takes back
    bool merged_pairs = false;
    int pair_layers = 0;
    double pair_save_per_layer_s = 0, pair_reserve_s = 0;

    // The compute of one replica (it is the stage's slowest): forward, backward and their TP parts.
    void take_compute(const ReplicaCost& rc) {
        forward_s = rc.forward_s;
        backward_s = rc.backward_s;
        forward_tp_comm_s = rc.forward_tp_comm_s;
        backward_tp_comm_s = rc.backward_tp_comm_s;
        forward_ep_comm_s = rc.forward_ep_comm_s;
        backward_ep_comm_s = rc.backward_ep_comm_s;
        pair_layers = rc.pair_layers;
        pair_save_per_layer_s = rc.ep_pair_save_s;
    }
};

struct StageEval {
    StageTimes times;
    MemoryBreakdown memory;        // of the replica with the least headroom
    double memory_capacity_GiB = 0;
    bool fits = true;
    int slowest_replica = 0;       // index into the plan stage's replicas
    std::vector<ReplicaCost> replica_costs;  // per ReplicaSet
    CostSources sources;           // of the slowest replica, with the stage's optimizer source
    std::vector<StageTimes> chunk_times;  // interleaved 1F1B: chunk c's times and sends (empty for 1F1B)
    // Interleaved 1F1B with overlap_param_gather: the stage's whole parameter all-gather, which
    // evaluate_chunks splits into its chunks' buckets (0 otherwise: then optimizer_s holds it).
    double param_gather_s = 0;
    // The gradient synchronisation's bus bandwidth (0 without DP) and whether NVLink SHARP gave it.
    double dp_bus_bw_GBps = 0;
    bool dp_nvls = false;

    // Keeps `mem` as the stage's memory when its replica has the least headroom so far on a
    // device of `capacity_GiB` (`worst`: that headroom, updated).
    void keep_tightest(const MemoryBreakdown& mem, double capacity_GiB, double& worst) {
        const double headroom = capacity_GiB - mem.total_GiB();
        if (headroom >= worst) return;
        worst = headroom;
        memory = mem;
        memory_capacity_GiB = capacity_GiB;
    }
};

// What a placement's communication costs that does not depend on the stages' layers: the nodes each
// stage spans, the sends between stages (also the interleaved wrap-around ones) and the rings of
// the gradient synchronisations. Filled by the first evaluate_stages call given it; valid for
// later calls with the same placement, stages' replicas and micro-batch size (the search's layer
// splits of one configuration). clear() when any of these changes.
struct PlacementLinks {
    std::vector<std::vector<std::pair<int, int>>> spans;  // per stage: (group, node), sorted, unique
    std::vector<double> send_forward_s, send_backward_s;   // per stage, to its neighbours
    std::vector<double> dp_bw_GBps, dp_latency_s;          // per stage, its gradient synchronisation's ring
    std::vector<bool> dp_nvls;                             // per stage: over NVLink SHARP, not the ring
    double wrap_forward_s = 0, wrap_backward_s = 0;        // last stage -> stage 0 and back (V > 1)
    double embedding_sync_s = 0;                           // tied embeddings: stage 0 <-> last stage's all-reduce
    bool filled() const { return !spans.empty(); }
    void clear() { spans.clear(); }
};

// whole_pipeline false: the stages are a probe of the search's cost cache, not a pipeline whose
// first and last stage share tied embeddings (no embedding_sync_s; the search adds it per
// configuration).
std::vector<StageEval> evaluate_stages(const Scenario& sc, const Plan& plan, const std::vector<StagePlacement>& placement,
                                       PlacementLinks* links = nullptr, bool whole_pipeline = true);
// The same into `out`, whose stages' vectors keep their storage (the search's cost cache calls it
// for every probe).
// Where a plan's stages hold the model's leading dense blocks (leading_dense_blocks): where the
// stages' layer counts put them (a pipeline), or, for the search's probes, whose stages are not
// one pipeline, on the first stage whatever the counts, or on every stage (each as if it began
// the model: the search's lower bounds, docs/search.md "Bounds").
enum class LeadingBlocks { by_layers, on_first_stage, on_every_stage };
void evaluate_stages_into(const Scenario& sc, const Plan& plan, const std::vector<StagePlacement>& placement, PlacementLinks* links,
                          bool whole_pipeline, std::vector<StageEval>& out, LeadingBlocks rule = LeadingBlocks::by_layers);

// A stage's memory as evaluate_stages_into decides it: headroom_GiB, the least over its replicas
// of capacity less need (StageEval::memory_capacity_GiB - memory.total_GiB(), of its tightest
// replica), and StageEval::fits.
struct StageFit {
    double headroom_GiB = 0;
    bool fits = false;
};
// Each stage's StageFit alone, without the stages' times or links (the search's memory-cap probes
// read nothing else). One model chunk per stage (plan.virtual_stages 1, as the probes' plans): an
// interleaved stage's activations follow its chunks' order (evaluate_chunks); std::logic_error
// otherwise. `only` (if given, one entry per stage): the stages whose entry is nonzero alone are
// evaluated, the others' StageFit left default (a memory cap's search probes a pipeline to settle a
// few of its stages; the stages' memory does not depend on each other's fit).
void stage_fits_into(const Scenario& sc, const Plan& plan, std::vector<StageFit>& fits, LeadingBlocks rule = LeadingBlocks::by_layers,
                     const std::vector<std::uint8_t>* only = nullptr);

// The tied-embedding all-reduce `s` joins the first and the last stage's gradient synchronisation
// (dp_sync_s), and is recorded apart in their embedding_sync_s (docs/model.md, "Data parallelism").
void add_embedding_sync(StageTimes& first, StageTimes& last, double s);

// The device a replica of `tp` GPUs of group `g` runs on: the group's link overrides, and TP over
// whole nodes at NIC speed. Returns g.device itself, or `buffer` filled with the modified copy.
const Device& replica_device(const Group& g, int tp, Device& buffer);

// Interleaved 1F1B (plan.virtual_stages > 1; core/src/cost_interleaved.cpp): each stage's V chunks
// timed as their blocks (chunk_blocks; the embedding on chunk 0 of stage 0, the head on chunk V-1
// of the last stage) with their sends, into StageEval::chunk_times; the stage's F/B times become the
// sums over its chunks and its activations those of the interleaved order's passes in flight.
// `stages` are evaluate_stages' results for the plan (their sends to neighbours are reused).
// `links`: the wrap-around sends (evaluate_stages fills them).
// `leading`: leading_blocks_per_chunk of the plan (empty: a model without leading dense blocks).
void evaluate_chunks(const Scenario& sc, const Plan& plan, std::vector<StageEval>& stages, const PlacementLinks& links, const std::vector<int>& leading);
// How many of the model's leading dense blocks each model chunk holds, by virtual stage c p + s
// (one per stage without interleaving), under `rule`: by_layers where the layer counts put them
// in Megatron-Core's order of chunks. core/src/stage_blocks.cpp.
std::vector<int> leading_blocks_per_chunk(const ModelSpec& m, const Plan& plan, LeadingBlocks rule);
// StagePosition::prefix_share of a replica holding `leading` of them among `blocks`.
double prefix_share_of(int leading, int blocks);
// Where the blocks after the leading dense ones are not all alike (MoE and dense, windowed and full
// attention), each stage is costed with their average: a note naming the stages (model chunks)
// whose own blocks differ from that average by a third of a block or more of a kind; "" when
// none does (stage_blocks.cpp).
std::string block_mix_note(const ModelSpec& m, const Plan& plan);
// A note per stage with an expert grid (ep x etp > 1) that holds only the model's leading dense
// blocks, where the grid changes nothing (stage_blocks.cpp).
std::vector<std::string> dense_stage_grid_notes(const ModelSpec& m, const Plan& plan);
// The blocks of each of a stage's V chunks: its chunk_layers, else num_layers / V each.
std::vector<int> chunk_blocks(const StagePlan& stage, int V);

// Send time of one micro-batch's activations between two placed stages (same for gradients back).
double p2p_send_s(const Scenario& sc, const Plan& plan, const StagePlacement& from, const StagePlacement& to);
// Gradient synchronisation of one placed stage.
double dp_sync_s(const Scenario& sc, const StagePlan& stage, const StagePlacement& placement, double grad_bytes_per_gpu);

double bytes_per_element(Precision p);

// A device's fp32 matrix rate without TF32 (fp32_tflops, or peak / 8 when the preset omits it).
double fp32_tflops_of(const Device& d);
// The memory bandwidth memory-bound kernels reach, in bytes/s.
double effective_memory_bw(const Device& d);
// Bytes of one gradient element in memory and on the wire (the stack's choice).
double grad_bytes_per_param(const Training& tr);
// Exposed time of a gradient synchronisation of `params` parameters reduced in Megatron-Core's
// buckets during a backward of `backward_s` (overlap_grad_reduce), contention included.
// This is the closed form of the previous model; the DAG now draws the chain (set_grad_buckets),
// whose longest path equals it when the backward is not communication-bound (docs/model.md).
double overlapped_bucket_sync_s(double sync_s, double backward_s, double params, double slowdown);
// Megatron-Core's buckets for `params` parameters per GPU and `dp` data-parallel replicas: its
// default bucket size max(40 M, 1 M x dp) parameters (--ddp-bucket-size).
int grad_bucket_count(double params, int dp = 1);
// Fills t's grad_bucket_* fields, last_backward_extra_s and dp_sync_s for a synchronisation of
// sync_s reduced in buckets during a last backward whose compute is backward_s, compute running
// at rate 1 - slowdown while a bucket runs beside it (docs/model.md, "Overlap").
void set_grad_buckets(StageTimes& t, double sync_s, double backward_s, double params, double slowdown, int dp = 1);
// Megatron-Core's deferred head weight gradient (docs/model.md, "Deferred head weight
// gradient"): whether every micro-batch's is deferred, and the flush of flush_s after the last
// backward (t.backward_s already without one micro-batch's), before the gradient buckets left.
bool defers_every_head_wgrad(const Training& tr, const Plan& plan);
void defer_head_wgrad(StageTimes& t, double flush_s);
// Fills t's param_gather_* fields and first_forward_extra_s for an all-gather of gather_s
// overlapping a first forward whose compute is forward_s (docs/model.md, "Overlap").
void set_param_gather(StageTimes& t, double gather_s, double forward_s, double params, double slowdown, int dp = 1);

// A stack whose sends block the sender (stack.p2p_blocking): each send's time moves into the
// sending F/B node and the send node becomes instantaneous, which is exact for the DAG (the link
// is always free when a blocking send starts). Every path only grows, so bounds computed on the
// unfolded times stay lower bounds. Applied by estimate and by the search before the DAG.
void fold_blocking_sends(const Stack& stack, std::vector<StageTimes>& times);

}  // namespace poseidon
