// Chunk caps from the threshold for the interleaved walk of one V (docs/search.md, "Bounds of
// interleaved plans", caps from the threshold): each stage's most chunks, lowered from its memory
// cap where family A through it, or family C with it as the stage whose chain is counted, reaches
// the threshold. Counts above a cap are above every plan that can enter the top K (the threshold
// only falls), so the walk's suffix capacity, LP rates and integer bottleneck take the caps. The
// same family C lowers a complete layout's caps while its TP is chosen (ilv_tp_family_c, for
// ilv_tp_bound), with each stage's tables at the least over the degrees still open.
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
    // Family C of the interleaved DAG with each stage's chain (family_c_caps), with the sends.
    // (a stage that cannot hold one chunk leaves the configuration to the walk's memory count)
    if (*std::min_element(ucap_.begin(), ucap_.end()) < 1) return;
    double sends = 0;
    for (int j = 0; j + 1 < S; ++j) sends += V * sf_[j] + sb_[j + 1];
    const std::size_t W = static_cast<std::size_t>(U) + 1;
    ic_rows_.resize(3 * W * static_cast<std::size_t>(S));
    ibase_p_.resize(S);
    ic_f_.resize(S);
    ic_b_.resize(S);
    for (int j = 0; j < S; ++j) {
        double* f = &ic_rows_[3 * W * static_cast<std::size_t>(j)];
        for (int u = 1; u <= U; ++u) f[u] = itab_[j]->t[u].forward_s, f[W + u] = itab_[j]->t[u].backward_s;
        chain_rows(f, V, U, j);
    }
    family_c_caps(ucap_, V, U, ctx_->m, sends + tail0);
    for (int j = 0; j < S; ++j)
        if (ucap_[j] < umem_[j]) ++stats.threshold_capped;
}

// Stage j's rows for family_c_caps at `f` (forward, then backward, then V f + b, each U + 1
// long; the first two filled from 1 to U).
void Walker::chain_rows(double* f, int V, int U, int j) {
    const std::size_t W = static_cast<std::size_t>(U) + 1;
    double* b = f + W;
    double* base = b + W;
    f[0] = b[0] = base[0] = 0;
    for (int u = 1; u <= U; ++u) base[u] = V * f[u] + b[u];
    ic_f_[j] = f;
    ic_b_[j] = b;
    ibase_p_[j] = base;
}

// Family C of the interleaved DAG with stage j's chain (interleaved_family_c): every chunk's
// forward of micro-batch 0, one backward of every other stage, stage j's m V backwards and the
// forwards after its first backward, plus `add` (sends, tail); each chunk at least the middle
// chunk of as many layers (A1). Per stage, base = V f + b and extra = (m V - 1) b + later f; the
// other stages' bases are at least the fill of all stages holding U - u + 1 chunks less stage
// j's at one chunk. Lowers `caps` (chunks per stage) where that reaches the threshold, over the
// rows chain_rows laid out; false when the stages can then no longer hold U chunks.
bool Walker::family_c_caps(std::vector<int>& caps, int V, int U, std::int64_t m_count, double add) {
    const int S = static_cast<int>(caps.size());
    const double m = static_cast<double>(m_count);
    for (int round = 0; round < 2; ++round) {
        fill_suffixes(ibase_p_, caps, U, 1, ifill_, ib_merged_, ib_scratch_, fill_inc_);
        if (!(ifill_[static_cast<std::size_t>(U)] < kInf)) return false;
        bool tighter = false;
        for (int j = 0; j < S; ++j) {
            const double later = m * V - static_cast<double>(interleaved_in_flight(j, S, V, m_count));
            const double* base = ibase_p_[j];
            int u = caps[j];
            while (u > 1) {
                const double extra = (m * V - 1) * ic_b_[j][u] + later * ic_f_[j][u];
                const double others = ifill_[static_cast<std::size_t>(U - u + 1)] - base[1];
                if (!cut(base[u] + extra + others + add)) break;
                --u;
            }
            if (u < caps[j]) caps[j] = u, tighter = true;
        }
        if (!tighter) break;
    }
    return true;
}

// family_c_caps over a complete layout's stages (caps_, set by ilv_tp_bound), each stage at its
// chosen TP's middle table, else the least forward and the least backward over its degrees, no
// sends (a lower bound: they need the placement): false when no split is left.
bool Walker::ilv_tp_family_c(const MbsCtx& c, int V, int U, double tail) {
    const int S = static_cast<int>(caps_.size());
    const std::size_t W = static_cast<std::size_t>(U) + 1;
    ic_rows_.resize(3 * W * blocks_.size());
    ibase_p_.resize(S);
    ic_f_.resize(S);
    ic_b_.resize(S);
    int j = 0;
    for (std::size_t bi = 0; bi < blocks_.size(); ++bi) {
        const BlockSel& b = blocks_[bi];
        const OptInfo& info = c.opts[b.g][b.opt];
        double* f = &ic_rows_[3 * W * bi];
        if (b.tpi >= 0) {
            const Table& tb = costs_->middle(b.g, info.o.size, info.tps[b.tpi].tp);
            for (int u = 1; u <= U; ++u) f[u] = tb.t[u].forward_s, f[W + u] = tb.t[u].backward_s;
        } else {
            for (int u = 1; u <= U; ++u) f[u] = (*info.fmin)[u], f[W + u] = (*info.bmin)[u];
        }
        for (int q = 0; q < b.count; ++q, ++j) chain_rows(f, V, U, j);
    }
    return family_c_caps(caps_, V, U, c.m, tail);
}

}  // namespace poseidon::detail
