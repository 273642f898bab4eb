// Deferred configurations (docs/search.md, "Deferred configurations"): a configuration whose
// layer split takes more than options.config_first_nodes tree nodes is stopped and split again
// whole once the rest of the walk's task is done, under the threshold that the rest left.
#include "search_walk.hpp"

namespace poseidon::detail {

// A configuration whose split outgrows its budget is deferred, not abandoned: its split is walked
// again whole by split_deferred, so every configuration is searched whole once and the result is
// the same. Without it one long split (2 x 4096 x 128 of the MoE sweep: 24 stages, m = 16, millions
// of near-equal splits a few percent above the threshold) holds back the rest of the walk, where
// the configurations that lower the threshold lie.
void Walker::split_or_defer(MbsCtx& c, int S) {
    const std::int64_t budget = sh_.opt.config_first_nodes;
    if (exhaustive_ || dive_left_ >= 0 || budget <= 0) {
        run_config(c);
        return;
    }
    cfg_left_ = budget;
    run_config(c);
    const bool over = cfg_left_ < 0;
    cfg_left_ = -1;
    if (over && !sh_.stop.load(std::memory_order_relaxed)) {
        abort_ = false;
        deferred_.push_back({blocks_, scap_, S, one_cut_});
    }
}

// The configurations deferred below the task just walked, in the order they came, each whole
// (run_task clears blocks_ after it).
void Walker::split_deferred(MbsCtx& c) {
    if (deferred_.empty()) return;
    std::vector<Deferred> list;
    list.swap(deferred_);
    replay_ = true;
    for (Deferred& d : list) {
        if (halted()) break;
        blocks_ = std::move(d.blocks);
        scap_ = std::move(d.scap);
        one_cut_ = d.one_cut;
        caps_known_ = true;
        build_config(c, d.S);
        run_config(c);
    }
    replay_ = false;
    caps_known_ = false;
    one_cut_ = false;
}

}  // namespace poseidon::detail
