// The values a walk of the layout tree passes around (search_walk.hpp): a run of stages of one
// group option, a subtree handed to a walker, the TP sequences of a pass, a stage of the
// configuration being split, a layout node's child, a deferred configuration, and the prefix
// summaries of the 1F1B and interleaved layer splits. Internal to core/src.
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

// A child of a layout node (Walker::kids): extend with a block of an unused group, or stop here
// (opt = -1).
struct Child {
    double bound;  // over the schedules searched (cuts)
    int g, opt;
    // visiting order, of the walk and of the broad dive: the 1F1B bound when 1F1B is searched
    // (interleaved bounds are weaker: ordered by them, the walk goes deep before any plan,
    // and the dive of 3 x 1024 x 128 of the MoE sweep found a configuration whose 116,000
    // exact ties the walk then had to cost, 15 s against 4.6 s); it takes the suffix at its
    // per-group summaries, not at the exact suffix rates that cut (an order from the tighter
    // bounds found the 4 x 4096 x 128 optimum at 2.0 s instead of 0.9 s)
    double key;
};

// A configuration whose split outgrew its budget, kept to be split again whole (search_deferred.cpp).
struct Deferred {
    std::vector<BlockSel> blocks;
    std::vector<std::vector<long long>> scap;
    int S = 0;
    bool one_cut = false;
    MbsCtx* ctx = nullptr;  // its micro-batch size (split again after the whole walk on one thread)
};

// Prefix summaries of the split search (docs/search.md, "Bounds"): for the stages fixed so far,
// pa/pb = path lengths into the next stage (families A and B), ma/mb = the best complete
// family-A/B paths through a fixed stage, csum = sum of their F+B, q = the most a fixed stage
// adds to family C beyond its own F+B, qe the same for family E.
// For families R and G: f, b of the last fixed stage.
struct SplitState {
    double pa = 0, ma = 0, pb = 0, mb = 0, csum = 0, q = -kInf, qe = -kInf, dp0 = 0, optmax = 0;
    double f = 0, b = 0;
    // family G: drain = from the last fixed stage's last backward to the end of every fixed
    // stage's gradient sync (at least the backwards and sends down to stage 0, then dp0:
    // what families R and W added before); mg = the longest complete path so far
    double drain = 0, mg = 0;
    double dturns = -kInf;  // family D: the longest turns (less D_a's prefix) of the windows so far
};

// The prefix of an interleaved split (stages 0..k-1 fixed): pa, the path into stage k (chunk 0
// of each fixed stage and the sends); ma, the longest family-A path through a fixed stage to
// stage 0's last pass; dp0, what follows that pass (ilv_sync: exact once stage 0 is fixed,
// before at its least); omax, the slowest optimizer step known (the fixed stages' own, at
// least iopt_).
struct IlvPrefix {
    double pa = 0, ma = 0, dp0 = 0, omax = 0;
    // family G (search_interleaved.cpp, ilv_child): pf = chunk 0's forwards and sends into the
    // next stage; bprev = the last fixed stage's chunk-0 backward; drain and mg as in SplitState
    double pf = 0, bprev = 0, drain = 0, mg = 0;
    double tail() const { return dp0 + omax; }
};

}  // namespace poseidon::detail
