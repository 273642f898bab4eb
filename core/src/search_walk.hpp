// The branch and bound of docs/search.md ("The method"), below one micro-batch size:
//   group blocks (layout) -> TP per block -> layer count per stage (the ridge walk) -> DAG.
// A Walker holds the state of one depth-first walk; its methods live in one file per level:
//   search_layout.cpp         layouts and TP choices (the tree above a configuration)
//   search_layout_bounds.cpp  the bounds that cut layouts and TP choices
//   search_split.cpp          the layer split of one configuration: its bounds and the ridge walk
//   search_interleaved.cpp    the same split under interleaved 1F1B (search_interleaved_leaf.cpp ends it,
//                             search_interleaved_certs.cpp keeps the paths that cut splits before)
//   search_eval.cpp           a complete plan: memory fit, the DAG, the top-K list
//   search_deferred.cpp       configurations whose split is long, split again after the rest
// The driver (search_driver.cpp) builds the micro-batch-size contexts and runs the walks; what the
// walkers share is in search_shared.hpp; the values a walk passes around in search_walk_types.hpp.
// Internal to core/src.
#pragma once

#include <algorithm>
#include <cmath>
#include <array>
#include <chrono>
#include <atomic>
#include <cstdint>
#include <limits>
#include <memory>
#include <mutex>
#include <optional>
#include <utility>
#include <vector>

#include "poseidon/dag.hpp"
#include "poseidon/search.hpp"
#include "interleaved_certificate.hpp"
#include "search_interleaved_certs.hpp"
#include "search_bounds.hpp"
#include "search_costs.hpp"
#include "search_ridge.hpp"
#include "search_shared.hpp"
#include "search_space.hpp"
#include "search_topk.hpp"
#include "search_walk_types.hpp"

namespace poseidon::detail {

class Walker {
public:
    // `alone`: the only walker of the search, which may use each context's cost cache itself;
    // otherwise it works on a private copy of it.
    Walker(Shared& sh, bool exhaustive, bool alone);

    SearchStats stats;  // this walker's counts (the driver adds them up)
    TpMode tp_mode = TpMode::per_group;  // the TP sequences of this pass
    bool first_pass = true;

    // The layout tree of one micro-batch size from its root (a dive when dive_ticks >= 0: the
    // same walk, abandoned after that many tree nodes).
    // `greedy`: each layer-split level stops at its first value whose subtree reaches a plan.
    void walk(MbsCtx& c, std::int64_t dive_ticks = -1, bool greedy = false);
    // Without cuts while set: expand() lists every child (the units of a search slice must not
    // depend on the threshold).
    bool no_cut = false;
    // The children of a layout node, best bound first, as tasks (the root: an empty prefix).
    void expand(MbsCtx& c, const Task& node, std::vector<Task>& out);
    void run_task(const Task& t, std::int64_t dive_ticks = -1, bool greedy = false);
    // The layer split of the configuration of `plan` only (ridge_report).
    void run_single(MbsCtx& c, const Plan& plan, std::vector<std::vector<int>>* visited);
    // The same for at most `ticks` tree nodes, as a dive (docs/search.md, "Dive").
    void dive_config_of(MbsCtx& c, const Plan& plan, std::int64_t ticks);
    // The deferred configurations (search_deferred.cpp), each whole, in its own context: at the
    // end of each task, or, with defer_to_end set (one thread), once after the whole walk.
    void split_deferred();
    bool defer_to_end = false;
    // Drops the private copies of the contexts' cost caches (their probes go to stats).
    void leave();
    // Publishes the counts for progress reports.
    void flush();

private:
    Shared& sh_;
    const Scenario& sc_;
    int L_, G_;
    // Fewest layers a 1F1B stage holds: 0 with options.empty_stages; a middle stage, which then
    // holds no parameters, 1 where the stack cannot build such a stage (stage_needs_parameters).
    // The bounds take lmin_ for every stage (a relaxation where a middle stage needs one).
    int lmin_ = 1, lmin_mid_ = 1;
    // The first stage holds at least the model's leading dense blocks (docs/search.md, "The
    // space"), so that every stage's blocks follow from its position (the cost cache's probes).
    int lead_ = 0;
    int lmin_at(int j, int S) const { return j == 0 ? std::max(lmin_, lead_) : j == S - 1 ? lmin_ : lmin_mid_; }
    std::vector<int> suf_lmin_;  // per stage j of cfg_: the least layers stages j.. hold
    NodeHalves halves_;  // the two halves of a node (options.split_nodes) are placed one after the other
    std::uint64_t all_groups_;  // every group's bit: a layout of them all can only stop
    bool exhaustive_, alone_;
    bool abort_ = false;           // ends a dive (not the search)
    bool greedy_ = false;          // a greedy dive (walk)
    std::int64_t dive_left_ = -1;  // node budget of the current dive; -1 outside dives
    std::int64_t ticks_ = 0;
    std::int64_t flushed_evaluated_ = 0, flushed_pruned_ = 0;
    Costs* costs_ = nullptr;             // the cost cache in use
    // private copies of contexts' cost caches, by context id: kept from the dive to the full walk
    std::unordered_map<std::int64_t, std::unique_ptr<Costs>> own_;
    SuffixCache suffix_;                 // suffix_cap's cache, for context suffix_id_
    std::int64_t suffix_id_ = -1;

    void bind(const MbsCtx& c);  // the caches kept per context
    void enter(MbsCtx& c);       // bind, and the cost cache to use
    double scale_ = 1;  // the context's scale (bounds / scale compare with the top-K keys)
    // Shared::cut's comparison in the context's units, threshold x scale_ / (1 - kBoundSlack), so
    // that a bound costs a comparison, not a division and a shared load (the split walk asks
    // several per child). Taken again where the threshold or the scale may have changed: bind,
    // insert, check (every 256 nodes: the other walkers' plans). Within a walk the threshold only
    // falls, so a value not yet taken again cuts less, never more.
    double cut_at_ = kInf;
    void rethreshold() { cut_at_ = sh_.threshold() * scale_ / (1 - kBoundSlack); }
    bool cut(double bound) const { return !exhaustive_ && !no_cut && bound >= cut_at_; }
    // The cutoff of a complete plan's DAG walk, one ulp above the threshold: a plan that ties the
    // K-th gets its exact time and enters by the tie-break (search_topk.hpp); a stopped walk
    // returns the cutoff, which is above the threshold and does not enter.
    double eval_cutoff() const { return std::nextafter(sh_.threshold() * scale_, kInf); }
    void check() {
        flush();
        sh_.check_clock();
        rethreshold();
    }
    void tick() {
        if ((++ticks_ & 255) == 0) {
            sh_.count_ticks(256);
            check();
        }
        if (dive_left_ >= 0 && --dive_left_ < 0) abort_ = true;
        if (cfg_left_ >= 0 && --cfg_left_ < 0) abort_ = true;
    }
    bool halted() const { return abort_ || sh_.stop.load(std::memory_order_relaxed); }

    // layout and TP (search_layout.cpp)
    std::vector<BlockSel> blocks_;
    std::vector<std::vector<long long>> scap_;  // [stage][tp index]: layers it can hold (layout_caps)
    bool caps_known_ = false;                   // scap_ describes blocks_ (inside tp_dfs)
    std::vector<std::uint8_t> misfit_;
    std::vector<ProbeStage> probe_stages_;
    // bound scratch (search_layout_bounds.cpp, search_split.cpp)
    std::vector<const double*> tabs_;
    std::vector<std::pair<double, std::size_t>> heap_;
    std::vector<int> caps_;
    std::vector<JcStage> jc_;
    std::vector<std::pair<double, int>> blk_;
    std::vector<std::size_t> blk_idx_;
    // the configuration being split (search_split.cpp)
    MbsCtx* ctx_ = nullptr;
    std::vector<CfgStage> cfg_;
    // per stage: its memory cap, and the cap from the threshold (threshold_caps, at most that); suffix sums
    std::vector<int> cap_, tcap_;
    std::vector<long long> suf_cap_, tsuf_cap_;
    // The whole-layer suffix tables below, row k at k * tw_: tw_ = L + 1, or 0 where a
    // configuration goes without them (suffix_table_entries_max) and each is one row of zeros.
    std::size_t tw_ = 0;
    std::vector<double> fill0_;  // fill_tab_'s row 0 (fill_row0), built before the rest
    std::vector<const double*> etabs_;  // every stage's row of e_tab_
    std::vector<double> fill_tab_;  // [k * tw_ + R]: at most the F+B of stages k.. holding R layers (fill_suffixes)
    // [k * tw_ + R]: least bottleneck F+B of stages k.. holding R layers (integer_bottleneck_suffixes; 0: unknown)
    std::vector<double> ib_suf_, ib_merged_, ib_scratch_;
    // [k * tw_ + R]: least max_i e_i l_i of stages k.. holding R whole layers (family C's
    // steady-state term in integers), and the tables e_i l it merges
    std::vector<double> ibe_suf_, e_tab_;
    // [k * tw_ + R] for k <= ej_: the least weighted F+B of stages k.. holding R layers, stage ej_
    // (the first with w <= m - 2; 0: no table) weighing m - w_ej, the later ones 2 (echain_rows)
    std::vector<double> efill_tab_, ewt_;
    int ej_ = 0;
    std::vector<const double*> fill_tabs_;  // fill_tables' inputs and scratch
    std::vector<double> fill_inc_;
    bool caps_exact_ = false;
    // a stage of cfg_ whose links differ from the tables' probes (Costs::placed_as_probed): the
    // leaf then scores the configuration with a probe of its real placement
    bool placed_off_ = false;
    std::vector<const FitMemo*> memo_p_;  // per stage of cfg_: its fit memo and times table
    std::vector<const Table*> table_p_;  // null for first/last/only stages
    std::vector<double> sf_, sb_, va_, vb_, suf_opt_, suf_w_, suf_amin_, suf_inv_e_;
    // per stage: the extra forward and backward of its position (Costs::pos_extra), and the
    // first and last stages' F+B tables with it (middle_tables)
    std::vector<double> xf_, xb_;
    std::array<std::vector<double>, 2> end_tab_;
    std::vector<double> e_;  // per stage: family C's steady-state seconds per layer, max(0, m - w - 1) phi_f + (m - 1) phi_b
    std::vector<int> warm_;
    std::vector<double> sends_from_;  // sum over links j >= i of sf_j + sb_{j+1}
    // family W: SplitState::pa at each depth of the split walk (the prefix's F+B and sends)
    std::vector<double> pa_at_;
    static constexpr int kMaxWindow = 32;  // the longest window family W tries
    std::vector<std::int64_t> wturns_;  // [k * kMaxWindow + n - 1]: turns of the window of n stages ending at k
    std::vector<char> wturns_row_;      // whether row k of wturns_ is filled for this configuration
    // family W runs while it cuts one child in 64 of those the cheaper families pass: on the
    // three-type shapes of the MoE sweep it cut 1,511 of 6.9 million and none of 9.7 million
    // (docs/performance.md, "A grid's second walk under its own plans; bounds asked while they
    // cut")
    SeldomGate wgate_;
    // family D from later stages: per window of n stages ending at k, window_turns_d's counts for
    // D_a = m - 2 - w_a (a = k - n + 1), filled row by row as wturns_
    struct DTurns { std::int64_t D = 0, t1 = 0, r1 = 0, an = -1, bn = 0; };
    std::vector<DTurns> dturns_tab_;
    std::vector<char> dturns_row_;  // whether row k of dturns_tab_ is filled
    double sends_ = 0;
    // the tied-embedding all-reduce of the configuration's first and last stage, which the leaf
    // adds to their dp_sync_s (the cached stage times leave it out; the split's bounds add it to
    // those two stages' synchronisation)
    double emb_sync_ = 0;
    std::vector<int> layers_;
    // a complete plan (search_eval.cpp)
    std::vector<StageTimes> times_;
    DagWorkspace ws_;
    std::vector<std::vector<int>>* visited_ = nullptr;

    // ---- layouts and TP (search_layout.cpp) ----
    // The children of the node blocks_ (S stages, groups `used`), best bound first.
    void kids(MbsCtx& c, int S, std::uint64_t used, std::vector<Child>& out);
    std::vector<std::vector<Child>> kid_lists_;  // layout_dfs' lists of children, per depth
    void layout_dfs(MbsCtx& c, int S, std::uint64_t used);
    double stop_bound(const MbsCtx& c, double lb, std::uint64_t used, int S, double* one_out = nullptr);
    void stop_here(MbsCtx& c, int S, std::uint64_t used);
    void tp_dfs(MbsCtx& c, std::size_t bi, int S, std::uint64_t used);
    bool searched_before(const MbsCtx& c) const;
    bool layout_caps(MbsCtx& c, int S);
    long long scap_of(int j, int tpi) const;
    long long hostable_exact(std::size_t upto) const;
    void build_config(const MbsCtx& c, int S);
    // Configurations deferred (search_deferred.cpp; Deferred: search_walk_types.hpp)
    std::vector<Deferred> deferred_;
    std::int64_t cfg_left_ = -1;  // tree nodes left to the configuration being split; -1: no budget
    bool replay_ = false;         // splitting a deferred configuration again (counted once)
    void split_or_defer(MbsCtx& c, int S);
    bool replay_cut(MbsCtx& c, int S);  // a deferred configuration cut by tp_dfs's bounds at today's threshold

    // ---- bounds of layouts and TP choices (search_layout_bounds.cpp) ----
    const Rates& rates_of(const MbsCtx& c, const BlockSel& b) const;
    double layout_bound(const MbsCtx& c, std::uint64_t used, int open_stages, bool exact = true);
    double family_c_floor(const MbsCtx& c, int S) const;
    // (search_layout_groups.cpp) the LP steps of blocks_ after a suffix's rates, 1F1B and interleaved
    void prefix_steps(const MbsCtx& c, double& va, double& vb, double& opt_lb) const;
    double ilv_prefix_steps(const MbsCtx& c, double v, std::size_t vi, double& opt_lb) const;
    bool group_cut(const MbsCtx& c, int S, std::uint64_t used, int g, long long others);
    // The node's LP steps inverted at the threshold (search_layout_pretest.cpp): the largest rate
    // after a child's own step whose bound is cut, per schedule; a sufficient test before the bound.
    struct PrefixInverse {
        bool valid = false;
        double a_max = 0, b_max = 0, opt = 0, dp0 = 0;
        std::vector<double> ilv_max, v_max;  // per V index, filled when first asked (ilv_done, v_done)
        std::vector<char> ilv_done, v_done;
    } pinv_;
    void prefix_inverse(const MbsCtx& c);
    double prefix_inverse_at(const MbsCtx& c, std::size_t vi, bool chunk);
    bool child_pre_cut(const MbsCtx& c, const OptInfo& info, std::uint64_t with, int open, int S_child);
    double family_c_bound(const MbsCtx& c, int S);
    long long hostable(const MbsCtx& c, std::uint64_t used, bool open) const;
    double tp_bottleneck_bound(const MbsCtx& c, std::size_t upto);
    bool tp_bottleneck_cut(const MbsCtx& c, std::size_t upto);
    bool tp_one_cut(const MbsCtx& c, std::uint64_t used, int S, std::size_t upto, bool gated);  // tp_dfs's 1F1B bounds
    bool tp_ilv_cut(const MbsCtx& c, std::uint64_t used, int S);                                 // and its interleaved ones
    SeldomGate tpb_gate_;  // (tp_bottleneck_cut)

    // ---- the layer split (search_split.cpp) ----
    void run_config(MbsCtx& c);
    void count_config(MbsCtx& c);
    bool config_caps();
    bool fill_tables();
    void fill_rows();
    void fill_row0();
    void steady_rows();
    void echain_rows();
    bool threshold_caps();
    double integer_bottleneck();
    // tabs_/caps_: every stage's F+B table (the middle-position one, plus the first and last
    // stages' extra) and cap (at most L); false when one table decreases somewhere (the integer
    // bottlenecks need nondecreasing tables)
    bool middle_tables();
    double config_family_c();
    int cap_upper(int j);
    void split_dfs(int k, int R, const SplitState& st);
    void child(int k, int l, int R, const SplitState& st);
    double family_r(int k, const SplitState& st, double f, double b) const;
    // Family D's turns with windows 0..k and 0..k-1 (search_split_paths.cpp); -kInf: none
    double family_d_turns(int k, const SplitState& st, double f, double b) const;
    // ... and of the windows a..k from a later stage a, less the prefix paid once (D_a)
    double family_d_later_turns(int k, const SplitState& st, double f, double b);
    double family_w(int k, const SplitState& st, double f, double b, double later);

    // ---- a complete plan (search_eval.cpp) ----
    void leaf();
    Plan current_plan() const;  // cfg_ with layers_, schedule by vsched_
    void insert(double time);

    // the tie cut (search_tie.cpp): the K-th plan as last copied, and its list's version
    Found kth_ = [] {
        Found f;
        f.time = kInf;
        return f;
    }();
    std::uint64_t kth_version_ = 0;
    bool tie_cut(int k, double bound);
    bool prefix_ranks_after(const Plan& p, int k) const;

    // ---- interleaved 1F1B (search_interleaved.cpp) ----
    int vsched_ = 1;  // virtual stages of the split being searched (1: 1F1B)
    std::vector<double> iva_;   // LP coverage rate of each suffix, phi = a / V
    std::vector<int> ucap_;     // per stage: most chunks of V layers it holds (memory, then the threshold)
    std::vector<int> umem_;     // ... by memory alone, and its suffix sums (the reason of a dead end)
    std::vector<long long> umsuf_;
    // per suffix k.. holding R chunks ([k * iw_ + R]): the integer bottleneck of m V c_j(u)
    // (ia_suf_, family A) and of m V c_j(u) plus stage j's sync (ig_suf_, family G); their tables
    std::size_t iw_ = 0;
    std::vector<double> ia_suf_, ig_suf_, iha_, ihg_;
    std::vector<double> ipa_, ipf_;  // the way to each stage at its least passes (families A and G)
    // per suffix k.. holding R chunks ([k * iw_ + R]): family A's least over the suffix's splits,
    // the way through its stages at their own chunks (ilv_suffix_joint)
    std::vector<double> ij_suf_, ijs_sends_;
    bool isuf_ready_ = false;         // the tables above describe cfg_ at vsched_
    std::int64_t isuf_children_ = 0;  // children of the walk at this V so far
    static constexpr std::int64_t kIlvSuffixAfter = 64;  // ... before the tables are built
    void ilv_suffix_tables(int V, int U);  // search_interleaved_suffix.cpp
    void ilv_suffix_joint(int V, int U);   // search_interleaved_suffix.cpp
    void ilv_caps(int V, int U, double tail0);  // ucap_ from the threshold (search_interleaved_caps.cpp)
    std::vector<double> ifill_;
    std::vector<const double*> ibase_p_;
    // per stage: the fewest layers a costed split found it not to fit (its memory depends on its
    // own layers alone at a given V), or INT_MAX
    std::vector<int> inofit_;
    int ilv_dead_ = 0;  // the first stage whose layers are at least its inofit_ (S: none; -1: all)
    // the exact caps by memory once a walk has options.ilv_memory_after_nodes nodes
    // (search_interleaved_memory.cpp; ilo_, ihi_: its bisection's bounds)
    std::int64_t inodes_ = 0;
    std::vector<int> ilo_, ihi_;
    void ilv_memory_caps(int k);
    void ilv_cap_sums(int V);  // usuf_, umsuf_ and iva_ from the caps
    // the fewest chunks stage j holds (the first chunk of stage 0 holds the leading dense blocks)
    int ilv_least(int j) const { return j == 0 ? std::max(1, lead_) : 1; }
    std::vector<long long> usuf_;
    double iopt_ = 0;
    Plan iplan_;
    std::vector<StagePlacement> iplace_;  // iplan_'s GPUs (empty: not placed yet)
    PlacementLinks ilinks_;               // and their spans and sends (filled by the first split)
    std::vector<const Table*> itab_;  // per stage: its middle-stage table (chunk costs)
    bool one_cut_ = false;            // the 1F1B bounds cut the configuration (tp_dfs)
    // Lower bound on every interleaved plan below the layout node blocks_ (groups `used`; S_all:
    // its stage count when complete, else 0).
    double ilv_layout_bound(const MbsCtx& c, std::uint64_t used, int S_all, bool exact = true);
    // The bound of a layout node over the schedules searched, given its 1F1B bound `one`.
    double sched_bound(const MbsCtx& c, double one, std::uint64_t used, int S_all, bool exact = true) {
        if (c.vs.empty()) return c.sched_1f1b ? one : kInf;
        const double i = ilv_layout_bound(c, used, S_all, exact);
        return c.sched_1f1b ? std::min(one, i) : i;
    }
    // ilv_layout_bound at V = vs[vi] with the chunk rates (search_interleaved_rates.cpp)
    double ilv_layout_bound_v(const MbsCtx& c, std::uint64_t used, bool complete, std::size_t vi);
    double ilv_tp_bound(const MbsCtx& c, int S);
    // family C of the interleaved DAG lowering chunk caps (search_interleaved_caps.cpp)
    bool ilv_tp_family_c(const MbsCtx& c, int V, int U, double tail);
    bool family_c_caps(std::vector<int>& caps, int V, int U, std::int64_t m, double add);
    void chain_rows(double* f, int V, int U, int j, int count);
    int family_a_cap(const double* c, int cap, double into, double mV, double tail) const;
    std::vector<double> ic_rows_;              // forward, backward, V f + b by chunk count, per row owner
    std::vector<const double*> ic_f_, ic_b_;  // per stage: its forward and backward rows
    void ilv_run(MbsCtx& c);
    void ilv_dfs(int k, int R, const IlvPrefix& pre);
    void ilv_child(int k, int u, int R, const IlvPrefix& pre);
    const StageTimes& ilv_stage_times(int s, int l);
    double ilv_sync(int s, int l);
    double ilv_dp0_least() const;  // ilv_sync of stage 0 before its layers are fixed
    double ilv_dp0_block(const MbsCtx& c) const;  // the same below a layout node (blocks_)
    void ilv_leaf(double dp0, double omax);
    // Family C of the interleaved DAG for the split layers_ (a lower bound of its time), on the
    // chunk times and tail ilv_chunk_bounds puts in ifv_, ibv_ and ifc_tail_.
    void ilv_chunk_bounds();
    double ilv_family_c();
    std::vector<double> ifv_, ibv_, iback_;  // its chunk times and backward path sums
    // The interleaved DAG on family C's chunk times (a lower bound of the split's time), run
    // only as far as it stays below the cut.
    void ilv_lower_inputs();  // its chunk and stage times
    // its chunks: family C's passes (or every pass at 0) and the 1F1B plan's links, folded
    void ilv_lower_chunks(std::vector<StageTimes>& chunks, bool passes) const;
    double ilv_lower_dag();
    std::vector<StageTimes> ilb_chunks_, ilb_stages_;
    // it costs about the plan's own walk, so it runs while it cuts one split in three (ilv_lower_cut)
    SeldomGate ilb_gate_;
    SeldomGate ilv_fc_gate_;  // ilv_tp_bound's family C
    bool ilv_lower_cut();
    double ifc_tail_ = 0;  // ilv_family_c's stage-0 sync and slowest step
    double ifc_omax_ = 0;  // ... the slowest step alone
    Sweep ilb_sweep_;
    IlvCerts icerts_;  // the paths that stopped its last walks (search_interleaved_certs.hpp)
    std::uint64_t icfg_epoch_ = 1;  // counted per configuration and V by ilv_run
    double ilv_cert_sends(int i);
    void ilv_cert_replaced();
    IlvCerts::Sums& ilv_cert_sums(int i, int upto);
    double ilv_cert_extra(const IlvCerts::Sums& s, int d, int l) const;
    double ilv_cert_tail(const IlvCerts::Sums& s, double dp0, double omax) const { return (s.sync == 0 ? dp0 : 0.0) + omax; }
    bool ilv_cert_quick_cut(double dp0, double omax), ilv_certified_cut();
    bool ilv_cert_suffix_cut(int k, int R, double dp0, double omax), ilv_cert_suffix_cuts(int k, int R, double dp0, double omax, int from, int to);
};

}  // namespace poseidon::detail
