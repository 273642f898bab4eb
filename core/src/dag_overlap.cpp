// The overlap chains drawn on the timeline (docs/model.md, "Overlap"): the gradient buckets after
// the sub-steps of a stage's last backward, the parameter all-gather buckets before the sub-steps of
// its first forward, node by node from the numbers the DAG's one node per chain was given.
#include <algorithm>

#include "poseidon/dag.hpp"

namespace poseidon {

void append_grad_buckets(int stage, const StageTimes& t, double backward_end_s, std::vector<TimelineEvent>& out) {
    const int K = t.grad_buckets;
    // The compute sub-steps end with the node (a blocking stack's folded send is put before them,
    // which can only delay the chain: docs/model.md, "Overlap").
    const double anchor = backward_end_s - (t.grad_bucket_ready_s + (K - 1) * t.grad_bucket_step_s);
    double prev_end = 0;
    for (int k = 0; k < K; ++k) {
        const double ready = anchor + t.grad_bucket_ready_s + k * t.grad_bucket_step_s;
        const double start = k > 0 ? std::max(ready, prev_end) : ready;
        prev_end = start + t.grad_bucket_s;
        TimelineEvent e{stage, NodeKind::grad_bucket, -1, start, prev_end, 0, k};
        out.push_back(e);
    }
}

void append_param_gathers(int stage, const StageTimes& t, double forward_start_s, std::vector<TimelineEvent>& out) {
    const double g = t.param_gather_bucket_s;
    out.push_back({stage, NodeKind::param_gather, -1, 0.0, g, 0, 0});
    for (int k = 1; k < t.param_gather_buckets; ++k) {
        const double start = forward_start_s + (k - 1) * t.param_gather_step_s;
        out.push_back({stage, NodeKind::param_gather, -1, start, start + g, 0, k});
    }
}

}  // namespace poseidon
