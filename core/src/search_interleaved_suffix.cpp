// Whole chunks in the interleaved split's suffix (docs/search.md, "Bounds of interleaved plans",
// "Whole chunks in the suffix"): the LP of family A lets the stages after the walk's depth hold
// fractional chunks, and family G sees a stage's gradient sync only once the stage is fixed. Per
// suffix k.. holding R chunks, the integer bottleneck of each stage's chain m V c_j(u) (family A)
// and of its chain plus its own sync (family G), from the middle tables (A1).
#include <algorithm>

#include "search_bounds.hpp"
#include "search_walk.hpp"

namespace poseidon::detail {

void Walker::ilv_suffix_tables(int V, int U) {
    const int S = static_cast<int>(cfg_.size());
    const double m = static_cast<double>(ctx_->m);
    const std::size_t W = static_cast<std::size_t>(U) + 1;
    iw_ = W;
    iha_.resize(static_cast<std::size_t>(S) * W);
    ihg_.resize(static_cast<std::size_t>(S) * W);
    tabs_.resize(S);
    caps_.resize(S);
    ipa_.assign(S + 1, 0);
    ipf_.assign(S + 1, 0);
    for (int j = 0; j < S; ++j) {
        // the least chunk passes of stage j: the way through it of micro-batch 0's chunk 0
        double f = kInf, c = kInf;
        for (int u = 1; u <= std::min(ucap_[j], U); ++u) f = std::min(f, itab_[j]->t[u].forward_s), c = std::min(c, itab_[j]->c[u]);
        ipa_[j + 1] = ipa_[j] + (c < kInf ? c : 0.0) + sf_[j] + sb_[j + 1];
        ipf_[j + 1] = ipf_[j] + (f < kInf ? f : 0.0) + sf_[j];
    }
    for (auto* h : {&iha_, &ihg_}) {
        const bool own_sync = h == &ihg_;
        for (int j = 0; j < S; ++j) {
            const Table& t = *itab_[j];
            double* row = &(*h)[static_cast<std::size_t>(j) * W];
            // the way to stage j from stage 0 at the least passes, so that the bottleneck of a
            // suffix from k less that way to k bounds the way from k to any of its stages too
            const double way = own_sync ? ipf_[j] : ipa_[j];
            // the least over u' >= u: nondecreasing, as the bottleneck needs, and never above
            double run = kInf;
            for (int u = std::min(ucap_[j], U); u >= 1; --u) {
                const double sync = own_sync && !sc_.training.overlap_grad_reduce ? t.t[static_cast<std::size_t>(u) * V].dp_sync_s : 0.0;
                run = std::min(run, way + m * V * t.c[u] + sync);
                row[u] = run;
            }
            row[0] = 0;
            tabs_[j] = row;
            caps_[j] = std::min(ucap_[j], U);
        }
        integer_bottleneck_suffixes(tabs_, caps_, U, own_sync ? ig_suf_ : ia_suf_, ib_merged_, ib_scratch_, 1);
    }
    ilv_suffix_joint(V, U);
}

// Family A over a suffix k.. holding R chunks, minimised over its splits jointly: a stage's chunks
// lengthen the way to every stage after it, which the bottleneck above, at each stage's least
// passes, does not see. J(k, R) = min_u max(m V c_k(u), c_k(u) + sf_k + sb_{k+1} + J(k+1, R-u)),
// the middle tables (A1) and each stage's chunk cap; so pa_k + J(k, R) bounds family A through
// any stage from k on, for every completion of the prefix.
void Walker::ilv_suffix_joint(int V, int U) {
    const int S = static_cast<int>(cfg_.size());
    tabs_.resize(S);
    caps_.resize(S);
    ijs_sends_.assign(S, 0);
    for (int j = 0; j < S; ++j) {
        tabs_[j] = itab_[j]->c.data();
        caps_[j] = std::min(ucap_[j], U);
        ijs_sends_[j] = sf_[j] + sb_[j + 1];
    }
    joint_family_a_suffixes(tabs_, caps_, ijs_sends_, static_cast<double>(ctx_->m) * V, U, ij_suf_);
}

}  // namespace poseidon::detail
