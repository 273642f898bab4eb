// A configuration's tables and bounds for its layer split (docs/search.md, "Bounds", "Within the
// split" and "Whole layers in the suffix"): the suffix fill of families C, D, E and W, the
// integer bottlenecks of families A and C per suffix, and the configuration-level family C and
// integer bottleneck that can cut the configuration before its split is walked.
#include <algorithm>
#include <cmath>

#include "search_walk.hpp"

namespace poseidon::detail {

// Tables for the split search's family-C bound; true when the configuration's family C in whole
// layers (both terms at their least) cuts it. That cut needs only the fill of all stages (row 0),
// so the suffix rows are built only for configurations it keeps: on 4 x 1024 x 80 of the MoE sweep
// it cuts 77,559 of the 106,351 configurations that reach it.
bool Walker::fill_tables() {
    const int S = static_cast<int>(cfg_.size());
    const int W = L_ + 1;
    tcap_.assign(cap_.begin(), cap_.end());
    tsuf_cap_.assign(suf_cap_.begin(), suf_cap_.end());
    ej_ = 0;  // (no family-E suffix table unless echain_rows builds one)
    const double add = sends_ + cfg_[0].r.dp_min + suf_opt_[0];
    if (static_cast<std::int64_t>(S + 1) * W > suffix_table_entries_max) {
        // one row of zeros each, read at stride 0: bounds of nothing, so the rates decide
        tw_ = 0;
        for (auto* t : {&fill_tab_, &ib_suf_, &ibe_suf_}) t->assign(static_cast<std::size_t>(W), 0.0);
        return !exhaustive_ && cut(add);
    }
    tw_ = static_cast<std::size_t>(W);
    steady_rows();
    fill_row0();
    // each round's lower caps make the fill dearer, which may lower them again
    for (int round = 0; round < 2 && !exhaustive_ && threshold_caps(); ++round) fill_row0();
    for (int j = S - 1; j >= 0; --j) {
        tsuf_cap_[j] = tsuf_cap_[j + 1] + tcap_[j];
        if (tcap_[j] < std::min(cap_[j], L_)) ++stats.threshold_capped;
    }
    const bool monotone = middle_tables();
    for (int j = 0; j < S; ++j) caps_[j] = std::min(caps_[j], tcap_[j]);
    etabs_.resize(S);
    for (int j = 0; j < S; ++j) etabs_[j] = &e_tab_[static_cast<std::size_t>(j) * W];
    // integer_bottleneck_min is row 0 of integer_bottleneck_suffixes at L (the L-th smallest entry)
    if (!exhaustive_ && cut(fill0_[L_] + integer_bottleneck_min(etabs_, caps_, L_, heap_, lmin_) + add)) return true;
    fill_rows();
    // Family A's integer form: a path through a later stage i is at least the path into the
    // suffix plus m c_i, and c_i is at least the suffix's integer bottleneck. On stages of one to
    // three layers the LP coverage rate (fractional layers) is far below it.
    if (monotone)
        integer_bottleneck_suffixes(tabs_, caps_, L_, ib_suf_, ib_merged_, ib_scratch_, lmin_);
    else
        ib_suf_.assign(static_cast<std::size_t>(S + 1) * W, 0.0);
    integer_bottleneck_suffixes(etabs_, caps_, L_, ibe_suf_, ib_merged_, ib_scratch_, lmin_);
    echain_rows();
    return false;
}

// Family E through the first stage whose warm-up leaves it two or more steady-state turns
// (w_j <= m - 2): before the walk reaches that stage, the prefix bound has no family-E term. Its
// paths weigh stage j's F+B m - w_j times and every later stage's twice (micro-batches 0 and
// m - 1), so the suffix's least is a fill of those weights (fill_suffixes on scaled tables).
void Walker::echain_rows() {
    const int S = static_cast<int>(cfg_.size());
    const std::int64_t m = ctx_->m;
    int j0 = 0;
    while (j0 < S && warm_[j0] > m - 2) ++j0;
    // none, or stage 0 itself (the walk fixes it first, and family E follows it from there)
    if (j0 == 0 || j0 >= S) return;
    ej_ = j0;
    const std::size_t W = tw_;
    ewt_.resize(static_cast<std::size_t>(S) * W);
    for (int j = 0; j < S; ++j) {
        const double w = j < ej_ ? 1.0 : j == ej_ ? static_cast<double>(m - warm_[j]) : 2.0;
        const double* c = cfg_[j].table->of_stage(j).c.data();
        const double x = xf_[j] + xb_[j];
        double* row = &ewt_[static_cast<std::size_t>(j) * W];
        for (int l = 0; l <= L_; ++l) row[l] = w * (c[l] + x);
        fill_tabs_[j] = row;
    }
    fill_suffixes(fill_tabs_, tcap_, L_, lmin_, efill_tab_, ib_merged_, ib_scratch_, fill_inc_);
}

// The cheapest F+B of every suffix holding R layers under the caps tcap_, from the middle tables
// plus the first and last stages' embedding, head and loss, whatever their layers.
void Walker::fill_rows() {
    const int S = static_cast<int>(cfg_.size());
    fill_tabs_.resize(S);
    for (int j = 0; j < S; ++j) fill_tabs_[j] = cfg_[j].table->of_stage(j).c.data();
    fill_suffixes(fill_tabs_, tcap_, L_, lmin_, fill_tab_, ib_merged_, ib_scratch_, fill_inc_);
    double extra = 0;
    for (int k = S - 1; k >= 0; --k) {
        extra += xf_[k] + xb_[k];
        if (extra == 0) continue;
        double* row = &fill_tab_[static_cast<std::size_t>(k) * tw_];
        for (int R = 0; R <= L_; ++R) row[R] += extra;
    }
}

// fill_rows' row 0 alone (fill0_, the same values bit for bit): what threshold_caps and the
// configuration's cut read.
void Walker::fill_row0() {
    const int S = static_cast<int>(cfg_.size());
    fill_tabs_.resize(S);
    for (int j = 0; j < S; ++j) fill_tabs_[j] = cfg_[j].table->of_stage(j).c.data();
    poseidon::detail::fill_row0(fill_tabs_, tcap_, L_, lmin_, fill0_);
    double extra = 0;
    for (int k = S - 1; k >= 0; --k) extra += xf_[k] + xb_[k];
    if (extra != 0)
        for (double& x : fill0_) x += extra;
}

// Family C's steady-state term max_i e_i l_i in whole layers: with one to three layers a stage,
// some stage holds ceil(R / n) of them, far above the fractional R / sum(1 / e_i). The stage's
// own term, (m - w - 1) f(l) + (m - 1) b(l), from its middle table where that grows with l (it
// carries the fixed cost of every pass, m times, which e l leaves out), else at the rates.
void Walker::steady_rows() {
    const int S = static_cast<int>(cfg_.size());
    const double m = static_cast<double>(ctx_->m);
    e_tab_.resize(static_cast<std::size_t>(S) * tw_);
    for (int j = 0; j < S; ++j) {
        double* row = &e_tab_[static_cast<std::size_t>(j) * tw_];
        const double wf = std::max(0.0, m - warm_[j] - 1);
        const double x = wf * xf_[j] + (m - 1) * xb_[j];
        const std::vector<StageTimes>& t = cfg_[j].table->of_stage(j).t;
        bool grows = true;
        for (int l = lmin_; l <= L_ && grows; ++l) {
            row[l] = wf * t[l].forward_s + (m - 1) * t[l].backward_s + x;
            grows = l == lmin_ || row[l] >= row[l - 1];
        }
        if (!grows)
            for (int l = 0; l <= L_; ++l) row[l] = e_[j] * l + x;
        else if (lmin_ > 0)
            row[0] = x;  // not read (the merge starts at one layer), but not left unset
    }
}

// Caps below the memory caps that every plan able to enter the top K respects: a stage holding l
// layers makes every plan of the configuration at least its family-C bound with that stage's
// F+B and steady-state term at l and the cheapest fill of the other stages (the fill of all
// stages with this one at its least, less its least). Values whose bound the threshold cuts are
// above the cap (docs/search.md, "Caps from the threshold").
bool Walker::threshold_caps() {
    const int S = static_cast<int>(cfg_.size());
    const double add = sends_ + cfg_[0].r.dp_min + suf_opt_[0];
    bool tighter = false;
    for (int j = 0; j < S; ++j) {
        const double* c = cfg_[j].table->of_stage(j).c.data();
        const double x = xf_[j] + xb_[j];
        const double* e = &e_tab_[static_cast<std::size_t>(j) * tw_];
        const double least = c[lmin_] + x;
        int l = std::min(tcap_[j], L_);
        while (l > lmin_at(j, S)) {
            const int others = L_ - l + lmin_;
            const double fill = others >= 0 ? fill0_[static_cast<std::size_t>(others)] : kInf;
            if (!cut(c[l] + x + e[l] + fill - least + add)) break;
            --l;
        }
        if (l < tcap_[j]) tcap_[j] = l, tighter = true;
    }
    return tighter;
}

// Smallest bottleneck F+B any split of cfg_ within the memory caps can have: stage j holds at
// most max{l <= cap_j : c_j(l) <= t} layers below t, so the bottleneck is at least the L-th
// smallest of all stages' c_j(l) merged (search_bounds.cpp).
// Middle-position costs bound the first and last stages from below (docs/search.md).
double Walker::integer_bottleneck() {
    return middle_tables() ? integer_bottleneck_min(tabs_, caps_, L_, heap_, lmin_) : 0;
}

bool Walker::middle_tables() {
    const int S = static_cast<int>(cfg_.size());
    tabs_.resize(S);
    caps_.resize(S);
    bool monotone = true;
    for (int j = 0; j < S; ++j) {
        const Table& tb = cfg_[j].table->of_stage(j);
        monotone = monotone && tb.monotone;
        tabs_[j] = tb.c.data();
        caps_[j] = std::min(cap_upper(j), L_);
        if (xf_[j] + xb_[j] > 0) {
            std::vector<double>& tab = end_tab_[j == 0 ? 0 : 1];
            tab.resize(L_ + 1);
            for (int l = 0; l <= L_; ++l) tab[l] = tb.c[l] + xf_[j] + xb_[j];
            tabs_[j] = tab.data();
        }
    }
    return monotone;
}

// Family C over a whole configuration (docs/search.md, "Bounds"): for every split,
// T >= sum_j a_j l_j + max_i e_i l_i + sends + tails. With t = max_i e_i l_i the split is feasible
// for l_i <= u_i(t) = min(cap_i, t / e_i), so T >= min_t [t + fill(t)] where fill(t) is the
// cheapest sum_j a_j l_j with 1 <= l_j <= u_j(t), sum l_j = L (convex and piecewise linear in
// t; its exact minimum is one sweep over the breakpoints, search_bounds.cpp).
// jc_ holds (a, e, cap) per stage, sorted by a; returns the bound without sends and tails.
double Walker::config_family_c() {
    const int S = static_cast<int>(cfg_.size());
    jc_.resize(S);
    double opt_lb = 0;
    for (int j = 0; j < S; ++j) {
        const Rates& r = cfg_[j].r;
        jc_[j] = {r.a, e_[j], cap_upper(j)};
        opt_lb = std::max(opt_lb, r.opt_min);
    }
    std::stable_sort(jc_.begin(), jc_.end(), [](const JcStage& x, const JcStage& y) { return x.a < y.a; });
    double add = sends_ + cfg_[0].r.dp_min + opt_lb;
    for (int j = 0; j < S; ++j) add += xf_[j] + xb_[j];
    return family_c_min(jc_, L_, heap_, lmin_) + add;
}

}  // namespace poseidon::detail
