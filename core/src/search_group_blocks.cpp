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
    if (options.split_nodes && options.group_blocks < 2)
        throw InputError("options.split_nodes", "true needs options.group_blocks of 2 or more (got " + std::to_string(options.group_blocks) +
                                                    "): the two halves of a node are two blocks");
    std::vector<GroupSplit> out{GroupSplit(G)};
    if (options.group_blocks < 2) return out;
    for (std::size_t g = 0; g < G; ++g) {
        const int N = sc.cluster.groups[g].nodes, P = sc.cluster.groups[g].gpus_per_node;
        std::vector<std::vector<int>> ways;
        std::vector<int> parts;
        const std::vector<int> choices = node_choices(N, options.node_counts == "all");
        group_parts(N, options.group_blocks, choices, parts, ways);
        // a node in two halves (two blocks), the other N - 1 nodes whole or in parts as above
        // (one block fewer for them)
        if (options.split_nodes && P % 2 == 0 && options.group_blocks >= (N > 1 ? 3 : 2)) {
            std::vector<std::vector<int>> rest{{}};
            if (N > 1) group_parts(N - 1, options.group_blocks - 2, choices, parts, rest);
            for (auto& w : rest) {
                w.insert(w.begin(), kHalvedNode);
                ways.push_back(std::move(w));
            }
        }
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
    std::vector<int> first;  // per part, its first node in the user's group
    bool halves = false;
    for (std::size_t g = 0; g < sc.cluster.groups.size(); ++g) {
        const Group& user = sc.cluster.groups[g];
        Group whole = user;
        for (int n : split[g]) whole.nodes -= n == kHalvedNode ? 1 : n;
        auto add = [&](const Group& part, int at) {
            out.cluster.groups.push_back(part);
            map.push_back(static_cast<int>(g));
            first.push_back(at);
        };
        if (whole.nodes > 0) add(whole, 0);
        int node = whole.nodes;
        for (int n : split[g]) {
            if (n == kHalvedNode) continue;
            Group part = user;
            part.nodes = n;
            add(part, node);
            node += n;
        }
        if (!split[g].empty() && split[g].front() == kHalvedNode) {
            // the group's last node as two groups of one node and half its GPUs, one node for the
            // links (group_first_node); the search keeps them next to each other (node_halves)
            Group half = user;
            half.nodes = 1;
            half.gpus_per_node = user.gpus_per_node / 2;
            add(half, node);
            add(half, node);
            halves = true;
        }
    }
    out.cluster.group_origin = map;
    if (halves) out.cluster.group_first_node = first;
    return out;
}

NodeHalves node_halves(const Cluster& cluster) {
    const int G = static_cast<int>(cluster.groups.size());
    NodeHalves h{std::vector<int>(G, -1), std::vector<int>(G, -1)};
    const auto& first = cluster.group_first_node;
    if (first.empty()) return h;
    for (int g = 0; g + 1 < G; ++g)
        if (cluster.group_origin[g] == cluster.group_origin[g + 1] && first[g] == first[g + 1]) {
            h.next[g] = g + 1;
            h.prev[g + 1] = g;
        }
    return h;
}

SpaceSize group_blocks_space_size(const Scenario& sc, bool tp_per_stage, const std::string& schedule, const std::string& node_counts,
                                  int group_blocks, bool split_nodes, bool empty_stages) {
    SearchOptions o;
    o.group_blocks = group_blocks;
    o.split_nodes = split_nodes;
    o.node_counts = node_counts;
    SpaceSize out;
    std::vector<int> map;
    for (const auto& split : group_block_splits(sc, o)) {
        add_space(out, grid_space_size(split_groups(sc, split, map), tp_per_stage, schedule, node_counts, 1, false, empty_stages));
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
        for (const auto& parts : s) groups += 1 + parts.size() + (!parts.empty() && parts.front() == kHalvedNode);
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
