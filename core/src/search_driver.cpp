// The driver of the plan search (search_driver.hpp; docs/search.md, "The method", "Threads",
// "Time limit", "Memory").
#include "search_driver.hpp"

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <exception>
#include <limits>
#include <map>
#include <system_error>
#include <thread>
#include <tuple>
#include <unordered_map>

#include "poseidon/scenario.hpp"
#include "search_util.hpp"

namespace poseidon::detail {

namespace {

// Tree nodes of the dive per micro-batch size, and of the broad dive per first block
// (docs/search.md, "Dive").
constexpr std::int64_t kDiveTicks = 4096;
constexpr std::int64_t kBroadTicks = 1024;
// ... and of the dive into the best plan's configuration
constexpr std::int64_t kBestTicks = 1024;

std::string gib(std::int64_t bytes) {
    char b[32];
    const double x = static_cast<double>(bytes);
    // four significant digits: a need just over the cap must not read as equal to it
    if (x >= 1073741824.0)
        std::snprintf(b, sizeof b, "%.4g GiB", x / 1073741824.0);
    else if (x >= 1048576.0)
        std::snprintf(b, sizeof b, "%.4g MiB", x / 1048576.0);
    else if (x >= 1024.0)
        std::snprintf(b, sizeof b, "%.4g KiB", x / 1024.0);
    else
        std::snprintf(b, sizeof b, "%lld bytes", static_cast<long long>(bytes));
    return b;
}

}  // namespace

Driver::Driver(const Scenario& sc, const SearchOptions& opt, int threads) : sh(sc, opt), threads_(std::max(1, threads)) {
    for (int k = 0; k < threads_; ++k) walkers_.push_back(std::make_unique<Walker>(sh, opt.exhaustive, threads_ == 1));
}

Driver::~Driver() = default;

void Driver::run() {
    const Scenario& sc = sh.sc;
    if (sc.cluster.groups.size() > 64) throw InputError("scenario.cluster.groups", "the search handles at most 64 groups");
    SearchStats elsewhere;  // counted by slice 0
    tps_ = group_tps(sc, counts_shared() ? stats_ : elsewhere);
    // With TP per stage, the pruned search widens the space in three passes, each a superset of
    // the one before: one degree per group, then degrees that never rise along a group's stages
    // (its first stages hold the most in-flight micro-batches, so they are the ones that may need
    // a higher degree), then every sequence. Each pass skips the configurations an earlier one
    // searched and cuts with the top K found so far, so under a time limit the answer is at least
    // that of the last finished pass. The result is the same as one pass over every sequence
    // (the differential test checks it against --exhaustive).
    if (sh.opt.tp_per_stage && !sh.opt.exhaustive) {
        bool first = true;
        for (TpMode mode : {TpMode::per_group, TpMode::non_increasing, TpMode::any}) {
            for (auto& w : walkers_) {
                w->tp_mode = mode;
                w->first_pass = first;
            }
            pass(first);
            if (sh.stop) return;
            first = false;
        }
        return;
    }
    for (auto& w : walkers_) w->tp_mode = sh.opt.tp_per_stage ? TpMode::any : TpMode::per_group;
    pass(true);
}

// The micro-batch sizes of a pass and what each needs in memory, before anything is allocated.
// A size over the cap on its own is skipped (the search refused when that leaves none); the
// contexts are all kept alive (`retain`) when they fit under the cap together.
std::vector<Driver::Slot> Driver::plan_slots(bool first, bool& retain) {
    const Scenario& sc = sh.sc;
    std::vector<Slot> slots;
    std::vector<std::int64_t> over;
    std::int64_t total = 0, walk_max = 0, least_over = 0;
    int index = -1;
    for (auto [mbs, m] : batch_shapes(sc.training)) {
        ++index;
        if (m > max_num_micro_batches) {
            if (first && counts_shared()) ++stats_.infeasible["micro-batches over limit"];
            continue;
        }
        Slot s;
        s.index = index;
        s.mbs = mbs;
        s.m = m;
        const std::int64_t ctx = ctx_bytes(sc, mbs, m, tps_, sh.opt.node_counts == "all"), walk = walker_bytes(sc, m);
        s.need = ctx + threads_ * walk;
        if (s.need > sh.cap_bytes) {
            if (over.empty() || s.need < least_over) least_over = s.need;
            over.push_back(mbs);
            continue;
        }
        total += ctx;
        walk_max = std::max(walk_max, walk);
        slots.push_back(std::move(s));
    }
    const std::string cap = gib(sh.cap_bytes) + " (--memory-cap, options.memory_cap_GiB)";
    if (!over.empty() && slots.empty())
        throw InputError("options.memory_cap_GiB", "the search needs at least " + gib(least_over) +
                                                       " for the cost tables of any micro-batch size, over the memory cap of " + cap +
                                                       "; raise the cap, or plan fewer layers or groups");
    skipped_ = skipped_ || !over.empty();
    if (!over.empty() && first) {
        std::string list;
        for (std::size_t k = 0; k < over.size(); ++k) list += (k ? ", " : "") + std::to_string(over[k]);
        notes_.push_back("micro-batch sizes " + list + " not searched: each needs at least " + gib(least_over) +
                         " for its cost tables, over the memory cap of " + cap);
    }
    retain = total + threads_ * walk_max <= sh.cap_bytes;
    if (!retain && first)
        notes_.push_back("the cost tables of all micro-batch sizes exceed the memory cap of " + cap +
                         " together: built, searched and freed one size at a time, smallest first, without the dive");
    return slots;
}

void Driver::build(Slot& s) {
    s.ctx = build_ctx(sh.sc, s.mbs, s.m, sh.opt.node_counts == "all", tps_, s.build, &sh.bytes, [this] {
        sh.check_clock();
        return sh.stop.load();
    }, sh.opt.empty_stages);
    if (s.ctx) {
        s.ctx->id = next_id_.fetch_add(1);
        set_schedules(*s.ctx, sh.sc, sh.opt.schedule);
    }
}

void Driver::free_ctx(std::unique_ptr<MbsCtx>& c) {
    if (!c) return;
    {
        std::lock_guard<std::mutex> lock(m_);
        stats_.cost_probes += c->costs->probes();
    }
    c.reset();
}

// One search over every micro-batch size: the contexts, the dive, then the full branch and bound.
void Driver::pass(bool first) {
    bool retain = true;
    std::vector<Slot> slots = plan_slots(first, retain);
    auto merge_build = [&](Slot& s) {
        // a later pass finds the same infeasible sizes and options again, and so does every
        // slice: count them once
        if (first && counts_shared())
            for (const auto& [k, v] : s.build.infeasible) stats_.infeasible[k] += v;
        stats_.cost_probes += s.build.cost_probes;
    };
    std::vector<Slot*> order;
    if (!retain) {  // one context at a time, smallest first
        std::stable_sort(slots.begin(), slots.end(), [](const Slot& a, const Slot& b) { return a.need < b.need; });
        for (Slot& s : slots) {
            build(s);
            merge_build(s);
            order.assign(1, &s);
            if (!sh.stop && s.ctx) walk_all(order);
            free_ctx(s.ctx);
            if (sh.stop) return;
        }
        return;
    }
    parallel(slots.size(), [&](Walker&, std::size_t i) {
        if (!sh.stop) build(slots[i]);
    });
    for (Slot& s : slots) {
        merge_build(s);
        if (!s.ctx) continue;
        order.push_back(&s);
        // (as if its dive had found them: walk_all's order of sizes)
        for (const SearchOptions::OrderHint& h : sh.opt.order_hints)
            if (h.micro_batch_size == s.mbs && h.num_micro_batches == s.m && h.key < s.ctx->best_key.load(std::memory_order_relaxed)) s.ctx->best_key.store(h.key, std::memory_order_relaxed);
    }
    const bool exhaustive = sh.opt.exhaustive;
    // Most promising micro-batch size first; ties by size.
    std::stable_sort(order.begin(), order.end(), [&](const Slot* a, const Slot* b) {
        if (exhaustive) return a->mbs < b->mbs;
        return a->ctx->root_order / a->ctx->scale < b->ctx->root_order / b->ctx->scale;
    });
    // Dive: a short, budgeted walk of every micro-batch size (the same best-first order,
    // abandoned after kDiveTicks nodes) seeds the top-K list with good plans of the space, so that
    // the full search below cuts from the start. Plans found again are not duplicated.
    const bool slice = sh.opt.shard_count > 0;
    // (a slice given a bound by the slices before it skips the dive: building the contexts and
    // diving them is what every slice repeats)
    if (!sh.stop && !exhaustive && (slice ? first && sh.prune_above == kInf : order.size() > 1)) {
        // a slice's dive crosses other slices' units: its configurations and infeasible plans are
        // theirs to count (its evaluations and cuts are work done, and stay)
        std::vector<std::pair<std::int64_t, std::map<std::string, std::int64_t>>> before;
        for (auto& w : walkers_) before.push_back({w->stats.configurations, w->stats.infeasible});
        // First broad and greedy: a short dive below every first block of every micro-batch
        // size, best bound first, one balanced layer split per configuration. A walk that
        // starts in the wrong micro-batch size or group order otherwise keeps a plan many times
        // the optimum for seconds (4 types x 4096 GPUs x 80 layers: 46 s against 6.4 s within
        // a 2 s limit), and every cut waits for the threshold.
        std::vector<Task> firsts;
        for_roots(order, nullptr, false, [&](std::size_t, MbsCtx& c) {
            Task root;
            root.ctx = &c;
            walkers_[0]->expand(c, root, firsts);
        });
        std::stable_sort(firsts.begin(), firsts.end(), [](const Task& a, const Task& b) { return a.order / a.ctx->scale < b.order / b.ctx->scale; });
        parallel(firsts.size(), [&](Walker& w, std::size_t i) {
            if (!sh.stop) w.run_task(firsts[i], kBroadTicks, true);
        });
        parallel(order.size(), [&](Walker& w, std::size_t i) {
            MbsCtx& c = *order[i]->ctx;
            if (!sh.stop && !sh.cut(c.root_bound / c.scale)) w.walk(c, kDiveTicks);
        });
        // A slice dives the whole space too, but lists only plans of its own units: the dive's
        // K-th key (of K distinct plans, so no lower than the whole search's) bounds the slice, as
        // options.prune_above_s does, and its plans go (docs/search.md, "Shards"). Only in the
        // first pass: later ones would drop the slice's own plans.
        if (slice && sh.opt.shard_count > 1) {  // one slice of 1 owns every plan: it keeps them
            if (static_cast<int>(sh.top.list().size()) >= sh.top.k()) sh.bound_above(sh.top.threshold());
            sh.top.clear();
            for (std::size_t k = 0; k < walkers_.size(); ++k) std::tie(walkers_[k]->stats.configurations, walkers_[k]->stats.infeasible) = before[k];
            for (Slot* s : order) s->ctx->dive_configs.clear();
        }
    }
    if (!sh.stop && !exhaustive && !slice && sh.top.k() > 1) dive_best_config(order);
    if (!sh.stop) walk_all(order);
    for (Slot& s : slots) free_ctx(s.ctx);
}

// The dive into the best plan's configuration (docs/search.md, "Dive"): near-equal splits of one
// configuration (which of a run of equal stages hold one layer more) differ by fractions of a
// percent. While the K-th plan is far above the best, the full walk has to list every split of
// such a run that lies between them before it reaches the configurations of the optimum; the
// best plan's own near-equal splits, found first, bring the K-th plan down to it.
void Driver::dive_best_config(std::vector<Slot*>& order) {
    Found best;
    if (!sh.group_map.empty() || !sh.top.best(best)) return;  // (a split's plans are in the user's groups)
    for (Slot* s : order)
        if (s->mbs == best.plan.micro_batch_size && s->m == best.plan.num_micro_batches) walkers_[0]->dive_config_of(*s->ctx, best.plan, kBestTicks);
}

void Driver::for_roots(std::vector<Slot*>& order, std::unordered_map<const MbsCtx*, std::size_t>* index, bool count,
                       const std::function<void(std::size_t, MbsCtx&)>& fn) {
    for (std::size_t k = 0; k < order.size(); ++k) {
        MbsCtx& c = *order[k]->ctx;
        if (index) (*index)[&c] = k;
        if (!sh.opt.exhaustive && sh.cut(c.root_bound / c.scale)) {
            if (count) ++stats_.pruned;
            continue;
        }
        fn(k, c);
    }
}

// The full walk of the contexts in `order`, each freed when its walk is done. One thread walks
// them in turn; several share tasks: the subtrees below the first one or two layout levels, in
// the same best-first order (docs/search.md, "Threads").
void Driver::walk_all(std::vector<Slot*>& order) {
    const bool exhaustive = sh.opt.exhaustive;
    if (sh.opt.shard_count > 0) {
        walk_shard(order);
        return;
    }
    // The sizes whose dives found the best plans first (the root bounds of the 4-type sweep shapes
    // lie within 0.1 % of each other: 4 x 4096 x 80 walked micro-batch 256 whole, with the K-th
    // plan 2 % above the optimum, before 128, which holds it and where the dive found its best);
    // the others after them in the order they came.
    if (!exhaustive)
        std::stable_sort(order.begin(), order.end(), [](const Slot* a, const Slot* b) {
            return a->ctx->best_key.load(std::memory_order_relaxed) < b->ctx->best_key.load(std::memory_order_relaxed);
        });
    if (threads_ == 1) {
        // the configurations deferred in any size are split again after every size is walked
        // (search_deferred.cpp), so the walked sizes' contexts are kept until then: they were all
        // built, within the memory cap, for the dives before this walk
        Walker& w = *walkers_[0];
        w.defer_to_end = true;
        for (Slot* s : order) {
            if (sh.stop) break;
            if (!exhaustive && sh.cut(s->ctx->root_bound / s->ctx->scale)) {
                ++stats_.pruned;
                free_ctx(s->ctx);
                continue;
            }
            w.walk(*s->ctx);
        }
        w.split_deferred();
        w.defer_to_end = false;
        for (Slot* s : order) free_ctx(s->ctx);
        return;
    }
    Walker& w0 = *walkers_[0];
    std::vector<Task> tasks, finer;
    std::unordered_map<const MbsCtx*, std::size_t> index;
    for_roots(order, &index, true, [&](std::size_t, MbsCtx& c) {
        Task root;
        root.ctx = &c;
        w0.expand(c, root, tasks);
    });
    if (tasks.size() < 16 * static_cast<std::size_t>(threads_)) {
        for (const Task& t : tasks) {
            if (t.stop_here)
                finer.push_back(t);
            else if (!exhaustive && sh.cut(t.bound / t.ctx->scale))
                ++stats_.pruned;
            else
                w0.expand(*t.ctx, t, finer);
        }
        tasks.swap(finer);
    }
    run_tasks(order, index, tasks);
}

// Runs `tasks` (of the contexts in `order`) on the walkers, freeing each context after its last task.
void Driver::run_tasks(std::vector<Slot*>& order, const std::unordered_map<const MbsCtx*, std::size_t>& index, std::vector<Task>& tasks) {
    std::vector<std::atomic<int>> left(order.size());
    for (const Task& t : tasks) ++left[index.at(t.ctx)];
    for (std::size_t k = 0; k < order.size(); ++k)
        if (left[k] == 0) free_ctx(order[k]->ctx);
    parallel(tasks.size(), [&](Walker& w, std::size_t i) {
        w.run_task(tasks[i]);
        const std::size_t k = index.at(tasks[i].ctx);
        if (left[k].fetch_sub(1) == 1) free_ctx(order[k]->ctx);
    });
    for (auto& w : walkers_) w->leave();
}

void Driver::parallel(std::size_t n, const std::function<void(Walker&, std::size_t)>& fn) {
    std::atomic<std::size_t> next{0};
    std::exception_ptr error;
    std::mutex error_m;
    auto body = [&](Walker& w) {
        try {
            for (std::size_t i; (i = next.fetch_add(1)) < n;) fn(w, i);
        } catch (...) {
            std::lock_guard<std::mutex> lock(error_m);
            if (!error) error = std::current_exception();
            sh.halt(Shared::kError);
        }
    };
    std::vector<std::thread> threads;
    const std::size_t want = std::min<std::size_t>(walkers_.size(), n);
    for (std::size_t k = 1; k < want; ++k) {
        try {
            threads.emplace_back(body, std::ref(*walkers_[k]));
        } catch (const std::system_error&) {
            break;  // no threads here (e.g. WebAssembly without them): the others do the work
        }
    }
    used_threads_ = std::max(used_threads_, static_cast<int>(threads.size()) + 1);
    if (n > 0) body(*walkers_[0]);
    for (auto& t : threads) t.join();
    if (error) std::rethrow_exception(error);
}

void Driver::final_report() {
    if (!sh.opt.on_progress || sh.why.load() == Shared::kCancelled) return;
    for (auto& w : walkers_) w->flush();
    sh.report(seconds_since(sh.t0), false, false);
}

SearchStats Driver::stats() {
    SearchStats out = stats_;
    for (auto& w : walkers_) {
        w->leave();
        add_stats(out, w->stats);  // a walker's are counts only; the rest is the driver's, below
    }
    out.notes = notes_;
    out.threads = used_threads_;
    switch (sh.why.load()) {
        case Shared::kTime: out.stopped_by = "time limit"; break;
        case Shared::kCancelled: out.stopped_by = "cancelled"; break;
        case Shared::kBudget: out.stopped_by = "node budget"; break;
        case Shared::kMemory:
            out.stopped_by = "memory cap";
            out.notes.push_back("stopped: the cost caches reached the memory cap of " + gib(sh.cap_bytes));
            break;
        default: break;
    }
    out.cancelled = out.stopped_by == "cancelled";
    // micro-batch sizes skipped for the memory cap leave the search incomplete too
    out.complete = out.stopped_by.empty() && !skipped_;
    return out;
}

}  // namespace poseidon::detail
