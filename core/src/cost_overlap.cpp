// Overlapped data-parallel communication as chains (docs/model.md, "Overlap"): Megatron-Core's
// buckets, the gradient reduce-scatter/all-reduce after the sub-steps of a stage's last backward,
// the parameter all-gather before the sub-steps of its first forward, with the contention of
// compute beside them; and the closed form the gradient chain replaced.
#include <algorithm>
#include <cmath>

#include "poseidon/cost_model.hpp"

namespace poseidon {

namespace {

// Megatron-Core's gradient bucket (--ddp-bucket-size default, 40 M parameters): the unit the
// overlapped reduction launches as soon as the backward has produced it.
constexpr double grad_bucket_params = 40e6;
// ... grown with data parallelism: max(40 M, 1 M x dp) (distributed_data_parallel.py).
constexpr double grad_bucket_params_per_replica = 1e6;

}  // namespace

int grad_bucket_count(double params, int dp) {
    const double bucket = std::max(grad_bucket_params, grad_bucket_params_per_replica * dp);
    return static_cast<int>(std::max(1.0, std::ceil(params / bucket)));
}

double overlapped_bucket_sync_s(double sync_s, double backward_s, double params, double slowdown) {
    if (sync_s <= 0) return 0;
    const double K = grad_bucket_count(params);
    // K equal buckets, bucket k ready (k + 1)/K into the backward, reduced one after another on
    // the communication stream: the last one ends max(sync/K, sync - (K-1)/K backward) after the
    // backward; the part hidden behind it slows the compute it shares the GPU with.
    const double exposed = std::max(sync_s / K, sync_s - (K - 1) / K * backward_s);
    return exposed + slowdown * (sync_s - exposed);
}

void set_grad_buckets(StageTimes& t, double sync_s, double backward_s, double params, double slowdown, int dp) {
    t.dp_sync_s = sync_s;
    if (sync_s <= 0) return;
    const int K = grad_bucket_count(params, dp);
    const double g = sync_s / K, r = backward_s / K, kappa = slowdown;
    // Sub-step k >= 1 runs beside bucket k-1 (docs/model.md, "Overlap"): compute progresses at
    // rate 1 - kappa while a bucket runs. When the backward is not communication-bound
    // (d (1 - kappa) <= b) bucket k-1 starts with sub-step k and ends inside it, which loses
    // kappa g; otherwise the buckets run back to back and every sub-step lies wholly beside one,
    // lasting r / (1 - kappa) (kappa < 1 there, since d (1 - kappa) > b >= 0).
    const double x = sync_s * (1 - kappa) <= backward_s ? r + kappa * g : r / (1 - kappa);
    t.grad_buckets = K;
    t.grad_bucket_s = g;
    t.grad_bucket_ready_s = r;
    t.grad_bucket_step_s = K > 1 ? x : 0.0;
    t.last_backward_extra_s = K > 1 ? (K - 1) * (x - r) : 0.0;
    // The chain's end, B0 + r + max_j (j x + (K - j) g): linear in j, so the larger of j = 0
    // (r + d) and j = K-1 (r + (K-1) x + g); minus the node's end B0 + r + (K-1) x.
    t.dp_sync_s = K > 1 ? std::max(sync_s - (K - 1) * x, g) : sync_s;
}

bool defers_every_head_wgrad(const Training& tr, const Plan& plan) {
    // Megatron-Core refuses the deferral without a pipeline (model_parallel_config.py); with a
    // limit below the micro-batches the first `limit` backwards alone would be shorter, which the
    // DAG's equal passes do not express: those keep the GEMM in each backward (a note says so).
    // Under interleaving the head's chunk defers (evaluate_chunks, interleaved_sweep.hpp).
    return tr.defer_embedding_wgrad_compute && plan.stages.size() > 1 &&
           (tr.wgrad_deferral_limit == 0 || tr.wgrad_deferral_limit >= plan.num_micro_batches);
}

void defer_head_wgrad(StageTimes& t, double flush_s) {
    t.deferred_wgrad_s = flush_s;
    t.last_backward_extra_s += flush_s;
    // The head's weights wait for the flush, so their bucket reduces after it; the other buckets
    // ran during the last backward and the flush (their chain ends no later than before): what
    // is left after the flush is the larger of the old overhang less the flush and that bucket.
    if (t.grad_buckets > 1) t.dp_sync_s = std::max(t.dp_sync_s - flush_s, t.grad_bucket_s);
}

void set_param_gather(StageTimes& t, double gather_s, double forward_s, double params, double slowdown, int dp) {
    if (gather_s <= 0) return;
    const int K = grad_bucket_count(params, dp);
    const double g = gather_s / K, r = forward_s / K;
    // Sub-step k < K-1 runs beside the all-gather of bucket k+1, which it dispatched as it began
    // (Megatron-Core's finish_param_sync starts the next bucket's): at rate 1 - kappa for g it
    // lasts r + kappa g when that is at least g; otherwise it ends before the bucket and sub-step
    // k+1 waits for it. Either way the next sub-step starts max(g, r + kappa g) later.
    const double P = std::max(g, r + slowdown * g);
    t.param_gather_buckets = K;
    t.param_gather_bucket_s = g;
    t.param_gather_step_s = P;
    t.first_forward_extra_s = (K - 1) * (P - r);
}

}  // namespace poseidon
