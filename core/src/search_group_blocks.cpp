// A group used as several blocks (docs/search.md, "The space", step 2, options.group_blocks): the
// user's cluster with some groups split in whole-node parts is an ordinary cluster, so the
// space with split groups is the union of the search spaces of these clusters. Each is searched
// in turn with the top K found so far (plans written in the user's groups, so a plan two splits
// share is one entry), which keeps pruning as safe as in one search.
#include <algorithm>

#include "search_driver.hpp"
#include "search_mixed.hpp"
#include "search_space.hpp"

namespace poseidon::detail {

namespace {

// The ways one group of N nodes is used as at most `blocks` blocks: the parts split off, in
// non-decreasing order, each a node count the group may use (halving or all) and none larger than
// what remains (the remainder is the largest part, so every multiset of parts is listed once).
void group_parts(int N, int blocks, const std::vector<int>& choices, std::vector<int>& parts, std::vector<std::vector<int>>& out) {
    if (static_cast<int>(parts.size()) + 1 >= blocks) return;
    int rest = N;
    for (int p : parts) rest -= p;
    for (auto it = choices.rbegin(); it != choices.rend(); ++it) {
        const int n = *it;
        if (!parts.empty() && n < parts.back()) continue;
        if (n >= N || 2 * n > rest) continue;
        parts.push_back(n);
        out.push_back(parts);
        group_parts(N, blocks, choices, parts, out);
        parts.pop_back();
    }
}

// Splits past this many are refused: each is a search of its own.
constexpr std::size_t max_group_splits = 10000;

}  // namespace

std::vector<GroupSplit> group_block_splits(const Scenario& sc, const SearchOptions& options) {
    const std::size_t G = sc.cluster.groups.size();
    std::vector<GroupSplit> out{GroupSplit(G)};
    if (options.group_blocks < 2) return out;
    for (std::size_t g = 0; g < G; ++g) {
        const int N = sc.cluster.groups[g].nodes;
        std::vector<std::vector<int>> ways;
        std::vector<int> parts;
        group_parts(N, options.group_blocks, node_choices(N, options.node_counts == "all"), parts, ways);
        if (out.size() * (ways.size() + 1) > max_group_splits)
            throw InputError("options.group_blocks", std::to_string(options.group_blocks) + " splits the cluster's groups in over " +
                                                         std::to_string(max_group_splits) +
                                                         " ways, each a search of its own; use fewer blocks (1 or 2)");
        const std::size_t before = out.size();
        for (const auto& w : ways)
            for (std::size_t i = 0; i < before; ++i) {
                out.push_back(out[i]);
                out.back()[g] = w;
            }
    }
    return out;
}

Scenario split_groups(const Scenario& sc, const GroupSplit& split, std::vector<int>& map) {
    Scenario out = sc;
    out.cluster.groups.clear();
    map.clear();
    for (std::size_t g = 0; g < sc.cluster.groups.size(); ++g) {
        Group whole = sc.cluster.groups[g];
        for (int n : split[g]) whole.nodes -= n;
        out.cluster.groups.push_back(whole);
        map.push_back(static_cast<int>(g));
        for (int n : split[g]) {
            Group part = sc.cluster.groups[g];
            part.nodes = n;
            out.cluster.groups.push_back(part);
            map.push_back(static_cast<int>(g));
        }
    }
    out.cluster.group_origin = map;
    return out;
}

SpaceSize group_blocks_space_size(const Scenario& sc, bool tp_per_stage, const std::string& schedule, const std::string& node_counts,
                                  int group_blocks) {
    SearchOptions o;
    o.group_blocks = group_blocks;
    o.node_counts = node_counts;
    SpaceSize out;
    std::vector<int> map;
    for (const auto& split : group_block_splits(sc, o)) {
        const SpaceSize s = search_space_size(split_groups(sc, split, map), tp_per_stage, schedule, node_counts, 1);
        out.micro_batch_sizes = std::max(out.micro_batch_sizes, s.micro_batch_sizes);
        out.stage_layouts += s.stage_layouts;
        out.configurations += s.configurations;
        out.schedules += s.schedules;
        out.plans += s.plans;
    }
    return out;
}

namespace {

SearchRun run_layouts(const Scenario& sc, const SearchOptions& options, int threads) {
    SearchRun out;
    out.t0 = Clock::now();
    const std::vector<GroupSplit> splits = group_block_splits(sc, options);
    if (splits.size() == 1) {
        Driver d(sc, options, threads);
        d.run();
        d.final_report();
        out.stats = d.stats();
        out.found = d.sh.top.list();
        out.t0 = d.sh.t0;
        out.soft_deadline_s = d.sh.soft_deadline();
        return out;
    }
    std::size_t most = 0;
    for (const auto& s : splits) {
        std::size_t groups = 0;
        for (const auto& parts : s) groups += 1 + parts.size();
        most = std::max(most, groups);
    }
    if (most > 64)
        throw InputError("options.group_blocks", std::to_string(options.group_blocks) + " splits the cluster's " + std::to_string(sc.cluster.groups.size()) +
                                                     " groups into up to " + std::to_string(most) + ", over the 64 the search handles; use 1");
    std::int64_t evaluated = 0, pruned = 0;
    std::size_t searched = 0;
    out.soft_deadline_s = options.time_limit_s;
    for (const auto& split : splits) {
        const double at = seconds_since(out.t0), left = options.time_limit_s - at;
        if (left <= 0) {
            out.stats.complete = false;
            if (out.stats.stopped_by.empty()) out.stats.stopped_by = "time limit";
            break;
        }
        std::vector<int> map;
        const Scenario part = split_groups(sc, split, map);
        SearchOptions o = options;
        o.time_limit_s = left;
        o.baselines = false;
        Driver d(part, o, threads);
        d.sh.origin = &sc;
        d.sh.group_map = map;
        d.sh.evaluated.store(evaluated);
        d.sh.pruned.store(pruned);
        for (Found& f : out.found) d.sh.top.insert(f.time, std::move(f.plan), f.dag_time);
        d.run();
        d.final_report();
        ++searched;
        const SearchStats s = d.stats();
        add_stats(out.stats, s);
        evaluated += s.evaluated;
        pruned += s.pruned;
        out.found = d.sh.top.list();
        out.soft_deadline_s = at + d.sh.soft_deadline();
        if (!s.stopped_by.empty()) break;
    }
    out.stats.notes.push_back("group_blocks " + std::to_string(options.group_blocks) + ": " + std::to_string(searched) + " of " + std::to_string(splits.size()) +
                              " splits of the cluster's groups searched");
    return out;
}

}  // namespace

SearchRun run_search(const Scenario& sc, const SearchOptions& options, int threads) {
    SearchRun out = run_layouts(sc, options, threads);
    if (!options.mixed_stages || !out.stats.stopped_by.empty()) return out;
    // the one-stage plans with mixed replicas, cut by the top K of the layouts
    TopK top(options.top_k);
    for (Found& f : out.found) top.insert(f.time, std::move(f.plan), f.dag_time);
    bool late = false;
    auto halted = [&] { return late = late || seconds_since(out.t0) > out.soft_deadline_s; };
    search_mixed(sc, options, top, out.stats, halted);
    if (!late) search_mixed_pipelines(sc, options, top, out.stats, halted);
    if (late) {
        out.stats.complete = false;
        out.stats.stopped_by = "time limit";
    }
    out.found = top.list();
    return out;
}

}  // namespace poseidon::detail
