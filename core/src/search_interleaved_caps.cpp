// Chunk caps from the threshold for the interleaved walk of one V (docs/search.md, "Bounds of
// interleaved plans", caps from the threshold): each stage's most chunks, lowered from its memory
// cap where family A through it, or family C with it as the stage whose chain is counted, reaches
// the threshold. Counts above a cap are above every plan that can enter the top K (the threshold
// only falls), so the walk's suffix capacity, LP rates and integer bottleneck take the caps.
#include <algorithm>

#include "poseidon/dag.hpp"
#include "search_bounds.hpp"
#include "search_walk.hpp"

namespace poseidon::detail {

void Walker::ilv_caps(int V, int U, double tail0) {
    const int S = static_cast<int>(cfg_.size());
    const double m = static_cast<double>(ctx_->m);
    // Family A through stage j after the least path into it: one chunk of its cheapest size on
    // every stage before it, and the sends.
    double into = 0;
    for (int j = 0; j < S; ++j) {
        const Table& tb = *itab_[j];
        ucap_[j] = umem_[j] = std::min(U, cap_[j] / V);
        while (ucap_[j] > 1 && cut(into + m * V * tb.c[ucap_[j]] + tail0)) --ucap_[j];
        double least = kInf;
        for (int u = 1; u <= std::max(1, ucap_[j]); ++u) least = std::min(least, tb.c[u]);
        into += least + sf_[j] + sb_[j + 1];
    }
    // Family C of the interleaved DAG (interleaved_family_c) with stage j's chain: every chunk's
    // forward of micro-batch 0, one backward of every other stage, stage j's m V backwards and
    // the forwards after its first backward, the sends, the tail; each chunk at least the middle
    // chunk of as many layers (A1). Per stage, base = V f + b and extra = (m V - 1) b + later f;
    // the other stages' bases are at least the fill of all stages holding U - u + 1 chunks less
    // stage j's at one chunk.
    // (a stage that cannot hold one chunk leaves the configuration to the walk's memory count)
    if (*std::min_element(ucap_.begin(), ucap_.end()) < 1) return;
    double sends = 0;
    for (int j = 0; j + 1 < S; ++j) sends += V * sf_[j] + sb_[j + 1];
    const std::size_t W = static_cast<std::size_t>(U) + 1;
    ibase_.resize(static_cast<std::size_t>(S) * W);
    ibase_p_.resize(S);
    for (int j = 0; j < S; ++j) {
        double* row = &ibase_[static_cast<std::size_t>(j) * W];
        row[0] = 0;
        for (int u = 1; u <= U; ++u) row[u] = V * itab_[j]->t[u].forward_s + itab_[j]->t[u].backward_s;
        ibase_p_[j] = row;
    }
    for (int round = 0; round < 2; ++round) {
        fill_suffixes(ibase_p_, ucap_, U, 1, ifill_, ib_merged_, ib_scratch_, fill_inc_);
        bool tighter = false;
        for (int j = 0; j < S; ++j) {
            const std::vector<StageTimes>& t = itab_[j]->t;
            const double* base = ibase_p_[j];
            const double later = m * V - static_cast<double>(interleaved_in_flight(j, S, V, ctx_->m));
            int u = ucap_[j];
            while (u > 1) {
                const double extra = (m * V - 1) * t[u].backward_s + later * t[u].forward_s;
                const double others = ifill_[static_cast<std::size_t>(U - u + 1)] - base[1];
                if (!cut(base[u] + extra + others + sends + tail0)) break;
                --u;
            }
            if (u < ucap_[j]) ucap_[j] = u, tighter = true;
        }
        if (!tighter) break;
    }
    for (int j = 0; j < S; ++j)
        if (ucap_[j] < umem_[j]) ++stats.threshold_capped;
}

}  // namespace poseidon::detail
