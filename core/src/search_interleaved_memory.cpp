// Exact chunk caps by memory for the interleaved walk of one configuration and V (docs/search.md,
// "Bounds of interleaved plans", "Memory caps of a long walk"). The walk starts from caps that
// only bound the interleaved ones from above (the 1F1B caps, or where only interleaved plans can
// win the caps known so far without a probe): an interleaved stage holds more activations than
// the 1F1B one. Memory is then learnt from costed splits (ilv_leaf, inofit_). Where the threshold
// cuts every split before it is costed, nothing is learnt, and a configuration none of whose
// splits fits is walked split by split to its end (2 x 1024 x 128 of the MoE sweep: 94 M splits,
// 18 s, at a threshold where a looser one costs a split early and ends the walk in 1 ms).
//
// A stage's memory under the interleaved schedule depends on its own layers alone (its chunks,
// its position, V and m: cost_interleaved.cpp) and grows with them, so the most chunks each stage
// holds is found by one bisection over all stages at once, one costing of the probe plan per
// round (the stages' memory does not depend on each other's layers).
#include <algorithm>
#include <limits>

#include "poseidon/cost_model.hpp"
#include "search_walk.hpp"

namespace poseidon::detail {

void Walker::ilv_memory_caps(int k) {
    const int S = static_cast<int>(cfg_.size()), V = vsched_;
    // per stage: the most chunks known to fit (least - 1: none known) and that may fit
    ilo_.resize(S);
    ihi_.resize(S);
    for (int j = 0; j < S; ++j) {
        ilo_[j] = ilv_least(j) - 1;
        ihi_[j] = umem_[j];
        if (inofit_[j] != std::numeric_limits<int>::max()) ihi_[j] = std::min(ihi_[j], (inofit_[j] + V - 1) / V - 1);
    }
    Plan probe = iplan_;
    if (iplace_.empty()) iplace_ = place_plan(sc_, iplan_);
    for (;;) {
        bool open = false;
        for (int j = 0; j < S; ++j) {
            int u = std::max(ilv_least(j), ilo_[j]);
            if (ilo_[j] < ihi_[j]) open = true, u = (ilo_[j] + ihi_[j] + 1) / 2;
            probe.stages[j].num_layers = u * V;
        }
        if (!open || halted()) break;
        const std::vector<StageEval> ev = evaluate_stages(sc_, probe, iplace_, &ilinks_);
        ++stats.cost_probes;
        for (int j = 0; j < S; ++j) {
            if (ilo_[j] >= ihi_[j]) continue;
            const int u = probe.stages[j].num_layers / V;
            if (ev[j].fits)
                ilo_[j] = u;
            else
                ihi_[j] = u - 1;
        }
    }
    if (halted()) return;
    // the caps found, with their sums and rates as ilv_run sets them; the walk's dead end
    // (ilv_dead_) where a fixed stage 0..k-1 holds more than its cap, or where the stages cannot
    // hold the model
    for (int j = 0; j < S; ++j) {
        const int cap = ilo_[j] < ilv_least(j) ? 0 : ilo_[j];
        inofit_[j] = std::min(inofit_[j], (cap + 1) * V);
        umem_[j] = std::min(umem_[j], cap);
        ucap_[j] = std::min(ucap_[j], umem_[j]);
    }
    ilv_cap_sums(V);
    for (int j = k - 1; j >= 0; --j)
        if (layers_[j] >= inofit_[j]) ilv_dead_ = j;
    if (umsuf_[0] < L_ / V) ilv_dead_ = -1;
}

}  // namespace poseidon::detail
