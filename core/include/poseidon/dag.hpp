// The explicit training-time model: one iteration of 1F1B as a DAG whose longest path is the
// iteration time. Nodes: F(s,j), B(s,j), activation and gradient sends, per-stage gradient
// synchronisation, a global gradient-norm barrier and per-stage optimizer steps. Edges: data
// dependencies, the per-stage 1F1B order, and the per-link order of sends. See docs/model.md.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "poseidon/cost_model.hpp"

namespace poseidon {

// grad_bucket: one bucket of the overlapped gradient reduction (training.overlap_grad_reduce),
// drawn in place of the stage's dp_sync; param_gather: one bucket of the overlapped parameter
// all-gather (training.overlap_param_gather). docs/formats.md, "Timeline".
// embedding_sync: the tied embeddings' all-reduce between the first and last stage, drawn in the
// timeline only (in the graph it is the tail of those two stages' dp_sync nodes).
enum class NodeKind : std::uint8_t { forward, backward, send_forward, send_backward, dp_sync, optimizer, grad_bucket, param_gather, embedding_sync };
const char* to_string(NodeKind k);
// The GPU stream a node occupies: "compute" (F, B, optimizer), "p2p" (sends), "dp" (gradient
// synchronisation and parameter all-gather buckets).
const char* resource_of(NodeKind k);

struct TimelineEvent {
    int stage = 0;
    NodeKind kind = NodeKind::forward;
    int micro_batch = -1;  // -1 for dp_sync, optimizer and buckets
    double start_s = 0;
    double end_s = 0;
    int chunk = 0;         // model chunk of the stage (interleaved 1F1B); 0 otherwise
    int bucket = -1;       // grad_bucket / param_gather: the bucket, 0 = first issued; -1 otherwise
};

// The grad_bucket events of a stage whose last backward node ends at backward_end_s (times with
// grad_buckets > 0): the chain of docs/model.md, "Overlap", node by node.
void append_grad_buckets(int stage, const StageTimes& t, double backward_end_s, std::vector<TimelineEvent>& out);
// The param_gather events of a stage whose first forward starts at forward_start_s (times with
// param_gather_buckets > 0): bucket 0 from the iteration's start, bucket k+1 from sub-step k's.
void append_param_gathers(int stage, const StageTimes& t, double forward_start_s, std::vector<TimelineEvent>& out);

// The iteration time seen from the bottleneck stage (the largest busy time m(f+b), lowest index on
// ties). compute: its F/B work, TP excluded; tp_comm: its TP collectives; while it waits, the chain
// of work it waits for: bubble (F/B of other stages: fill, drain, stalls), pp_comm (sends),
// dp_comm (gradient synchronisation), optimizer (the step). They sum to the iteration time.
struct Breakdown {
    double compute_s = 0;
    double bubble_s = 0;
    double tp_comm_s = 0;
    double pp_comm_s = 0;
    double dp_comm_s = 0;
    double optimizer_s = 0;
    double ep_comm_s = 0;  // the bottleneck stage's token dispatch and combine (MoE), out of what compute_s would hold
    int bottleneck_stage = 0;
};

struct DagResult {
    double iteration_time_s = 0;
    std::vector<TimelineEvent> timeline;  // filled only when requested
    Breakdown breakdown;                  // filled only when requested
};

// Reusable buffers so that the search evaluates without allocating in its hot loop.
struct DagWorkspace {
    std::vector<double> finish;
    std::vector<std::uint32_t> pending;
    std::vector<std::uint32_t> ready;
    std::vector<double> windows;             // dag_iteration_time_below's window cycles
    std::vector<std::int64_t> window_rounds;
};

// Longest path of the 1F1B DAG for `stages` (in pipeline order) and `m` micro-batches, O(S x m).
DagResult evaluate_dag(std::span<const StageTimes> stages, std::int64_t m, bool detailed, DagWorkspace& ws);
double dag_iteration_time(std::span<const StageTimes> stages, std::int64_t m, DagWorkspace& ws);
// The same, for the search: returns the exact time when it is below `cutoff`, and otherwise some
// value >= cutoff, stopping as soon as a partial schedule proves the time cannot be below it.
double dag_iteration_time_below(std::span<const StageTimes> stages, std::int64_t m, double cutoff, DagWorkspace& ws);

// The classic closed form sum_s(f+b) + (m-1) max_s(f+b), plus sends once and the slowest
// synchronisation + step (Narayanan et al. 2021; AMP, Metis). Exact only for equal stages. With
// the overlap chains the synchronisation term is the stage's slowdowns plus its exposed buckets.
// With V > 1 chunks per stage (interleaved 1F1B): sum_s(f+b)/V + (m - 1/V) max_s(f+b), which is
// (m + (p-1)/V)(f+b) for equal stages (Narayanan et al. 2021, sec. 2.2).
double closed_form_time_s(std::span<const StageTimes> stages, std::int64_t m, int V = 1);

// The 1F1B order of one stage: warm-up forwards, steady one-forward-one-backward, drain.
// Entries are micro-batch indices; forward as j, backward as -(j+1).
void one_f_one_b_order(int stage, int num_stages, std::int64_t m, std::vector<std::int64_t>& order);

// ---- Interleaved 1F1B (core/src/interleaved_order.cpp, core/src/dag_interleaved.cpp) ----

// One pass of a stage's interleaved order: chunk c of the stage (virtual stage c p + s).
struct ChunkPass {
    int chunk = 0;
    std::int64_t micro_batch = 0;
    bool forward = true;
    bool steady = false;  // a forward of the steady phase (a backward follows it), not a warm-up one
};

// Megatron's interleaved order of stage s of p with V chunks and m micro-batches (m a multiple of p),
// forward passes in groups of `group` micro-batches per chunk (microbatch_group_size_per_vp_stage;
// 0: p, Megatron's default); extra_warmup 1: one more warm-up forward (the combined 1F1B of
// training.overlap_moe_expert_parallel_comm).
void interleaved_order(int s, int p, int V, std::int64_t m, std::vector<ChunkPass>& order, int group = 0, int extra_warmup = 0);
// The most (chunk, micro-batch) passes stage s holds activations for at once (warm-up + 1).
std::int64_t interleaved_in_flight(int s, int p, int V, std::int64_t m, int group = 0, int extra_warmup = 0);
// The micro-batches of each chunk stage s holds at the moment its order holds the most activation
// bytes, a pass of chunk c holding pass_bytes[c] (chunks of unequal blocks; docs/model.md,
// "Interleaved 1F1B"). Equal pass_bytes give interleaved_in_flight passes in all.
std::vector<std::int64_t> interleaved_peak_passes(int s, int p, std::int64_t m, std::span<const double> pass_bytes, int group = 0, int extra_warmup = 0);

// `chunks`: the p V virtual stages in data order (chunk c of stage s at c p + s), their F/B times
// and sends to the next (send_forward_s) and previous (send_backward_s) virtual stage; `stages`:
// the p stages' dp_sync_s and optimizer_s. The same node durations and edge kinds as the 1F1B DAG.
// `group`: the order's micro-batch group (interleaved_order). Chunks with merged_pairs (the
// combined 1F1B of training.overlap_moe_expert_parallel_comm) run one more warm-up forward and
// each steady-state forward merged with the backward after it: one node that waits for both
// inputs and sends both outputs at its end (docs/model.md, "Expert-parallel overlap across
// micro-batches").
double interleaved_iteration_time(std::span<const StageTimes> chunks, std::span<const StageTimes> stages, int V, std::int64_t m, int group = 0);
// The same, for the search: the exact time when it is below `cutoff`, and otherwise some value
// >= cutoff, stopping once a stage's clock, the work of its passes left and what surely follows
// its last pass (chunk 0's backward on the stages below, stage 0's sync, the slowest step) reach it.
double interleaved_iteration_time_below(std::span<const StageTimes> chunks, std::span<const StageTimes> stages, int V, std::int64_t m,
                                        double cutoff, int group = 0);
DagResult evaluate_interleaved_dag(std::span<const StageTimes> chunks, std::span<const StageTimes> stages, int V, std::int64_t m, bool detailed,
                                   int group = 0);

}  // namespace poseidon
