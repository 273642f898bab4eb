// The path that stopped a walk of the interleaved DAG, kept to cut the next splits without a walk
// (docs/search.md, "Bounds of interleaved plans", "Paths that cut before"). Internal to core/src.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "interleaved_sweep.hpp"

namespace poseidon::detail {

// A path of the interleaved DAG of (p, V, m) as counts: how many forwards, backwards, forward
// sends and backward sends of each virtual stage it runs through, then the gradient sync of stage
// sync_stage (0 for a stopped walk's path) and the slowest optimizer step. Its length on any chunk
// times of the same (p, V, m) is the length of that path in their DAG, so at most their iteration
// time: a lower bound for every split.
struct PathCertificate {
    int p = 0, V = 0;
    std::int64_t m = 0;
    std::vector<double> count;  // 4 PV: forward, backward, forward send, backward send of v
    int sync_stage = 0;

    bool fits(int p_, int V_, std::int64_t m_) const { return p == p_ && V == V_ && m == m_; }
    // on chunk times without pair reserve and stage times without stream (the search's lower DAG)
    double length(std::span<const StageTimes> chunks, std::span<const StageTimes> stages) const;
    // its passes alone, at forward times f[v] and backward times b[v]: with the sends' share
    // (sends) and the tail, its length in O(PV) without chunk times
    double passes(std::span<const double> f, std::span<const double> b) const;
    double sends(std::span<const StageTimes> chunks) const;
};

// The path a traced walk (Sweep::trace) stopped on: its longest path to the pass where the stage's
// bound reached the cutoff, the stage's passes left, and what surely follows its last pass. A walk
// that ran to its end gives its longest path through the gradient syncs: to the last pass of the
// stage whose sync ends last, that sync and the slowest step (its time where no send or pass ends
// after the barrier). False when the walk was not traced or merged pairs.
bool certificate_of(const Sweep& sw, PathCertificate& out);

}  // namespace poseidon::detail
