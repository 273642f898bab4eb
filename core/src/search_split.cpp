// The layer split of one configuration (docs/search.md, "The ridge walk"): its exact memory caps,
// the configuration-level bounds (joint family C, integer bottleneck; their tables in
// search_split_tables.cpp), then stage by stage the
// layer counts outward from the speed-proportional share, each direction stopped by a bound that
// is monotone in the layer count, each value cut by the prefix bounds of families A, B, C and E,
// and the window cycles of families R, W and D (search_split_paths.cpp).
#include <algorithm>
#include <cmath>

#include "poseidon/combined_1f1b.hpp"
#include "search_walk.hpp"

namespace poseidon::detail {

// Counts the configuration cfg_ once: the dive records the ones it searches, and the full walk
// counts only those the dive did not (docs/search.md, "Statistics").
void Walker::count_config(MbsCtx& c) {
    if (replay_) return;  // (split_deferred: counted when it was deferred)
    if (dive_left_ < 0 && c.dive_configs.empty()) {
        ++stats.configurations;
        return;
    }
    std::vector<int> key;
    key.reserve(cfg_.size() * 4);
    for (const CfgStage& s : cfg_) key.insert(key.end(), {s.g, s.size, s.tp, s.offset});
    if (dive_left_ >= 0) {
        std::lock_guard<std::mutex> lock(c.dive_m);
        if (c.dive_configs.insert(std::move(key)).second) ++stats.configurations;
    } else if (!c.dive_configs.count(key)) {
        ++stats.configurations;
    }
}

void Walker::run_config(MbsCtx& c) {
    ctx_ = &c;
    Costs& costs = *costs_;
    const int S = static_cast<int>(cfg_.size());
    const double m = static_cast<double>(c.m);
    count_config(c);
    xf_.assign(S, 0);
    xb_.assign(S, 0);
    placed_off_ = false;
    for (int j = 0; j < S; ++j) {
        CfgStage& cs = cfg_[j];
        placed_off_ = placed_off_ || !costs.placed_as_probed(cs.g, cs.size, cs.offset);
        cs.pos = pos_of(j, S);
        cs.inflight = static_cast<int>(std::min<std::int64_t>(S - j, c.m));
        cs.r = cs.table->of_stage(j).rates;
        if (cs.pos != kMiddle && !exhaustive_) {
            const PosExtra& x = costs.pos_extra(cs.g, cs.size, cs.tp, cs.pos);
            xf_[j] = x.forward_s;
            xb_[j] = x.backward_s;
        }
    }
    sf_.assign(S + 1, 0);
    sb_.assign(S + 1, 0);
    auto same_node = [&](const CfgStage& a, const CfgStage& b) {
        const int P = sc_.cluster.groups[a.g].gpus_per_node;
        return a.g == b.g && a.offset / P == (a.offset + a.size - 1) / P && b.offset / P == (b.offset + b.size - 1) / P && a.offset / P == b.offset / P;
    };
    for (int j = 0; j + 1 < S; ++j) {
        const CfgStage& a = cfg_[j];
        const CfgStage& b = cfg_[j + 1];
        auto [f, bk] = costs.link({a.g, a.size, a.tp, 1, a.offset}, {b.g, b.size, b.tp, 1, b.offset}, same_node(a, b));
        sf_[j] = f;
        sb_[j + 1] = bk;
    }
    emb_sync_ = 0;
    if (S > 1 && sc_.model.tied_embeddings) {
        const CfgStage& a = cfg_[0];
        const CfgStage& b = cfg_[S - 1];
        emb_sync_ = costs.embedding_sync({a.g, a.size, a.tp, 1, a.offset}, {b.g, b.size, b.tp, 1, b.offset}, same_node(a, b));
    }
    va_.assign(S + 1, 0);
    vb_.assign(S + 1, 0);
    suf_opt_.assign(S + 1, 0);
    suf_w_.assign(S + 1, 0);
    suf_amin_.assign(S + 1, kInf);
    suf_inv_e_.assign(S + 1, 0);
    warm_.assign(S, 0);
    sends_ = 0;
    sends_from_.assign(S + 1, 0);
    for (int j = 0; j < S; ++j) {
        warm_[j] = static_cast<int>(std::min<std::int64_t>(S - 1 - j, c.m));
        sends_ += sf_[j] + sb_[j];
    }
    for (int j = S - 1; j >= 0; --j) sends_from_[j] = sends_from_[j + 1] + sf_[j] + sb_[j + 1];
    pa_at_.assign(S + 1, 0);
    // family W's turns are tabulated row by row when first needed: most configurations of short
    // pipelines never reach it, and a full table per configuration cost more than it saved
    if (wturns_.size() < static_cast<std::size_t>(S) * kMaxWindow) wturns_.resize(static_cast<std::size_t>(S) * kMaxWindow);
    wturns_row_.assign(S, 0);
    if (dturns_tab_.size() < static_cast<std::size_t>(S) * kMaxWindow) dturns_tab_.resize(static_cast<std::size_t>(S) * kMaxWindow);
    dturns_row_.assign(S, 0);
    e_.assign(S, 0);
    for (int j = S - 1; j >= 0; --j) {
        suf_amin_[j] = std::min(suf_amin_[j + 1], cfg_[j].r.a);
        const double e = e_[j] = family_c_e(m, warm_[j], cfg_[j].r);
        suf_inv_e_[j] = e > 0 && suf_inv_e_[j + 1] < kInf ? suf_inv_e_[j + 1] + 1 / e : kInf;
        const Rates& r = cfg_[j].r;
        va_[j] = lp_step(va_[j + 1], r.a, m * r.a);
        vb_[j] = lp_step(vb_[j + 1], r.phi_f, r.mu_b);
        suf_opt_[j] = std::max(suf_opt_[j + 1], r.opt_min);
        suf_w_[j] = suf_w_[j + 1] + 1.0 / r.a;
    }
    suf_lmin_.assign(S + 1, 0);
    for (int j = S - 1; j >= 0; --j) suf_lmin_[j] = suf_lmin_[j + 1] + lmin_at(j, S);
    layers_.assign(S, 0);
    times_.resize(S);
    caps_exact_ = false;
    // the combined 1F1B (overlap_moe_expert_parallel_comm) pipelines only interleaved
    // (validate_plan): a configuration of several stages has no 1F1B plan
    const bool no_1f1b = S > 1 && merges_passes(sc_);
    if (one_cut_ || no_1f1b) {
        // only interleaved plans can beat the threshold here: their walk takes the memory caps
        // as they are known (upper bounds), without probing for exact ones
        if (!no_1f1b) ++stats.pruned;
        cap_.resize(S);
        for (int j = 0; j < S; ++j) cap_[j] = cap_upper(j);
        ilv_run(c);
        return;
    }
    if (!config_caps()) {
        if (!halted()) ++stats.infeasible["memory"];
        return;
    }
    // the split search's per-stage cache entries, looked up once
    memo_p_.resize(S);
    table_p_.resize(S);
    for (int j = 0; j < S; ++j) {
        const CfgStage& cs = cfg_[j];
        memo_p_[j] = &costs.memo(cs.g, cs.size, cs.tp, cs.pos, cs.inflight);
        table_p_[j] = cs.pos == kMiddle ? &cs.table->of_stage(j) : nullptr;
    }
    if (c.sched_1f1b) {
        bool skip = false;
        if (!exhaustive_) {
            double opt_lb = 0, dp_lb = kInf;
            for (const auto& cs : cfg_) {
                opt_lb = std::max(opt_lb, cs.r.opt_min);
                dp_lb = std::min(dp_lb, cs.r.dp_min);
            }
            if (cut(config_family_c()) || cut(m * integer_bottleneck() + dp_lb + opt_lb)) {
                ++stats.pruned;
                skip = true;
            }
        }
        if (!skip) {
            // a configuration of many stages and layers takes a while to prepare: check the clock
            check();
            if (halted()) return;
            // family C in whole layers over the whole configuration (both terms at their least)
            if (fill_tables()) {
                ++stats.pruned;
                skip = true;
            }
        }
        if (!skip) {
            split_dfs(0, L_, SplitState{});
        }
    }
    // the same configuration under the interleaved schedule (search_interleaved.cpp)
    if (!c.vs.empty() && !halted()) ilv_run(c);
}

// Exact layer caps of every stage of cfg_ (a simultaneous binary search, one probe of the real
// configuration per round); false when the stages cannot hold the model.
bool Walker::config_caps() {
    const int S = static_cast<int>(cfg_.size());
    Costs& costs = *costs_;
    for (;;) {
        check();
        if (halted()) return false;
        bool open = false;
        probe_stages_.resize(S);
        misfit_.assign(S, 0);
        for (int j = 0; j < S; ++j) {
            const CfgStage& s = cfg_[j];
            const FitMemo& f = costs.memo(s.g, s.size, s.tp, s.pos, s.inflight);
            int l = 1;
            if (f.nofit_min > f.fit_max + 1) {
                open = true;
                misfit_[j] = 1;
                l = f.fit_max + (f.nofit_min - f.fit_max) / 2;
            }
            probe_stages_[j] = {s.g, s.size, s.tp, l, s.offset};
        }
        if (!open) break;
        const auto& ev = costs.probe(probe_stages_);
        for (int j = 0; j < S; ++j)
            if (misfit_[j]) {
                const CfgStage& s = cfg_[j];
                costs.record_fit(s.g, s.size, s.tp, s.pos, s.inflight, probe_stages_[j].layers, ev[j].fits);
                if (costs.placed_as_probed(s.g, s.size, s.offset)) costs.store_times(s.g, s.size, s.tp, s.pos, probe_stages_[j].layers, ev[j].times);
            }
    }
    cap_.resize(S);
    suf_cap_.assign(S + 1, 0);
    for (int j = 0; j < S; ++j) cap_[j] = cap_upper(j);
    for (int j = S - 1; j >= 0; --j) {
        if (cap_[j] < lmin_at(j, S)) return false;
        suf_cap_[j] = suf_cap_[j + 1] + cap_[j];
    }
    caps_exact_ = true;
    return suf_cap_[0] >= L_;
}

int Walker::cap_upper(int j) {
    if (caps_exact_) return cap_[j];
    const CfgStage& s = cfg_[j];
    return costs_->cap_upper(s.g, s.size, s.tp, s.pos, s.inflight);
}

// Prefix summaries of the split search (docs/search.md, "Bounds"): for the stages fixed so far,
// pa/pb = path lengths into the next stage (families A and B), ma/mb = the best complete
// family-A/B paths through a fixed stage, csum = sum of their F+B, q = the most a fixed stage adds
// to family C beyond its own F+B.
void Walker::split_dfs(int k, int R, const SplitState& st) {
    const double PA = st.pa, PB = st.pb, dp0 = st.dp0, optmax = st.optmax;
    if (halted()) return;
    tick();
    const int S = static_cast<int>(cfg_.size());
    if (k == S) {
        leaf();
        return;
    }
    const long long suffix_cap = suf_cap_[k + 1];
    int lo = static_cast<int>(std::max<long long>(lmin_at(k, S), R - suffix_cap));
    int hi = std::min(R - suf_lmin_[k + 1], cap_upper(k));
    if (lo > hi) {
        ++stats.infeasible["memory"];
        return;
    }
    if (!exhaustive_) {
        // the caps from the threshold (threshold_caps): the values they leave out are cut
        lo = static_cast<int>(std::max<long long>(lo, R - tsuf_cap_[k + 1]));
        hi = std::min(hi, tcap_[k]);
        if (lo > hi) {
            ++stats.pruned;
            return;
        }
    }
    if (exhaustive_) {
        for (int l = lo; l <= hi && !halted(); ++l) child(k, l, R, st);
        return;
    }
    // The ridge walk: outward from the speed-proportional split, each direction stopped by
    // a bound that is monotone in l (docs/search.md, "Ridge walk").
    const CfgStage& s = cfg_[k];
    const double m = static_cast<double>(ctx_->m);
    const double share = (1.0 / s.r.a) / suf_w_[k];
    int center = static_cast<int>(std::lround(R * share));
    center = std::clamp(center, lo, hi);
    const double dp0_lb = k == 0 ? s.r.dp_min + emb_sync_ : dp0;
    const double opt_lb = std::max(optmax, suf_opt_[k]);
    // Family C with stage k or an earlier one as the bottleneck, without the suffix's share.
    const double c_base = st.csum + sends_ + dp0_lb + opt_lb;
    auto up_mono = [&](int l) {
        double b = std::max(PA + m * s.r.a * l + dp0_lb + opt_lb, PB + s.r.mu_b * l + opt_lb);
        b = std::max(b, c_base + l * ((m - warm_[k]) * s.r.phi_f + m * s.r.phi_b));
        if (st.q > -kInf) b = std::max(b, c_base + st.q + l * s.r.a);
        // family R with stage k's work at its per-layer rates, then at least the way down from
        // stage k's last backward (its own sync is not known before l is)
        if (k >= 1) b = std::max(b, family_r(k, st, s.r.phi_f * l, s.r.phi_b * l) + sb_[k] + st.b + st.drain + opt_lb);
        return b;
    };
    auto down_mono = [&](int l) {
        if (k + 1 >= S) return 0.0;
        const double rest_a = std::max((R - l) / va_[k + 1], m * ib_suf_[(k + 1) * tw_ + (R - l)]);
        double b = std::max(PA + rest_a + dp0_lb + opt_lb, PB + (R - l) / vb_[k + 1] + opt_lb);
        const double e_rest = std::max((R - l) / suf_inv_e_[k + 1], ibe_suf_[(k + 1) * tw_ + (R - l)]);
        b = std::max(b, c_base + std::max(st.q, e_rest) + fill_tab_[(k + 1) * tw_ + (R - l)]);
        return b;
    };
    // A dive is greedy here: the first value whose subtree reaches a plan ends the level, so that
    // its budget spreads over many configurations (one balanced split each) instead of the
    // plateau of near-equal splits of the first one (docs/search.md, "Dive").
    const std::int64_t evaluated0 = stats.evaluated;
    walk_outward(
        center, lo, std::min(hi, cap_upper(k)), [&] { return halted() || (greedy_ && stats.evaluated > evaluated0); },
        [&](int l) { return cut(up_mono(l)); }, [&](int l) { return cut(down_mono(l)); }, [&](int l) { child(k, l, R, st); }, stats.pruned);
}

void Walker::child(int k, int l, int R, const SplitState& st) {
    const int S = static_cast<int>(cfg_.size());
    const CfgStage& s = cfg_[k];
    if (l >= memo_p_[k]->nofit_min) {
        ++stats.infeasible["memory"];
        return;
    }
    const StageTimes& t = table_p_[k] ? table_p_[k]->t[l] : costs_->times(s.g, s.size, s.tp, s.pos, l);
    const double m = static_cast<double>(ctx_->m);
    const double c = t.forward_s + t.backward_s;
    SplitState n;
    n.pa = st.pa + c + sf_[k] + sb_[k + 1];
    n.ma = std::max(st.ma, st.pa + m * c);
    n.pb = st.pb + t.forward_s + sf_[k];
    // The first and the last stage synchronise the tied embeddings after their gradients (the
    // leaf adds emb_sync_ to both): the bounds count it where it is exact.
    const double sync = t.dp_sync_s + (k == 0 || k + 1 == S ? emb_sync_ : 0.0);
    n.mb = std::max(st.mb, st.pb + m * c + sync);
    n.csum = st.csum + c;
    n.q = std::max(st.q, std::max(0.0, m - warm_[k] - 1) * t.forward_s + (m - 1) * t.backward_s);
    // family E: through stage k's chain, with the stages after it visited for micro-batches 0
    // and m-1 (needs w_k <= m - 2); stored without the (unknown) sum of later stages
    n.qe = st.qe;
    if (warm_[k] <= ctx_->m - 2) n.qe = std::max(n.qe, st.pa + (m - warm_[k]) * c + 2 * sends_from_[k] - 2 * n.csum);
    n.dp0 = k == 0 ? sync : st.dp0;
    n.optmax = std::max(st.optmax, t.optimizer_s);
    n.f = t.forward_s;
    n.b = t.backward_s;
    n.drain = k == 0 ? sync : std::max(sync, sb_[k] + st.b + st.drain);
    if (!exhaustive_) {
        const int R2 = R - l;
        const bool last = k + 1 >= S;
        const double opt_lb = std::max(n.optmax, last ? 0.0 : suf_opt_[k + 1]);
        const double bA = last ? n.ma : std::max(n.ma, n.pa + std::max(R2 / va_[k + 1], m * ib_suf_[(k + 1) * tw_ + R2]));
        const double bB = last ? n.mb : std::max(n.mb, n.pb + R2 / vb_[k + 1]);
        const double rest = last ? 0.0 : fill_tab_[(k + 1) * tw_ + R2];
        const double e_rest = last ? 0.0 : std::max(R2 / suf_inv_e_[k + 1], ibe_suf_[(k + 1) * tw_ + R2]);
        const double bC = n.csum + std::max(n.q, e_rest) + rest + sends_;
        const double bE = n.qe + 2 * (n.csum + rest);
        const double bR = k >= 1 ? family_r(k, st, t.forward_s, t.backward_s) : 0;  // to stage k's last backward
        // family D: two round trips around the longest turns of the windows from stage 0; the
        // last micro-batch's backward ends at the sync of any stage j on its way down (x_d: the
        // longest dp_j less the way down to j, over the fixed stages)
        n.dturns = std::max(st.dturns, family_d_turns(k, st, t.forward_s, t.backward_s));
        const double x_d = std::max(n.dp0, n.drain - (st.pa - st.pb));
        const double bD = 2 * (n.csum + rest + sends_) + n.dturns + x_d;
        // family G: stage k's last backward after its forwards, the backwards 1F1B puts before its
        // last forward, and that micro-batch's round trip through the stages after it; then the
        // drain (the DAG's partial estimate). mg keeps the longest over the fixed stages.
        const double wk = static_cast<double>(std::min<std::int64_t>(warm_[k], ctx_->m - 1));
        const double trip = last ? 0.0 : rest + sends_from_[k];
        n.mg = std::max(st.mg, st.pb + m * t.forward_s + (m - 1 - wk) * t.backward_s + std::max((wk + 1) * t.backward_s, trip + t.backward_s) + n.drain);
        // families R and W end at stage k's last backward: the drain follows, which is at least
        // the way down to stage 0 and its sync that families A, C and E add
        double b = std::max({bA + n.dp0 + opt_lb, bB + opt_lb, bC + n.dp0 + opt_lb, bE + n.dp0 + opt_lb, bR + n.drain + opt_lb,
                             bD + opt_lb, n.mg + opt_lb});
        // family E through stage ej_ while the walk has not reached it (echain_rows)
        if (!last && k + 1 <= ej_ && !cut(b))
            b = std::max(b, n.pa + efill_tab_[(k + 1) * tw_ + R2] + sends_from_[k + 1] + sends_from_[ej_] + n.dp0 + opt_lb);
        // family W of the windows ending here last: it costs a loop over them
        if (!cut(b) && k >= 1 && !wgate_.skip(64, 64)) {
            b = std::max(b, family_w(k, st, t.forward_s, t.backward_s, rest) + n.drain + opt_lb);
            wgate_.record(cut(b), 4096);
        }
        // family D from later stages (a loop over windows, as W): its turns stay in the state
        if (!cut(b) && k >= 1) {
            n.dturns = std::max(n.dturns, family_d_later_turns(k, st, t.forward_s, t.backward_s));
            b = std::max(b, 2 * (n.csum + rest + sends_) + n.dturns + x_d + opt_lb);
        }
        if (cut(b)) {
            ++stats.pruned;
            return;
        }
        layers_[k] = l;
        if (tie_cut(k, b)) {
            ++stats.pruned;
            return;
        }
    }
    layers_[k] = l;
    pa_at_[k + 1] = n.pa;
    split_dfs(k + 1, R - l, n);
}

}  // namespace poseidon::detail
