// The tie cut (docs/search.md, "Results", ties): a subtree whose every plan lies in the K-th
// plan's tie bucket or above it, and whose fixed stages already rank it after the K-th plan by
// plan_less, holds no plan that can enter the top K. Exact ties are common where a pipeline's
// time is set by its first stages and the last ones only trade layers among themselves: on
// 3 x 1024 x 128 of the MoE sweep without recomputation some 116,000 splits of one 63-stage
// configuration cost exactly the K-th plan's 8.6327 s, and the walk's bound at each of them is
// that time to an ulp; each had to be costed by its DAG (a tie may rank first by plan_less)
// before the walk reached the optimum: 31 s. The bound cannot prove a tie loses on the time
// alone (it may lie an ulp above the DAG's sum: the slack), but it proves the plan lies in the
// bucket, and the stages fixed prove the tie-break.
#include "search_walk.hpp"

namespace poseidon::detail {

// Whether every completion of stages 0..k (layers_ set) ranks after the plan `p` by plan_less,
// decided by the micro-batch size, the stage count or a fixed stage; false where they may rank
// before it or the fixed stages do not decide.
bool Walker::prefix_ranks_after(const Plan& p, int k) const {
    const int S = static_cast<int>(cfg_.size());
    if (ctx_->mbs != p.micro_batch_size) return ctx_->mbs > p.micro_batch_size;
    if (static_cast<std::size_t>(S) != p.stages.size()) return static_cast<std::size_t>(S) > p.stages.size();
    for (int j = 0; j <= k; ++j) {
        const CfgStage& s = cfg_[j];
        const ReplicaSet& r = p.stages[static_cast<std::size_t>(j)].replicas[0];
        const int gpus = s.tp * (s.size / (s.tp * sc_.search_cp));  // set_search_stage's tp x dp
        const auto mine = std::make_tuple(s.g, s.tp, gpus, -layers_[j]);
        const auto theirs = std::make_tuple(r.group, r.tp, r.tp * r.count, -p.stages[static_cast<std::size_t>(j)].num_layers);
        if (mine != theirs) return mine > theirs;
    }
    return false;
}

bool Walker::tie_cut(int k, double bound) {
    if (exhaustive_ || no_cut || !sh_.group_map.empty()) return false;
    // below the bucket of the list's threshold (the K-th plan's bucket's end): nothing to decide,
    // and no copy of the K-th plan (most nodes of most walks)
    const double key = bound / scale_ * (1 - kBoundSlack);
    if (key < tie_first(sh_.top.threshold())) return false;
    // (a changed list: the K-th plan copied once per change, a plan of the plateau's size each)
    sh_.top.kth_if_changed(kth_version_, kth_);
    // (this walk's own K-th plan: the K plans before it rank before every plan it cuts, whatever
    // the slices or variants searched beside it add to the list merged from theirs; a stale copy
    // ranks after the current K-th, so what it cuts the current one cuts too)
    if (!(kth_.time < kInf)) return false;
    if (key < tie_first(kth_.time)) return false;
    return prefix_ranks_after(kth_.plan, k);
}

}  // namespace poseidon::detail
