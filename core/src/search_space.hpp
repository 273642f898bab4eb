// The space of the plan search (docs/search.md, "The space"), steps 1-4, at one micro-batch size:
// which node counts, stage sizes and TP degrees each group offers, with the per-option rates,
// memory caps and orderings that the walk and its bounds use. Internal to core/src.
#pragma once

#include <algorithm>
#include <array>
#include <atomic>
#include <cmath>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <unordered_map>
#include <vector>

#include "poseidon/search.hpp"
#include "search_costs.hpp"

namespace poseidon::detail {

// One way to use a group: `nodes` whole nodes split into `count` stages of `size` GPUs.
struct GroupOpt {
    int nodes = 0, size = 0, count = 0;
};

struct TpChoice {
    int tp = 1;
    Rates r;
    int cap = 0;                      // most layers one stage of this kind can hold anywhere in a pipeline
    // its middle-stage table (Costs::middle: kept by the context's cost cache, which copies read;
    // a lookup in the cache's map per stage and bound was 2.4 % of 4 x 64 x 24's instructions)
    const Table* table = nullptr;
    double decay_a = 0, decay_b = 0;  // (1 - phi/mu)^count of the LP steps of a whole block
    // per MbsCtx::vs[vi]: the least F+B per layer of a chunk this stage can hold (1 <= u <=
    // min(L, cap) / V; infinite when it holds none), the interleaved bounds' rate (set_chunk_rates)
    std::vector<double> a_v{};
};

struct OptInfo {
    GroupOpt o;
    std::vector<TpChoice> tps;  // valid at this micro-batch size, by rate
    Rates best;                 // componentwise minimum over tps
    double vs_a = 0, vs_b = 0;  // 1 / best.a, 1 / best.phi_f: fixed points of the LP steps (lp_steps_to)
    int cap = 0;                // max over tps of TpChoice::cap
    double decay_a = 0, decay_b = 0;
    // per layer count, the least middle F+B over tps (shared by the options of one stage size)
    std::shared_ptr<const std::vector<double>> cmin;
    bool cmin_monotone = false;
    // per layer count, the least middle forward and the least backward over tps, each apart (the
    // interleaved family C of a layout whose TP is open: ilv_tp_family_c)
    std::shared_ptr<const std::vector<double>> fmin, bmin;
    std::vector<double> a_v;  // per vs[vi]: the least TpChoice::a_v over tps
};

// Optimistic summary of the groups not in a mask (suffix_cap), cached per walker.
struct SuffixInfo {
    double sa = 0, sb = 0, amin = 0, mub_min = 0, log_keep_b = 0;
    bool any = false;
};
using SuffixCache = std::unordered_map<std::uint64_t, SuffixInfo>;

// Everything the search keeps for one micro-batch size: its cost cache and the group options.
// Read-only once built, except `costs` in a one-thread search and `dive_configs` during the dives
// (under dive_m: the broad dive runs several walkers below one size).
struct MbsCtx {
    std::int64_t id = 0;  // unique within a search (walkers key their caches by it)
    std::int64_t mbs = 0, m = 0;
    double scale = 1;  // mbs m / global_batch_size (training.global_batch_tolerance)
    int smax = 0;
    std::unique_ptr<Costs> costs;
    std::vector<std::vector<OptInfo>> opts;  // [group]
    std::vector<double> rho_a, rho_b;        // per group: the most LP rate its options offer
    // With at most kSuffixDpGroups groups: per set U of groups (a bit mask), the most LP coverage
    // rate (families A and B) any suffix of blocks of U can reach, each group once in any order
    // (suffix_rates); empty otherwise. suf_ilv[vi][U]: the same under the interleaved LP with
    // V = vs[vi] (set_schedules).
    std::vector<double> suf_a, suf_b;
    std::vector<std::vector<double>> suf_ilv;
    // The same per V with every option at its chunk rate a_v (set_chunk_rates): suf_ilv_v[vi][U];
    // rho_a_v[vi][g], a group's most no-bubble rate count / (m a_v) over its options.
    std::vector<std::vector<double>> suf_ilv_v, rho_a_v;
    std::vector<SuffixInfo> suf_info;  // per set of unused groups: suffix_info (the same bound)
    std::vector<long long> host;             // per group: the most layers its options can hold
    std::vector<int> group_order;
    double root_bound = 0;
    double root_order = 0;  // the order of the sizes: the 1F1B root bound when 1F1B is searched
    // The best ranking key of a plan found at this size so far (the dives'; infinite: none): the
    // full walk visits the sizes in its order first.
    std::atomic<double> best_key{std::numeric_limits<double>::infinity()};
    std::vector<double> keep_a;  // (1 - 1/m)^n
    // Schedules at this size (search_interleaved.cpp): whether 1F1B plans are searched, and the
    // virtual-stage counts V >= 2 of interleaved plans (ascending; empty: none).
    bool sched_1f1b = true;
    std::vector<int> vs;
    // Per vs[i]: (1 - 1/(m V))^n for n = 0 .. smax, the interleaved LP's decay over n stages
    // (set_schedules; smax >= 1, so t[1] is the base itself).
    std::vector<std::vector<double>> keep_v;
    // Per stage count S = 0 .. smax: the least divisor of m in [max(S, 2), smax], the fewest stages
    // an interleaved completion of a layout of S stages can have (0: none).
    std::vector<int> ilv_least_stages;
    std::vector<int> ilv_vi_open;  // per S: the index in vs of the V a partial layout's bound takes (-1: none)
    double keep_pow(std::size_t vi, int n) const {
        const std::vector<double>& t = keep_v[vi];
        return n < static_cast<int>(t.size()) ? t[n] : std::pow(t[1], n);
    }
    // The configurations the dive searched (so that `configurations` counts each once).
    std::set<std::vector<int>> dive_configs;
    std::mutex dive_m;

    // Bytes beyond the cost cache's own (which it counts), kept in *account while alive.
    std::atomic<std::int64_t>* account = nullptr;
    std::int64_t bytes = 0;
    void add_bytes(std::int64_t b) {
        bytes += b;
        if (account) account->fetch_add(b, std::memory_order_relaxed);
    }
    MbsCtx() = default;
    MbsCtx(const MbsCtx&) = delete;
    MbsCtx& operator=(const MbsCtx&) = delete;
    ~MbsCtx() {
        if (account) account->fetch_sub(bytes, std::memory_order_relaxed);
    }
};

// Node counts a group may use: all of them, then halving down to one node, and every power of two
// below them; `all`
// (options.node_counts "all"): every count from all of them down to one.
std::vector<int> node_choices(int nodes, bool all = false);
// TP degrees the model allows (heads, KV heads, FFN, and the sequence with sequence parallelism).
bool tp_valid(const Scenario& sc, int tp);
// Whether a group's GPUs can take the grid's context-parallel size: Transformer Engine runs context
// parallelism on its fused (flash / cuDNN) attention only, which devices with flash_attention false
// lack (validate_plan refuses such a stage; the search, its exhaustive mode and the space count skip it).
inline bool group_runs_cp(const Scenario& sc, const Group& g) { return sc.search_cp <= 1 || g.device.flash_attention; }
// Per group, the TP degrees that divide its GPUs per node and that the model allows; the others
// are counted as "tp divisibility".
std::vector<std::vector<int>> group_tps(const Scenario& sc, SearchStats& stats);

// The options of every group at micro-batch size `mbs`, their rates and caps (this fills the
// middle-stage cost tables), and the root bound; null when nothing is feasible at this size, or
// when `halted()` turns true while it builds. Rejections are counted in `stats`; the cost cache
// counts its bytes in `*account`. `empty_stages`: stages may hold no layer (options.empty_stages).
std::unique_ptr<MbsCtx> build_ctx(const Scenario& sc, std::int64_t mbs, std::int64_t m, bool all_nodes, const std::vector<std::vector<int>>& tps, SearchStats& stats,
                                  std::atomic<std::int64_t>* account, const std::function<bool()>& halted, bool empty_stages = false);

// The schedules searched at c's size (options.schedule, the layer count's divisors up to
// search_max_virtual_stages); lowers c.root_bound to the interleaved plans' bound.
void set_schedules(MbsCtx& c, const Scenario& sc, const std::string& schedule);
// The chunk rates per V of every stage option, group and set of groups (search_interleaved_rates.cpp).
void set_chunk_rates(MbsCtx& c, int num_layers);
// Groups up to which MbsCtx keeps the suffix rates per set of groups (2^G entries each).
inline constexpr int kSuffixDpGroups = 8;
// The per-group summaries of the groups not in `used` (suffix_cap).
SuffixInfo suffix_info(const MbsCtx& c, std::uint64_t used);
// best[U] = max(0, max over g in U and g's options o of step(g, o, best[U \ {g}])) for every U,
// `step` monotone in its last argument: the most LP rate a suffix of blocks of U reaches, the
// first block of the suffix taken last (search_layout_bounds.cpp).
std::vector<double> suffix_rates(const MbsCtx& c, const std::function<double(const OptInfo&, double)>& step);
// Whether interleaved plans of S stages, m micro-batches and V chunks a stage exist (Megatron's
// constraints, plan_format.cpp: S >= 2, m a multiple of S; the search: V divides the layer count).
bool interleave_ok(int S, std::int64_t m, int V, int num_layers);

// Entries ((stages + 1) x (layers + 1)) of one whole-layer suffix table of the split walk above
// which a configuration goes without its four such tables (its bounds keep their per-layer rates):
// on 976 stages x 10,000 layers they took 312 MB and a second to fill, while the time limit ran.
// Variable so that tests can send small configurations down that path.
inline std::int64_t suffix_table_entries_max = std::int64_t{1} << 20;
// Whether the layout walk bounds a group's options together first (Walker::group_cut; a test turns
// it off to compare: the plans and counts are the same either way).
inline bool group_cuts_enabled = true;
// Whether the layout walk tests a child by its own LP step against the node's inverted prefix
// first (Walker::child_pre_cut; a test turns it off to compare: the plans and counts are the same).
inline bool layout_pretest_enabled = true;
inline constexpr int kSuffixTables = 4;  // fill, integer bottleneck, family C's term and its inputs

// Bytes a context of micro-batch size `mbs` will take at most (its middle-stage tables and the
// per-stage-size minima), and those each walker needs for a configuration of it (the split
// search's whole-layer suffix tables), computed before anything is allocated (docs/search.md, "Memory").
std::int64_t ctx_bytes(const Scenario& sc, std::int64_t mbs, std::int64_t m, const std::vector<std::vector<int>>& tps, bool all_nodes);
std::int64_t walker_bytes(const Scenario& sc, std::int64_t m);
// The grids the search runs one search each for, in its order: (cp, ep, etp) for every
// context-parallel size and, within it, every expert grid (search_grids.cpp); one (1, 1, 1) for a
// dense model at a short sequence.
std::vector<std::array<int, 3>> search_grids(const Scenario& sc, const SearchOptions& options = {});
// GPUs of one data-parallel replica of a stage the search builds: tp x cp (its grid's
// context-parallel size; Megatron's tp-cp rank order, place_plan).
inline int replica_gpus(const Scenario& sc, int tp) { return tp * sc.search_cp; }
// Whether a stage of s GPUs at TP tp holds whole replicas over which a micro-batch of mbs samples
// splits evenly.
inline bool replicas_divide(const Scenario& sc, int s, int tp, std::int64_t mbs) {
    const int w = replica_gpus(sc, tp);
    return s % w == 0 && mbs % (s / w) == 0;
}
// Makes st the stage the search builds: s GPUs of group g at TP tp on the search's grid (its cp,
// ep, etp), `layers` blocks, mbs samples a micro-batch over its replicas (in place: the probes
// reuse their plan).
inline void set_search_stage(const Scenario& sc, StagePlan& st, int g, int s, int tp, int layers, std::int64_t mbs) {
    const int dp = s / replica_gpus(sc, tp);
    st.num_layers = layers;
    st.homogeneous_form = true;
    st.ep = sc.search_ep, st.etp = sc.search_etp, st.cp = sc.search_cp;
    st.replicas.assign(1, ReplicaSet{g, tp, dp, static_cast<int>(mbs / dp)});
}
// Adds s to total: the counts summed, micro-batch sizes the largest (the same sizes in each).
inline void add_space(SpaceSize& total, const SpaceSize& s) {
    total.micro_batch_sizes = std::max(total.micro_batch_sizes, s.micro_batch_sizes);
    total.stage_layouts += s.stage_layouts;
    total.configurations += s.configurations;
    total.schedules += s.schedules;
    total.plans += s.plans;
}
// search_space_size of the one grid sc.search_cp / search_ep / search_etp.
SpaceSize grid_space_size(const Scenario& sc, bool tp_per_stage, const std::string& schedule, const std::string& node_counts, int group_blocks,
                          bool split_nodes, bool empty_stages);
// search_space_size with options.group_blocks >= 2: the sum over the splits of the cluster's
// groups (search_group_blocks.cpp), a plan that several splits contain counted once in each.
SpaceSize group_blocks_space_size(const Scenario& sc, bool tp_per_stage, const std::string& schedule, const std::string& node_counts,
                                  int group_blocks, bool split_nodes, bool empty_stages);
// With options.empty_stages, whether a middle 1F1B stage may hold no layer: it then holds no
// parameters, which a stack that builds one optimizer per stage refuses (stage_needs_parameters);
// the first and last stages keep the embedding and the head. The walk and the space size share it.
inline bool middle_may_be_empty(const Scenario& sc, bool empty_stages) { return empty_stages && !sc.training.stack.stage_needs_parameters; }

// The two halves of one node in a split cluster (options.split_nodes): per group, the index of its
// second half when it is a first half (next), of its first half when it is a second (prev); -1 else.
// They are adjacent groups of one origin and one first node (Cluster::group_first_node).
struct NodeHalves {
    std::vector<int> next, prev;
    // A first half in `used` whose second half is not: the layout may not end yet.
    bool open(std::uint64_t used) const {
        for (std::size_t h = 0; h < next.size(); ++h)
            if (next[h] >= 0 && (used >> h & 1) && !(used >> next[h] & 1)) return true;
        return false;
    }
    // Whether group g may be the next block after the groups `used`: a second half only after its
    // first, and while a first half waits for its second, no other part of the same user group
    // (`origin`: per group, its user group).
    bool may_place(int g, std::uint64_t used, const std::vector<int>& origin) const {
        if (prev[g] >= 0 && !(used >> prev[g] & 1)) return false;
        for (std::size_t h = 0; h < next.size(); ++h)
            if (next[h] >= 0 && next[h] != g && (used >> h & 1) && !(used >> next[h] & 1) && origin[h] == origin[g]) return false;
        return true;
    }
};
NodeHalves node_halves(const Cluster& cluster);
// Stages at most, at micro-batch size mbs (layers, the stage limit, the DAG size).
int max_stages_at(const Scenario& sc, std::int64_t m);

}  // namespace poseidon::detail
