// Small helpers shared by the search and its baselines (internal to core/src).
#pragma once

#include <cstdint>
#include <utility>
#include <vector>

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
        for (std::int64_t m = (lo + mbs - 1) / mbs; m * mbs <= hi; ++m) out.push_back({mbs, m});
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
