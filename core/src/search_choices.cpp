// Training choices left to the search (docs/search.md, "Training choices"): the precision,
// Megatron-FSDP and the recomputation are searched as the grids are, once per choice, each search the
// whole pruned search with that choice's costs, bounded by the top K of the choices before it
// (as a slice is by the others': docs/search.md, "Shards"), so pruned = exhaustive holds per choice
// and for the merge. Without such options run_grid_set runs alone, untouched.
#include <algorithm>

#include "poseidon/combined_1f1b.hpp"
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

// Fewest recomputed activations first: where a plan fits with less recomputation it runs faster.
int recompute_rank(const TrainingChoice& c) {
    if (!c.recompute) return 0;
    switch (*c.recompute) {
        case Recompute::none: return 0;
        case Recompute::selective: return 1;
        case Recompute::full: return c.recompute_num_layers > 0 ? 2 : 3;
    }
    return 4;
}

std::string choice_text(const TrainingChoice& c) {
    std::string t = c.precision ? to_string(*c.precision) : std::string();
    const auto add = [&t](const std::string& part) { t += (t.empty() ? "" : " ") + part; };
    if (c.fsdp) add(*c.fsdp ? "with FSDP" : "without FSDP");
    if (c.recompute) add("recompute " + to_string(*c.recompute) + (c.recompute_num_layers > 0 ? " of " + std::to_string(c.recompute_num_layers) + (c.recompute_num_layers == 1 ? " block" : " blocks") : ""));
    return t;
}

// The recomputations searched: options.recomputes, then full of each N of
// options.recompute_num_layers; empty where the scenario's alone is.
std::vector<std::pair<std::optional<Recompute>, int>> recompute_choices(const Scenario& sc, const SearchOptions& options) {
    std::vector<std::pair<std::optional<Recompute>, int>> out;
    if (options.recomputes.empty() && options.recompute_num_layers.empty()) return {{std::nullopt, 0}};
    // block counts alone are searched beside the scenario's own recomputation
    if (options.recomputes.empty()) out.push_back({sc.training.recompute, sc.training.recompute == Recompute::full ? sc.training.recompute_num_layers : 0});
    for (Recompute r : options.recomputes) out.push_back({r, 0});
    for (int n : options.recompute_num_layers) {
        // the first n >= num_layers blocks of a stage are all of them: full recomputation, searched
        // once as such (run_grids notes it), not as a second choice that plans the same
        const std::pair<std::optional<Recompute>, int> c{Recompute::full, n < sc.model.num_layers ? n : 0};
        if (std::find(out.begin(), out.end(), c) == out.end()) out.push_back(c);
    }
    // Megatron-Core's combined 1F1B refuses full recomputation (check_combined_1f1b): not searched
    // beside it (run_grids notes it), and refused where nothing else is left
    if (sc.training.overlap_moe_expert_parallel_comm) {
        std::erase_if(out, [](const auto& c) { return c.first == Recompute::full; });
        if (out.empty()) {
            Problems problems;
            problems.add(options.recomputes.empty() ? "options.recompute_num_layers" : "options.recompute",
                         std::string("full recomputation only, which training.overlap_moe_expert_parallel_comm true does not allow (") + kCombinedRefusesFullWhy +
                             "); expected \"none\" or \"selective\" among the choices");
            problems.throw_if_any();
        }
    }
    return out;
}
}  // namespace

std::vector<TrainingChoice> training_choices(const Scenario& sc, const SearchOptions& options) {
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
    const auto recomputes = recompute_choices(sc, options);
    std::vector<TrainingChoice> out;
    for (const auto& f : fsdps)
        for (const auto& p : ps) {
            const std::size_t first = out.size();
            for (const auto& [r, n] : recomputes) out.push_back({p, f, r, n});
            std::stable_sort(out.begin() + static_cast<std::ptrdiff_t>(first), out.end(), [](const TrainingChoice& a, const TrainingChoice& b) {
                return std::make_pair(recompute_rank(a), a.recompute_num_layers) < std::make_pair(recompute_rank(b), b.recompute_num_layers);
            });
        }
    return out;
}

void apply(const TrainingChoice& c, Plan& plan) {
    plan.precision = c.precision;
    plan.fsdp = c.fsdp;
    plan.recompute = c.recompute;
    plan.recompute_num_layers.reset();
    if (c.recompute_num_layers > 0) plan.recompute_num_layers = c.recompute_num_layers;
}

SearchRun run_grids(const Scenario& sc, const SearchOptions& options, const std::function<SearchRun(const Scenario&, const SearchOptions&)>& run_one) {
    check_grid_options(sc, options);
    const auto choices = training_choices(sc, options);
    if (choices.size() == 1 && !choices[0].precision && !choices[0].fsdp && !choices[0].recompute) return run_grid_set(sc, options, run_one);
    std::string list;
    for (const auto& c : choices) list += (list.empty() ? "" : ", ") + choice_text(c);
    SearchRun out = run_in_turn(
        choices.size(), options,
        [&](std::size_t i, SearchOptions o) {
            Plan choice;
            apply(choices[i], choice);
            return run_grid_set(scenario_for_plan(sc, choice, "options"), o, run_one);
        },
        [&](std::size_t i, Plan& plan) { apply(choices[i], plan); });
    out.stats.notes.push_back("training choices searched: " + list + "; each plan carries its own (plan.precision, plan.fsdp, plan.recompute)");
    if (options.any_precision) {
        // what "any" left out, and why (a user beside H100s looking for MXFP8 finds it here)
        std::string left;
        for (Precision p : {Precision::fp8, Precision::fp8_delayed, Precision::fp8_blockwise, Precision::mxfp8, Precision::nvfp4}) {
            Problems refused;
            check_precision_support(sc, p, refused, "options.precisions", false);
            if (!refused.empty()) left += (left.empty() ? "" : "; ") + refused.items().front().message;
        }
        if (!left.empty()) out.stats.notes.push_back("options.precisions \"any\" searched the precisions every group runs, not: " + left);
    }
    if (options.chooses_precision()) {
        // the scenario's own precision is a default the search replaced (parse_scenario with
        // precision_chosen does not refuse it): say where it went
        const Precision own = sc.training.precision;
        Problems refused;
        check_precision_support(sc, own, refused, "training.precision", false);
        const bool searched = std::any_of(choices.begin(), choices.end(), [&](const TrainingChoice& c) { return c.precision == own; });
        if (!refused.empty())
            out.stats.notes.push_back("training.precision " + refused.items().front().message + "; the search chooses the precision (options.precisions), so no plan trains in it");
        else if (!searched)
            out.stats.notes.push_back("training.precision " + to_string(own) + " is not among options.precisions, so no plan trains in it");
    }
    const bool full_asked = !options.recompute_num_layers.empty() || std::find(options.recomputes.begin(), options.recomputes.end(), Recompute::full) != options.recomputes.end();
    if (sc.training.overlap_moe_expert_parallel_comm && full_asked)
        out.stats.notes.push_back("full recomputation not searched: training.overlap_moe_expert_parallel_comm (Megatron-Core's combined 1F1B) does not allow it");
    for (std::size_t i = 0; i < options.recompute_num_layers.size() && !sc.training.overlap_moe_expert_parallel_comm; ++i)
        if (options.recompute_num_layers[i] >= sc.model.num_layers)
            out.stats.notes.push_back("options.recompute_num_layers[" + std::to_string(i) + "] " + std::to_string(options.recompute_num_layers[i]) +
                                      " is at least the model's " + std::to_string(sc.model.num_layers) +
                                      " blocks: every block of every stage, searched as full recomputation");
    return out;
}

}  // namespace poseidon::detail
