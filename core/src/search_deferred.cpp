// Deferred configurations (docs/search.md, "Deferred configurations"): a configuration whose
// layer split takes more than options.config_first_nodes tree nodes is stopped and split again
// whole once the whole walk (one thread) or the walk's task (several) is done, under the
// threshold that the rest left.
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
        deferred_.push_back({blocks_, scap_, S, one_cut_, &c});
    }
}

// The configurations deferred, in the order they came, each whole in its own context (run_task
// clears blocks_ after it). On one thread this runs once, after the whole walk of every
// micro-batch size (Driver::walk_all): a configuration deferred in the size walked first was
// split again before the next size was walked, under the threshold of the first size alone
// (3 x 4096 x 128 of the MoE sweep, full recomputation: one of 32 stages at m = 32, deferred at
// 4.76 s, took 8 s to split again, where the optimum, 4.46 s at m = 16, lay in the next size).
void Walker::split_deferred() {
    if (deferred_.empty()) return;
    std::vector<Deferred> list;
    list.swap(deferred_);
    replay_ = true;
    for (Deferred& d : list) {
        if (halted()) break;
        MbsCtx& c = *d.ctx;
        enter(c);
        blocks_ = std::move(d.blocks);
        scap_ = std::move(d.scap);
        one_cut_ = d.one_cut;
        caps_known_ = true;
        // The bounds tp_dfs took at this configuration, again under today's threshold: one
        // deferred under a looser one may now be cut whole before its split.
        if (replay_cut(c, d.S)) {
            ++stats.pruned;
            continue;
        }
        build_config(c, d.S);
        run_config(c);
    }
    replay_ = false;
    blocks_.clear();
    caps_known_ = false;
    one_cut_ = false;
}

// Whether the bounds that tp_dfs applies at a configuration (its leaf) cut it now: the 1F1B ones
// (layout, family C, the integer bottleneck of its TP choices) and, where the interleaved schedule
// is searched, the interleaved ones; a cut of the 1F1B ones alone clears that schedule from the
// split (one_cut_), as in tp_dfs. The same bounds at a lower threshold: what they cut holds no
// plan below it.
bool Walker::replay_cut(MbsCtx& c, int S) {
    std::uint64_t used = 0;
    for (const BlockSel& b : blocks_) used |= std::uint64_t{1} << b.g;
    const bool one = one_cut_ || !c.sched_1f1b || tp_one_cut(c, used, S, blocks_.size() - 1, false);
    if (c.vs.empty()) return one;
    one_cut_ = one;
    return one && tp_ilv_cut(c, used, S);
}

}  // namespace poseidon::detail
