// The top-K reduction of the search (docs/search.md, "Results"): the K best distinct plans found
// so far, and the threshold that every bound of the walk is compared with. Shared by the walkers
// of a parallel search: insertions take a lock, the threshold is read without one. Plans are
// ordered by time, ties (times within a tie bucket) by plan_less, so the list a complete search
// ends with is the same whatever order the plans were found in (one thread or many). Internal to
// core/src.
#pragma once

#include <atomic>
#include <cstring>
#include <cstdint>
#include <limits>
#include <mutex>
#include <vector>

#include "poseidon/types.hpp"

namespace poseidon::detail {

// A total order on the search's plans (micro-batch size, stage count, then per stage group, TP,
// GPUs and layers): the tie-break between plans of equal time.
bool plan_less(const Plan& a, const Plan& b);

// Keys that agree in all but the last kTieBits bits of their mantissa (within 1.5e-8 to 3e-8 of
// each other, relative) are ties, ranked by plan_less (docs/search.md, "Results", ties): the
// buckets are fixed by the bits, so the order stays total and the same for every walk and
// platform. A bucket 15 to 30 times wider than the bounds' slack (kBoundSlack) lets a bound
// that is tight on a plateau of exact ties prove that a tie loses the tie-break without its DAG
// (Walker::tie_cut). Keys are positive (times, or times per sample).
inline constexpr int kTieBits = 27;
// (memcpy, not std::bit_cast: the wasm build's libc++ has none)
inline std::uint64_t key_bits(double key) {
    std::uint64_t u = 0;
    std::memcpy(&u, &key, sizeof u);
    return u;
}
inline double bits_key(std::uint64_t u) {
    double key = 0;
    std::memcpy(&key, &u, sizeof key);
    return key;
}
inline std::uint64_t tie_bucket(double key) { return key_bits(key) >> kTieBits; }
// the first and the last key of key's bucket (infinity: itself)
inline double tie_first(double key) { return key < std::numeric_limits<double>::infinity() ? bits_key(tie_bucket(key) << kTieBits) : key; }
inline double tie_last(double key) {
    return key < std::numeric_limits<double>::infinity() ? bits_key(((tie_bucket(key) + 1) << kTieBits) - 1) : key;
}
// Whether a plan of key t ranks before one of key u: by bucket, then by plan_less.
inline bool ranks_before(double t, const Plan& p, double u, const Plan& q) {
    const std::uint64_t a = tie_bucket(t), b = tie_bucket(u);
    return a != b ? a < b : plan_less(p, q);
}

// One entry of the top-K list.
struct Found {
    double time = 0;      // the ranking key: seconds per global_batch_size samples (the iteration time without a tolerance)
    double dag_time = 0;  // the plan's iteration time (its DAG), for the samples it trains
    std::int64_t seq = 0;  // order of insertion (progress reports)
    Plan plan;
};

class TopK {
public:
    explicit TopK(int k) : k_(k < 1 ? 1 : k) {}

    int k() const { return k_; }
    // The last key of the K-th best plan's tie bucket (infinite while fewer than K plans are
    // known): a plan of a larger key cannot enter. Never rises.
    double threshold() const { return thr_.load(std::memory_order_relaxed); }
    // When the list changed since `version` (updated): its K-th entry into `out` (time infinite
    // while it holds fewer than K), and true.
    bool kth_if_changed(std::uint64_t& version, Found& out) const;
    // Whether a plan of this time could enter the list (cheap test before building the plan).
    bool admits(double time) const { return time <= threshold(); }
    // Inserts a plan unless it is already listed (a plan of the dive found again, or found by two
    // threads) or does not enter. Returns true when it is the new best.
    // `time`: the ranking key; `dag_time`: the plan's iteration time (negative: the key).
    bool insert(double time, Plan&& plan, double dag_time = -1);

    std::vector<Found> list() const;
    bool empty() const;
    bool any() const { return any_.load(std::memory_order_relaxed); }  // without the lock
    std::int64_t stages() const { return stages_.load(std::memory_order_relaxed); }  // of the listed plans
    // A copy of the best entry (false when there is none).
    bool best(Found& out) const;
    // Empties the list (a slice's dive of the whole space, search_driver.cpp).
    void clear();

private:
    int k_;
    mutable std::mutex m_;
    std::atomic<double> thr_{std::numeric_limits<double>::infinity()};
    std::atomic<bool> any_{false};
    std::atomic<std::int64_t> stages_{0};
    std::int64_t seq_ = 0;
    std::atomic<std::uint64_t> version_{0};  // bumped by every change of the list
    std::vector<Found> top_;  // best first
};

}  // namespace poseidon::detail
