// The entry points of the plan search (search.hpp): search() runs the driver and builds the
// result within the time limit (docs/search.md, "Results"); ridge_report() runs the layer split
// of one configuration with and without bounds (docs/search.md, "The ridge walk").
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <system_error>
#include <thread>

#include "poseidon/combined_1f1b.hpp"
#include "poseidon/scenario.hpp"
#include "search_driver.hpp"

namespace poseidon {

using detail::Clock;

namespace {
// Whether this platform starts threads at all (WebAssembly without them does not): tried once.
bool threads_start() {
    static const bool ok = [] {
        try {
            std::thread t([] {});
            t.join();
            return true;
        } catch (const std::system_error&) {
            return false;
        }
    }();
    return ok;
}
}  // namespace

int search_threads(const SearchOptions& options) {
    const int n = options.threads > 0 ? options.threads : static_cast<int>(std::thread::hardware_concurrency());
    return n > 1 && threads_start() ? std::min(n, 256) : 1;
}

namespace detail {

namespace {
// the timeline's JSON takes about 5 us an event: at most a tenth of the time limit
std::int64_t timeline_cap(const SearchOptions& options) {
    return static_cast<std::int64_t>(std::min(static_cast<double>(search_max_timeline_events), 2e4 * options.time_limit_s));
}
}  // namespace

void list_found(const Scenario& sc, const std::vector<Found>& found, const SearchOptions& options, Clock::time_point t0, SearchResult& res) {
    std::int64_t stages = 0;
    bool big_noted = false;
    const std::int64_t timeline_cap = detail::timeline_cap(options);
    for (std::size_t k = 0; k < found.size(); ++k) {
        const auto S = static_cast<std::int64_t>(found[k].plan.stages.size());
        if (k > 0 && stages + S > search_max_listed_stages) {
            res.stats.notes.push_back("plans " + std::to_string(k + 1) + " to " + std::to_string(found.size()) +
                                      " not listed: a result lists at most " + std::to_string(search_max_listed_stages) + " stages");
            break;
        }
        // A search the time limit stopped lists what the limit's tolerance leaves time for (about
        // 0.1 ms a stage); the best plan always.
        if (k > 0 && !res.stats.complete &&
            seconds_since(t0) + 1e-4 * static_cast<double>(stages + S) > 1.1 * options.time_limit_s + 0.04) {
            res.stats.notes.push_back("plans " + std::to_string(k + 1) + " to " + std::to_string(found.size()) +
                                      " not listed: no time left within the time limit");
            break;
        }
        stages += S;
        const bool detailed = S * found[k].plan.num_micro_batches <= search_max_detailed_cells;
        if (!detailed && !big_noted) {
            big_noted = true;
            res.stats.notes.push_back("plans over " + std::to_string(search_max_detailed_cells) +
                                      " stage x micro-batch cells are listed without breakdown and timeline (estimate gives them)");
        }
        Estimate e = estimate(sc, found[k].plan, detailed);
        if (k == 0 && (!detailed || static_cast<std::int64_t>(e.dag.timeline.size()) > timeline_cap)) {
            res.timeline = false;
            if (detailed)
                res.stats.notes.push_back("timeline of the best plan left out: " + std::to_string(e.dag.timeline.size()) + " events, over " +
                                          std::to_string(timeline_cap) + " (estimate gives it in full)");
        }
        if (k > 0 || !res.timeline) std::vector<TimelineEvent>().swap(e.dag.timeline);
        res.detailed.push_back(detailed);
        res.plans.push_back(std::move(e));
        res.scores.push_back(found[k].dag_time);
    }
}

void add_stats(SearchStats& total, const SearchStats& s) {
    total.evaluated += s.evaluated;
    total.pruned += s.pruned;
    total.configurations += s.configurations;
    total.cost_probes += s.cost_probes;
    total.threshold_capped += s.threshold_capped;
    total.groups_cut += s.groups_cut;
    total.pretest_cut += s.pretest_cut;
    for (const auto& [k, v] : s.infeasible) total.infeasible[k] += v;
    for (const auto& n : s.notes)
        if (std::find(total.notes.begin(), total.notes.end(), n) == total.notes.end()) total.notes.push_back(n);
    total.threads = std::max(total.threads, s.threads);
    total.complete = total.complete && s.complete;
    if (total.stopped_by.empty()) total.stopped_by = s.stopped_by;
    total.cancelled = total.cancelled || s.cancelled;
}

void add_baselines(const Scenario& sc, const SearchOptions& options, Clock::time_point t0, double soft_deadline_s, SearchResult& res) {
    if (!options.baselines) return;
    // at most 5 s, until a third of the result's reserve (the rest is for the JSON, the baselines' too)
    const double until = soft_deadline_s + (options.time_limit_s - soft_deadline_s) / 3;
    const double left = std::min(until - seconds_since(t0), 5.0);
    // A search that chooses the precision does not refuse the scenario's own (parse_scenario with
    // precision_chosen); where a group cannot run it, the baselines train in the best plan's (bf16
    // without one), and their plans say so, as the search's do.
    std::optional<Precision> chosen;
    if (options.chooses_precision()) {
        Problems refused;
        check_precision_support(sc, sc.training.precision, refused, "training.precision");
        if (!refused.empty()) chosen = !res.plans.empty() && res.plans.front().plan.precision ? *res.plans.front().plan.precision : Precision::bf16;
    }
    if (!chosen) {
        res.baselines = compute_baselines(sc, left > 0.005 ? left : 0.0);
        return;
    }
    Plan choice;
    choice.precision = chosen;
    res.baselines = compute_baselines(scenario_for_plan(sc, choice, "options"), left > 0.005 ? left : 0.0);
    for (Baseline& b : res.baselines) {
        b.description += " Trained in " + to_string(*chosen) + ", the best plan's precision: training.precision " + to_string(sc.training.precision) + " cannot run on every group.";
        if (b.estimate) b.estimate->plan.precision = chosen;
    }
}

// A search the limit stopped may list plans slower than the baselines beside them: a baseline
// plan ranks among the plans then (docs/search.md, "Baselines"), so that no plan shown as a
// baseline beats the best one, and a stopped search that found none still gives a plan.
void adopt_baselines(const Scenario& sc, const SearchOptions& options, Clock::time_point t0, SearchResult& res) {
    if (res.stats.complete) return;
    const double B = static_cast<double>(sc.training.global_batch_size);
    const auto key = [B](const Estimate& e) {  // the search's ranking key: seconds per global_batch_size samples
        return e.iteration_time_s * B / static_cast<double>(e.plan.micro_batch_size * e.plan.num_micro_batches);
    };
    const auto k_max = static_cast<std::size_t>(std::max(options.top_k, 1));
    // The notes name plans by their final rank, written after every adoption: a later baseline can
    // move an adopted one down or out of the list.
    std::vector<const Baseline*> adopted, unlisted;
    for (const Baseline& b : res.baselines) {
        if (!b.estimate || !b.estimate->feasible) continue;
        const Estimate& e = *b.estimate;
        if (options.schedule != "any" && e.plan.schedule != options.schedule) continue;
        if (std::any_of(res.plans.begin(), res.plans.end(), [&](const Estimate& p) { return p.plan == e.plan; })) continue;
        std::size_t at = 0;
        while (at < res.plans.size() && key(res.plans[at]) <= key(e)) ++at;
        if (at >= k_max) continue;
        // Writing the result costs about 0.1 ms a stage listed (list_found), the baselines' own
        // included; a listed plan doubles that of its baseline. Without the time for it, the
        // baseline stays a baseline, and a note says it is faster.
        std::int64_t listed_stages = 0;
        for (const Estimate& p : res.plans) listed_stages += static_cast<std::int64_t>(p.plan.stages.size());
        for (const Baseline& o : res.baselines)
            if (o.estimate) listed_stages += static_cast<std::int64_t>(o.estimate->plan.stages.size());
        const auto S = static_cast<std::int64_t>(e.plan.stages.size());
        const double list_s = 2e-4 * static_cast<double>(listed_stages + S);
        if (seconds_since(t0) + list_s > options.time_limit_s) {
            unlisted.push_back(&b);
            continue;
        }
        bool detailed = false;
        Estimate listed = e;
        if (at == 0) {  // the best plan carries the breakdown and the timeline, when the limit leaves time
            const auto cells = S * e.plan.num_micro_batches;
            // 5 us a timeline event, two or more a cell (list_found)
            const double cost_s = 1e-5 * static_cast<double>(cells);
            if (cells <= search_max_detailed_cells && seconds_since(t0) + list_s + cost_s <= options.time_limit_s) {
                listed = estimate(sc, e.plan, true);
                detailed = true;
            }
            res.timeline = detailed && static_cast<std::int64_t>(listed.dag.timeline.size()) <= timeline_cap(options);
            if (!res.timeline) {
                std::vector<TimelineEvent>().swap(listed.dag.timeline);
                res.stats.notes.push_back(std::string("timeline of the best plan left out: ") +
                                          (cells > search_max_detailed_cells ? "over " + std::to_string(search_max_detailed_cells) + " stage x micro-batch cells"
                                           : detailed                        ? "over the timeline cap"
                                                                             : "no time left within the time limit") +
                                          " (estimate gives it)");
            }
            if (!res.plans.empty()) std::vector<TimelineEvent>().swap(res.plans.front().dag.timeline);
        }
        res.plans.insert(res.plans.begin() + static_cast<std::ptrdiff_t>(at), std::move(listed));
        res.detailed.insert(res.detailed.begin() + static_cast<std::ptrdiff_t>(at), detailed);
        res.scores.insert(res.scores.begin() + static_cast<std::ptrdiff_t>(at), e.iteration_time_s);
        if (res.plans.size() > k_max) {
            res.plans.pop_back();
            res.detailed.pop_back();
            res.scores.pop_back();
        }
        adopted.push_back(&b);
    }
    const std::string stopped = res.stats.stop_reason();
    for (std::size_t i = 0; i < res.plans.size(); ++i)
        for (const Baseline* b : adopted)
            if (res.plans[i].plan == b->estimate->plan)
                res.stats.notes.push_back("plan " + std::to_string(i + 1) + " is the " + b->name + " baseline: the search stopped (" + stopped +
                                          ") before it reached a plan as fast");
    for (const Baseline* b : unlisted) {
        std::size_t at = 0;
        while (at < res.plans.size() && key(res.plans[at]) <= key(*b->estimate)) ++at;
        if (at < res.plans.size())
            res.stats.notes.push_back("the " + b->name + " baseline is faster than plan " + std::to_string(at + 1) +
                                      "; the time limit left no time to list it among the plans");
    }
}

// What the schedule leaves out: under the combined 1F1B every plain 1F1B pipeline; a search
// restricted to interleaving that found nothing: the constraints that remove the plans are the
// schedule's, not the counts' (a plan of one stage or one micro-batch is counted nowhere).
void explain_empty(const Scenario& sc, const SearchOptions& options, SearchResult& res) {
    // the combined 1F1B leaves pipelines to the interleaved schedule (validate_plan)
    if (merges_passes(sc))
        res.stats.notes.push_back(std::string("training.overlap_moe_expert_parallel_comm: a pipeline runs only under interleaved 1F1B (Megatron-Core), so plain 1F1B plans have one stage") +
                                  (options.schedule == "1f1b" ? "; with --schedule 1f1b no pipeline is searched" : ""));
    if (sc.training.fsdp && options.schedule != "1f1b")
        res.stats.notes.push_back(std::string("training.fsdp: only 1F1B plans are searched (interleaved 1F1B with Megatron-FSDP's per-block gathers is not modelled)") +
                                  (options.schedule == "interleaved-1f1b" ? ", so --schedule interleaved-1f1b finds none" : ""));
    if (!res.plans.empty() || options.schedule != "interleaved-1f1b" || sc.training.fsdp) return;
    res.stats.notes.push_back("interleaved 1F1B (--schedule interleaved-1f1b) needs at least 2 stages, a micro-batch count that is a multiple of the stage count, and " +
                              std::to_string(sc.model.num_layers) + " layers split into V >= 2 equal chunks per stage; plain 1F1B (--schedule any) has no such limits");
}

// An exact batch with fewer factors of two than the largest group has GPUs: every stage's
// data-parallel degree divides the batch, so such a batch (a prime 1021, or 1000 = 8 x 125 on
// groups of 64 GPUs) can leave the plans with fewer replicas and more stages than a batch a few
// percent away, and nothing else would tell the user why. The note names the tolerance that
// reaches the nearest multiple of that power of two, where it lies within 5 %.
void explain_batch(const Scenario& sc, SearchResult& res) {
    const Training& t = sc.training;
    if (t.global_batch_tolerance > 0 || t.global_batch_size < 2) return;
    std::int64_t gpus = 0;
    for (const Group& g : sc.cluster.groups) gpus = std::max<std::int64_t>(gpus, static_cast<std::int64_t>(g.nodes) * g.gpus_per_node);
    std::int64_t pow2 = 1;  // the largest power of two in the largest group
    while (pow2 * 2 <= gpus) pow2 *= 2;
    const std::int64_t B = t.global_batch_size;
    std::int64_t factor = 1;  // B's power-of-two factor, up to pow2
    while (factor < pow2 && B % (factor * 2) == 0) factor *= 2;
    if (factor >= pow2 || B < pow2) return;
    const std::int64_t below = B / pow2 * pow2, above = below + pow2;
    const std::int64_t near = B - below <= above - B && below > 0 ? below : above;
    if (std::abs(near - B) * 20 > B) return;
    Training wider = t;  // the tolerance in thousandths that the search's own range says reaches it
    for (int milli = 1; milli <= 50; ++milli) {
        wider.global_batch_tolerance = milli / 1000.0;
        const auto [lo, hi] = global_batch_range(wider);
        if (lo > near || near > hi) continue;
        char tol[16];
        std::snprintf(tol, sizeof tol, "%.3f", wider.global_batch_tolerance);
        res.stats.notes.push_back("training.global_batch_size " + std::to_string(B) + (factor == 1 ? " is odd" : " has only " + std::to_string(factor) + " as its power-of-two factor") +
                                  ", where the largest group has " + std::to_string(gpus) +
                                  " GPUs: every stage's data-parallel degree divides the batch, so plans may run fewer replicas and more stages than at " +
                                  std::to_string(near) + "; training.global_batch_tolerance " + tol + " lets the search train any batch from " + std::to_string(lo) +
                                  " to " + std::to_string(hi) + ", " + std::to_string(near) + " among them, ranked by tokens/s");
        return;
    }
}

}  // namespace detail

SearchResult search(const Scenario& sc, const SearchOptions& options) {
    if (options.shard_count > 0) throw InputError("options.shard_count", "a slice of the search is run by search_shard, not search");
    SearchResult res;
    const detail::SearchRun run = detail::run_parallel_grids(sc, options, search_threads(options));
    res.stats = run.stats;
    // The result: each listed plan re-estimated (the first with its timeline), within the caps.
    detail::list_found(sc, run.found, options, run.t0, res);
    detail::add_baselines(sc, options, run.t0, run.soft_deadline_s, res);
    detail::adopt_baselines(sc, options, run.t0, res);
    detail::explain_empty(sc, options, res);
    detail::explain_batch(sc, res);
    for (auto& n : scenario_notes(sc)) res.stats.notes.push_back(std::move(n));
    res.stats.elapsed_s = detail::seconds_since(run.t0);
    return res;
}

namespace {

// The split search of `plan`'s configuration alone, with or without bounds.
struct SingleRun {
    SearchStats stats;
    std::vector<detail::Found> found;
};
SingleRun run_single(const Scenario& scenario, const Plan& plan, int top_k, bool exhaustive, std::vector<std::vector<int>>* visited) {
    // the walk builds every stage on one grid: the plan's (its first stage's; the walk refuses
    // stages of mixed replicas, and a search's plans have one grid)
    Scenario sc = scenario;
    if (!plan.stages.empty()) sc.search_cp = plan.stages[0].cp, sc.search_ep = plan.stages[0].ep, sc.search_etp = plan.stages[0].etp;
    SearchOptions o;
    o.top_k = top_k;
    o.time_limit_s = 1e9;
    o.memory_cap_gib = 1e6;
    detail::Shared sh(sc, o);
    detail::MbsCtx c;
    c.mbs = plan.micro_batch_size;
    c.m = plan.num_micro_batches;
    c.costs = std::make_unique<detail::Costs>(sc, c.mbs, c.m);
    detail::Walker w(sh, exhaustive, true);
    w.run_single(c, plan, visited);
    SingleRun out;
    out.stats = w.stats;
    out.found = sh.top.list();
    return out;
}

}  // namespace

RidgeReport ridge_report(const Scenario& sc, const Plan& plan, int top_k, std::int64_t max_points) {
    RidgeReport rep;
    std::vector<std::vector<int>> visited;
    const SingleRun ridge = run_single(sc, plan, top_k, false, &visited);
    rep.ridge_evaluations = ridge.stats.evaluated;
    if (!ridge.found.empty()) {
        rep.best_time_s = ridge.found.front().time;
        for (const auto& st : ridge.found.front().plan.stages) rep.best_layers.push_back(st.num_layers);
    }
    // Every split, through the same machinery without bounds (top-K of everything).
    const int S = static_cast<int>(plan.stages.size());
    double count = 1;  // C(L-1, S-1)
    for (int i = 1; i < S; ++i) count = count * (sc.model.num_layers - i) / i;
    std::vector<std::vector<int>> every;
    const SingleRun ex = run_single(sc, plan, 100, true, count <= static_cast<double>(max_points) ? &every : nullptr);
    rep.exhaustive_evaluations = ex.stats.evaluated;
    if (!ex.found.empty()) rep.exhaustive_best_time_s = ex.found.front().time;
    if (count <= static_cast<double>(max_points)) {
        std::sort(visited.begin(), visited.end());
        // Re-evaluate every composition (including the ones that do not fit) with estimate.
        std::vector<int> l(S, 1);
        std::function<void(int, int)> rec = [&](int k, int R) {
            if (k == S - 1) {
                l[k] = R;
                Plan p = plan;
                for (int j = 0; j < S; ++j) p.stages[j].num_layers = l[j];
                SplitPoint pt;
                pt.layers = l;
                Estimate e = estimate(sc, p, false);
                pt.iteration_time_s = e.memory_fits ? e.iteration_time_s : detail::kInf;
                pt.visited = std::binary_search(visited.begin(), visited.end(), l);
                rep.points.push_back(std::move(pt));
                return;
            }
            for (int x = 1; x <= R - (S - k - 1); ++x) {
                l[k] = x;
                rec(k + 1, R - x);
            }
        };
        rec(0, sc.model.num_layers);
    }
    return rep;
}

}  // namespace poseidon
