// The memory caps of a complete layout (docs/search.md, "The method", step 3): how many layers
// each stage of the layout can hold at each TP choice, which the TP walk and the split read.
#include <algorithm>

#include "search_walk.hpp"

namespace poseidon::detail {

// Exact memory caps of every stage of the complete layout blocks_ (S stages) for every TP choice
// of its blocks: cached per (group, size, TP, position class, in-flight count) and filled by a
// simultaneous binary search, one probe of the layout per TP index and round. Returns false when
// no TP choice lets the layout hold the model.
bool Walker::layout_caps(MbsCtx& c, int S) {
    Costs& costs = *costs_;
    int max_t = 0;
    for (const auto& b : blocks_) max_t = std::max(max_t, static_cast<int>(c.opts[b.g][b.opt].tps.size()));
    for (int ti = 0; ti < max_t; ++ti) {
        for (;;) {
            check();
            if (halted()) return false;
            probe_stages_.clear();
            misfit_.clear();
            bool open = false;
            int j = 0;
            for (const auto& b : blocks_) {
                const OptInfo& info = c.opts[b.g][b.opt];
                const int t = std::min<int>(ti, static_cast<int>(info.tps.size()) - 1);
                const int tp = info.tps[t].tp;
                for (int q = 0; q < info.o.count; ++q, ++j) {
                    const Pos pos = pos_of(j, S);
                    const int inflight = static_cast<int>(std::min<std::int64_t>(S - j, c.m));
                    const FitMemo& f = costs.memo(b.g, info.o.size, tp, pos, inflight);
                    int l = 1;
                    const bool mine = t == ti && f.nofit_min > f.fit_max + 1;
                    if (mine) {
                        open = true;
                        l = f.fit_max + (f.nofit_min - f.fit_max) / 2;
                    }
                    misfit_.push_back(mine);
                    probe_stages_.push_back({b.g, info.o.size, tp, l, q * info.o.size});
                }
            }
            if (!open) break;
            const auto& fits = costs.probe_fits(probe_stages_, &misfit_);
            for (int jj = 0; jj < S; ++jj)
                if (misfit_[jj]) {
                    const Pos pos = pos_of(jj, S);
                    const int inflight = static_cast<int>(std::min<std::int64_t>(S - jj, c.m));
                    const ProbeStage& p = probe_stages_[jj];
                    costs.record_fit(p.g, p.size, p.tp, pos, inflight, p.layers, fits[jj].fits);
                }
        }
    }
    // Per stage and TP index: the most layers it holds (0: not even one).
    scap_.resize(S);
    long long best_total = 0;
    int j = 0;
    for (const BlockSel& b : blocks_) {
        const OptInfo& info = c.opts[b.g][b.opt];
        for (int q = 0; q < b.count; ++q, ++j) {
            scap_[j].assign(info.tps.size(), 0);
            long long best = 0;
            for (std::size_t t = 0; t < info.tps.size(); ++t) {
                const int cap =
                    costs.cap_upper(b.g, info.o.size, info.tps[t].tp, pos_of(j, S), static_cast<int>(std::min<std::int64_t>(S - j, c.m)));
                scap_[j][t] = std::max(0, cap);
                best = std::max<long long>(best, scap_[j][t]);
            }
            best_total += best;
        }
    }
    return best_total >= L_;
}

// Most layers stage j of the complete layout holds with TP index tpi, or at its best TP (-1).
long long Walker::scap_of(int j, int tpi) const {
    if (tpi >= 0) return scap_[j][tpi];
    long long v = 0;
    for (long long x : scap_[j]) v = std::max(v, x);
    return v;
}

// Layers the complete layout can hold with TP fixed for the runs 0..upto and, after them, each
// stage at its best TP (an upper bound for any choice there); 0 when some stage cannot hold one.
long long Walker::hostable_exact(std::size_t upto) const {
    long long n = 0;
    int j = 0;
    for (std::size_t bi = 0; bi < blocks_.size(); ++bi) {
        const BlockSel& b = blocks_[bi];
        for (int q = 0; q < b.count; ++q, ++j) {
            const long long v = scap_of(j, bi <= upto ? b.tpi : -1);
            if (v < lmin_) return 0;
            n += v;
        }
    }
    return n;
}

}  // namespace poseidon::detail
