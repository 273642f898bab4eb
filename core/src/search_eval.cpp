// Evaluation, part 2: a complete plan of the walk (docs/search.md, "Scoring: one model"): its
// memory fit (one probe of the real configuration settles every unknown stage), its stage times
// from the cost cache (search_costs.cpp), the 1F1B DAG with early stopping, and the top-K list.
#include <cmath>

#include "search_walk.hpp"

namespace poseidon::detail {

void Walker::leaf() {
    const int S = static_cast<int>(cfg_.size());
    Costs& costs = *costs_;
    bool unknown = false;
    for (int j = 0; j < S; ++j) {
        const CfgStage& s = cfg_[j];
        const int f = costs.fits_known(s.g, s.size, s.tp, s.pos, s.inflight, layers_[j]);
        if (f == 0) {
            ++stats.infeasible["memory"];
            return;
        }
        if (f < 0) unknown = true;
    }
    if (unknown) {
        // One probe of the real configuration settles every stage's fit at once.
        probe_stages_.resize(S);
        for (int j = 0; j < S; ++j) probe_stages_[j] = {cfg_[j].g, cfg_[j].size, cfg_[j].tp, layers_[j], cfg_[j].offset};
        const auto& ev = costs.probe(probe_stages_);
        bool ok = true;
        misfit_.assign(S, 0);
        for (int j = 0; j < S; ++j) {
            const CfgStage& s = cfg_[j];
            costs.record_fit(s.g, s.size, s.tp, s.pos, s.inflight, layers_[j], ev[j].fits);
            // (times of a stage placed unlike the tables' probes are its own, not the cache's)
            if (costs.placed_as_probed(s.g, s.size, s.offset)) costs.store_times(s.g, s.size, s.tp, s.pos, layers_[j], ev[j].times);
            ok = ok && ev[j].fits;
            misfit_[j] = !ev[j].fits;
        }
        if (!ok) {
            // (ev is overwritten by the probes below)
            for (int j = 0; j < S; ++j)
                if (misfit_[j]) {
                    const CfgStage& s = cfg_[j];
                    costs.exact_cap(s.g, s.size, s.tp, s.pos, s.inflight);
                }
            ++stats.infeasible["memory"];
            return;
        }
    }
    if (placed_off_) {
        // A stage whose data-parallel ring spans other NVLink domains than the tables' probes
        // (Costs::placed_as_probed) costs what its own placement costs: the configuration is
        // probed as placed, as estimate places it (the tables, at the best placement, stay the
        // bounds' lower values).
        probe_stages_.resize(S);
        for (int j = 0; j < S; ++j) probe_stages_[j] = {cfg_[j].g, cfg_[j].size, cfg_[j].tp, layers_[j], cfg_[j].offset};
        const auto& ev = costs.probe(probe_stages_, false, LeadingBlocks::by_layers);
        ++stats.cost_probes;
        for (int j = 0; j < S; ++j) times_[j] = ev[j].times;
    } else {
        for (int j = 0; j < S; ++j) {
            const CfgStage& s = cfg_[j];
            times_[j] = costs.times(s.g, s.size, s.tp, s.pos, layers_[j]);
        }
    }
    for (int j = 0; j < S; ++j) {
        times_[j].send_forward_s = sf_[j];
        times_[j].send_backward_s = sb_[j];
    }
    if (emb_sync_ > 0) add_embedding_sync(times_[0], times_[S - 1], emb_sync_);
    fold_blocking_sends(sc_.training.stack, times_);
    // a candidate that cannot enter the top K stops early (docs/search.md, "Early stopping")
    const double cutoff = eval_cutoff();
    const double T = dag_iteration_time_below(times_, ctx_->m, cutoff, ws_);
    ++stats.evaluated;
    if (visited_) visited_->push_back(layers_);
    if (T < cutoff) insert(T);
    if (static_cast<std::int64_t>(S) * ctx_->m > 20000 || (stats.evaluated & 15) == 0) check();
}

Plan Walker::current_plan() const {
    Plan p;
    p.micro_batch_size = ctx_->mbs;
    p.num_micro_batches = ctx_->m;
    if (vsched_ > 1) {
        p.schedule = "interleaved-1f1b";
        p.virtual_stages = vsched_;
    }
    p.stages.resize(cfg_.size());
    for (std::size_t j = 0; j < cfg_.size(); ++j) {
        const CfgStage& s = cfg_[j];
        set_search_stage(sc_, p.stages[j], s.g, s.size, s.tp, layers_[j], ctx_->mbs);
    }
    return p;
}

// Ranked by time per global_batch_size samples (tokens/s with a batch tolerance): the iteration
// time itself when the plan trains exactly that batch (scale_ 1: x / 1 is x).
void Walker::insert(double time) {
    const double key = time / scale_;
    // the size's best so far, whatever the threshold: the full walk's order of sizes (walk_all)
    double was = ctx_->best_key.load(std::memory_order_relaxed);
    while (key < was && !ctx_->best_key.compare_exchange_weak(was, key, std::memory_order_relaxed)) {
    }
    if (!sh_.top.admits(key) || key > sh_.prune_above) return;
    Plan p = current_plan();
    // a split group's parts enter as the user's group (options.group_blocks)
    if (!sh_.group_map.empty())
        for (auto& st : p.stages) st.replicas[0].group = sh_.group_map[st.replicas[0].group];
    if (sh_.top.insert(key, std::move(p), time) && sh_.opt.on_progress) sh_.report(seconds_since(sh_.t0));
    rethreshold();
}

}  // namespace poseidon::detail
