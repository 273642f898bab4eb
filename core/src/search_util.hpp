// Small helpers shared by the search and its baselines (internal to core/src).
#pragma once

#include <cstdint>
#include <utility>
#include <vector>

#include <string>

#include "poseidon/error.hpp"
#include "poseidon/types.hpp"

namespace poseidon::detail {

// Divisors of n in increasing order, O(sqrt n).
inline std::vector<std::int64_t> divisors(std::int64_t n) {
    std::vector<std::int64_t> lo, hi;
    for (std::int64_t d = 1; d * d <= n; ++d)
        if (n % d == 0) {
            lo.push_back(d);
            if (d != n / d) hi.push_back(n / d);
        }
    lo.insert(lo.end(), hi.rbegin(), hi.rend());
    return lo;
}

// The most (micro-batch size, count) pairs a batch tolerance may give the search (each has its
// own cost tables): 1,659 for batch 1024 at 10 %, 7,757 for 4096 at 10 %.
inline constexpr std::int64_t max_batch_shapes = 20'000;

// The (micro-batch size, micro-batch count) pairs of the search (docs/search.md, "The space",
// step 1): every pair whose product is a global batch the scenario allows (global_batch_range),
// by micro-batch size then count. With no tolerance: the divisors of the batch, as before.
inline std::vector<std::pair<std::int64_t, std::int64_t>> batch_shapes(const Training& t) {
    const auto [lo, hi] = global_batch_range(t);
    std::vector<std::pair<std::int64_t, std::int64_t>> out;
    if (lo == hi) {
        for (std::int64_t d : divisors(lo)) out.push_back({d, lo / d});
        return out;
    }
    for (std::int64_t mbs = 1; mbs <= hi; ++mbs)
        for (std::int64_t m = (lo + mbs - 1) / mbs; m * mbs <= hi; ++m) {
            if (out.size() >= static_cast<std::size_t>(max_batch_shapes))
                throw InputError("scenario.training.global_batch_tolerance",
                                 std::to_string(t.global_batch_tolerance) + " allows global batches " + std::to_string(lo) + " to " + std::to_string(hi) +
                                     ", over " + std::to_string(max_batch_shapes) +
                                     " (micro-batch size, micro-batch count) pairs for the search; expected a smaller tolerance or batch");
            out.push_back({mbs, m});
        }
    return out;
}

// GPU counts a stage may take from `nodes` nodes of `gpus_per_node`: a divisor of one node, or a
// whole number of nodes dividing the nodes used, so that placements never straddle nodes.
inline std::vector<int> stage_sizes(int gpus_per_node, int nodes) {
    std::vector<int> sizes;
    for (std::int64_t d : divisors(gpus_per_node))
        if (d < gpus_per_node) sizes.push_back(static_cast<int>(d));
    for (std::int64_t c : divisors(nodes)) sizes.push_back(static_cast<int>(c) * gpus_per_node);
    return sizes;
}

}  // namespace poseidon::detail
