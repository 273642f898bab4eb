// The search's cost cache over evaluate_stages (search_costs.hpp; docs/search.md, "Scoring").
#include "search_costs.hpp"
#include "search_space.hpp"

#include <algorithm>
#include <cmath>

namespace poseidon::detail {

Costs::Costs(const Scenario& sc, std::int64_t mbs, std::int64_t m, std::atomic<std::int64_t>* account, bool empty_stages)
    : sc_(sc), mbs_(mbs), m_(m), L_(sc.model.num_layers), l_min_(empty_stages ? 0 : 1), account_(account), middle_(std::make_shared<Tables>()) {
}

Costs::Costs(const Costs& base)
    : sc_(base.sc_), mbs_(base.mbs_), m_(base.m_), L_(base.L_), l_min_(base.l_min_), account_(base.account_), middle_(base.middle_), owner_(false),
      pos_(base.pos_), fits_(base.fits_), extra_(base.extra_), links_(base.links_) {
    grow(static_cast<std::int64_t>(pos_.size()) * kTimesBytes + static_cast<std::int64_t>(fits_.size() + extra_.size()) * kFitBytes +
         static_cast<std::int64_t>(links_.size()) * kLinkBytes);
}

Costs::~Costs() {
    if (account_) account_->fetch_sub(bytes_, std::memory_order_relaxed);
}

Costs::ProbeBuffers& Costs::probe_plan(const std::vector<ProbeStage>& ps) {
    ++probes_;
    // (a bound on what the buffers keep: a search probes a few dozen sizes at most)
    if (buffers_.size() >= kProbeSizesKept && !buffers_.contains(ps.size())) buffers_.clear();
    auto [it, fresh] = buffers_.try_emplace(ps.size());
    ProbeBuffers& b = it->second;
    if (fresh) {
        b.plan.micro_batch_size = mbs_;
        b.plan.num_micro_batches = m_;
        b.plan.stages.resize(ps.size());
        b.placement.resize(ps.size());
    }
    for (std::size_t i = 0; i < ps.size(); ++i) {
        const ProbeStage& p = ps[i];
        const int width = replica_gpus(sc_, p.tp), dp = p.size / width;
        set_search_stage(sc_, b.plan.stages[i], p.g, p.size, p.tp, p.layers, mbs_);
        auto& reps = b.placement[i].replicas;
        reps.resize(dp);
        for (int r = 0; r < dp; ++r) reps[r] = ReplicaPlacement{p.g, p.first_gpu + r * width, width};
    }
    return b;
}

const std::vector<StageEval>& Costs::probe(const std::vector<ProbeStage>& ps, bool whole_pipeline, LeadingBlocks rule) {
    ProbeBuffers& b = probe_plan(ps);
    b.links.clear();
    evaluate_stages_into(sc_, b.plan, b.placement, &b.links, whole_pipeline, b.out, rule);
    return b.out;
}

const std::vector<StageFit>& Costs::probe_fits(const std::vector<ProbeStage>& ps, const std::vector<std::uint8_t>* only) {
    ProbeBuffers& b = probe_plan(ps);
    stage_fits_into(sc_, b.plan, b.fits, LeadingBlocks::on_first_stage, only);
    return b.fits;
}

const Table& Costs::middle(int g, int size, int tp) {
    const std::uint64_t key = stage_key(g, size, tp, kMiddle);
    if (!owner_) {  // a copy reads its base's tables
        auto it = middle_->find(key);
        if (it != middle_->end()) return it->second;
        auto [own, fresh] = own_.try_emplace(key);
        return fresh ? build_middle(own->second, g, size, tp) : own->second;
    }
    auto [it, fresh] = middle_->try_emplace(key);
    return fresh ? build_middle(it->second, g, size, tp) : it->second;
}

Table& Costs::build_middle(Table& tb, int g, int size, int tp) {
    const bool lead = leading_dense_blocks(sc_.model) > 0;
    grow(static_cast<std::int64_t>(table_bytes(L_)) * (lead ? 2 : 1));
    // one probe per 256 layer counts: the counts as middle stages between two one-layer stages
    auto probe_all = [&](std::vector<StageTimes>& out, LeadingBlocks rule) {
        out.assign(L_ + 1, StageTimes{});
        constexpr int chunk = 256;
        for (int l0 = 1; l0 <= L_; l0 += chunk) {
            const int l1 = std::min(L_, l0 + chunk - 1);
            scratch_.clear();
            scratch_.push_back({g, size, tp, 1, 0});
            for (int l = l0; l <= l1; ++l) scratch_.push_back({g, size, tp, l, 0});
            scratch_.push_back({g, size, tp, 1, 0});
            const auto& ev = probe(scratch_, false, rule);
            for (int l = l0; l <= l1; ++l) {
                StageTimes t = ev[l - l0 + 1].times;
                t.send_forward_s = t.send_backward_s = 0;
                out[l] = t;
            }
        }
        if (l_min_ == 0) {
            // a stage of no layer between two of one: what it still costs (its sends are the links')
            scratch_.assign({{g, size, tp, 1, 0}, {g, size, tp, 0, 0}, {g, size, tp, 1, 0}});
            out[0] = probe(scratch_, false, rule)[1].times;
            out[0].send_forward_s = out[0].send_backward_s = 0;
        }
    };
    probe_all(tb.t, LeadingBlocks::on_first_stage);
    if (lead) {
        // the middle stages' own table, and the bounds' table: each time the lesser of a middle
        // stage's and of a stage that begins with the leading dense blocks (as the first stage does)
        auto body = std::make_shared<Table>();
        body->t = tb.t;
        std::vector<StageTimes> begins;
        probe_all(begins, LeadingBlocks::on_every_stage);
        for (int l = 0; l <= L_; ++l) {
            StageTimes& t = tb.t[l];
            const StageTimes& o = begins[l];
            for (double StageTimes::*f : {&StageTimes::forward_s, &StageTimes::backward_s, &StageTimes::forward_tp_comm_s, &StageTimes::backward_tp_comm_s,
                                          &StageTimes::dp_sync_s, &StageTimes::optimizer_s, &StageTimes::last_backward_extra_s,
                                          &StageTimes::first_forward_extra_s})
                t.*f = std::min(t.*f, o.*f);
        }
        finish_table(*body);
        tb.body = std::move(body);
    }
    finish_table(tb);
    return tb;
}

void Costs::finish_table(Table& tb) const {
    tb.c.assign(L_ + 1, 0);
    tb.monotone = true;
    for (int l = l_min_; l <= L_; ++l) {
        tb.c[l] = tb.t[l].forward_s + tb.t[l].backward_s;
        if (l > l_min_ && tb.c[l] < tb.c[l - 1]) tb.monotone = false;
    }
    Rates& r = tb.rates;
    r.a = r.phi_f = r.phi_b = r.mu_b = r.dp_min = r.opt_min = kInf;
    const double m = static_cast<double>(m_);
    for (int l = 1; l <= L_; ++l) {
        const StageTimes& t = tb.t[l];
        const double c = t.forward_s + t.backward_s;
        r.a = std::min(r.a, c / l);
        r.phi_f = std::min(r.phi_f, t.forward_s / l);
        r.phi_b = std::min(r.phi_b, t.backward_s / l);
        r.mu_b = std::min(r.mu_b, (m * c + t.dp_sync_s) / l);
        r.dp_min = std::min(r.dp_min, t.dp_sync_s);
        r.opt_min = std::min(r.opt_min, t.optimizer_s);
    }
    // a stage that may hold no layer syncs and steps at least what it does with none
    if (l_min_ == 0) {
        r.dp_min = std::min(r.dp_min, tb.t[0].dp_sync_s);
        r.opt_min = std::min(r.opt_min, tb.t[0].optimizer_s);
    }
}

const StageTimes& Costs::times(int g, int size, int tp, Pos pos, int l) {
    if (pos == kMiddle) return middle(g, size, tp).of_stage(1).t[l];
    auto it = pos_.find(stage_key(g, size, tp, pos, l));
    if (it != pos_.end()) return it->second;
    scratch_.clear();
    if (pos == kLast) scratch_.push_back({g, size, tp, 1, 0});
    scratch_.push_back({g, size, tp, l, 0});
    if (pos == kFirst) scratch_.push_back({g, size, tp, 1, 0});
    const auto& ev = probe(scratch_);
    StageTimes t = ev[pos == kLast ? 1 : 0].times;
    t.send_forward_s = t.send_backward_s = 0;
    grow(kTimesBytes);
    return pos_.emplace(stage_key(g, size, tp, pos, l), t).first->second;
}

// The cost model adds the embedding and the head once per stage, whatever its layer count
// (cost_model.cpp), so the extra is the difference at the fewest and the most layers. Where the
// two differ (a model that is not additive) it is taken as zero, the bound of the middle tables.
const PosExtra& Costs::pos_extra(int g, int size, int tp, Pos pos) {
    static const PosExtra none;
    if (pos == kMiddle) return none;
    const std::uint64_t key = stage_key(g, size, tp, pos);
    if (auto it = extra_.find(key); it != extra_.end()) return it->second;
    // (against the table the bounds take for a stage at that position: Table::of_stage)
    const Table& mid = middle(g, size, tp).of_stage(pos == kLast ? 1 : 0);
    const StageTimes lo = times(g, size, tp, pos, l_min_), hi = times(g, size, tp, pos, L_);
    auto extra = [](double at_lo, double mid_lo, double at_hi, double mid_hi) {
        const double d_lo = at_lo - mid_lo, d_hi = at_hi - mid_hi;
        if (std::abs(d_lo - d_hi) > 1e-12 * std::max(at_lo, at_hi)) return 0.0;
        return std::max(0.0, std::min(d_lo, d_hi));
    };
    PosExtra x;
    x.forward_s = extra(lo.forward_s, mid.t[l_min_].forward_s, hi.forward_s, mid.t[L_].forward_s);
    x.backward_s = extra(lo.backward_s, mid.t[l_min_].backward_s, hi.backward_s, mid.t[L_].backward_s);
    grow(kFitBytes);
    return extra_.emplace(key, x).first->second;
}

void Costs::store_times(int g, int size, int tp, Pos pos, int l, const StageTimes& times) {
    if (pos == kMiddle) return;
    auto [it, fresh] = pos_.try_emplace(stage_key(g, size, tp, pos, l));
    if (!fresh) return;
    it->second = times;
    it->second.send_forward_s = it->second.send_backward_s = 0;
    grow(kTimesBytes);
}

int Costs::exact_cap(int g, int size, int tp, Pos pos, int inflight) {
    // The headroom of the last two probes: memory grows about linearly with the layers, so the
    // line through them points at the cap, and two probes beside it settle the memo, where halving
    // the interval takes seven for 128 layers. The memo alone decides the cap: a guess only picks
    // the next layer count to probe (inside the open interval), so a model that is not linear
    // costs probes, never a wrong cap.
    double l_a = -1, h_a = 0, l_b = -1, h_b = 0;
    for (;;) {
        FitMemo& f = memo(g, size, tp, pos, inflight);
        if (f.nofit_min <= f.fit_max + 1) return f.fit_max;
        int l = f.fit_max + (f.nofit_min - f.fit_max) / 2;
        if (l_a >= 0 && l_b >= 0 && l_a != l_b && h_a != h_b) {
            const double at = l_a - h_a * (l_b - l_a) / (h_b - h_a);  // headroom 0 on the line
            if (std::isfinite(at)) {
                // probe the guess (it should fit), or past what fits when the guess is known to
                // fit (it should not)
                l = static_cast<int>(std::clamp(std::floor(at + 1e-9), f.fit_max + 1.0, f.nofit_min - 1.0));
            }
        }
        scratch_.clear();
        int target = 0;
        const ProbeStage dummy{g, size, tp, 1, 0};
        switch (pos) {
            case kOnly: scratch_.push_back({g, size, tp, l, 0}); break;
            case kLast:
                scratch_.push_back(dummy);
                scratch_.push_back({g, size, tp, l, 0});
                target = 1;
                break;
            case kFirst:
                scratch_.push_back({g, size, tp, l, 0});
                for (int i = 1; i < std::max(2, inflight); ++i) scratch_.push_back(dummy);
                break;
            case kMiddle:
                scratch_.push_back(dummy);
                scratch_.push_back({g, size, tp, l, 0});
                for (int i = 1; i < inflight; ++i) scratch_.push_back(dummy);
                target = 1;
                break;
        }
        // (the memory alone: the times of a stage near its cap were seldom read, and Costs::times
        // probes them when they are)
        only_.assign(scratch_.size(), 0);
        only_[static_cast<std::size_t>(target)] = 1;
        const StageFit fit = probe_fits(scratch_, &only_)[target];
        record_fit(g, size, tp, pos, inflight, l, fit.fits);
        l_a = l_b, h_a = h_b;
        l_b = l, h_b = fit.headroom_GiB;
    }
}

// Memory only grows with the in-flight micro-batches, which are at least min(2, m) for a first
// or middle stage and 1 for a last or only stage.
int Costs::cap_anywhere(int g, int size, int tp) {
    const int two = static_cast<int>(std::min<std::int64_t>(2, m_));
    return std::max({exact_cap(g, size, tp, kFirst, two), exact_cap(g, size, tp, kMiddle, 2), exact_cap(g, size, tp, kLast, 1),
                     exact_cap(g, size, tp, kOnly, 1)});
}

bool Costs::placed_as_probed(int g, int size, int first) const {
    const Group& G = sc_.cluster.groups[g];
    const int D = G.domain_gpus();
    if (D <= G.gpus_per_node || first == 0) return true;
    // the data-parallel ring reads the domains a stage spans and, across them, their least node
    // count (stage_links.cpp, dp_ring)
    const auto span = [&](int at) {
        const int k0 = at / D, k1 = (at + size - 1) / D;
        int nodes = G.domain_nodes(k0);
        for (int k = k0 + 1; k <= k1; ++k) nodes = std::min(nodes, G.domain_nodes(k));
        return std::make_pair(k1 - k0, k1 > k0 ? nodes : 0);
    };
    return span(first) == span(0);
}

// A send's cost depends on whether each replica's peer shares its NVLink domain: with domains
// larger than a node, on where both stages sit, so the key holds their first GPUs.
static int domain_place(const Scenario& sc, const ProbeStage& s) {
    const Group& G = sc.cluster.groups[s.g];
    return G.domain_gpus() > G.gpus_per_node ? s.first_gpu : -1;
}

std::pair<double, double> Costs::link(const ProbeStage& a, const ProbeStage& b, bool same_node) {
    std::array<int, 9> key{a.g, a.size, a.tp, domain_place(sc_, a), b.g, b.size, b.tp, domain_place(sc_, b), same_node ? 1 : 0};
    if (key == last_link_key_) return last_link_;
    last_link_key_ = key;
    auto it = links_.find(key);
    if (it != links_.end()) return last_link_ = it->second;
    scratch_.assign({a, b});
    scratch_[0].layers = scratch_[1].layers = 1;
    const auto& ev = probe(scratch_);
    auto v = std::make_pair(ev[0].times.send_forward_s, ev[1].times.send_backward_s);
    links_.emplace(key, v);
    grow(kLinkBytes);
    return last_link_ = v;
}

double Costs::embedding_sync(const ProbeStage& first, const ProbeStage& last, bool same_node) {
    if (!sc_.model.tied_embeddings) return 0;
    std::array<int, 9> key{first.g, first.size, first.tp, domain_place(sc_, first), last.g, last.size, last.tp, domain_place(sc_, last), same_node ? 3 : 2};
    auto it = links_.find(key);
    if (it != links_.end()) return it->second.first;
    scratch_.assign({first, last});
    scratch_[0].layers = scratch_[1].layers = 1;
    const double v = probe(scratch_, true)[0].times.embedding_sync_s;
    links_.emplace(key, std::make_pair(v, 0.0));
    grow(kLinkBytes);
    return v;
}

}  // namespace poseidon::detail
