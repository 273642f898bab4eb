// Training choices left to the search (docs/search.md, "Precision and FSDP as choices"): the
// precision and Megatron-FSDP are searched as the grids are, once per choice, each search the
// whole pruned search with that choice's costs, bounded by the top K of the choices before it
// (as a slice is by the others': docs/search.md, "Shards"), so pruned = exhaustive holds per choice
// and for the merge. Without such options run_grid_set runs alone, untouched.
#include <algorithm>

#include "poseidon/scenario.hpp"
#include "search_driver.hpp"

namespace poseidon::detail {

namespace {
// The search order: the faster rates first, so that their plans bound the slower choices' searches.
int speed_rank(Precision p) {
    switch (p) {
        case Precision::nvfp4: return 0;
        case Precision::mxfp8: return 1;
        case Precision::fp8: return 2;
        case Precision::fp8_delayed: return 3;
        case Precision::fp8_blockwise: return 4;
        case Precision::bf16: return 5;
        case Precision::fp16: return 6;
        case Precision::fp32: return 7;
    }
    return 8;
}

std::string choice_text(const std::optional<Precision>& p, const std::optional<bool>& fsdp) {
    std::string t = p ? to_string(*p) : std::string();
    if (fsdp) t += (t.empty() ? "" : " ") + std::string(*fsdp ? "with FSDP" : "without FSDP");
    return t;
}
}  // namespace

std::vector<std::pair<std::optional<Precision>, std::optional<bool>>> training_choices(const Scenario& sc, const SearchOptions& options) {
    std::vector<Precision> precisions;
    if (options.any_precision) {
        // every precision the whole cluster trains in with the stack; fp16 and fp32 only when named
        for (Precision p : {Precision::bf16, Precision::fp8, Precision::fp8_delayed, Precision::fp8_blockwise, Precision::mxfp8, Precision::nvfp4}) {
            Problems unsupported;
            check_precision_support(sc, p, unsupported, "options.precisions");
            if (unsupported.empty()) precisions.push_back(p);
        }
    } else {
        Problems problems;
        for (std::size_t i = 0; i < options.precisions.size(); ++i) {
            check_precision_support(sc, options.precisions[i], problems, "options.precisions[" + std::to_string(i) + "]");
            precisions.push_back(options.precisions[i]);
        }
        problems.throw_if_any();
    }
    std::stable_sort(precisions.begin(), precisions.end(), [](Precision a, Precision b) { return speed_rank(a) < speed_rank(b); });
    std::vector<std::optional<Precision>> ps(precisions.begin(), precisions.end());
    if (ps.empty()) ps.push_back(std::nullopt);
    // without FSDP first: where a plan fits without it, it trains faster (no per-block gathers)
    std::vector<std::optional<bool>> fsdps{std::nullopt};
    if (options.fsdp == "any") fsdps = {false, true};
    std::vector<std::pair<std::optional<Precision>, std::optional<bool>>> out;
    for (const auto& f : fsdps)
        for (const auto& p : ps) out.push_back({p, f});
    return out;
}

SearchRun run_grids(const Scenario& sc, const SearchOptions& options, const std::function<SearchRun(const Scenario&, const SearchOptions&)>& run_one) {
    const auto choices = training_choices(sc, options);
    if (choices.size() == 1 && !choices[0].first && !choices[0].second) return run_grid_set(sc, options, run_one);
    std::string list;
    for (const auto& [precision, fsdp] : choices) list += (list.empty() ? "" : ", ") + choice_text(precision, fsdp);
    SearchRun out = run_in_turn(
        choices.size(), options,
        [&](std::size_t i, SearchOptions o) {
            Plan choice;
            choice.precision = choices[i].first;
            choice.fsdp = choices[i].second;
            return run_grid_set(scenario_for_plan(sc, choice, "options"), o, run_one);
        },
        [&](std::size_t i, Plan& plan) { plan.precision = choices[i].first, plan.fsdp = choices[i].second; });
    out.stats.notes.push_back("training choices searched: " + list + "; each plan carries its own (plan.precision, plan.fsdp)");
    return out;
}

}  // namespace poseidon::detail
