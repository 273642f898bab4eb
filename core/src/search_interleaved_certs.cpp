// Kept paths of the interleaved lower DAG as bounds of complete splits (search_interleaved_certs.hpp;
// docs/search.md, "Paths that cut before"). A path of the interleaved DAG of (p, V, m) is a path
// of every split's DAG of that shape, and its length is linear in the chunk times, so a split's
// least chunk times (A1: a chunk costs at least a middle chunk of as many layers) bound the
// split's time from below.

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
        ic.sends[s] = ic.path[s].sends(ic.links);
        ic.sends_epoch[s] = icfg_epoch_;
    }
    return ic.sends[s];
}

// A new path in the slot of the one that cut longest ago, first in the order.
void Walker::ilv_cert_replaced() {
    IlvCerts& ic = icerts_;
    const auto i = static_cast<std::size_t>(ic.victim());
    ic.sends_epoch[i] = 0;
    ++ic.gen[i];
    ic.touch(IlvCerts::kSlots - 1);
}

// Whether a kept path is already as long as the cut on this split's lower-DAG times: the DAG
// would stop on it too. Most splits of a configuration that the walk cuts are cut by the same few
// paths (a slow stage's warm-up, then the bottleneck's steady state), so a walk per split repeats
// one. Its passes at family C's chunk times (ifv_, ibv_, the lower DAG's), its sends' share once
// per configuration, the tail family C took.
bool Walker::ilv_certified_cut() {
    const int S = static_cast<int>(cfg_.size()), V = vsched_;
    const double cut_at = cert_cut_at(sh_.threshold(), scale_);
    for (int at = 0; at < IlvCerts::kSlots; ++at) {
        const int i = icerts_.order[static_cast<std::size_t>(at)];
        const PathCertificate& c = icerts_.path[static_cast<std::size_t>(i)];
        if (!c.fits(S, V, ctx_->m)) continue;
        const double tail = c.sync_stage == 0 ? ifc_tail_ : ilv_sync(c.sync_stage, layers_[static_cast<std::size_t>(c.sync_stage)]) + ifc_omax_;
        if (c.passes(ifv_, ibv_) + ilv_cert_sends(i) + tail >= cut_at) {
            icerts_.touch(at);
            return true;
        }
    }
    return false;
}

// What path s runs on stage d holding l layers beyond its passes at middle-chunk times: on chunk 0
// of stage 0 and chunk V - 1 of stage S - 1 their position's extra over a middle chunk (the
// embedding; the final norm, LM head and loss: Costs::pos_extra, never above the cache's first
// and last chunks less the middle ones, which ilv_chunk_bounds takes), and on the stage whose sync
// it ends with (not stage 0's, which the tail holds) that sync at the middle table's (A1; for a
// middle stage ilv_sync itself). Without the extras the sums miss the LM head that the full check sees.
double Walker::ilv_cert_extra(const IlvCerts::Sums& s, int d, int l) const {
    const int S = static_cast<int>(cfg_.size());
    double x = 0;
    if (d == 0 || d == S - 1) {
        const std::size_t e = d == 0 ? 0 : 1;
        x += s.end_f[e] * xf_[static_cast<std::size_t>(d)] + s.end_b[e] * xb_[static_cast<std::size_t>(d)];
    }
    if (d == s.sync && d != 0)
        x += (sc_.training.overlap_grad_reduce ? 0.0 : itab_[static_cast<std::size_t>(d)]->t[static_cast<std::size_t>(l)].dp_sync_s) + (d == S - 1 ? emb_sync_ : 0.0);
    return x;
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
        s.end_f = {c.count[0], c.count[PV - 1]};
        s.end_b = {c.count[PV], c.count[2 * PV - 1]};
        s.sync = c.sync_stage;
        s.pre.assign(static_cast<std::size_t>(S) + 1, 0.0);
        s.valid = 1;
        s.gen = ic.gen[si];
    }
    for (int d = s.valid - 1; d < upto; ++d) {
        const StageTimes& t = itab_[d]->t[layers_[d] / V];
        s.pre[d + 1] = s.pre[d] + s.nf[d] * t.forward_s + s.nb[d] * t.backward_s + ilv_cert_extra(s, d, layers_[d]);
    }
    s.valid = std::max(s.valid, upto + 1);
    return s;
}

// The same before ilv_chunk_bounds, on the split's middle-chunk times summed stage by stage as the
// walk fixed them (IlvCerts::Sums) and a tail known before the last stage's step (stage 0's sync,
// the slowest step of the others): each term at most ilv_certified_cut's, so what this cuts that
// cuts too, at O(p) per new path and O(1) per split instead of O(p V).
bool Walker::ilv_cert_quick_cut(double dp0, double omax) {
    const int S = static_cast<int>(cfg_.size()), V = vsched_;
    const double cut_at = cert_cut_at(sh_.threshold(), scale_);
    for (int at = 0; at < IlvCerts::kSlots; ++at) {
        const int i = icerts_.order[static_cast<std::size_t>(at)];
        if (!icerts_.path[static_cast<std::size_t>(i)].fits(S, V, ctx_->m)) continue;
        const IlvCerts::Sums& sums = ilv_cert_sums(i, S);
        if (sums.pre[S] + ilv_cert_sends(i) + ilv_cert_tail(sums, dp0, omax) >= cut_at) {
            icerts_.touch(at);
            return true;
        }
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
bool Walker::ilv_cert_suffix_cut(int k, int R, double dp0, double omax) {
    IlvCerts& ic = icerts_;
    if (ic.sfx.skip(64, 8)) return false;
    bool cuts = ilv_cert_suffix_cuts(k, R, dp0, omax, 0, IlvCerts::kFirst);
    if (!cuts && !ic.deep.skip(64, 8)) {
        cuts = ilv_cert_suffix_cuts(k, R, dp0, omax, IlvCerts::kFirst, IlvCerts::kSlots);
        ic.deep.record(cuts, 1024);
    }
    ic.sfx.record(cuts, 1024);
    return cuts;
}

bool Walker::ilv_cert_suffix_cuts(int k, int R, double dp0, double omax, int from, int to) {
    const int S = static_cast<int>(cfg_.size()), V = vsched_, U = L_ / V;
    const auto W = static_cast<std::size_t>(U) + 1;
    const double cut_at = cert_cut_at(sh_.threshold(), scale_);
    IlvCerts& ic = icerts_;
    for (int at = from; at < to; ++at) {
        const int i = ic.order[static_cast<std::size_t>(at)];
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
                for (int u = 1; u <= ic.caps[j]; ++u) g[u] = s.nf[j] * tb.t[u].forward_s + s.nb[j] * tb.t[u].backward_s + ilv_cert_extra(s, j, u * V);
                ic.tables[j] = g;
            }
            fill_suffixes(ic.tables, ic.caps, U, 1, s.h, ib_merged_, ib_scratch_, fill_inc_);
            s.h_epoch = icfg_epoch_;
            s.h_gen = ic.gen[si];
        }
        // (no split of the suffix within its caps: the walk counts why)
        const double h = s.h[static_cast<std::size_t>(k + 1) * W + R];
        if (h < kInf && s.pre[k + 1] + h + ilv_cert_sends(i) + ilv_cert_tail(s, dp0, omax) >= cut_at) {
            ic.touch(at);
            return true;
        }
    }
    return false;
}

}  // namespace poseidon::detail
