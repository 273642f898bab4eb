// The top-K list of the search (search_topk.hpp).
#include "search_topk.hpp"

#include <algorithm>
#include <tuple>

namespace poseidon::detail {

bool plan_less(const Plan& a, const Plan& b) {
    if (a.micro_batch_size != b.micro_batch_size) return a.micro_batch_size < b.micro_batch_size;
    if (a.stages.size() != b.stages.size()) return a.stages.size() < b.stages.size();
    for (std::size_t j = 0; j < a.stages.size(); ++j) {
        const auto& x = a.stages[j];
        const auto& y = b.stages[j];
        const auto& rx = x.replicas[0];
        const auto& ry = y.replicas[0];
        // more layers first: the ridge walk gives a run of equal stages the remainder of its
        // layers front first (its centre rounds up while the share left is above a half), so the
        // first of a plateau of tied splits it reaches ranks first, and the tie cut
        // (search_tie.cpp) cuts the rest
        const auto kx = std::make_tuple(rx.group, rx.tp, rx.tp * rx.count, -x.num_layers);
        const auto ky = std::make_tuple(ry.group, ry.tp, ry.tp * ry.count, -y.num_layers);
        if (kx != ky) return kx < ky;
    }
    if (a.virtual_stages != b.virtual_stages) return a.virtual_stages < b.virtual_stages;  // 1F1B first
    // stages that mix GPU types (options.mixed_stages): every replica set
    for (std::size_t j = 0; j < a.stages.size(); ++j) {
        const auto& x = a.stages[j].replicas;
        const auto& y = b.stages[j].replicas;
        if (x.size() != y.size()) return x.size() < y.size();
        for (std::size_t i = 0; i < x.size(); ++i) {
            const auto kx = std::make_tuple(x[i].group, x[i].tp, x[i].count, x[i].samples);
            const auto ky = std::make_tuple(y[i].group, y[i].tp, y[i].count, y[i].samples);
            if (kx != ky) return kx < ky;
        }
    }
    // the grids of the search (the context-parallel size, the expert grid): one per plan
    if (!a.stages.empty()) {
        const auto gx = std::make_tuple(a.stages[0].cp, a.stages[0].ep, a.stages[0].etp);
        const auto gy = std::make_tuple(b.stages[0].cp, b.stages[0].ep, b.stages[0].etp);
        if (gx != gy) return gx < gy;
    }
    // the training choices a search freed (options.precisions, options.fsdp, options.recompute): one per plan
    if (a.precision != b.precision) return a.precision < b.precision;
    if (a.fsdp != b.fsdp) return a.fsdp < b.fsdp;
    if (a.recompute != b.recompute) return a.recompute < b.recompute;
    return a.recompute_num_layers < b.recompute_num_layers;
}

namespace {
bool better(double t, const Plan& p, const Found& f) { return ranks_before(t, p, f.time, f.plan); }
}  // namespace

bool TopK::insert(double time, Plan&& plan, double dag_time) {
    std::lock_guard<std::mutex> lock(m_);
    const int n = static_cast<int>(top_.size());
    if (n >= k_ && !better(time, plan, top_.back())) return false;
    for (const auto& x : top_)
        if (x.time == time && x.plan == plan) return false;
    auto pos = std::find_if(top_.begin(), top_.end(), [&](const Found& x) { return better(time, plan, x); });
    const bool new_best = pos == top_.begin();
    Found f;
    f.time = time;
    f.dag_time = dag_time < 0 ? time : dag_time;
    f.seq = seq_++;
    f.plan = std::move(plan);
    top_.insert(pos, std::move(f));
    any_.store(true, std::memory_order_relaxed);
    if (static_cast<int>(top_.size()) > k_) top_.pop_back();
    std::int64_t n_stages = 0;
    for (const auto& x : top_) n_stages += static_cast<std::int64_t>(x.plan.stages.size());
    stages_.store(n_stages, std::memory_order_relaxed);
    if (static_cast<int>(top_.size()) >= k_) thr_.store(tie_last(top_.back().time), std::memory_order_relaxed);
    version_.fetch_add(1, std::memory_order_relaxed);
    return new_best;
}

bool TopK::kth_if_changed(std::uint64_t& version, Found& out) const {
    if (version_.load(std::memory_order_relaxed) == version) return false;
    std::lock_guard<std::mutex> lock(m_);
    version = version_.load(std::memory_order_relaxed);
    if (static_cast<int>(top_.size()) < k_) {
        out.time = std::numeric_limits<double>::infinity();
        out.plan = Plan{};
    } else {
        out = top_.back();
    }
    return true;
}

std::vector<Found> TopK::list() const {
    std::lock_guard<std::mutex> lock(m_);
    return top_;
}

bool TopK::empty() const {
    std::lock_guard<std::mutex> lock(m_);
    return top_.empty();
}

void TopK::clear() {
    std::lock_guard<std::mutex> lock(m_);
    top_.clear();
    version_.fetch_add(1, std::memory_order_relaxed);
    thr_.store(std::numeric_limits<double>::infinity(), std::memory_order_relaxed);
    any_.store(false, std::memory_order_relaxed);
    stages_.store(0, std::memory_order_relaxed);
}

bool TopK::best(Found& out) const {
    std::lock_guard<std::mutex> lock(m_);
    if (top_.empty()) return false;
    out = top_.front();
    return true;
}

}  // namespace poseidon::detail
