// What the walkers of one search share (search_shared.hpp, `Shared`): the deadlines of the time
// limit and the memory cap, the stop flag and the progress report (docs/search.md, "Results,
// time limit, threads, memory").
#include <algorithm>
#include <mutex>

#include "poseidon/estimate.hpp"
#include "search_shared.hpp"

namespace poseidon::detail {

Shared::Shared(const Scenario& s, const SearchOptions& o) : sc(s), opt(o), top(o.top_k), t0(Clock::now()) {
    // 15 % of the limit (at most 1 s) is kept for the result; without a plan the walk may go on
    // until 95 % of the limit and 30 ms more (docs/search.md, "Time limit").
    const double L = o.time_limit_s;
    soft_s = L - std::min(0.15 * L, 1.0);
    hard_s = std::max(soft_s, 0.95 * L + 0.03);
    cap_bytes = static_cast<std::int64_t>(std::min(o.memory_cap_gib, 1e6) * 1073741824.0);
    bound_above(o.prune_above_s);
}

double Shared::soft_deadline() const {
    return soft_s - 1e-4 * static_cast<double>(std::min(top.stages(), search_max_listed_stages));
}

void Shared::halt(Why w) {
    int running = kRunning;
    why.compare_exchange_strong(running, w);
    stop.store(true);
}

void Shared::check_clock() {
    if (bytes.load(std::memory_order_relaxed) > cap_bytes) halt(kMemory);
    const double t = seconds_since(t0);
    if (t > soft_deadline() && (t > hard_s || top.any())) {
        halt(kTime);
        return;
    }
    if (opt.on_progress && t - last_report_s.load(std::memory_order_relaxed) >= 0.25) report(t, true);
}

void Shared::report(double t, bool periodic, bool may_cancel) {
    std::lock_guard<std::mutex> lock(report_m_);
    if (periodic && t - last_report_s.load(std::memory_order_relaxed) < 0.25) return;  // another thread just did
    last_report_s.store(t, std::memory_order_relaxed);
    SearchProgress p;
    p.evaluated = evaluated.load(std::memory_order_relaxed);
    p.pruned = pruned.load(std::memory_order_relaxed);
    p.elapsed_s = t;
    Found b;
    if (top.best(b)) {
        if (!best_estimate_ || b.seq != best_.seq) {
            best_estimate_ = estimate(origin ? *origin : sc, b.plan, false);
            best_ = std::move(b);
        }
        p.best = &*best_estimate_;
    }
    if (!opt.on_progress(p) && may_cancel) halt(kCancelled);
}

}  // namespace poseidon::detail
