// The values a walk of the layout tree passes around (search_walk.hpp): a run of stages of one
// group option, a subtree handed to a walker, the TP sequences of a pass, a stage of the
// configuration being split. Internal to core/src.
#pragma once

#include <cstdint>
#include <utility>
#include <vector>

#include "search_costs.hpp"
#include "search_space.hpp"

namespace poseidon::detail {

// A run of stages of one group option: the option's stages first .. first + count - 1, all with
// TP index tpi (-1: not chosen yet). A group option's stages start as one run; choosing TP per
// stage splits it into maximal runs of one degree each (docs/search.md, "The space"), so the
// remainder of a split may not start with the degree of the run before it (prev_tp; 0: none).
struct BlockSel {
    int g = 0, opt = 0, tpi = -1;
    int first = 0, count = 0;
    int prev_tp = 0;
};

// A node of the layout tree handed to a walker of a parallel search: the subtree below the blocks
// `prefix` (S stages, groups `used`), or, when `stop_here`, the configurations of exactly them.
struct Task {
    std::vector<BlockSel> prefix;
    int S = 0;
    std::uint64_t used = 0;
    double bound = 0;
    double order = 0;  // the broad dive's order (Child::key)
    bool stop_here = false;
    MbsCtx* ctx = nullptr;
};

// Which TP sequences a pass of the search visits: one degree per group option, sequences whose
// degree never rises along a group option's stages, or all of them.
enum class TpMode { per_group, non_increasing, any };

// A stage of the configuration whose layer split is searched.
struct CfgStage {
    int g = 0, size = 1, tp = 1, offset = 0, inflight = 1;
    Pos pos = kMiddle;
    const Table* table = nullptr;  // Costs::middle(g, size, tp) (TpChoice::table)
    Rates r;
};

// Upper bound on the LP coverage rate v of a suffix made of at most `n` stages of the groups not
// in `used` (search_layout_bounds.cpp); cached in `cache`. `exact`: also within the suffix rates
// per set of groups (MbsCtx::suf_a), else only the per-group summaries.
std::pair<double, double> suffix_cap(const MbsCtx& c, SuffixCache& cache, std::uint64_t used, int n, bool exact = true);

}  // namespace poseidon::detail
