// Chunk caps from the threshold for the interleaved walk of one V (docs/search.md, "Bounds of
// interleaved plans", caps from the threshold): each stage's most chunks, lowered from its memory
// cap where family A through it, or family C with it as the stage whose chain is counted, reaches
// the threshold. Counts above a cap are above every plan that can enter the top K (the threshold
// only falls), so the walk's suffix capacity, LP rates and integer bottleneck take the caps. The
// same families lower a complete layout's caps while its TP is chosen (ilv_tp_bound,
// ilv_tp_family_c), with each stage's tables at the least over the degrees still open.
#include <algorithm>
#include <numeric>

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
        ucap_[j] = family_a_cap(tb.c.data(), ucap_[j], into, m * V, tail0);
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
        chain_rows(f, V, U, j, 1);
    }
    family_c_caps(ucap_, V, U, ctx_->m, sends + tail0);
    for (int j = 0; j < S; ++j)
        if (ucap_[j] < umem_[j]) ++stats.threshold_capped;
}

// A complete layout of S stages with TP chosen for the blocks that have one (blocks_[k].tpi >= 0,
// a prefix of them): for each allowed V, the LP bound with phi = a / V, then the integer
// bottleneck over chunk tables (the chosen TP's middle table, else the least over TP degrees)
// under the chunk caps: the layout's exact memory caps where known (else each option's), lowered
// as the configuration's caps from the threshold are (search_interleaved_caps.cpp), by family A
// through each stage after the least way into it and then by family C (ilv_tp_family_c), both
// without sends; m V t* + opt. The least over V.
double Walker::ilv_tp_bound(const MbsCtx& c, int S) {
    double best = kInf;
    const double m = static_cast<double>(c.m);
    for (std::size_t vi = 0; vi < c.vs.size(); ++vi) {
        const int V = c.vs[vi];
        if (!interleave_ok(S, c.m, V, L_)) continue;
        double v = 0, opt_lb = 0;
        for (std::size_t k = blocks_.size(); k-- > 0;) {
            const BlockSel& b = blocks_[k];
            const OptInfo& info = c.opts[b.g][b.opt];
            const Rates& r = rates_of(c, b);
            opt_lb = std::max(opt_lb, r.opt_min);
            // the chunk rate at this V (set_chunk_rates; a stage that holds no chunk covers none)
            const double a = info.a_v.size() == c.vs.size() ? (b.tpi >= 0 ? info.tps[b.tpi].a_v[vi] : info.a_v[vi]) : r.a;
            if (a < kInf) v = lp_steps(v, a / V, c.keep_pow(vi, b.count));
        }
        opt_lb += ilv_dp0_block(c);
        double bound = v > 0 ? L_ / v + opt_lb : kInf;
        // the bottleneck only raises a bound that the caller cuts already (it reads only the cut)
        if (cut(bound)) continue;
        tabs_.clear();
        caps_.clear();
        bool mono = true;
        int j = 0;
        const int U = L_ / V;
        double into = 0;  // family A's least way into stage j: a chunk of each stage before it, no sends
        for (std::size_t bi = 0; bi < blocks_.size() && mono; ++bi) {
            const BlockSel& b = blocks_[bi];
            const OptInfo& info = c.opts[b.g][b.opt];
            const double* tab = nullptr;
            if (b.tpi >= 0) {
                const Table& tb = *info.tps[b.tpi].table;
                mono = tb.monotone;
                tab = tb.c.data();
            } else {
                mono = info.cmin_monotone;
                tab = info.cmin->data();
            }
            if (!mono) break;
            for (int q = 0; q < b.count; ++q, ++j) {
                const long long mem = caps_known_ ? scap_of(j, b.tpi) : (b.tpi >= 0 ? info.tps[b.tpi].cap : info.cap);
                int cap = static_cast<int>(std::min<long long>(mem, L_) / V);
                // (nondecreasing tables: the least chunk is one layer's)
                cap = family_a_cap(tab, cap, into, m * V, opt_lb);
                into += tab[1];
                tabs_.push_back(tab);
                caps_.push_back(cap);
            }
        }
        if (mono) {
            bound = std::max(bound, m * V * integer_bottleneck_min(tabs_, caps_, U, heap_) + opt_lb);
            // then family C's chains where the bottleneck leaves this V: while they cut at least
            // one V in eight of their recent runs, every 16th otherwise (their fill costs O(S U),
            // more than they save on the shapes where they seldom cut: 4 x 64 x 24 of the MoE sweep)
            if (!cut(bound) && !ilv_fc_gate_.skip(32, 8)) {
                const long long before = std::accumulate(caps_.begin(), caps_.end(), 0LL);
                const bool left = ilv_tp_family_c(c, V, U, opt_lb);
                if (left && std::accumulate(caps_.begin(), caps_.end(), 0LL) < before)
                    bound = std::max(bound, m * V * integer_bottleneck_min(tabs_, caps_, U, heap_) + opt_lb);
                ilv_fc_gate_.record(!left || cut(bound), 1024);
                if (!left) continue;  // no split of this V is left
            }
        }
        best = std::min(best, bound);
        if (!cut(best)) return best;  // no need for the rest
    }
    return best;
}

// The rows for family_c_caps of stages j..j+count-1, which share them, at `f` (forward, then
// backward, then V f + b, each U + 1 long; the first two filled from 1 to U).
void Walker::chain_rows(double* f, int V, int U, int j, int count) {
    const std::size_t W = static_cast<std::size_t>(U) + 1;
    double* b = f + W;
    double* base = b + W;
    f[0] = b[0] = base[0] = 0;
    for (int u = 1; u <= U; ++u) base[u] = V * f[u] + b[u];
    for (int q = j; q < j + count; ++q) {
        ic_f_[q] = f;
        ic_b_[q] = b;
        ibase_p_[q] = base;
    }
}

// Family A through a stage after a way into it of `into`: the most chunks, from `cap` down, for
// which m V c(u) on that way stays below the threshold (at least 1).
int Walker::family_a_cap(const double* c, int cap, double into, double mV, double tail) const {
    while (cap > 1 && cut(into + mV * c[cap] + tail)) --cap;
    return cap;
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
            const Table& tb = *info.tps[b.tpi].table;
            for (int u = 1; u <= U; ++u) f[u] = tb.t[u].forward_s, f[W + u] = tb.t[u].backward_s;
        } else {
            for (int u = 1; u <= U; ++u) f[u] = (*info.fmin)[u], f[W + u] = (*info.bmin)[u];
        }
        chain_rows(f, V, U, j, b.count);
        j += b.count;
    }
    return family_c_caps(caps_, V, U, c.m, tail);
}

}  // namespace poseidon::detail
