// Slices of the plan search (search.hpp; docs/search.md, "Shards"): a slice walks only its own
// units of the search tree (Driver::walk_shard), optionally cut by a bound from other slices
// (options.prune_above_s); merge_shards turns the top K of every slice into the result search()
// would give.
#include <algorithm>
#include <map>

#include "poseidon/scenario.hpp"
#include "search_driver.hpp"

namespace poseidon {

namespace detail {

// The units of a search slice (docs/search.md, "Shards"): below each context's root, its children
// and (when there are fewer than 64) their children, listed without cuts so that the list depends
// on the context alone; unit j of the context of slot index i belongs to shard (i + j) mod count.
void Driver::walk_shard(std::vector<Slot*>& order) {
    const int count = sh.opt.shard_count, mine = sh.opt.shard_index;
    Walker& w0 = *walkers_[0];
    std::vector<Task> tasks;
    std::unordered_map<const MbsCtx*, std::size_t> index;
    // every slice lists the same units: what listing them refuses is counted by slice 0
    const auto refused = w0.stats.infeasible;
    for_roots(order, &index, true, [&](std::size_t k, MbsCtx& c) {
        std::vector<Task> top, units;
        Task root;
        root.ctx = &c;
        w0.no_cut = true;
        w0.expand(c, root, top);
        if (top.size() < 64) {
            for (const Task& t : top) {
                if (t.stop_here)
                    units.push_back(t);
                else
                    w0.expand(c, t, units);
            }
        } else {
            units.swap(top);
        }
        w0.no_cut = false;
        for (std::size_t j = 0; j < units.size(); ++j)
            if ((static_cast<std::size_t>(order[k]->index) + j) % static_cast<std::size_t>(count) == static_cast<std::size_t>(mine))
                tasks.push_back(std::move(units[j]));
    });
    if (!counts_shared()) w0.stats.infeasible = refused;
    run_tasks(order, index, tasks);
}

}  // namespace detail

using detail::Clock;

bool ranked_before(const RankedPlan& a, const RankedPlan& b) {
    return detail::ranks_before(a.key, a.plan, b.key, b.plan);  // the search's own order (search_topk.hpp)
}

ShardResult search_shard(const Scenario& sc, const SearchOptions& options) {
    if (options.shard_count < 1) throw InputError("options.shard_count", "a slice needs shard_count >= 1");
    if (options.shard_index < 0 || options.shard_index >= options.shard_count)
        throw InputError("options.shard_index", std::to_string(options.shard_index) + " is out of range; expected 0 .. shard_count - 1");
    // the spaces of two blocks per group and of mixed stages are searched by search() alone
    if (options.group_blocks > 1) throw InputError("options.group_blocks", std::to_string(options.group_blocks) + " is searched whole (search or plan), not in slices; use 1 with shard_count");
    if (options.mixed_stages) throw InputError("options.mixed_stages", "true is searched whole (search or plan), not in slices; use false with shard_count");
    if (options.split_nodes) throw InputError("options.split_nodes", "true is searched whole (search or plan) with options.group_blocks of 2 or more, not in slices; use false with shard_count");
    ShardResult out;
    out.index = options.shard_index;
    out.count = options.shard_count;
    // a slice walks its units of every grid (expert grids, context-parallel sizes), as search() does
    detail::SearchRun run = detail::run_grids(sc, options, [](const Scenario& one, const SearchOptions& o) {
        detail::Driver d(one, o, search_threads(o));
        d.run();
        d.final_report();
        detail::SearchRun r;
        r.stats = d.stats();
        r.found = d.sh.top.list();
        r.t0 = d.sh.t0;
        return r;
    });
    out.stats = run.stats;
    for (detail::Found& f : run.found) out.found.push_back({f.time, f.dag_time, std::move(f.plan)});
    out.stats.elapsed_s = detail::seconds_since(run.t0);
    return out;
}

SearchResult merge_shards(const Scenario& sc, const std::vector<ShardResult>& shards, const SearchOptions& options) {
    const Clock::time_point t0 = Clock::now();
    SearchResult res;
    // slices by count: index -> complete (a search may be merged with the slices of another count
    // of the same search, e.g. a whole run the time limit stopped: their plans overlap)
    std::map<int, std::map<int, bool>> seen;
    std::vector<RankedPlan> all;
    SearchStats& st = res.stats;
    double slowest_s = 0;
    for (std::size_t i = 0; i < shards.size(); ++i) {
        const ShardResult& s = shards[i];
        const std::string path = "shards[" + std::to_string(i) + "].shard";
        if (s.count < 1) throw InputError(path + ".count", std::to_string(s.count) + " is out of range; expected >= 1");
        if (s.index < 0 || s.index >= s.count) throw InputError(path + ".index", std::to_string(s.index) + " is out of range; expected 0 .. count - 1");
        auto& of_count = seen[s.count];
        if (of_count.count(s.index))
            throw InputError(path + ".index", "slice " + std::to_string(s.index) + " of " + std::to_string(s.count) + " is given twice");
        of_count[s.index] = s.stats.complete;
        all.insert(all.end(), s.found.begin(), s.found.end());
        detail::add_stats(st, s.stats);
        slowest_s = std::max(slowest_s, s.stats.elapsed_s);
    }
    // complete when the slices of some count are all there and complete
    st.complete = false;
    for (const auto& [count, of_count] : seen) {
        bool all_done = static_cast<int>(of_count.size()) == count;
        for (const auto& [index, done] : of_count) all_done = all_done && done;
        st.complete = st.complete || all_done;
    }
    if (st.complete) {
        st.stopped_by.clear();  // a slice the time limit stopped, its count's slices merged whole
    } else {
        if (!seen.empty()) {
            const auto& [count, of_count] = *seen.rbegin();
            if (static_cast<int>(of_count.size()) < count)
                st.notes.push_back(std::to_string(count - static_cast<int>(of_count.size())) + " of " + std::to_string(count) + " slices of the search missing");
        }
    }
    // Slices of one count have disjoint lists (every plan belongs to one unit); slices of
    // different counts find the same plans: equal entries (key and plan) count once.
    std::sort(all.begin(), all.end(), ranked_before);
    all.erase(std::unique(all.begin(), all.end(), [](const RankedPlan& a, const RankedPlan& b) { return a.key == b.key && a.plan == b.plan; }),
              all.end());
    std::vector<detail::Found> found;
    for (std::size_t k = 0; k < all.size() && static_cast<int>(k) < std::max(options.top_k, 1); ++k) {
        detail::Found f;
        f.time = all[k].key;
        f.dag_time = all[k].iteration_time_s;
        f.plan = all[k].plan;
        found.push_back(std::move(f));
    }
    detail::list_found(sc, found, options, t0, res);
    const double L = options.time_limit_s;
    detail::add_baselines(sc, options, t0, L - std::min(0.15 * L, 1.0), res);
    detail::adopt_baselines(sc, options, t0, res);
    detail::explain_empty(sc, options, res);
    detail::explain_batch(sc, res);
    for (auto& n : scenario_notes(sc))  // a slice does not report them: the merge does, once
        res.stats.notes.push_back(std::move(n));
    st.elapsed_s = slowest_s + detail::seconds_since(t0);
    return res;
}

}  // namespace poseidon
