// The driver of the plan search (docs/search.md, "The method", "Threads", "Memory"): the TP
// passes; per pass the micro-batch-size contexts, built, dived and walked best bound first, on
// one thread or on several that share the top-K list; the time limit and the memory cap.
// Internal to core/src.
#pragma once

#include <atomic>
#include <cstdint>
#include <string>
#include <functional>
#include <memory>
#include <mutex>
#include <unordered_map>
#include <vector>

#include "search_walk.hpp"

namespace poseidon::detail {

class Driver {
public:
    Driver(const Scenario& sc, const SearchOptions& opt, int threads);
    ~Driver();

    Shared sh;

    void run();
    // A last progress report when the search ends (search_result.cpp).
    void final_report();
    // The counts of every walker and of the driver, the stop reason, the notes.
    SearchStats stats();

private:
    struct Slot {
        int index = 0;  // in batch_shapes' order: the same in every slice of the search
        std::int64_t mbs = 0, m = 0;
        std::int64_t need = 0;  // bytes it needs alive (context + walkers' split tables)
        std::unique_ptr<MbsCtx> ctx;
        SearchStats build;  // the counts of building it
    };

    int threads_;
    int used_threads_ = 1;
    std::vector<std::unique_ptr<Walker>> walkers_;
    SearchStats stats_;  // the driver's own counts
    std::vector<std::string> notes_;
    std::vector<std::vector<int>> tps_;
    std::atomic<std::int64_t> next_id_{0};
    bool skipped_ = false;  // micro-batch sizes left out for the memory cap
    std::mutex m_;  // stats_ while walkers free contexts

    // Whether this run counts what every slice of the search finds alike (the TP degrees and
    // micro-batch sizes refused, the options a context refuses): the whole search and slice 0.
    bool counts_shared() const { return sh.opt.shard_count <= 1 || sh.opt.shard_index == 0; }
    void pass(bool first);
    std::vector<Slot> plan_slots(bool first, bool& retain);
    void build(Slot& s);
    // Calls fn(k, ctx) for each context order[k] whose root bound the threshold does not cut; the
    // cut ones are counted as pruned when `count`; `index` (if given) maps every context to k.
    void for_roots(std::vector<Slot*>& order, std::unordered_map<const MbsCtx*, std::size_t>* index, bool count,
                   const std::function<void(std::size_t, MbsCtx&)>& fn);
    void dive_best_config(std::vector<Slot*>& order);  // the dive into the best plan's configuration
    void walk_all(std::vector<Slot*>& order);  // the full walk of these contexts, in this order
    void walk_shard(std::vector<Slot*>& order);  // the same, of this slice's units only
    void run_tasks(std::vector<Slot*>& order, const std::unordered_map<const MbsCtx*, std::size_t>& index, std::vector<Task>& tasks);
    void free_ctx(std::unique_ptr<MbsCtx>& c);
    // Runs fn(walker, i) for every i < n on up to threads_ walkers; rethrows a walker's exception.
    void parallel(std::size_t n, const std::function<void(Walker&, std::size_t)>& fn);
};

// What search() lists and reports from: the top K (plans in the user's groups), the counts, when
// the search started and when its walk had to stop to leave the result its time.
struct SearchRun {
    std::vector<Found> found;
    SearchStats stats;
    Clock::time_point t0;
    double soft_deadline_s = 0;  // seconds after t0
};

// Adds the counts of `s` to `total` (notes once each, the most threads, the first stop reason;
// complete only if both are): the searches of several splits, or the slices of one search.
void add_stats(SearchStats& total, const SearchStats& s);

// The search of docs/search.md: one driver, or with options.group_blocks >= 2 one per split of the
// cluster's groups (search_group_blocks.cpp), sharing the top K.
SearchRun run_search(const Scenario& sc, const SearchOptions& options, int threads);
// run_search once per expert grid of an MoE model (search_grids.cpp), the top K merged; a
// dense model's run_search itself.
SearchRun run_parallel_grids(const Scenario& sc, const SearchOptions& options, int threads);
// The same with `run_one` searching one grid (search_shard: one slice of it).
// With the training choices of options.precisions, options.fsdp and options.recompute (search_choices.cpp): once
// per choice, its plans carrying it, the top K merged.
SearchRun run_grids(const Scenario& sc, const SearchOptions& options, const std::function<SearchRun(const Scenario&, const SearchOptions&)>& run_one);
// One search per variant in turn (the grids, the training choices; search_grids.cpp): each bounded
// by the top K of the ones before it and given the time they left, `tag` marking its plans; the
// top K merged. With first_round_ticks > 0, first each for at most that many tree nodes, then
// the ones it stopped whole, in turn, each bounded by the others' plans.
SearchRun run_in_turn(std::size_t n, const SearchOptions& options, const std::function<SearchRun(std::size_t, SearchOptions)>& run_variant,
                      const std::function<void(std::size_t, Plan&)>& tag = {}, std::int64_t first_round_ticks = 0);
// The grids of one training choice (search_grids.cpp).
SearchRun run_grid_set(const Scenario& sc, const SearchOptions& options, const std::function<SearchRun(const Scenario&, const SearchOptions&)>& run_one);
// One training choice: each part empty where the scenario's holds; recompute_num_layers > 0 only
// with recompute full (the block method).
struct TrainingChoice {
    std::optional<Precision> precision;
    std::optional<bool> fsdp;
    std::optional<Recompute> recompute;
    int recompute_num_layers = 0;
};
// The training choices searched, the fastest-looking first. Throws InputError for a precision the
// cluster or stack cannot run.
std::vector<TrainingChoice> training_choices(const Scenario& sc, const SearchOptions& options);
// The plan trains in choice c (Plan::precision, fsdp, recompute, recompute_num_layers).
void apply(const TrainingChoice& c, Plan& plan);
// The expert grids (ep, etp) searched, largest first: options.ep_sizes x options.etp_sizes where
// given (the other the search's own), else the search's own.
std::vector<std::pair<int, int>> expert_grids(const Scenario& sc, const SearchOptions& options = {});
// The context-parallel sizes searched, largest first: options.cp_sizes where given, else {1}
// below kCpMinSeqLength tokens and the powers of two from it.
inline constexpr int kCpMinSeqLength = 8192;
std::vector<int> context_parallel_sizes(const Scenario& sc, const SearchOptions& options = {});
// Throws InputError naming options.cp_sizes[i], ep_sizes[i] or etp_sizes[i] where the scenario
// cannot run that size (the rules of a plan's stage keys, plan_format.cpp).
void check_grid_options(const Scenario& sc, const SearchOptions& options);
// A split of the cluster's groups: per group the node counts of the parts split off (none: whole),
// first kHalvedNode when one node is used as two halves (options.split_nodes).
using GroupSplit = std::vector<std::vector<int>>;
inline constexpr int kHalvedNode = -1;
// The splits searched, at most options.group_blocks parts per group; the first is the cluster
// itself. Refused (options.group_blocks) past 10,000 splits.
std::vector<GroupSplit> group_block_splits(const Scenario& sc, const SearchOptions& options);
// The cluster with each group g followed by its parts split[g] (what remains of g first, a halved
// node last as two groups); map: per group of the result, the user's group.
Scenario split_groups(const Scenario& sc, const GroupSplit& split, std::vector<int>& map);
// options.mixed_stages (search_mixed.cpp): the one-stage plans whose replicas mix GPU types, into
// `top` (cut by its threshold unless options.exhaustive), counted in `stats`, until halted().
void search_mixed(const Scenario& sc, const SearchOptions& options, TopK& top, SearchStats& stats, const std::function<bool()>& halted);
// How many such plans there are, with the pipelines of mixed stages (search_mixed_pipeline.cpp;
// memory not checked).
double mixed_space_size(const Scenario& sc, const SearchOptions& options);

// The result of a search from its top-K list (search_result.cpp; docs/search.md, "Results"): each
// plan re-estimated (the first with its timeline) within the listing caps; res.stats.complete must
// be set. Shared by search() and merge_shards().
void list_found(const Scenario& sc, const std::vector<Found>& found, const SearchOptions& options, Clock::time_point t0, SearchResult& res);
// The baselines (options.baselines) within what is left of the time limit.
void add_baselines(const Scenario& sc, const SearchOptions& options, Clock::time_point t0, double soft_deadline_s, SearchResult& res);
void adopt_baselines(const Scenario& sc, const SearchOptions& options, Clock::time_point t0, SearchResult& res);
void explain_empty(const Scenario& sc, const SearchOptions& options, SearchResult& res);
// The note on an exact batch with few factors of two and the tolerance that reaches a rounder one.
void explain_batch(const Scenario& sc, SearchResult& res);

}  // namespace poseidon::detail
