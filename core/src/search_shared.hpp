// What the walkers of one search share (docs/search.md, "Results, time limit, threads, memory"): options, the top-K list, the
// clock, the stop flag, the memory account and the progress report; and the bound test every
// level of the walk applies. Internal to core/src.
#pragma once

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <limits>
#include <mutex>
#include <optional>
#include <vector>

#include "poseidon/search.hpp"
#include "search_bounds.hpp"
#include "search_costs.hpp"
#include "search_topk.hpp"

namespace poseidon::detail {

using Clock = std::chrono::steady_clock;
inline double seconds_since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

// A lower bound is a sum computed in another order than the DAG's longest path; a branch is cut
// only when its bound exceeds the threshold by this relative margin, far above rounding
// (docs/search.md, "Soundness").
inline constexpr double kBoundSlack = 1e-9;

// What the walkers of one search share: options, the top-K list, the clock, the stop flag, the
// memory account and the progress report. Every member may be used from any walker's thread.
struct Shared {
    Shared(const Scenario& s, const SearchOptions& o);

    const Scenario& sc;
    SearchOptions opt;
    TopK top;
    // When sc is a split of the user's scenario (options.group_blocks): the user's scenario, and
    // per group of sc the user's group it is part of; plans enter the top K in the user's groups.
    const Scenario* origin = nullptr;
    std::vector<int> group_map;
    Clock::time_point t0;
    // Time limit (docs/search.md, "Time limit"): the walk stops at soft_s once it has a plan,
    // and at hard_s without one; the rest of the limit is for the result.
    double soft_s = 0, hard_s = 0;
    std::int64_t cap_bytes = 0;              // memory cap
    std::atomic<std::int64_t> bytes{0};      // cost caches and contexts alive
    std::atomic<bool> stop{false};
    enum Why : int { kRunning = 0, kTime, kCancelled, kMemory, kError, kBudget };
    std::atomic<int> why{kRunning};
    std::atomic<std::int64_t> evaluated{0}, pruned{0};  // progress counts, flushed by the walkers
    std::atomic<std::int64_t> ticks{0};  // tree nodes of all walkers, counted every 256 (opt.node_budget)
    void count_ticks(std::int64_t n) {
        if (opt.node_budget > 0 && ticks.fetch_add(n, std::memory_order_relaxed) + n > opt.node_budget) halt(kBudget);
    }
    std::atomic<double> last_report_s{0};

    // soft_s less the time the result will take to list the plans found so far (0.1 ms a stage)
    double soft_deadline() const;
    // options.prune_above_s, raised to the last key of its tie bucket and a few ulps more: a plan
    // of another slice that ties it may still rank first by the tie-break, and its key, recomputed
    // here, must not be cut by rounding.
    double prune_above = kInf;
    // Lowers prune_above to `key` (relaxed the same way).
    void bound_above(double key) {
        if (key < kInf) prune_above = std::min(prune_above, std::max(tie_last(key), key * (1 + 8 * std::numeric_limits<double>::epsilon())));
    }
    double threshold() const { return std::min(top.threshold(), prune_above); }
    bool cut(double bound) const { return bound * (1 - kBoundSlack) >= threshold(); }
    void halt(Why w);
    // Stops the search past the time limit or the memory cap; reports progress every 0.25 s.
    void check_clock();
    // Calls opt.on_progress (one thread at a time); `periodic`: skipped if another thread just
    // reported; `may_cancel`: a false answer stops the search.
    void report(double t, bool periodic = false, bool may_cancel = true);

private:
    std::mutex report_m_;
    Found best_;  // the plan best_estimate_ is of (under report_m_)
    std::optional<Estimate> best_estimate_;
};

}  // namespace poseidon::detail
