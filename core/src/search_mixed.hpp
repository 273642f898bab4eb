// Shared by the two forms of stages that mix GPU types (options.mixed_stages; docs/search.md,
// "The space", step 7): one-stage plans (search_mixed.cpp) and pipelines of equal mixed stages
// (search_mixed_pipeline.cpp). Internal to core/src.
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <vector>

#include "poseidon/scenario.hpp"
#include "poseidon/search.hpp"
#include "search_topk.hpp"

namespace poseidon::detail {

struct MixedGroup {
    int g = 0, P = 0;
    std::vector<int> nodes, tps;
};

// The groups' choices: node counts (as in step 2) and TP degrees that divide a node and that the
// model allows.
std::vector<MixedGroup> mixed_groups(const Scenario& sc, const SearchOptions& opt);
// Calls fn(choice) for every subset of at least two groups, node count and TP per group; choice[i]
// = {group, nodes, tp} of the subset's i-th group. Stops (and returns false) when fn returns false.
bool for_each_choice(const std::vector<MixedGroup>& gs, const std::function<bool(const std::vector<std::array<int, 3>>&)>& fn);
// Calls fn(s) for every split s_i >= 1 of mbs samples with sum_i r_i s_i = mbs, until fn returns false.
void for_each_split(const std::vector<std::int64_t>& r, std::int64_t mbs, const std::function<bool(const std::vector<int>&)>& fn);
// Replicas of each group of a choice: its GPUs over its TP degree.
std::vector<std::int64_t> replica_counts(const Scenario& sc, const std::vector<std::array<int, 3>>& choice);

// The pipelines of S >= 2 equal mixed stages (search_mixed_pipeline.cpp): the stage counts S of a
// choice (each group's GPUs in S equal parts that hold whole TP groups and never straddle a node
// boundary), their search into `top`, and how many such plans there are (memory not checked).
std::vector<int> mixed_stage_counts(const Scenario& sc, const std::vector<std::array<int, 3>>& choice);
void search_mixed_pipelines(const Scenario& sc, const SearchOptions& opt, TopK& top, SearchStats& stats, const std::function<bool()>& halted);
double mixed_pipeline_space_size(const Scenario& sc, const SearchOptions& opt);

}  // namespace poseidon::detail
