// Kept paths of the interleaved lower DAG as bounds of complete splits (search_interleaved_certs.hpp;
// docs/search.md, "Paths that cut before"). A path of the interleaved DAG of (p, V, m) is a path
// of every split's DAG of that shape, and its length is linear in the chunk times, so a split's
// least chunk times (A1: a chunk costs at least a middle chunk of as many layers) bound the
// split's time from below.
#include <span>

#include "search_bounds.hpp"
#include "search_walk.hpp"

namespace poseidon::detail {

// A kept path's sums run in another order than the walk's: a margin of rounding on top of the cut's.
static double cert_cut_at(double threshold, double scale) { return threshold * scale / (1 - kBoundSlack) * (1 + kBoundSlack); }

// Path i's sends on the configuration's links, computed once per configuration (and V).
double Walker::ilv_cert_sends(int i) {
    IlvCerts& ic = icerts_;
    const auto s = static_cast<std::size_t>(i);
    if (ic.sends_epoch[s] != icfg_epoch_) {
        if (ic.links_epoch != icfg_epoch_) {
            ilv_lower_chunks(ic.links, false);
            ic.links_epoch = icfg_epoch_;
        }
        const StageTimes none{};
        ic.sends[s] = ic.path[s].length(ic.links, std::span<const StageTimes>(&none, 1));
        ic.sends_epoch[s] = icfg_epoch_;
    }
    return ic.sends[s];
}

// A new path in the slot the oldest held.
void Walker::ilv_cert_replaced() {
    IlvCerts& ic = icerts_;
    const auto i = static_cast<std::size_t>(ic.next);
    ic.sends_epoch[i] = 0;
    ++ic.gen[i];
    ic.next = (ic.next + 1) % IlvCerts::kSlots;
}

// Whether a kept path is already as long as the cut on this split's lower-DAG times: the DAG
// would stop on it too. Most splits of a configuration that the walk cuts are cut by the same few
// paths (a slow stage's warm-up, then the bottleneck's steady state), so a walk per split repeats
// one. Its passes at family C's chunk times (ifv_, ibv_, the lower DAG's), its sends' share once
// per configuration, the tail family C took.
bool Walker::ilv_certified_cut() {
    const int S = static_cast<int>(cfg_.size()), V = vsched_;
    const double cut_at = cert_cut_at(sh_.threshold(), scale_);
    for (int i = 0; i < IlvCerts::kSlots; ++i) {
        const PathCertificate& c = icerts_.path[static_cast<std::size_t>(i)];
        if (c.fits(S, V, ctx_->m) && c.passes(ifv_, ibv_) + ilv_cert_sends(i) + ifc_tail_ >= cut_at) return true;
    }
    return false;
}

// Path i's passes per stage (Sums::nf, nb) and their length over stages 0..upto-1 of the split
// walked now at middle-chunk times (Sums::pre[upto]), extended from what the walk left valid.
IlvCerts::Sums& Walker::ilv_cert_sums(int i, int upto) {
    const int S = static_cast<int>(cfg_.size()), V = vsched_;
    IlvCerts& ic = icerts_;
    const auto si = static_cast<std::size_t>(i);
    const PathCertificate& c = ic.path[si];
    IlvCerts::Sums& s = ic.sums[si];
    if (s.gen != ic.gen[si] || s.nf.size() != static_cast<std::size_t>(S)) {
        const std::size_t PV = static_cast<std::size_t>(S) * V;
        s.nf.assign(S, 0.0);
        s.nb.assign(S, 0.0);
        for (std::size_t v = 0; v < PV; ++v) {
            s.nf[v % S] += c.count[v];
            s.nb[v % S] += c.count[PV + v];
        }
        s.pre.assign(static_cast<std::size_t>(S) + 1, 0.0);
        s.valid = 1;
        s.gen = ic.gen[si];
    }
    for (int d = s.valid - 1; d < upto; ++d) {
        const StageTimes& t = itab_[d]->t[layers_[d] / V];
        s.pre[d + 1] = s.pre[d] + s.nf[d] * t.forward_s + s.nb[d] * t.backward_s;
    }
    s.valid = std::max(s.valid, upto + 1);
    return s;
}

// The same before ilv_chunk_bounds, on the split's middle-chunk times summed stage by stage as the
// walk fixed them (IlvCerts::Sums) and a tail known before the last stage's step (stage 0's sync,
// the slowest step of the others): each term at most ilv_certified_cut's, so what this cuts that
// cuts too, at O(p) per new path and O(1) per split instead of O(p V).
bool Walker::ilv_cert_quick_cut(double tail) {
    const int S = static_cast<int>(cfg_.size()), V = vsched_;
    const double cut_at = cert_cut_at(sh_.threshold(), scale_);
    for (int i = 0; i < IlvCerts::kSlots; ++i) {
        if (!icerts_.path[static_cast<std::size_t>(i)].fits(S, V, ctx_->m)) continue;
        if (ilv_cert_sums(i, S).pre[S] + ilv_cert_sends(i) + tail >= cut_at) return true;
    }
    return false;
}

// Whether a kept path cuts every split below the prefix 0..k (the stages after it holding R
// chunks; docs/search.md, "Kept paths through the stages not fixed yet"): its passes on the fixed
// stages (Sums::pre) plus at most the least over the suffix's splits of its passes there, each
// stage at the middle-chunk times of its chunk size (A1) within its caps, plus its sends and the
// prefix's tail (at most a leaf's). Every split below sums to at least this in
// ilv_cert_quick_cut, so what this cuts the same path cuts at each of them. The suffix's least is
// fill_suffixes' (exact on convex tables, below them otherwise), O(p U) per configuration, V and
// path. Only what it cuts is skipped, so the plans are the same whether it runs or not.
bool Walker::ilv_cert_suffix_cut(int k, int R, double tail) {
    if (icerts_.sfx.skip(64, 8)) return false;
    const bool cuts = ilv_cert_suffix_cuts(k, R, tail);
    icerts_.sfx.record(cuts, 1024);
    return cuts;
}

bool Walker::ilv_cert_suffix_cuts(int k, int R, double tail) {
    const int S = static_cast<int>(cfg_.size()), V = vsched_, U = L_ / V;
    const auto W = static_cast<std::size_t>(U) + 1;
    const double cut_at = cert_cut_at(sh_.threshold(), scale_);
    IlvCerts& ic = icerts_;
    for (int i = 0; i < IlvCerts::kSlots; ++i) {
        const auto si = static_cast<std::size_t>(i);
        if (!ic.path[si].fits(S, V, ctx_->m)) continue;
        IlvCerts::Sums& s = ilv_cert_sums(i, k + 1);
        if (s.h_epoch != icfg_epoch_ || s.h_gen != ic.gen[si]) {
            ic.g.assign(static_cast<std::size_t>(S) * W, 0.0);
            ic.tables.resize(S);
            ic.caps.resize(S);
            for (int j = 0; j < S; ++j) {
                double* g = ic.g.data() + static_cast<std::size_t>(j) * W;
                const Table& tb = *itab_[j];
                ic.caps[j] = std::min(ucap_[j], U);
                for (int u = 1; u <= ic.caps[j]; ++u) g[u] = s.nf[j] * tb.t[u].forward_s + s.nb[j] * tb.t[u].backward_s;
                ic.tables[j] = g;
            }
            fill_suffixes(ic.tables, ic.caps, U, 1, s.h, ib_merged_, ib_scratch_, fill_inc_);
            s.h_epoch = icfg_epoch_;
            s.h_gen = ic.gen[si];
        }
        // (no split of the suffix within its caps: the walk counts why)
        const double h = s.h[static_cast<std::size_t>(k + 1) * W + R];
        if (h < kInf && s.pre[k + 1] + h + ilv_cert_sends(i) + tail >= cut_at) return true;
    }
    return false;
}

}  // namespace poseidon::detail
