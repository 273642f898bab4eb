// The plan search (docs/search.md): enumerate -> evaluate with the DAG model -> keep top-K,
// with stage-level pruning and the layer-split ridge walk.
#pragma once

#include <cstdint>
#include <functional>
#include <limits>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "poseidon/estimate.hpp"

namespace poseidon {

struct SearchProgress {
    std::int64_t evaluated = 0;
    std::int64_t pruned = 0;
    double elapsed_s = 0;
    const Estimate* best = nullptr;  // null until a feasible plan is found
};

// Output caps of a search result (docs/search.md, "Results"): the first plan carries its timeline
// only up to this many events (and 20,000 per second of the time limit); a plan gets its critical-path breakdown (the detailed DAG) only
// up to this many stage x micro-batch cells; plans are listed while their stages add up to at
// most this many (the first plan always). What is left out is said in `stats.notes`.
inline constexpr std::int64_t search_max_timeline_events = 50'000;
inline constexpr std::int64_t search_max_detailed_cells = 50'000;
inline constexpr std::int64_t search_max_listed_stages = 3'000;

struct SearchOptions {
    int top_k = 3;
    bool exhaustive = false;
    // Wall-clock seconds for the whole call, result included (docs/search.md, "Time limit").
    double time_limit_s = 10;
    // Threads of the search: 0 = all cores (std::thread::hardware_concurrency). The plans are the
    // same for every count; where threads cannot be started the search runs on the caller's.
    int threads = 0;
    // Cap on the search's cost tables, in GiB (docs/search.md, "Memory"): a micro-batch size whose
    // tables would exceed it is skipped before anything is allocated (and the search refused when
    // that leaves nothing), and the search stops if its caches grow past it.
    double memory_cap_gib = 2;
    // Called now and then (and whenever the best plan improves); return false to cancel. With
    // several threads it may be called from any of them, never from two at once.
    std::function<bool(const SearchProgress&)> on_progress;
    // Compute the baselines (Megatron-uniform, Metis-style). Tests and benchmarks that only compare
    // the search itself switch them off.
    bool baselines = true;
    // Each stage chooses its own TP degree instead of one degree per group: a much wider space
    // (n^k TP sequences for a group of k stages and n degrees, not n), see docs/search.md.
    bool tp_per_stage = false;
    // Pipeline schedules searched (docs/search.md, "The space", step 6): "any" (1F1B and
    // interleaved 1F1B with every allowed virtual-stage count), "1f1b" or "interleaved-1f1b".
    std::string schedule = "any";
    // Whole-node counts a group may use (docs/search.md, "The space", step 2): "halving" (all its
    // nodes, then halving down to one, and every power of two below them) or "all" (every count;
    // a wider, slower space).
    std::string node_counts = "halving";
    // Blocks a group may be used as (docs/search.md, "The space", step 2): 1, or up to 4 (a group
    // also split in whole-node parts placed anywhere in the pipeline, each with its own stage size).
    int group_blocks = 1;
    // With group_blocks >= 2: a node may also be used as two blocks of half its GPUs, next to each
    // other in the pipeline, each with its own stage size and TP (docs/search.md, "The space",
    // step 2: unequal stage sizes within one node).
    bool split_nodes = false;
    // Under 1F1B a stage may hold no transformer block (docs/search.md, "The space", step 5): the
    // first then holds only the embedding, the last only the head, a middle one only forwards
    // activations (and deepens the 1F1B warm-up of the stages before it).
    bool empty_stages = false;
    // Also search one-stage plans whose data-parallel replicas mix GPU types, each group's with its
    // own TP and samples (docs/search.md, "The space", step 7).
    bool mixed_stages = false;
    // A slice of the search (docs/search.md, "Shards"): with shard_count >= 1, only the work units
    // (layout subtrees) of shard shard_index (0 .. shard_count - 1) are walked; merge_shards of all
    // shard_count slices equals the whole search. 0: the whole search.
    int shard_index = 0;
    int shard_count = 0;
    // An upper bound on the K-th ranking key of the whole search (e.g. the K-th key of plans other
    // slices found): plans and branches whose key is above it are pruned. Infinite: none.
    double prune_above_s = std::numeric_limits<double>::infinity();
    // Tree nodes the walk may visit before it stops, incomplete ("node budget"; 0: no budget). The
    // grids' first round sets it to grid_first_round_nodes (docs/search.md, "Expert parallelism":
    // each grid of an MoE model or context-parallel size that many nodes first, then the ones it
    // stopped whole; 0: the grids in turn). Neither is read from JSON.
    std::int64_t node_budget = 0;
    std::int64_t grid_first_round_nodes = std::int64_t{1} << 18;
    // Keys of plans an earlier walk of the same space found, by micro-batch size and count: the
    // full walk takes those sizes first, best first (the grids' second round passes each grid its
    // first round's plans). Orders the walk only; not read from JSON.
    struct OrderHint {
        std::int64_t micro_batch_size = 0, num_micro_batches = 0;
        double key = 0;
    };
    std::vector<OrderHint> order_hints;
    // Tree nodes a configuration's layer split may take before the walk defers it, to be split
    // again whole after the whole walk on one thread, after its subtree on several (docs/search.md,
    // "Deferred configurations"; 0: none).
    // Not read from JSON.
    std::int64_t config_first_nodes = std::int64_t{1} << 19;
    // Tree nodes an interleaved walk of one configuration and V may take before its chunk caps
    // are probed exactly by memory (docs/search.md, "Memory caps of a long interleaved walk";
    // 0: never). Not read from JSON.
    std::int64_t ilv_memory_after_nodes = 4096;
    // Training choices left to the search (docs/search.md, "Training choices").
    // precisions: the precisions searched, each plan in each (empty: training.precision alone);
    // any_precision: bf16 and every low-precision recipe all groups' GPUs and the stack run.
    // fsdp "any": each plan with and without Megatron-FSDP; "fixed": training.fsdp. Plans of a
    // search that freed them carry their choice (Plan::precision, Plan::fsdp).
    std::vector<Precision> precisions;
    bool any_precision = false;
    // whether the search chooses the precision (training.precision is then only a default that
    // the plans do not use unless it is searched too)
    bool chooses_precision() const { return any_precision || !precisions.empty(); }
    std::string fsdp = "fixed";
    // recomputes: the recomputations searched (empty: training.recompute alone; "any": none,
    // selective, full); recompute_num_layers: more choices of full recomputation of the first N
    // blocks of each stage (Megatron-Core's block method), one per N. Plans carry their choice
    // (Plan::recompute, Plan::recompute_num_layers).
    std::vector<Recompute> recomputes;
    std::vector<int> recompute_num_layers;
    // The grids fixed by the user (docs/search.md, "Fixed grids"): the context-parallel sizes,
    // expert-parallel sizes and expert tensor-parallel sizes searched instead of the search's own
    // (empty: its own). Every stage of a plan has one size of each, as in Megatron-Core.
    std::vector<int> cp_sizes, ep_sizes, etp_sizes;
};

// Interleaved plans of the search use V = 2 .. search_max_virtual_stages model chunks per stage,
// V dividing every stage's layer count (docs/search.md, "The space", step 6).
inline constexpr int search_max_virtual_stages = 16;

struct SearchStats {
    std::int64_t evaluated = 0;  // DAG evaluations of complete plans (the dive's included)
    std::int64_t pruned = 0;     // branches cut by the lower bound
    std::map<std::string, std::int64_t> infeasible;  // reason -> count
    double elapsed_s = 0;
    bool complete = true;
    bool cancelled = false;
    // Why the search is incomplete: "time limit", "cancelled" or "memory cap" (empty if complete).
    std::string stopped_by;
    // stopped_by for messages: an incomplete search without one skipped sizes over the memory cap.
    std::string stop_reason() const { return stopped_by.empty() ? std::string("memory cap") : stopped_by; }
    // What the search skipped or left out of the result, one sentence each.
    std::vector<std::string> notes;
    int threads = 1;  // threads that searched
    // Diagnostics (docs/search.md, "Statistics"): distinct stage configurations whose layer split
    // was searched, and evaluate_stages calls made to fill the per-stage cost cache.
    std::int64_t configurations = 0;
    std::int64_t cost_probes = 0;
    // Stage caps that the threshold lowered below the memory caps (docs/search.md, "Bounds" and
    // "Bounds of interleaved plans"), once per stage of each 1F1B configuration split and of each
    // V of its interleaved walk (diagnostic).
    std::int64_t threshold_capped = 0;
    // Layout nodes' groups whose options one bound cut together (docs/search.md, "All options of a
    // group at once"; diagnostic: counted in `pruned` option by option as well).
    std::int64_t groups_cut = 0;
    // Layout children cut by their own LP step against the node's inverted prefix, before the
    // bound over the whole prefix (docs/search.md, "The prefix inverted"; diagnostic: in `pruned`
    // as well).
    std::int64_t pretest_cut = 0;
};

struct Baseline {
    std::string name;
    std::string description;
    std::optional<Estimate> estimate;  // empty when the baseline finds no feasible plan
    std::string reason;                // why it has none
};

struct SearchResult {
    std::vector<Estimate> plans;  // best first
    std::vector<Baseline> baselines;
    SearchStats stats;
    // The search's own DAG time of each plan (same order); equal to plans[k].iteration_time_s,
    // which `estimate` recomputed from scratch.
    std::vector<double> scores;
    bool timeline = true;  // plans[0] carries its timeline (false when over search_max_timeline_events)
    std::vector<bool> detailed;  // per plan: estimated with the detailed DAG (breakdown, timeline)
};

// A plan of a search slice with its ranking key (seconds per global_batch_size samples) and its
// DAG iteration time. Ordered by ranked_before: key (its tie bucket), then plan (the search's
// tie-break; docs/search.md, "Results", ties).
struct RankedPlan {
    double key = 0;
    double iteration_time_s = 0;
    Plan plan;
};
bool ranked_before(const RankedPlan& a, const RankedPlan& b);

// What a slice of the search returns (options.shard_count >= 1): its top K, best first, and the
// counts of this slice.
struct ShardResult {
    int index = 0, count = 1;
    std::vector<RankedPlan> found;
    SearchStats stats;
};

SearchOptions parse_search_options(const Json& j);
// The threads search() uses: options.threads, or all cores when it is 0 (1 to 256); 1 where
// threads cannot be started (WebAssembly without them).
int search_threads(const SearchOptions& options);
SearchResult search(const Scenario& sc, const SearchOptions& options);
Json to_json(const Scenario& sc, const SearchResult& r);
// How many times faster the best plan trains than baseline `b`: time over the best plan's, per
// sample with a batch tolerance (the batches differ); empty without a plan or a baseline plan.
std::optional<double> baseline_speedup(const Scenario& sc, const SearchResult& r, const Baseline& b);

// Slices of the search (docs/search.md, "Shards"). search_shard runs the slice options names
// (shard_count >= 1; no baselines). merge_shards: the top K of all slices by ranked_before (equal
// entries once), listed and estimated as search() lists its plans, the baselines
// (options.baselines), the counts summed; complete when every slice 0 .. n - 1 of some count n is
// there and complete (slices of other counts of the same search may join: their plans are plans
// of the space). Then it equals search() with the same options (plans, order, scores, baselines).
ShardResult search_shard(const Scenario& sc, const SearchOptions& options);
SearchResult merge_shards(const Scenario& sc, const std::vector<ShardResult>& shards, const SearchOptions& options);
Json to_json(const ShardResult& r);
// shards: a JSON array of to_json(ShardResult) objects (path "shards").
std::vector<ShardResult> parse_shard_results(const Json& shards, const Scenario& sc);

// The two simpler planners of docs/search.md ("Baselines"), each scored with `estimate`.
// `time_budget_s` bounds their run time (they stop early with the best found so far).
std::vector<Baseline> compute_baselines(const Scenario& sc, double time_budget_s = 5);

// ---- Introspection for docs, tests and benchmarks ----

// Size of the search space of docs/search.md for a scenario, counted without evaluating anything
// (layer splits counted as compositions, memory not checked).
struct SpaceSize {
    double micro_batch_sizes = 0;    // usable micro-batch sizes
    double stage_layouts = 0;        // (micro-batch size, group order, GPUs per group, stage size) choices
    double configurations = 0;       // ... x TP per block
    double schedules = 0;            // ... x schedule (1F1B, or interleaved with each allowed V)
    double plans = 0;                // ... x layer splits (multiples of V per stage when interleaved)
};
SpaceSize search_space_size(const Scenario& sc, bool tp_per_stage = false, const std::string& schedule = "any",
                            const std::string& node_counts = "halving", int group_blocks = 1, bool split_nodes = false,
                            bool empty_stages = false);

// The layer-split landscape of one stage configuration: the stages of `plan` (groups, TP, DP,
// micro-batches) with their layer counts free. Every split (when there are at most `max_points`)
// with its DAG time, and the splits the pruned ridge walk evaluated (finding the best `top_k`).
struct SplitPoint {
    std::vector<int> layers;
    double iteration_time_s = 0;  // infinity when a stage does not fit in memory
    bool visited = false;         // evaluated by the ridge walk
};
struct RidgeReport {
    std::vector<SplitPoint> points;     // every split (empty if there are more than max_points)
    std::vector<int> best_layers;       // best split found by the ridge walk
    double best_time_s = 0;
    double exhaustive_best_time_s = 0;  // best over all splits (same as best_time_s unless a bug)
    std::int64_t ridge_evaluations = 0;
    std::int64_t exhaustive_evaluations = 0;
};
RidgeReport ridge_report(const Scenario& sc, const Plan& plan, int top_k = 1, std::int64_t max_points = 200000);

}  // namespace poseidon
